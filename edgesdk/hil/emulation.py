"""A Renode-like emulation on the built-in emulator: machines, their monitor commands, UART and log.

The Robot keyword library (keywords.py) drives this, so the suites in edgesdk/hil/suites/ run unchanged here and
under `renode-test`. It follows Renode's model where the suites can observe it:

* machines are created and loaded with Renode monitor commands (`mach create`, `machine
  LoadPlatformDescription @x.repl`, `sysbus LoadELF @x.elf`, `include @script.resc`, `$var ?= value`,
  macros, `sysbus WriteDoubleWord ADDR VALUE`, ...): the subset in `Monitor.COMMANDS`; anything else is
  refused with a message naming the command, never ignored;
* the machine itself is edgesdk's Unicorn emulator (edgesdk.emulator.Machine), built from the same .repl
  Renode loads (edgesdk.renode.platform);
* time is virtual, as in Renode: the CPU executes PerformanceInMips (from the .repl) million instructions
  per virtual second, and every timeout of the UART and log testers is in virtual seconds;
* the emulation runs only while a keyword waits for something (Renode runs it in the background; the
  outcome a suite can observe is the same);
* UART lines are consumed by the waits that match them (Renode's TerminalTester); the exit device logs
  "firmware exited with code N." and stops the machine, as edgesdk/renode/EdgesdkSiFiveTestFinisher.cs does
  in Renode; a CPU fault stops the machine with an error in the log.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..board import PACKAGE_DIR, load_board
from ..dataclass_cache import dataclass, field
from ..errors import EdgesdkError
from ..renode.platform import (CPU_TYPE, EXIT_TYPE, MEMORY_TYPE, SIFIVE_GPIO_TYPE, SIFIVE_UART_TYPE, UART_TYPE, cpu_timing,
                               platform_board)
from ..renode.repl import read_repl

# Instructions per emulation slice between checks of the testers (0.1 virtual s at 200 MIPS, ~50 ms here).
SLICE_INSTRUCTIONS = 20_000_000
# Renode types the built-in emulator builds a machine from, besides those of the targets' peripherals
# (_target_types); the interrupt controllers are accepted but not modelled (edgesdk firmware polls and never
# enables interrupts).
MODELLED_TYPES = {MEMORY_TYPE, UART_TYPE, SIFIVE_UART_TYPE, SIFIVE_GPIO_TYPE, CPU_TYPE, EXIT_TYPE}
# The one CPU hook the built-in emulator accepts: Renode's stand-in for the semihosting exit on a board without an
# exit device (boards/hifive1-revb/hifive1-revb.resc), which the emulator answers itself (it logs the same line).
EXIT_HOOK_SYMBOL = "edgesdk_board_exit"
ACCEPTED_PREFIXES = ("IRQControllers.",)


def _csharp_peripheral_types() -> set:
    """Types defined by edgesdk's C# peripherals (the exit device and every target peripheral with a .cs file):
    usable only after `include @...cs` of their file, as in Renode."""
    from ..renode import peripheral_models

    return {EXIT_TYPE} | {kind for kind, model in peripheral_models().items()
                          if any(str(source).endswith(".cs") for source in model.renode_sources)}


def _target_types() -> set:
    """Renode types whose built-in emulator model an installed target provides (Target.peripherals())."""
    from ..renode.platform import PERIPHERAL_TYPES, peripheral_types

    return set(peripheral_types()) - set(PERIPHERAL_TYPES)


class RenodeError(Exception):
    """A monitor command or keyword failed; the message says what and why (like Renode's KeywordException)."""

    ROBOT_SUPPRESS_NAME = True  # Robot shows the message alone, as for Renode's remote errors


@dataclass
class LogEntry:
    level: str
    source: str
    message: str

    @property
    def full_message(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass
class UartLine:
    text: str
    virtual_ms: float


class BuiltinMachine:
    """One machine: its platform (.repl), firmware and, once the ELF is loaded, the emulator running it."""

    def __init__(self, name: str, emulation: "Emulation"):
        self.name = name
        self.emulation = emulation
        self.repl = None
        self.board = None
        self.machine = None  # edgesdk.emulator.Machine, created by `sysbus LoadELF`
        self.ips = None  # instructions per virtual second
        self.exit_code = None
        self.halted = None  # why the CPU stopped for good (exit or fault), or None while it can run
        self._uart_seen = 0
        self._partial = ""
        self.lines = []  # completed UART lines not yet consumed by a tester

    # -- loading --

    def load_platform(self, path: Path) -> None:
        repl = read_repl(path)
        for entry in repl.entries.values():
            if entry.type is None:
                continue
            if entry.type in _csharp_peripheral_types() and entry.type not in self.emulation.csharp_types:
                raise RenodeError(f"{path}:{entry.line}: type {entry.type} of '{entry.name}' is not known: include "
                                  "its C# file first (include @edgesdk/renode/...cs), as Renode requires.")
            modelled = MODELLED_TYPES | _target_types()
            if entry.type not in modelled and not entry.type.startswith(ACCEPTED_PREFIXES):
                raise RenodeError(f"{path}:{entry.line}: the built-in emulator does not model {entry.type} "
                                  f"('{entry.name}'); it models {', '.join(sorted(modelled))}.")
        self.repl = repl
        self.ips = cpu_timing(repl).instructions_per_second
        self.board = platform_board(repl, _board_for(path))

    def load_elf(self, path: Path) -> None:
        from ..emulator import Machine

        if self.repl is None:
            raise RenodeError("sysbus LoadELF: load a platform description first (machine LoadPlatformDescription).")
        if self.machine is not None:
            self.machine.close()
        self.machine = Machine(self.board, path)
        self.exit_code, self.halted = None, None
        self._uart_seen, self._partial, self.lines = 0, "", []

    def close(self) -> None:
        if self.machine is not None:
            self.machine.close()
            self.machine = None

    # -- bus access from the monitor --

    def write(self, address: int, data: bytes) -> None:
        self._require_elf("sysbus write")
        try:
            self.machine.write(address, data)
        except EdgesdkError as exc:
            raise RenodeError(f"{exc} The built-in emulator's sysbus writes reach flash and SRAM only.") from None

    def read(self, address: int, length: int) -> bytes:
        self._require_elf("sysbus read")
        try:
            return self.machine.read(address, length)
        except EdgesdkError as exc:
            raise RenodeError(f"{exc} The built-in emulator's sysbus reads reach flash and SRAM only.") from None

    def _require_elf(self, what: str) -> None:
        if self.machine is None:
            raise RenodeError(f"{what}: no firmware loaded on machine '{self.name}' (sysbus LoadELF first).")

    # -- running --

    @property
    def instructions(self) -> int:
        return self.machine.instructions() if self.machine is not None else 0

    @property
    def virtual_ms(self) -> float:
        return 1000.0 * self.instructions / self.ips if self.ips else 0.0

    def instructions_until(self, virtual_ms: float) -> int:
        return max(0, int(virtual_ms * self.ips / 1000.0) - self.instructions) if self.ips else SLICE_INSTRUCTIONS

    def run_slice(self, max_instructions: int = SLICE_INSTRUCTIONS) -> None:
        """Run one slice (if the CPU can still run) and collect the UART output and log entries it made."""
        if self.machine is None or self.halted is not None:
            return
        try:
            exited = self.machine.advance(min(max_instructions, SLICE_INSTRUCTIONS))
        except EdgesdkError as exc:
            self.halted = "fault"
            self.emulation.log("ERROR", "cpu", str(exc))
            exited = False
        self._collect_uart()
        if exited:
            self.halted = "exit"
            self.exit_code = self.machine.exit_code()
            self.emulation.log("INFO", _exit_device_name(self.repl), f"firmware exited with code {self.exit_code}.")

    def _collect_uart(self) -> None:
        text = self.machine.uart_text()
        new, self._uart_seen = text[self._uart_seen:], len(text)
        *complete, self._partial = (self._partial + new).split("\n")
        self.lines += [UartLine(line.rstrip("\r"), self.virtual_ms) for line in complete]

    @property
    def unfinished_line(self) -> str:
        return self._partial


def _board_for(repl_path: Path):
    """board.json of the board this .repl belongs to (same folder, board name = file stem), if any."""
    candidate = repl_path.resolve().parent / "board.json"
    if candidate.is_file():
        board = load_board(str(candidate))
        if board.name == repl_path.stem:
            return board
    return None


def _exit_device_name(repl) -> str:
    devices = repl.of_type(EXIT_TYPE) if repl is not None else []
    return devices[0].name if devices else "exit"


@dataclass
class Emulation:
    """Everything `Reset Emulation` clears: machines, monitor variables and macros, known C# types, log."""

    machines: dict = field(default_factory=dict)
    current: BuiltinMachine | None = None
    variables: dict = field(default_factory=dict)
    macros: dict = field(default_factory=dict)
    csharp_types: set = field(default_factory=set)
    log_entries: list = field(default_factory=list)
    started: bool = False

    def log(self, level: str, source: str, message: str) -> None:
        self.log_entries.append(LogEntry(level, source, message))

    def machine(self, name: str | None = None) -> BuiltinMachine:
        if name is not None:
            if name not in self.machines:
                raise RenodeError(f"Machine with name {name} not found. Available machines: [{', '.join(self.machines)}]")
            return self.machines[name]
        if self.current is None:
            raise RenodeError("There is no machine in the emulation (mach create first).")
        return self.current

    def run_slice(self, deadlines: dict | None = None) -> None:
        """One slice on every machine; `deadlines` {machine name: virtual ms} shortens the slice so a wait's
        timeout is not overrun by more than one translation block."""
        for machine in self.machines.values():
            budget = SLICE_INSTRUCTIONS
            if deadlines and machine.name in deadlines:
                budget = machine.instructions_until(deadlines[machine.name])
            machine.run_slice(budget)

    def can_run(self) -> bool:
        return any(m.machine is not None and m.halted is None for m in self.machines.values())

    def close(self) -> None:
        for machine in self.machines.values():
            machine.close()


class Monitor:
    """Renode monitor commands (the subset the edgesdk platform scripts and suites use) on an Emulation."""

    COMMANDS = ("$var=value", "$var?=value", "set", "include/i", "using", "mach create/set", "machine "
                "LoadPlatformDescription", "sysbus LoadELF", "sysbus Write{Byte,Word,DoubleWord}",
                "sysbus Read{Byte,Word,DoubleWord}", "sysbus GetSymbolAddress", "`command` substitution",
                f"cpu AddHook <{EXIT_HOOK_SYMBOL}> SCRIPT", "showAnalyzer", "macro", "runMacro", "start/s",
                "pause/p", "<exit device> ExitCode")

    def __init__(self, emulation: Emulation):
        self.emulation = emulation

    # -- scripts --

    def execute_script(self, path: Path) -> str:
        path = Path(path)
        if not path.is_file():
            raise RenodeError(f"Could not execute script: file {path} not found.")
        lines = path.read_text().splitlines()
        output = []
        index = 0
        while index < len(lines):
            line = lines[index].strip()
            index += 1
            if not line or line[0] in "#:":
                continue
            if line.split()[0] in ("macro", "set") and index < len(lines) and lines[index].strip() == '"""':
                body, index = _block(lines, index + 1, path)
                self._define(line, body, origin=path.parent)
                continue
            output.append(self.execute(line, origin=path.parent))
        return "".join(output)

    def _define(self, line: str, body: list, origin: Path) -> None:
        words = line.split()
        if len(words) != 2:
            raise RenodeError(f"Could not execute command '{line}': expected 'macro NAME' before a \"\"\" block.")
        if words[0] == "macro":
            self.emulation.macros[words[1]] = (body, origin)
        else:
            self.emulation.variables[words[1]] = "\n".join(body)

    # -- one command --

    def execute(self, command: str, machine: str | None = None, origin: Path | None = None) -> str:
        command = command.strip()
        if not command or command[0] in "#:":
            return ""
        assignment = re.fullmatch(r"\$(\w+)\s*(\??=)\s*(.+)", command)
        if assignment:
            name, operator, value = assignment.groups()
            if operator == "=" or name not in self.emulation.variables:
                self.emulation.variables[name] = self._expand(_tokens(value), origin)[0]
            return ""
        # `command`: run it and put its output in its place (Renode's monitor does the same).
        command = re.sub(r"`([^`]*)`", lambda m: self.execute(m.group(1), machine, origin).strip(), command)
        words = self._expand(_tokens(command), origin)
        verb, args = words[0], words[1:]
        handler = {
            "include": self._include, "i": self._include, "using": _ignore, "mach": self._mach,
            "machine": self._machine, "sysbus": self._sysbus, "showAnalyzer": self._show_analyzer,
            "runMacro": self._run_macro, "start": self._start, "s": self._start, "pause": self._pause,
            "p": self._pause, "set": self._set, "cpu": self._cpu, "sysbus.cpu": self._cpu,
        }.get(verb)
        if handler is None:
            handler = self._peripheral(verb, machine)
        if handler is None:
            raise RenodeError(f"Could not execute command '{command}': the built-in emulator's Renode monitor does "
                              f"not support '{verb}' (supported: {', '.join(self.COMMANDS)}).")
        return handler(args, machine) or ""

    def _expand(self, tokens: list, origin: Path | None) -> list:
        """Substitute $ORIGIN, $CWD and monitor variables; keep the rest as written."""
        result = []
        for token in tokens:
            if token.startswith("$ORIGIN"):
                if origin is None:
                    raise RenodeError("$ORIGIN is only available inside a script (.resc).")
                token = str(origin) + token[len("$ORIGIN"):]
            elif token.startswith("$CWD"):
                token = str(Path.cwd()) + token[len("$CWD"):]
            elif token.startswith("$"):
                name = token[1:]
                if name not in self.emulation.variables and name not in self.emulation.macros:
                    raise RenodeError(f"Variable ${name} is not set.")
                token = self.emulation.variables.get(name, token)
            result.append(token)
        return result

    # -- handlers --

    def _include(self, args: list, machine) -> str:
        path = _path(args, "include")
        if path.suffix == ".resc":
            return self.execute_script(path)
        if path.suffix == ".cs":
            self.emulation.csharp_types |= _csharp_types(path)
            return ""
        raise RenodeError(f"include {path}: the built-in emulator includes .resc scripts and edgesdk's .cs "
                          "peripherals only.")

    def _mach(self, args: list, machine) -> str:
        if args and args[0] == "create":
            name = args[1] if len(args) > 1 else f"machine-{len(self.emulation.machines)}"
            if name in self.emulation.machines:
                raise RenodeError(f"Machine {name} already exists.")
            self.emulation.machines[name] = self.emulation.current = BuiltinMachine(name, self.emulation)
            return ""
        if len(args) == 2 and args[0] == "set":
            key = args[1]
            names = list(self.emulation.machines)
            name = names[int(key)] if key.isdigit() and int(key) < len(names) else key
            self.emulation.current = self.emulation.machine(name)
            return ""
        raise RenodeError(f"mach {' '.join(args)}: the built-in emulator supports 'mach create [NAME]' and "
                          "'mach set NAME'.")

    def _machine(self, args: list, machine) -> str:
        if len(args) == 2 and args[0] == "LoadPlatformDescription":
            self.emulation.machine(machine).load_platform(_path(args[1:], "LoadPlatformDescription"))
            return ""
        raise RenodeError(f"machine {' '.join(args)}: only 'machine LoadPlatformDescription @file.repl' is supported.")

    def _sysbus(self, args: list, machine) -> str:
        target = self.emulation.machine(machine)
        if not args:
            raise RenodeError("sysbus: a method is needed (LoadELF, WriteDoubleWord, ReadDoubleWord, ...).")
        method, params = args[0], args[1:]
        if method == "LoadELF":
            target.load_elf(_path(params, "LoadELF"))
            return ""
        if method == "GetSymbolAddress" and len(params) == 1:
            target._require_elf("sysbus GetSymbolAddress")
            address = target.machine.elf.symbols.get(params[0])
            if address is None:
                raise RenodeError(f"sysbus GetSymbolAddress: no symbol {params[0]} in the loaded ELF.")
            return f"0x{address:X}\n"
        widths = {"Byte": 1, "Word": 2, "DoubleWord": 4}
        access = re.fullmatch(r"(Read|Write)(Byte|Word|DoubleWord)", method)
        if access:
            width = widths[access.group(2)]
            if access.group(1) == "Write" and len(params) == 2:
                target.write(_number(params[0]), (_number(params[1]) & ((1 << 8 * width) - 1)).to_bytes(width, "little"))
                return ""
            if access.group(1) == "Read" and len(params) == 1:
                value = int.from_bytes(target.read(_number(params[0]), width), "little")
                return f"0x{value:0{2 * width}X}\n"
        raise RenodeError(f"sysbus {' '.join(args)}: supported are LoadELF @file, Write{{Byte,Word,DoubleWord}} "
                          "ADDRESS VALUE and Read{Byte,Word,DoubleWord} ADDRESS.")

    def _cpu(self, args: list, machine) -> str:
        """`cpu AddHook ADDRESS SCRIPT`: accepted for the exit hook of a board without an exit device (at
        edgesdk_board_exit), which the built-in emulator answers itself: its semihosting exit logs
        "firmware exited with code N." and stops, as the hook's Python does in Renode. Other hooks would need
        Renode's Python API, so they are refused."""
        target = self.emulation.machine(machine)
        if len(args) == 3 and args[0] == "AddHook":
            target._require_elf("cpu AddHook")
            if _number(args[1]) == target.machine.elf.symbols.get(EXIT_HOOK_SYMBOL):
                return ""
            raise RenodeError(f"cpu AddHook {args[1]}: the built-in emulator runs no Renode Python hooks; it accepts "
                              f"only the exit hook on {EXIT_HOOK_SYMBOL}, whose exit it reports itself.")
        raise RenodeError(f"cpu {' '.join(args[:1])}: the built-in emulator supports only "
                          f"'cpu AddHook <{EXIT_HOOK_SYMBOL} address> SCRIPT'.")

    def _show_analyzer(self, args: list, machine) -> str:
        target = self.emulation.machine(machine)
        name = args[0].removeprefix("sysbus.") if args else ""
        if target.repl is None or name not in target.repl.entries:
            raise RenodeError(f"showAnalyzer {' '.join(args)}: no such peripheral.")
        return ""  # the UART output goes to the terminal testers; there is no window to open

    def _run_macro(self, args: list, machine) -> str:
        name = args[0].lstrip("$") if args else ""
        if name not in self.emulation.macros:
            raise RenodeError(f"runMacro {' '.join(args)}: no such macro.")
        body, origin = self.emulation.macros[name]
        return "".join(self.execute(line, machine, origin) for line in body)

    def _set(self, args: list, machine) -> str:
        if len(args) != 2:
            raise RenodeError("set NAME VALUE")
        self.emulation.variables[args[0]] = args[1]
        return ""

    def _start(self, args: list, machine) -> str:
        self.emulation.started = True
        return ""

    def _pause(self, args: list, machine) -> str:
        self.emulation.started = False
        return ""

    def _peripheral(self, verb: str, machine):
        """`exit ExitCode` / `sysbus.exit ExitCode`: the exit device's property, as in Renode."""
        target = self.emulation.current if machine is None else self.emulation.machine(machine)
        name = verb.removeprefix("sysbus.")
        if target is None or target.repl is None or name not in target.repl.entries:
            return None
        if target.repl[name].type != EXIT_TYPE:
            return None

        def exit_code(args, _machine):
            if args != ["ExitCode"]:
                raise RenodeError(f"{verb} {' '.join(args)}: the exit device has the property ExitCode only.")
            return f"{-1 if target.exit_code is None else target.exit_code}\n"

        return exit_code


def _ignore(args, machine) -> str:
    return ""


def _tokens(text: str) -> list:
    try:
        return shlex.split(text, posix=True)
    except ValueError as exc:
        raise RenodeError(f"Could not parse command '{text}': {exc}.") from None


def _block(lines: list, start: int, path: Path):
    body = []
    for index in range(start, len(lines)):
        if lines[index].strip() == '"""':
            return body, index + 1
        body.append(lines[index].strip())
    raise RenodeError(f'{path}: a """ block is not closed.')


def _path(args: list, what: str) -> Path:
    if len(args) != 1:
        raise RenodeError(f"{what}: expected one path argument, got {args}.")
    text = args[0].removeprefix("@")
    path = Path(text)
    if not path.is_absolute():
        # Renode looks in its own directory first, then the working directory; the edgesdk package (its
        # boards/, renode/) plays the part of Renode's directory here.
        for root in (PACKAGE_DIR, Path.cwd()):
            if (root / path).exists():
                return (root / path).resolve()
    if not path.exists():
        raise RenodeError(f"{what}: file {text} not found.")
    return path.resolve()


def _number(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise RenodeError(f"Expected a number, got {text!r}.") from None


def _csharp_types(path: Path) -> set:
    """Renode type names (namespace after Antmicro.Renode.Peripherals + class) defined in a C# file."""
    from ..renode import csharp_types

    if not path.is_file():
        raise RenodeError(f"include: file {path} not found.")
    types = csharp_types(path)
    if not types:
        raise RenodeError(f"include {path}: no peripheral in namespace Antmicro.Renode.Peripherals.* found.")
    return types
