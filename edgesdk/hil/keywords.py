"""Renode's Robot Framework keywords, implemented on edgesdk's built-in emulator.

`renode-test` runs a suite against Renode through Renode's own keyword library (its Robot remote server,
src/Renode/RobotFrameworkEngine in renode/renode). This library provides the same keywords, with the same
names, arguments and defaults, for `robot` without Renode, so edgesdk/hil/suites/*.robot run unchanged in both.
The suites import it through `Resource ${RENODEKEYWORDS}`: renode-test sets that variable to Renode's
renode-keywords.robot, and the suites' default is edgesdk/hil/renode-keywords.robot, which imports this.

Keywords (Renode's UartKeywords, RenodeKeywords and renode-keywords.robot):
    Setup, Teardown, Test Setup, Test Teardown, Reset Emulation,
    Execute Command, Execute Script, Start Emulation,
    Create Terminal Tester, Set Default Uart Timeout, Wait For Line On Uart, Wait For Next Line On Uart,
    Should Not Be On Uart, Create Log Tester, Wait For Log Entry, Should Not Be In Log.
Timeouts are virtual seconds, as in Renode (see emulation.py). Failures raise with Renode's messages'
leading words ("Terminal tester failed!", "Expected pattern ... did not appear in the log") so that
`Run Keyword And Expect Error` patterns match under both.
"""

from __future__ import annotations

import re
from pathlib import Path

from robot.api.deco import keyword, library
from robot.utils import DotDict

from .emulation import Emulation, Monitor, RenodeError

DEFAULT_UART_TIMEOUT = 8.0  # renode-keywords.robot's ${DEFAULT_UART_TIMEOUT}


class _Matcher:
    def __init__(self, pattern: str, regex: bool):
        self.pattern = pattern
        self.regex = re.compile(pattern) if regex else None

    def match(self, text: str):
        """None, or the match groups (a tuple, empty for a plain substring match)."""
        if self.regex is None:
            return () if self.pattern in text else None
        found = self.regex.search(text)
        return found.groups() if found else None


class TerminalTester:
    """Renode's TerminalTester on one UART of a built-in machine."""

    def __init__(self, machine, uart: str, timeout: float):
        self.machine = machine
        self.uart = uart
        self.timeout = timeout
        self.report = []  # lines consumed or seen, for failure reports

    def wait_for(self, emulation: Emulation, matcher: _Matcher, timeout: float | None, include_unfinished: bool,
                 match_next_line: bool):
        deadline = self.machine.virtual_ms + 1000.0 * (self.timeout if timeout is None else timeout)
        while True:
            result = self._check(matcher, include_unfinished, match_next_line)
            if result is not None:
                return result
            if not emulation.can_run() or (self.machine.machine is not None and self.machine.virtual_ms >= deadline):
                return None
            emulation.run_slice({self.machine.name: deadline})

    def _check(self, matcher: _Matcher, include_unfinished: bool, match_next_line: bool):
        lines = self.machine.lines
        candidates = lines[:1] if match_next_line else lines
        for index, line in enumerate(candidates):
            groups = matcher.match(line.text)
            if groups is not None:
                self.report += [entry.text for entry in lines[:index + 1]]
                del lines[:index + 1]
                return DotDict(line=line.text, timestamp=line.virtual_ms, groups=list(groups))
        if include_unfinished and (not match_next_line or not lines):
            groups = matcher.match(self.machine.unfinished_line)
            if groups is not None:
                return DotDict(line=self.machine.unfinished_line, timestamp=self.machine.virtual_ms, groups=list(groups))
        return None

    def failure(self, what: str) -> AssertionError:
        pending = [line.text for line in self.machine.lines]
        unfinished = self.machine.unfinished_line
        state = {"exit": f"the firmware had exited (code {self.machine.exit_code})",
                 "fault": "the CPU had stopped on a fault (see the log)"}.get(self.machine.halted, "the timeout expired")
        report = "\n".join([*self.report, *pending] + ([unfinished + " [[no newline]]"] if unfinished else []))
        return AssertionError(f"Terminal tester failed!\n\n{what} not found before {state} "
                              f"(virtual time {self.machine.virtual_ms:.3f} ms).\nFull report:\n{report}")


@library(scope="GLOBAL", auto_keywords=False)
class RenodeKeywords:
    """Renode's keywords on the built-in emulator (module docstring)."""

    def __init__(self):
        self.emulation = Emulation()
        self.monitor = Monitor(self.emulation)
        self.testers = {}
        self.default_uart_timeout = DEFAULT_UART_TIMEOUT
        self.log_timeout = None  # set by Create Log Tester

    # -- suite and test fixtures (renode-keywords.robot) --

    @keyword
    def setup(self):
        self.reset_emulation()

    @keyword
    def teardown(self):
        self.reset_emulation()

    @keyword
    def test_setup(self):
        """Nothing to prepare here (Renode uses it to start its profiler)."""

    @keyword
    def test_teardown(self):
        self.reset_emulation()

    @keyword
    def reset_emulation(self):
        self.emulation.close()
        self.emulation = Emulation()
        self.monitor = Monitor(self.emulation)
        self.testers = {}
        self.log_timeout = None

    # -- monitor --

    @keyword
    def execute_command(self, command: str, machine: str | None = None) -> str:
        try:
            return self.monitor.execute(command, machine)
        except RenodeError as exc:
            raise RenodeError(f"KeywordException: {exc}") from None

    @keyword
    def execute_script(self, path: str) -> str:
        try:
            return self.monitor.execute_script(Path(path.removeprefix("@")))
        except RenodeError as exc:
            raise RenodeError(f"KeywordException: Could not execute script: {exc}") from None

    @keyword
    def start_emulation(self):
        self.emulation.started = True

    # -- UART --

    @keyword
    def set_default_uart_timeout(self, timeout: float):
        self.default_uart_timeout = timeout

    @keyword
    def create_terminal_tester(self, uart: str, timeout: float | None = None, machine: str | None = None,
                               endLineOption: str | None = None, defaultPauseEmulation: bool | None = None,
                               defaultWaitForEcho: bool | None = None, defaultMatchNextLine: bool | None = None,
                               binaryMode: bool = False) -> int:
        target = self.emulation.machine(machine)
        name = uart.removeprefix("sysbus.")
        if target.repl is None or name not in target.repl.entries or target.repl[name].type != "UART.NS16550":
            raise RenodeError(f"Peripheral for machine {target.name} not found or of wrong type: {uart}")
        if any(t.machine is target and t.uart == name for t in self.testers.values()):
            raise RenodeError(f"Terminal tester for peripheral {uart} in machine {target.name} already exists")
        if binaryMode or endLineOption not in (None, "TreatLineFeedAsEndLine"):
            raise RenodeError("The built-in emulator's terminal tester reads text lines ended by line feeds only.")
        tester_id = len(self.testers) + 1
        self.testers[tester_id] = TerminalTester(target, name, self.default_uart_timeout if timeout is None else timeout)
        return tester_id

    def _tester(self, tester_id: int | None) -> TerminalTester:
        if tester_id is None:
            if len(self.testers) != 1:
                raise RenodeError("There are no or more than one terminal testers available - create one with "
                                  "'Create Terminal Tester' or pass testerId.")
            return next(iter(self.testers.values()))
        if tester_id not in self.testers:
            raise RenodeError(f"Terminal tester for given ID={tester_id} was not found. Did you forget to call "
                              "`Create Terminal Tester`?")
        return self.testers[tester_id]

    @keyword
    def wait_for_line_on_uart(self, content: str, timeout: float | None = None, testerId: int | None = None,
                              treatAsRegex: bool = False, includeUnfinishedLine: bool = False,
                              pauseEmulation: bool | None = None, matchNextLine: bool | None = None):
        tester = self._tester(testerId)
        result = tester.wait_for(self.emulation, _Matcher(content, treatAsRegex), timeout, includeUnfinishedLine,
                                 bool(matchNextLine))
        if result is None:
            raise tester.failure(f"Line containing{' regex' if treatAsRegex else ''} >>{content}<<")
        return result

    @keyword
    def wait_for_next_line_on_uart(self, timeout: float | None = None, testerId: int | None = None,
                                   pauseEmulation: bool | None = None):
        tester = self._tester(testerId)
        result = tester.wait_for(self.emulation, _Matcher("", False), timeout, False, True)
        if result is None:
            raise tester.failure("Next line")
        return result

    @keyword
    def should_not_be_on_uart(self, content: str, timeout: float | None = None, testerId: int | None = None,
                              treatAsRegex: bool = False, includeUnfinishedLine: bool = False):
        tester = self._tester(testerId)
        result = tester.wait_for(self.emulation, _Matcher(content, treatAsRegex), timeout, includeUnfinishedLine, False)
        if result is not None:
            raise AssertionError(f"Terminal tester failed!\n\nUnexpected entry has been found on UART#:\n{result.line}")

    # -- log --

    @keyword
    def create_log_tester(self, timeout: float, defaultPauseEmulation: bool | None = None):
        self.log_timeout = timeout

    @keyword
    def wait_for_log_entry(self, pattern: str, timeout: float | None = None, keep: bool = False,
                           treatAsRegex: bool = False, pauseEmulation: bool | None = None, level: str | None = None) -> str:
        entry = self._wait_for_log(pattern, timeout, keep, treatAsRegex, level)
        if entry is None:
            last = [e.full_message for e in self.emulation.log_entries[-20:]]
            raise AssertionError(f'Expected pattern "{pattern}" did not appear in the log\nLast {len(last)} buffered '
                                 "log messages are: \n " + "\n ".join(last))
        return entry

    @keyword
    def should_not_be_in_log(self, pattern: str, timeout: float | None = None, treatAsRegex: bool = False,
                             pauseEmulation: bool | None = None, level: str | None = None):
        entry = self._wait_for_log(pattern, timeout, True, treatAsRegex, level)
        if entry is not None:
            raise AssertionError(f"Unexpected line detected in the log: {entry}")

    def _wait_for_log(self, pattern: str, timeout: float | None, keep: bool, regex: bool, level: str | None):
        if self.log_timeout is None:
            raise RenodeError("Log tester is not available. Create it with the `Create Log Tester` keyword")
        matcher = _Matcher(pattern, regex)
        wait = self.log_timeout if timeout is None else timeout
        machines = [m for m in self.emulation.machines.values() if m.machine is not None]
        deadline = {m.name: m.virtual_ms + 1000.0 * wait for m in machines}
        while True:
            entries = self.emulation.log_entries
            for index, entry in enumerate(entries):
                if (level is None or entry.level == level.upper()) and matcher.match(entry.full_message) is not None:
                    if not keep:
                        del entries[:index + 1]
                    return entry.full_message
            if not self.emulation.can_run() or all(m.virtual_ms >= deadline[m.name] for m in machines):
                return None
            self.emulation.run_slice(deadline)
