"""The fuzz harness: feed mutated models to the compiler in a supervised worker process, classify outcomes.

Each input goes through what `edgesdk build` does before the cross-compile -- import, partition, memory
plan, codegen, the safety proof (edgesdk/verify.py), rendering of the C sources -- and optionally the whole
firmware build plus a run on the emulator. Outcomes:

* ok       the model compiled (and, with firmware runs, ran to a clean exit);
* error    a clear user-facing error (an edgesdk.errors.EdgesdkError: one paragraph, no traceback);
* crash    any other exception (a traceback the user would see) or the worker dying on a signal;
* hang     the input used up its CPU-time budget (an endless loop: the kernel stops the worker with
           SIGXCPU), or the worker gave no answer within a generous wall-clock backstop (blocked); the worker
           is restarted. The budget counts the worker's own CPU seconds, not wall-clock time, so a loaded
           machine that starves the worker does not turn a slow input into a hang;
* memory   MemoryError under the worker's address-space limit, or peak RSS above the blow-up threshold;
* unsafe   the generated C carries model text outside comments (an injection), does not compile without
           warnings, or a firmware run faulted, overflowed its stack, corrupted its arena guards or got an
           NPU error.

crash, hang, memory and unsafe are findings: the input is saved and must become a regression test
(tests/fuzz/regressions/, checked by tests/test_fuzz.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import random
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO.parent / "shared" / "models"
REGRESSIONS_DIR = Path(__file__).resolve().parent / "regressions"
FINDINGS = ("crash", "hang", "memory", "unsafe")
INJECTION_MARK = "injected_by_fuzz"
DEFAULT_TIMEOUT_S = 20.0  # CPU seconds one input may use (RLIMIT_CPU in the worker)
WALL_TIMEOUT_FACTOR = 10  # the wall-clock backstop (a blocked worker): this many times the CPU budget ...
MIN_WALL_TIMEOUT_S = 120.0  # ... and at least this long
DEFAULT_MEMORY_MB = 3072  # address-space limit of the worker
WORKER_START_TIMEOUT_S = 120.0
BLOWUP_RSS_MB = 1536  # peak resident memory that counts as a blow-up (the real models need < 250 MB)


@dataclass
class Outcome:
    kind: str
    detail: str = ""  # error class and message head, or the traceback
    seconds: float = 0.0
    peak_rss_mb: float = 0.0

    @property
    def signature(self) -> str:
        """What makes two outcomes 'the same' (numbers and paths removed), for novelty and crash dedup."""
        if self.kind == "crash" and "Traceback" in self.detail:
            frames = re.findall(r'File "([^"]+)", line (\d+)', self.detail)
            last = frames[-1] if frames else ("?", "?")
            return f"crash:{Path(last[0]).name}:{last[1]}:{self.detail.strip().splitlines()[-1][:80]}"
        text = re.sub(r"/\S+", "PATH", self.detail)
        text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", text)
        return f"{self.kind}:{text[:140]}"


# -- one input, in-process ---------------------------------------------------------------------------------
def check_input(data: bytes, target: str = "npu,c", rounding: str = "ref", work_dir=None, render: bool = True,
                firmware: bool = False) -> Outcome:
    """Compile one model (bytes) like `edgesdk build`; classify what happened. Never raises."""
    start = time.perf_counter()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with tempfile.TemporaryDirectory(prefix="edgesdk-fuzz-", dir=work_dir) as tmp:
        try:
            kind, detail = _compile(data, Path(tmp), target, rounding, render, firmware)
        except MemoryError:
            kind, detail = "memory", "MemoryError"
        except RecursionError:
            kind, detail = "crash", traceback.format_exc()
        except Exception as exc:  # noqa: BLE001 - classified below
            from edgesdk.errors import EdgesdkError

            if isinstance(exc, EdgesdkError):
                kind, detail = "error", f"{type(exc).__name__}: {str(exc)[:300]}"
            else:
                kind, detail = "crash", traceback.format_exc()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if kind in ("ok", "error") and rss > BLOWUP_RSS_MB and rss > rss_before:  # this input raised the peak
        kind, detail = "memory", f"peak RSS {rss:.0f} MB after: {detail[:200]}"
    return Outcome(kind, detail, time.perf_counter() - start, rss)


def _compile(data: bytes, tmp: Path, target: str, rounding: str, render: bool, firmware: bool) -> tuple:
    from edgesdk.aot.render import render_sources
    from edgesdk.compiler import BuildOptions, build, compile_model
    from edgesdk.verify import verify_build

    model = tmp / "fuzz_input.tflite"
    model.write_bytes(data)
    options = BuildOptions(target=target, rounding=rounding, compile_firmware=firmware, werror=firmware)
    compiled = compile_model(model, options)
    verify_build(compiled)
    if render and not firmware:
        src = tmp / "src"
        render_sources(compiled.executor, src, source=model.name, board=compiled.board.name, rounding=rounding)
        leak = find_injection(src)
        if leak:
            return "unsafe", leak
    if firmware:
        from edgesdk.errors import ToolchainError

        try:
            build(model, tmp / "out", options)
        except ToolchainError as exc:  # with -Werror: a warning in generated code is a bug (often a UB hint)
            return "unsafe", f"the generated sources do not compile warning-free: {exc}"
        leak = find_injection(tmp / "out" / "src")
        if leak:
            return "unsafe", leak
        return _run_firmware(tmp / "out")
    return "ok", ""


def _run_firmware(out: Path) -> tuple:
    from edgesdk.errors import EmulatorError
    from edgesdk.runner import failure_message, load_report, random_inputs, run_inference

    report = load_report(out)
    try:
        result = run_inference(out, random_inputs(report, 0), timeout_s=60)
    except EmulatorError as exc:  # a fault, a stack overflow or a time-out of verified firmware
        return "unsafe", f"firmware run: {exc}"
    if result.exit_code != 0:
        return "unsafe", f"firmware run: {failure_message(result)}"
    return "ok", "firmware ran"


def strip_c_comments(text: str) -> str:
    """C source without comments; string and character literals are kept (they are code)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def find_injection(src: Path) -> str:
    """'' if no model text escaped a comment in the generated sources, else where it did.

    Model names reach C comments (sanitized text) and identifiers (letters, digits, underscores). The
    fuzzer's hostile names carry INJECTION_MARK inside code-like text ('= 1;', a quote, a directive): such
    text outside a comment means a name broke out of its comment or string. Any control character (other
    than newline) or non-ASCII byte anywhere is a finding too (line splices, escapes, trigraph-free text)."""
    for path in sorted(Path(src).glob("*.[ch]")):
        text = path.read_text(encoding="latin-1")
        bad = re.search(r"[^\x20-\x7e\n]|\?\?[=/'()!<>\-]", text)
        if bad:
            line = text.count("\n", 0, bad.start()) + 1
            return f"{path.name}:{line}: control, non-ASCII or trigraph text {bad.group()!r}"
        code = strip_c_comments(text)
        m = re.search(rf"[^\w]{INJECTION_MARK}\s*=|#\s*error|\"[^\"\n]*{INJECTION_MARK}", code)
        if m:
            return f"{path.name}: model text outside a comment: {code[max(0, m.start() - 40):m.end() + 20]!r}"
    return ""


# -- the supervised worker ---------------------------------------------------------------------------------
def _send(stream, obj) -> None:
    payload = pickle.dumps(obj)
    stream.write(struct.pack("<Q", len(payload)) + payload)
    stream.flush()


def _receive(stream):
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("the worker closed its pipe")
    (length,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(length))


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _set_cpu_budget(seconds: float) -> None:
    """Let the worker use `seconds` more CPU time from now on: the kernel sends SIGXCPU (which ends the
    process) when it has used that much. RLIMIT_CPU counts whole seconds of this process's CPU time, so
    the budget measures the work done, whatever else the machine runs."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = math.ceil(_cpu_seconds()) + max(1, math.ceil(seconds))
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))


def worker_main() -> None:
    """The worker process: read jobs from stdin, answer Outcomes on stdout, under an address-space limit
    and a CPU-time budget per input."""
    limit = int(os.environ.get("EDGESDK_FUZZ_MEMORY_MB", DEFAULT_MEMORY_MB)) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would dump core into the repository
    cpu_budget = float(os.environ.get("EDGESDK_FUZZ_CPU_S", DEFAULT_TIMEOUT_S))
    jobs, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answer pipe
    # Import once, before the first input: start-up is not part of any input's budget.
    import edgesdk.aot.render  # noqa: F401
    import edgesdk.compiler  # noqa: F401
    import edgesdk.verify  # noqa: F401
    _send(answers, "ready")
    while True:
        try:
            job = _receive(jobs)
        except EOFError:
            return
        _set_cpu_budget(cpu_budget * (FIRMWARE_FACTOR if job[5] else 1))
        try:
            if os.environ.get("EDGESDK_FUZZ_SELFTEST") and job[0] in SELFTEST_FAULTS:
                SELFTEST_FAULTS[job[0]]()  # tests/test_fuzz.py: check that the supervisor classifies faults
            outcome = check_input(*job)
        except MemoryError:
            outcome = Outcome("memory", "MemoryError under the worker's address-space limit")
        _send(answers, outcome)


def _spin_forever():
    """An endless loop, as a compiler bug would make one: it burns CPU until the budget stops it."""
    n = 0
    while True:
        n += 1


def _allocate_forever():
    hoard = []
    while True:
        hoard.append(bytearray(64 << 20))


def _hang_once():
    """Spin the first time only (a marker file remembers it across workers): an input that does not time
    out again on a fresh worker (as when a worker was starved) is not counted as a hang."""
    mark = Path(os.environ["EDGESDK_FUZZ_SELFTEST_MARK"])
    if not mark.exists():
        mark.write_text("hung once\n")
        _spin_forever()


# Inputs that make a worker started with EDGESDK_FUZZ_SELFTEST=1 misbehave on purpose.
SELFTEST_FAULTS = {
    b"selftest:hang": _spin_forever,
    b"selftest:block": lambda: time.sleep(3600),  # blocked, using no CPU: only the wall-clock backstop ends it
    b"selftest:hang-once": _hang_once,
    b"selftest:die": lambda: os.kill(os.getpid(), 9),
    b"selftest:memory": _allocate_forever,
}


FIRMWARE_FACTOR = 6  # a firmware build and run may use this many times the budget


class Worker:
    """A child process that runs check_input under an address-space limit; killed and restarted on a hang.

    `timeout_s` is the CPU time one input may use (the worker's own, counted by the kernel: a loaded
    machine does not shorten it); `wall_timeout_s` is the backstop for a worker that blocks without using
    CPU (default: WALL_TIMEOUT_FACTOR x the budget, at least MIN_WALL_TIMEOUT_S)."""

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = DEFAULT_MEMORY_MB,
                 wall_timeout_s: float | None = None):
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self.wall_timeout_s = wall_timeout_s or max(MIN_WALL_TIMEOUT_S, WALL_TIMEOUT_FACTOR * timeout_s)
        self.process = None

    def _start(self) -> None:
        env = dict(os.environ, EDGESDK_FUZZ_MEMORY_MB=str(self.memory_mb), EDGESDK_FUZZ_CPU_S=str(self.timeout_s),
                   PYTHONPATH=os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen([sys.executable, "-c", "from fuzz.harness import worker_main; worker_main()"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        env=env, cwd=REPO)
        # Start-up (imports) is not part of any input's time limit.
        ready, _, _ = select.select([self.process.stdout], [], [], WORKER_START_TIMEOUT_S)
        if not ready or _receive(self.process.stdout) != "ready":
            self.stop()
            raise RuntimeError("the fuzz worker process did not start (try: python3 -c 'import edgesdk.compiler')")

    def run(self, data: bytes, target: str, rounding: str, render: bool = True, firmware: bool = False) -> Outcome:
        if self.process is None or self.process.poll() is not None:
            self._start()
        factor = FIRMWARE_FACTOR if firmware else 1
        wall_timeout = self.wall_timeout_s * factor
        start = time.perf_counter()
        try:
            _send(self.process.stdin, (data, target, rounding, None, render, firmware))
            ready, _, _ = select.select([self.process.stdout], [], [], wall_timeout)
            if ready:
                return _receive(self.process.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            pass
        elapsed = time.perf_counter() - start
        alive = self.process.poll() is None
        code = self.stop()
        if code == -signal.SIGXCPU:
            return Outcome("hang", f"used up its budget of {self.timeout_s * factor:g} CPU seconds (an endless "
                                   "loop; the kernel stopped it with SIGXCPU)", elapsed)
        if alive and elapsed >= wall_timeout:
            return Outcome("hang", f"no answer within {wall_timeout:g} s of wall-clock time (blocked)", elapsed)
        return Outcome("crash", f"the worker process died (exit code {code}: a signal or the memory limit)", elapsed)

    def stop(self):
        """End the worker (our own child, by its handle); return its exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            stream.close()
        self.process = None
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# -- the campaign -------------------------------------------------------------------------------------------
def seed_corpus(shared: bool = True, single_ops: bool = True) -> dict:
    """name -> bytes: the real models of ../shared/models and edgesdk's single-op test models (every op)."""
    seeds = {}
    if shared:
        for path in sorted(MODELS_DIR.glob("*/*.tflite")):
            seeds[path.stem] = path.read_bytes()
    if single_ops:
        sys.path.insert(0, str(REPO / "tests"))
        import modelgen

        for name, data in modelgen.single_op_suite(0):
            seeds[f"op_{name}"] = data
    return seeds


@dataclass
class Stats:
    inputs: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)  # error class -> count
    signatures: set = field(default_factory=set)
    findings: list = field(default_factory=list)  # dicts
    proof_catches: list = field(default_factory=list)  # VerificationError inputs: gaps in the earlier checks
    slowest_s: float = 0.0
    peak_rss_mb: float = 0.0
    firmware_runs: int = 0
    timeouts_not_reproduced: int = 0  # time-outs that a fresh worker did not repeat (a starved worker)

    def summary(self) -> dict:
        return {"inputs": self.inputs, "seconds": round(self.seconds, 1),
                "inputs_per_second": round(self.inputs / self.seconds, 1) if self.seconds else 0,
                "outcomes": dict(self.outcomes), "errors": dict(self.errors.most_common()),
                "distinct_outcomes": len(self.signatures), "firmware_runs": self.firmware_runs,
                "crashes": self.outcomes["crash"], "hangs": self.outcomes["hang"],
                "timeouts_not_reproduced": self.timeouts_not_reproduced,
                "memory_blowups": self.outcomes["memory"], "unsafe": self.outcomes["unsafe"],
                "unique_findings": len({f["signature"] for f in self.findings}),
                "caught_only_by_safety_proof": len(self.proof_catches),
                "slowest_input_s": round(self.slowest_s, 2), "worker_peak_rss_mb": round(self.peak_rss_mb),
                "findings": self.findings}


def fuzz(seeds: dict, *, iterations: int | None = None, seconds: float | None = None, seed: int = 0,
         findings_dir=None, firmware_every: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S,
         memory_mb: int = DEFAULT_MEMORY_MB, max_corpus_additions: int = 300, log=None) -> Stats:
    """Run mutants until `iterations` inputs or `seconds` elapsed (whichever first); return the statistics.

    Mutants whose outcome is new (by signature) join the corpus, so later mutations build on inputs that
    got further into the compiler. With `firmware_every` = N, every Nth model that compiles is also built
    into firmware and run on the emulator."""
    from .mutate import Mutator

    rng = random.Random(seed)
    mutator = Mutator(seeds, rng)
    stats = Stats()
    start = time.perf_counter()
    with Worker(timeout_s, memory_mb) as worker:
        try:
            _campaign(stats, worker, mutator, rng, iterations, seconds, start, findings_dir, firmware_every,
                      max_corpus_additions, log)
        except KeyboardInterrupt:  # Ctrl-C ends a long run early: the figures so far are still reported
            if log:
                log(f"interrupted after {stats.inputs} inputs")
    stats.seconds = time.perf_counter() - start
    return stats


def _campaign(stats: Stats, worker: Worker, mutator, rng, iterations, seconds, start, findings_dir, firmware_every,
              max_corpus_additions, log) -> None:
    """The fuzz loop (see fuzz()); updates `stats` in place, so an interrupted run keeps its figures."""
    added = 0
    compiled_ok = 0
    while (iterations is None or stats.inputs < iterations) and (seconds is None or time.perf_counter() - start < seconds):
        data, description = mutator.mutant()
        target, rounding = rng.choice(["npu,c", "c"]), rng.choice(["ref", "tflm"])
        outcome = run_confirmed(worker, stats, data, target, rounding)
        if outcome.kind == "ok" and firmware_every:
            compiled_ok += 1
            if compiled_ok % firmware_every == 0:
                stats.firmware_runs += 1
                outcome = run_confirmed(worker, stats, data, target, rounding, firmware=True)
        stats.inputs += 1
        stats.outcomes[outcome.kind] += 1
        if outcome.kind == "error":
            stats.errors[outcome.detail.split(":")[0]] += 1
        stats.slowest_s = max(stats.slowest_s, outcome.seconds)
        stats.peak_rss_mb = max(stats.peak_rss_mb, outcome.peak_rss_mb)
        signature = outcome.signature
        if signature not in stats.signatures:
            stats.signatures.add(signature)
            if outcome.detail.startswith("VerificationError"):  # a gap in the earlier checks: keep it
                stats.proof_catches.append(_record(data, description, target, rounding, outcome, findings_dir,
                                                   prefix="proof"))
                if log:
                    log(f"caught by the safety proof: {description} [{target}, {rounding}]: {outcome.detail}")
            if added < max_corpus_additions and outcome.kind in ("ok", "error"):
                mutator.add_seed(f"novel{added}", data)
                added += 1
        if outcome.kind in FINDINGS:
            stats.findings.append(_record(data, description, target, rounding, outcome, findings_dir))
            if log:
                log(f"FINDING {outcome.kind}: {description} [{target}, {rounding}]\n{outcome.detail[-1500:]}")
        if log and stats.inputs % 500 == 0:
            log(f"{stats.inputs} inputs, {time.perf_counter() - start:.0f} s: {dict(stats.outcomes)}")


def run_confirmed(worker: Worker, stats: Stats, data: bytes, target: str, rounding: str, firmware: bool = False):
    """worker.run, with a time-out confirmed on a fresh worker: an input is a hang only when it times out
    twice in a row (the CPU budget barely depends on the machine's load, but the wall-clock backstop does,
    and a worker can be starved for it). Time-outs that do not repeat are counted, not hidden."""
    outcome = worker.run(data, target, rounding, firmware=firmware)
    if outcome.kind != "hang":
        return outcome
    again = worker.run(data, target, rounding, firmware=firmware)  # the hung worker was killed: a fresh one
    if again.kind != "hang":
        stats.timeouts_not_reproduced += 1
    return again


def _record(data: bytes, description: str, target: str, rounding: str, outcome: Outcome, findings_dir,
            prefix: str = "") -> dict:
    digest = hashlib.sha256(data).hexdigest()[:12]
    prefix = prefix or outcome.kind
    entry = {"kind": outcome.kind, "signature": outcome.signature, "mutation": description, "target": target,
             "rounding": rounding, "sha256_12": digest, "detail": outcome.detail[-3000:]}
    if findings_dir is not None:
        directory = Path(findings_dir)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{prefix}-{digest}.tflite").write_bytes(data)
        (directory / f"{prefix}-{digest}.json").write_text(json.dumps(entry, indent=2) + "\n")
        entry["file"] = str(directory / f"{prefix}-{digest}.tflite")
    return entry


def regression_cases() -> list:
    """[(path, manifest entry)] of the kept regression inputs (tests/fuzz/regressions/manifest.json)."""
    manifest = json.loads((REGRESSIONS_DIR / "manifest.json").read_text())
    return [(REGRESSIONS_DIR / entry["file"], entry) for entry in manifest["inputs"]]


if __name__ == "__main__":  # pragma: no cover - use scripts/fuzz.py
    print("run scripts/fuzz.py", file=sys.stderr)
    sys.exit(os.EX_USAGE)
