"""`edgesdk run --profile`: instructions and NPU cycles measured per layer on the built-in emulator.

How counts are attributed, deterministically and without timing anything: the generated run function marks
the start of each of its blocks (EDGESDK_STEP_MARK in model.c, one block per host layer and per accelerator
region) in the ELF section `.edgesdk_steps`, which the firmware never loads. A code hook on each marked
address reads the emulator's exact instruction counter there, so a block's instructions are those from its
mark to the next one (its kernel calls, the driver, the arena guard check after it); what the run function
does before the first block and after the last (guards, input and output copies) and the harness's call into
it are the executor's. Together they add up to the inference's count between the harness marks exactly.
The NPU model reports every command's cycles (npu_set_command_observer); report.json `steps` says which
layer each command of a block's table serves, so NPU cycles are attributed per layer, and they add up to the
NPU's PERF_CYCLES. Python peripheral models' counters (the DSP's cycles) are attributed per block.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

STEPS_SECTION = ".edgesdk_steps"
BEFORE, AFTER = "before", "after"  # the executor's instructions outside the marked blocks


def step_marks(elf_path) -> dict:
    """{address: [block indices marked there, in order]} from the ELF's .edgesdk_steps section (pairs of
    little-endian 32-bit words: address, block index); {} when the firmware has none."""
    from elftools.elf.elffile import ELFFile

    with Path(elf_path).open("rb") as f:
        section = ELFFile(f).get_section_by_name(STEPS_SECTION)
        data = section.data() if section is not None else b""
    marks: dict = {}
    for k in range(0, len(data) - len(data) % 8, 8):
        address, block = int.from_bytes(data[k:k + 4], "little"), int.from_bytes(data[k + 4:k + 8], "little")
        marks.setdefault(address, []).append(block)
    return marks


class StepProfiler:
    """A run_elf observer: the instruction count, NPU runs and peripheral counters at every block mark."""

    def __init__(self):
        self.events = []  # (address, instructions before it, blocks marked there, NPU runs so far, peripherals)
        self.npu_traced = False

    def attach(self, machine) -> None:
        import unicorn

        marks = step_marks(machine.elf_path)
        if not marks:
            raise UsageError(f"{machine.elf_path} has no profiling marks (section {STEPS_SECTION}): it was built by "
                             "an older edgesdk. Rebuild it with 'edgesdk build' to profile it.")
        self.npu_traced = machine.trace_commands()
        for address, blocks in marks.items():
            machine.uc.hook_add(unicorn.UC_HOOK_CODE, self._at_mark, user_data=(machine, blocks),
                                begin=address, end=address)

    def _at_mark(self, uc, address, size, data) -> None:
        machine, blocks = data
        count = machine.instructions_before(address)
        if self.events and self.events[-1][:2] == (address, count):
            return  # the same instruction again after the emulator resumed a slice
        self.events.append((address, count, blocks, machine.command_runs(), machine.peripheral_stats()))

    def collect(self, machine) -> dict:
        return {"events": self.events, "marks": machine.mark_instructions(),
                "npu_trace": machine.command_trace() if self.npu_traced else None,
                "npu_runs": machine.command_runs(), "peripherals": machine.peripheral_stats()}


def build_profile(report: dict, observed: dict) -> dict:
    """The profile of a run from what StepProfiler observed and the build's report.json."""
    blocks = report.get("steps")
    if blocks is None:
        raise UsageError("report.json has no 'steps' (a build by an older edgesdk); rebuild with 'edgesdk build' "
                         "to profile it.")
    marks = observed["marks"]
    windows = [(marks[k], marks[k + 1]) for k in range(0, len(marks) - 1, 2)]
    rows = [{"step": k, "target": b["target"], "layers": list(b["layers"]), "instructions": 0, "npu_cycles": None,
             "peripherals": {}} for k, b in enumerate(blocks)]
    executor = {BEFORE: 0, AFTER: 0}
    run_block = {}  # NPU run index -> block it ran in

    def spend(where, instructions: int, runs: range, before: dict, after: dict) -> None:
        if where in executor:
            executor[where] += instructions
            return
        row = rows[where]
        row["instructions"] += instructions
        run_block.update({run: where for run in runs})
        for device, counters in after.items():
            delta = row["peripherals"].setdefault(device, {})
            for name, value in counters.items():
                if isinstance(value, (int, float)) and isinstance(before.get(device, {}).get(name), (int, float)):
                    delta[name] = delta.get(name, 0) + value - before[device][name]

    events = iter(observed["events"])
    pending = next(events, None)
    for start, end in windows:
        where, count, runs, stats = BEFORE, start, 0, None
        while pending is not None and pending[1] <= end:
            address, at, marked, runs_now, stats_now = pending
            if at >= start:
                spend(where, at - count, range(runs, runs_now), stats or stats_now, stats_now)
                last = marked[-1]
                where = AFTER if last >= len(rows) else last
                count, runs, stats = at, runs_now, stats_now
            pending = next(events, None)
        spend(where, end - count, range(runs, observed["npu_runs"]), stats or {}, observed["peripherals"])

    _attribute_npu_commands(rows, blocks, run_block, observed.get("npu_trace"))
    inference = sum(end - start for start, end in windows)
    return {
        "inferences": len(windows),
        "inference_instructions": inference,
        "executor_instructions": executor,
        "npu_cycles": (sum(r["npu_cycles"] or 0 for r in rows) if observed.get("npu_trace") is not None else None),
        "steps": rows,
        "layers": _layer_rows(report, rows),
    }


def _attribute_npu_commands(rows: list, blocks: list, run_block: dict, trace) -> None:
    """Each block's NPU cycles and, through report.json steps[k].commands, each layer's."""
    if trace is None:
        return
    for row in rows:
        row["layer_npu_cycles"] = {}
    for run, command, cycles in trace:
        block = run_block.get(run)
        if block is None:
            continue
        row = rows[block]
        row["npu_cycles"] = (row["npu_cycles"] or 0) + cycles
        commands = blocks[block].get("commands") or []
        layer = commands[command] if command < len(commands) else row["layers"][-1]
        row["layer_npu_cycles"][layer] = row["layer_npu_cycles"].get(layer, 0) + cycles


def _layer_rows(report: dict, rows: list) -> list:
    """Per layer: measured instructions (when its block runs it alone) and NPU cycles, beside the estimate."""
    estimates = {layer["index"]: layer for layer in report.get("layers", [])}
    ops = {op["index"]: op for op in report.get("ops", [])}
    result = []
    for row in rows:
        for index in row["layers"]:
            op = estimates.get(index) or ops.get(index, {})
            npu = row.get("layer_npu_cycles", {})
            result.append({
                "index": index, "type": op.get("type"), "target": row["target"], "step": row["step"],
                "instructions": row["instructions"] if len(row["layers"]) == 1 else None,
                "npu_cycles": npu.get(index, 0) if row["npu_cycles"] is not None else None,
                "estimate": op.get("estimate"),
            })
    return result
