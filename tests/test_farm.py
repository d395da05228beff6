"""Device farms (edgesdk/farm, docs/farm.md): `edgesdk regress` and `edgesdk tune --workers/--cluster`.

* The slow tests start a real Ray cluster of two CPUs (a head in a subprocess, with token authentication as Ray
  sets it up, torn down after) and check that `regress --cluster` and `tune --workers 2` (a private local Ray
  instance) give exactly the serial run's results, and that no Ray process outlives them.
  `regress --run-on board` runs on a board a cluster node offers, with QEMU under its GDB server as the probe.
* The fast ones: the host-library cache under concurrent first use, the usage errors (unreachable cluster, bad
  options), each with exit code 7 and no traceback, before any work, and loading a board through a probe's flash
  commands (a fake OpenOCD-like server) and reading the firmware's exit status at its exit call.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import REPO, model_path

ACCUMULATOR = REPO / "tests" / "models" / "state" / "accumulator_int8.tflite"  # stateful: resource variables


def edgesdk(*args, env=None, timeout=900):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cmdlines() -> dict:
    """{pid: command line} of every process on this machine."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return found


def _ray_processes(under: int | None = None) -> set:
    """pids of Ray's daemons and workers on this machine (raylet, gcs_server, ray:: workers); with `under`, only
    the descendants of that process. Another test may run a Ray instance of its own at the same time (the other
    pytest-xdist worker), so a check about one instance looks at that instance's processes only."""
    found = {pid for pid, cmdline in _cmdlines().items()
             if "/ray/core/src/ray/" in cmdline or cmdline.startswith("ray::") or "ray/_private/workers/" in cmdline}
    return found if under is None else found & _descendants(under)


def _workers_running_tasks(under: int) -> set:
    """pids of the Ray workers below the head `under` that still run a task (a worker names itself
    `ray::<task>` while it runs one). Not the node's agents, which may still be starting when a test looks, nor
    `ray::IDLE`: Ray keeps idle workers for the next job, up to the node's CPUs."""
    names = _cmdlines()
    return {pid for pid in _ray_processes(under=under)
            if names.get(pid, "").startswith("ray::") and not names.get(pid, "").startswith("ray::IDLE")
            and not names.get(pid, "").split()[0].endswith("Agent")}


def _descendants(root: int) -> set:
    """`root` and every process below it (by parent pid)."""
    children: dict = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += children.get(pid, [])
    return found


def _ray_head_processes() -> set:
    """Every process of a `ray start --head` node on this machine (the ray_head fixture's, in any worker)."""
    heads = [pid for pid, cmdline in _cmdlines().items() if " start --head" in cmdline]
    return set().union(*(_descendants(pid) for pid in heads)) if heads else set()


def _head_pid(address: str) -> int:
    port = address.rsplit(":", 1)[1]
    (pid,) = [pid for pid, cmdline in _cmdlines().items() if " start --head" in cmdline and f"--port={port} " in cmdline]
    return pid


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


# ---- fast: the caches and the usage errors -------------------------------------------------------------------

def test_concurrent_first_uses_of_the_host_library_cache_compile_once(tmp_path):
    """Four processes ask for the same, not yet cached, host library at the same moment (as the workers of
    `regress --workers 4` do at their first emulator run): the compiler runs once, all four get the same intact
    library. The compiler is a wrapper that logs each call."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "cc-logging"
    wrapper.write_text(f"#!/bin/sh\necho call >> {log}\nexec {compiler} \"$@\"\n")
    wrapper.chmod(0o755)
    source = tmp_path / "answer.c"
    source.write_text("int answer(void) { return 42; }\n")
    go = tmp_path / "go"
    script = (f"import os, time, ctypes\nfrom edgesdk import hostcc\nwhile not os.path.exists({str(go)!r}): "
              f"time.sleep(0.005)\npath = hostcc.build_shared_library('answer', [{str(source)!r}])\n"
              "assert ctypes.CDLL(str(path)).answer() == 42\nprint(path)\n")
    env = {**os.environ, "EDGESDK_CACHE": str(tmp_path / "cache"), "CC": str(wrapper),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    time.sleep(1.0)  # let them all import and wait at the start line (the count below holds either way)
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outputs]
    assert len({out.strip() for out, _ in outputs}) == 1
    assert log.read_text().count("call") == 1


def test_an_unreachable_cluster_is_a_usage_error(tmp_path):
    pytest.importorskip("ray")
    port = _free_port()  # nothing listens there
    started = time.monotonic()
    proc = edgesdk("regress", model_path("hello_world"), "--cluster", f"127.0.0.1:{port}", "-o", tmp_path / "out")
    assert proc.returncode == 7, proc.stderr
    assert f"Cannot reach the Ray cluster at 127.0.0.1:{port}" in proc.stderr and "ray start --head" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert time.monotonic() - started < 120  # Ray alone would retry for minutes
    proc = edgesdk("tune", model_path("hello_world"), "--cluster", f"127.0.0.1:{port}", "-o", tmp_path / "log.json")
    assert proc.returncode == 7 and "Cannot reach the Ray cluster" in proc.stderr
    assert not (tmp_path / "log.json").exists()


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers must be 1"),
    (["--workers", "2", "--cluster", "h:6379"], "either --workers N"),
    (["--cluster", "no-port-here"], "is not a Ray cluster address"),
    (["--seeds", "0,x"], "each seed is an integer"),
    (["--seeds", "0,,1"], "has an empty entry"),
    (["--boards", "riscv-npu,nope"], "Unknown board 'nope'"),
    (["--targets", "npu,c;gpu"], "unknown target(s) gpu"),
])
def test_regress_usage_errors_stop_before_any_work(tmp_path, args, message):
    proc = edgesdk("regress", model_path("hello_world"), *args, "-o", tmp_path / "out")
    assert proc.returncode == 7 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_regress_table_has_a_cycles_column_per_peripheral_any_row_uses():
    """No accelerator is special: each peripheral a row's build used gets a column named as its board names it
    (a plugin's LUT-1 beside the NPU), "-" in rows that did not use it."""
    from edgesdk.farm.regress import _totals, summary_table

    def row(model, targets, cycles):
        return {"model": model, "board": "riscv-npu-lut", "targets": targets, "status": "pass", "sram_bytes": 32,
                "flash_bytes": 2872, "instructions": 226, "peripheral_cycles": cycles, "message": None,
                "exit_code": None, "name": model}

    rows = [row("a.tflite", "lut,npu,c", {"lut0": 451, "npu0": 48008}), row("b.tflite", "npu,c", {"npu0": 822}),
            row("c.tflite", "c", {})]
    summary = {"rows": rows, "totals": _totals(rows), "seeds": [0], "rounding": "ref", "run_on": "builtin",
               "workers": "serial"}
    lines = summary_table(summary).splitlines()
    assert lines[0].split()[8:] == ["instructions", "lut0", "cycles", "npu0", "cycles"]
    assert [line.split()[-2:] for line in lines[2:5]] == [["451", "48,008"], ["-", "822"], ["-", "-"]]
    assert "NPU" not in "\n".join(lines)


def test_regress_without_targets_takes_each_board_default():
    """No --targets: one row per board with that board's own default_targets (riscv-npu npu,c as before; the
    HiFive1, which has no NPU, its host core instead of a skipped row)."""
    from edgesdk.farm.regress import RegressOptions, row_specs

    specs = row_specs([model_path("hello_world")], RegressOptions(boards=("riscv-npu", "hifive1-revb")))
    assert [(spec.board, spec.targets) for spec in specs] == [("riscv-npu", "npu,c"), ("hifive1-revb", "c")]
    stem = model_path("hello_world").stem
    assert [spec.name for spec in specs] == [f"{stem}--riscv-npu--npu+c", f"{stem}--hifive1-revb--c"]


def test_regress_refuses_a_missing_model_and_a_directory_of_yours(tmp_path):
    proc = edgesdk("regress", tmp_path / "missing.tflite", "-o", tmp_path / "out")
    assert proc.returncode == 7 and "does not exist" in proc.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    proc = edgesdk("regress", model_path("hello_world"), "-o", mine)
    assert proc.returncode == 7 and "was not written by edgesdk" in proc.stderr
    assert (mine / "notes.txt").read_text() == "keep"


# ---- slow: a two-CPU Ray cluster against the serial run ------------------------------------------------------

@pytest.fixture(scope="module")
def hifive1_gdb_server():
    """The stand-in for a HiFive1 Rev B on a probe: QEMU's sifive_e machine halted at reset under its GDB server
    on a TCP port, as OpenOCD would serve the real board. Yields HOST:PORT."""
    qemu = shutil.which("qemu-system-riscv32")
    if qemu is None:
        pytest.skip("qemu-system-riscv32 is not installed (scripts/setup.sh installs qemu-system-misc)")
    port = _free_port()
    proc = subprocess.Popen([qemu, "-M", "sifive_e,revb=true", "-display", "none", "-serial", "null", "-monitor",
                             "none", "-semihosting-config", "enable=on,target=native", "-icount", "shift=0",
                             "-gdb", f"tcp:127.0.0.1:{port}", "-S"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def ray_head(hifive1_gdb_server):
    """A Ray head with 2 CPUs and the board HiFive1 Rev B attached (resource board:hifive1-revb, its GDB server in
    EDGESDK_GDB_SERVER_HIFIVE1_REVB), started as a user would (docs/farm.md: `ray start --head`) with token
    authentication; yields (address, env for the commands). Torn down after, with every process it started."""
    pytest.importorskip("ray")
    ray_cli = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="edgesdk-ray-")  # short: Ray's socket paths live under it
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)}
    head = subprocess.Popen([ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                             "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp_dir}",
                             "--resources", json.dumps({"board:hifive1-revb": 1})],
                            env={**env, "EDGESDK_GDB_SERVER_HIFIVE1_REVB": hifive1_gdb_server},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and head.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        assert head.poll() is None, head.stderr.read()
        yield f"127.0.0.1:{port}", env
    finally:
        started = _ray_processes(under=head.pid)
        assert started, "no Ray process found below the head: the check below would check nothing"
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops the node's processes when it ends
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        head.stderr.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in started):
            time.sleep(0.5)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not [p for p in started if _alive(p)], "Ray processes outlived the head"


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow  # 6 firmware builds twice, one Ray cluster
def test_regress_on_a_two_cpu_cluster_equals_the_serial_run(ray_head, tmp_path):
    from edgesdk.farm.regress import deterministic_rows

    address, env = ray_head
    args = [model_path("hello_world"), ACCUMULATOR, "--boards", "riscv-npu,hifive1-revb", "--targets", "npu,c;c;dsp",
            "--seeds", "0,1"]
    serial = edgesdk("regress", *args, "-o", tmp_path / "serial", env=env)
    assert serial.returncode == 8, serial.stderr  # the dsp rows fail: the DSP runs none of these ops
    head = _head_pid(address)
    farmed = edgesdk("regress", *args, "--cluster", address, "-o", tmp_path / "farmed", env=env)
    assert farmed.returncode == 8, farmed.stderr
    deadline = time.monotonic() + 30  # the raylet ends a finished job's workers when it sees the driver gone
    while _workers_running_tasks(under=head) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _workers_running_tasks(under=head)  # the command left no task running on the cluster
    a, b = _summary(tmp_path / "serial"), _summary(tmp_path / "farmed")
    assert deterministic_rows(a) == deterministic_rows(b)
    assert a["workers"] == "serial, in this process" and b["workers"] == f"Ray cluster {address}"

    status = {(Path(r["model"]).stem, r["board"], r["targets"]): r["status"] for r in a["rows"]}
    for model in ("hello_world_int8", "accumulator_int8"):
        assert status[(model, "riscv-npu", "npu,c")] == status[(model, "riscv-npu", "c")] == "pass"
        assert status[(model, "hifive1-revb", "c")] == "pass"
        assert status[(model, "hifive1-revb", "npu,c")] == status[(model, "hifive1-revb", "dsp")] == "skipped"
        assert status[(model, "riscv-npu", "dsp")] == "error"
    assert a["totals"] == {"rows": 12, "pass": 6, "mismatch": 0, "error": 2, "skipped": 4}
    for row in a["rows"]:
        if row["status"] == "pass":  # the figures are the build's and the emulator's
            report = json.loads((tmp_path / "farmed" / row["dir"] / "report.json").read_text())
            assert (row["sram_bytes"], row["flash_bytes"]) == (report["memory"]["sram_peak_bytes"],
                                                               report["memory"]["flash_bytes"])
            assert (tmp_path / "farmed" / row["dir"] / "firmware.elf").is_file()
            assert [r["seed"] for r in row["runs"]] == [0, 1] and all(r["bit_exact"] for r in row["runs"])
            assert row["instructions"] == row["runs"][0]["instructions"] > 0
            assert (row["peripheral_cycles"].get("npu0") or 0) > 0 if row["targets"] == "npu,c" else True
            assert row["peripheral_cycles"] == row["runs"][0]["peripheral_cycles"]
        elif row["status"] == "error":
            assert row["exit_code"] == 3 and "cannot run" in row["message"] and row["dir"] is None
            assert f"{row['name']} (error, exit code 3)" in farmed.stdout
    table = (tmp_path / "farmed" / "summary.txt").read_text()
    assert table in farmed.stdout and "6 of 12 rows passed, 2 did not build or run, 4 skipped" in table
    assert farmed.stderr.count("] ") >= 8  # progress: one line per row that ran


@pytest.mark.slow  # 2 firmware builds, 4 runs through a GDB server
def test_regress_runs_on_the_board_a_cluster_node_offers(ray_head, tmp_path):
    """--run-on board: the rows go to the node offering board:hifive1-revb and run on its board through the GDB
    server named there (QEMU standing in for the probe): bit-exact, with the built-in emulator's instruction counts,
    a stateful model included (its state is reset at each boot). A board no node offers is a usage error."""
    from edgesdk.farm.regress import deterministic_rows

    address, env = ray_head
    args = [model_path("hello_world"), ACCUMULATOR, "--boards", "hifive1-revb", "--targets", "c", "--seeds", "0,1"]
    on_board = edgesdk("regress", *args, "--run-on", "board", "--cluster", address, "-o", tmp_path / "board", env=env)
    assert on_board.returncode == 0, on_board.stderr + on_board.stdout
    emulated = edgesdk("regress", *args, "-o", tmp_path / "emulated")
    assert emulated.returncode == 0, emulated.stderr
    a, b = _summary(tmp_path / "board"), _summary(tmp_path / "emulated")
    assert a["run_on"] == "board" and [r["status"] for r in a["rows"]] == ["pass", "pass"]
    assert deterministic_rows(a) == deterministic_rows(b)  # same outputs, same instruction counts

    proc = edgesdk("regress", model_path("hello_world"), "--boards", "riscv-npu", "--run-on", "board", "--cluster",
                   address, "-o", tmp_path / "none", env=env)
    assert proc.returncode == 7 and "No node of the Ray cluster" in proc.stderr and "board:riscv-npu" in proc.stderr
    assert "ray start --address" in proc.stderr and not (tmp_path / "none").exists()


@pytest.mark.slow  # two tuning runs of hello_world, 3 firmware builds each; one local Ray instance
def test_tune_on_two_local_workers_equals_the_serial_run(tmp_path):
    pytest.importorskip("ray")
    args = [model_path("hello_world"), "--verify", "3", "--seconds", "120"]
    serial = edgesdk("tune", *args, "-o", tmp_path / "serial.json")
    assert serial.returncode == 0, serial.stderr
    before = _ray_processes()
    farmed = edgesdk("tune", *args, "--workers", "2", "-o", tmp_path / "farmed.json")
    assert farmed.returncode == 0, farmed.stderr
    assert "measuring 3 candidates on 2 local Ray worker processes" in farmed.stderr
    left = _ray_processes() - before - _ray_head_processes()  # not the ray_head fixture's, should it run meanwhile
    assert not [p for p in left if _alive(p)], "the local Ray instance outlived the command"

    def without_timing(path):
        log = json.loads(path.read_text())
        assert log["search"]["complete"] and log["search"]["verified"] == 3
        for key in ("search_s", "total_s"):
            log["search"].pop(key)
        return log

    a, b = without_timing(tmp_path / "serial.json"), without_timing(tmp_path / "farmed.json")
    assert a == b
    assert all(entry["measured"]["bit_exact"] for entry in (a["chosen"], a["runner_up"], a["baseline"]))


# ---- fast: loading and exit status through a probe's GDB server ---------------------------------------------

class _FakeProbe:
    """A GDB server as OpenOCD is one for a board with flash: a memory map naming a flash region (4 KiB blocks)
    that only the vFlash commands program, RAM that M writes."""

    FLASH, RAM = (0x20000000, 0x10000), (0x80000000, 0x4000)

    def __init__(self):
        import threading

        self.memory, self.erased, self.flash_writes, self.ram_writes = {}, [], 0, 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _reply(self, payload: bytes) -> bytes:
        memory_map = (f'<memory-map><memory type="flash" start="{self.FLASH[0]:#x}" length="{self.FLASH[1]:#x}">'
                      '<property name="blocksize">0x1000</property></memory>'
                      f'<memory type="ram" start="{self.RAM[0]:#x}" length="{self.RAM[1]:#x}"/></memory-map>')
        text = payload.decode("latin-1")
        if text.startswith("qSupported"):
            return b"PacketSize=4000;qXfer:memory-map:read+"
        if text.startswith("qXfer:memory-map:read::"):
            offset = int(text.split("::")[1].split(",")[0], 16)
            return b"l" + memory_map[offset:].encode()
        if text.startswith("vFlashErase:"):
            start, length = (int(x, 16) for x in text[12:].split(","))
            assert start % 0x1000 == 0 and length % 0x1000 == 0, text  # whole blocks only, as OpenOCD demands
            self.erased.append((start, length))
            for a in range(start, start + length):
                self.memory[a] = 0xFF
            return b"OK"
        if text.startswith("vFlashWrite:"):
            address, data = payload[12:].split(b":", 1)
            raw, k = bytearray(), 0
            while k < len(data):
                if data[k:k + 1] == b"}":
                    raw.append(data[k + 1] ^ 0x20)
                    k += 2
                else:
                    raw.append(data[k])
                    k += 1
            for i, byte in enumerate(raw):
                self.memory[int(address, 16) + i] = byte
            self.flash_writes += 1
            return b"OK"
        if text == "vFlashDone":
            return b"OK"
        if text.startswith("M"):
            where, data = text[1:].split(":")
            address = int(where.split(",")[0], 16)
            if self.FLASH[0] <= address < self.FLASH[0] + self.FLASH[1]:
                return b"E01"  # flash is not memory-writable on a real board
            for i, byte in enumerate(bytes.fromhex(data)):
                self.memory[address + i] = byte
            self.ram_writes += 1
            return b"OK"
        if text.startswith("m"):
            address, length = (int(x, 16) for x in text[1:].split(","))
            return bytes(self.memory.get(address + i, 0) for i in range(length)).hex().encode()
        return b""

    def _serve(self):
        import re

        conn, _ = self.listener.accept()
        buffer = b""
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while True:
                    match = re.search(rb"\$([^#]*)#[0-9a-fA-F]{2}", buffer, re.S)
                    if not match:
                        break
                    buffer = buffer[match.end():]
                    reply = self._reply(match.group(1))
                    conn.sendall(b"+$" + reply + b"#" + f"{sum(reply) % 256:02x}".encode())


def test_a_board_is_loaded_through_the_probes_flash_commands():
    """Flash through vFlashErase/Write/Done in whole erase blocks (bytes that need escaping included), RAM through
    plain writes; what reads back is what the ELF holds."""
    from edgesdk.farm.attached import _flash_regions, _load
    from edgesdk.gdbremote import GdbRemote

    probe = _FakeProbe()
    gdb = GdbRemote.connect_tcp("127.0.0.1", probe.port, time.monotonic() + 30)
    try:
        regions = _flash_regions(gdb)
        assert regions == [(0x20000000, 0x10000, 0x1000)]
        code = bytes(range(256)) * 5 + b"#$}*" * 100  # 1680 bytes, from the middle of a block across the next
        data = b"\x01\x02\x03\x04" * 16
        _load(gdb, 0x20010000 - 0x10000 + 0x0800, code, regions)
        _load(gdb, 0x80000100, data, regions)
        assert probe.erased == [(0x20000000, 0x1000)]
        assert gdb.read_memory(0x20000800, len(code)) == code and gdb.read_memory(0x80000100, len(data)) == data
        assert probe.flash_writes == 4 and probe.ram_writes == 1
    finally:
        gdb.close()


class _Registers:
    """Just the reads _exit_status makes."""

    def __init__(self, instruction: int, registers: dict, memory: dict):
        self.instruction, self.registers, self.memory = instruction, registers, memory

    def read_memory(self, address, length):
        if address == 0x100:
            return self.instruction.to_bytes(4, "little")
        return self.memory[address][:length]

    def register(self, number):
        return self.registers[number]


@pytest.mark.parametrize("instruction, registers, memory, status", [
    (0x00100073, {11: 0x8000}, {0x8000: (0x20026).to_bytes(4, "little") + (0).to_bytes(4, "little")}, 0),
    (0x00100073, {11: 0x8000}, {0x8000: (0x20026).to_bytes(4, "little") + (3).to_bytes(4, "little")}, 3),
    (0x00f72023, {15: 0x5555}, {}, 0),               # sw a5, 0(a4) to the exit device: pass
    (0x00f72023, {15: (6 << 16) | 0x3333}, {}, 6),  # ... fail with code 6
    (0x0001c31c, {15: (2 << 16) | 0x3333}, {}, 2),  # c.sw a5, 0(a4) (0xc31c), then the next instruction's half
])
def test_the_exit_status_is_read_from_the_firmwares_exit_call(instruction, registers, memory, status):
    from edgesdk.farm.attached import _exit_status

    assert _exit_status(_Registers(instruction, registers, memory), 0x100) == status
