"""`edgesdk run --profile`: instructions and accelerator cycles measured per layer on the built-in emulator.

How counts are attributed, deterministically and without timing anything: the generated run function marks
the start of each of its blocks (EDGESDK_STEP_MARK in model.c, one block per host layer and per accelerator
region) in the ELF section `.edgesdk_steps`, which the firmware never loads. A code hook on each marked
address reads the emulator's exact instruction counter there, so a block's instructions are those from its
mark to the next one (its kernel calls, the driver, the arena guard check after it); what the run function
does before the first block and after the last (guards, input and output copies) and the harness's call into
it are the executor's. Together they add up to the inference's count between the harness marks exactly.

Accelerator cycles are per peripheral (its board name, e.g. "npu0"), for the peripherals the build uses. Every
native model that reports its commands' cycles (<prefix>_set_command_observer) is traced; report.json `steps`
says which layer each command a block issues serves, so its cycles are attributed per layer, and they add up
to the peripheral's cycle counter. Other peripherals' cycle counters (Python models) are attributed per block,
and to the layer when the block runs one layer.
"""

from __future__ import annotations


from ..errors import UsageError

STEPS_SECTION = ".edgesdk_steps"
BEFORE, AFTER = "before", "after"  # the executor's instructions outside the marked blocks


def step_marks(elf_path) -> dict:
    """{address: [block indices marked there, in order]} from the ELF's .edgesdk_steps section (pairs of
    little-endian 32-bit words: address, block index); {} when the firmware has none."""
    from ..elf import ElfFile

    elf = ElfFile.read(elf_path)
    section = elf.section(STEPS_SECTION)
    data = elf.section_data(section) if section is not None else b""
    marks: dict = {}
    for k in range(0, len(data) - len(data) % 8, 8):
        address, block = int.from_bytes(data[k:k + 4], "little"), int.from_bytes(data[k + 4:k + 8], "little")
        marks.setdefault(address, []).append(block)
    return marks


class StepProfiler:
    """A run_elf observer: the instruction count, traced peripherals' runs and every peripheral's counters at
    every block mark."""

    def __init__(self):
        self.events = []  # (address, instructions before it, blocks marked there, {peripheral: runs}, counters)
        self.traced = False

    def attach(self, machine) -> None:
        import unicorn

        marks = step_marks(machine.elf_path)
        if not marks:
            raise UsageError(f"{machine.elf_path} has no profiling marks (section {STEPS_SECTION}): it was built by "
                             "an older edgesdk. Rebuild it with 'edgesdk build' to profile it.")
        self.traced = machine.trace_commands()
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
                "traces": machine.command_trace() if self.traced else {},
                "runs": machine.command_runs(), "peripherals": machine.peripheral_stats()}


def build_profile(report: dict, observed: dict, peripherals=None) -> dict:
    """The profile of a run from what StepProfiler observed and the build's report.json. `peripherals`: the
    names of the peripherals the build uses (runner.target_peripherals), whose cycles the profile reports;
    None: every peripheral that counted cycles in a block."""
    blocks = report.get("steps")
    if blocks is None:
        raise UsageError("report.json has no 'steps' (a build by an older edgesdk); rebuild with 'edgesdk build' "
                         "to profile it.")
    marks = observed["marks"]
    windows = [(marks[k], marks[k + 1]) for k in range(0, len(marks) - 1, 2)]
    rows = [{"step": k, "target": b["target"], "layers": list(b["layers"]), "instructions": 0,
             "peripheral_cycles": {}, "peripherals": {}} for k, b in enumerate(blocks)]
    executor = {BEFORE: 0, AFTER: 0}
    visits = {}  # traced peripheral -> {run index: (block, index of the block's visit)}
    visit_count = [0]

    def spend(where, instructions: int, runs_before: dict, runs_after: dict, before: dict, after: dict) -> None:
        if where in executor:
            executor[where] += instructions
            return
        row = rows[where]
        row["instructions"] += instructions
        visit_count[0] += 1
        for device, runs in runs_after.items():
            visits.setdefault(device, {}).update(
                {run: (where, visit_count[0]) for run in range(runs_before.get(device, 0), runs)})
        for device, counters in after.items():
            delta = row["peripherals"].setdefault(device, {})
            for name, value in counters.items():
                if isinstance(value, (int, float)) and isinstance(before.get(device, {}).get(name), (int, float)):
                    delta[name] = delta.get(name, 0) + value - before[device][name]

    events = iter(observed["events"])
    pending = next(events, None)
    for start, end in windows:
        where, count, runs, stats = BEFORE, start, {}, None
        while pending is not None and pending[1] <= end:
            address, at, marked, runs_now, stats_now = pending
            if at >= start:
                spend(where, at - count, runs or runs_now, runs_now, stats or stats_now, stats_now)
                last = marked[-1]
                where = AFTER if last >= len(rows) else last
                count, runs, stats = at, runs_now, stats_now
            pending = next(events, None)
        spend(where, end - count, runs or observed["runs"], observed["runs"], stats or {}, observed["peripherals"])

    traces = observed.get("traces") or {}
    for device, trace in traces.items():
        _attribute_commands(device, rows, blocks, visits.get(device, {}), trace)
    _add_counted_cycles(rows, set(traces))
    if peripherals is not None:
        for row in rows:
            row["peripheral_cycles"] = {p: c for p, c in row["peripheral_cycles"].items() if p in peripherals}
    names = sorted(peripherals if peripherals is not None else {p for r in rows for p in r["peripheral_cycles"]})
    inference = sum(end - start for start, end in windows)
    return {
        "inferences": len(windows),
        "inference_instructions": inference,
        "executor_instructions": executor,
        "peripheral_cycles": {p: sum(r["peripheral_cycles"].get(p, 0) for r in rows) for p in names},
        "steps": rows,
        "layers": _layer_rows(report, rows),
    }


def _attribute_commands(device: str, rows: list, blocks: list, visits: dict, trace: list) -> None:
    """A traced peripheral's cycles per block and, through report.json steps[k].commands (the op index of
    each command the block issues, in order over its runs), per layer."""
    issued = {}  # visit -> commands of its earlier runs; run -> its first command's position in the visit
    first = {}
    for run, command, cycles in trace:
        found = visits.get(run)
        if found is None:
            continue  # a run outside the marked blocks (none in generated code)
        block, visit = found
        if run not in first:
            first[run] = issued.get(visit, 0)
        issued[visit] = max(issued.get(visit, 0), first[run] + command + 1)
        row = rows[block]
        row["peripheral_cycles"][device] = row["peripheral_cycles"].get(device, 0) + cycles
        commands = blocks[block].get("commands") or []
        position = first[run] + command
        layer = commands[position] if position < len(commands) else row["layers"][-1]
        per_layer = row.setdefault("layer_cycles", {}).setdefault(device, {})
        per_layer[layer] = per_layer.get(layer, 0) + cycles


def _add_counted_cycles(rows: list, traced: set) -> None:
    """Untraced peripherals' cycles per block: their cycle counters' growth over the block."""
    for row in rows:
        for device, delta in row["peripherals"].items():
            if device not in traced and delta.get("cycles"):
                row["peripheral_cycles"][device] = delta["cycles"]


def _layer_rows(report: dict, rows: list) -> list:
    """Per layer: measured instructions and cycles of each peripheral (when its block runs it alone, or from
    the peripheral's command trace), beside the estimate. Layers that share an index (the edge conversions,
    -1) are taken in execution order, as report.json lists them."""
    estimates = {}
    for layer in report.get("layers", []):
        estimates.setdefault(layer["index"], []).append(layer)
    ops = {op["index"]: op for op in report.get("ops", [])}
    result = []
    for row in rows:
        alone = len(row["layers"]) == 1
        for index in row["layers"]:
            same = estimates.get(index)
            op = (same.pop(0) if len(same) > 1 else same[0]) if same else ops.get(index, {})
            traced = row.get("layer_cycles", {})
            cycles = {device: traced[device].get(index, 0) if device in traced else (total if alone else None)
                      for device, total in row["peripheral_cycles"].items()}
            result.append({
                "index": index, "type": op.get("type"), "target": row["target"], "step": row["step"],
                "instructions": row["instructions"] if alone else None,
                "peripheral_cycles": cycles,
                "estimate": op.get("estimate"),
            })
    return result
