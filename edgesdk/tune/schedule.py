"""A schedule: every per-layer choice a build makes, written down so that a build can apply it as given.

    layers     one entry per model operator (operator index, type): the target it runs on, and per target
               the switches set for the layer, {target: {switch: value}}: the code choices a target
               declares for the op with their defaults (Target.layer_switches, e.g. whether the weights of
               an accelerator layer may be compressed), which its codegen reads with ctx.layer_choice. A
               build applies the switches of the layer's own target.
    cascades   the cascade groups (operator indices, stripe height in output rows of the last op),
               edgesdk/ops/stripes.py; an empty list runs every layer whole

`schedule_of(compiled)` reads the schedule a compiled build actually used (the defaults for a default
build); `BuildOptions.schedule` applies one (edgesdk/compiler.py). The JSON form is the "schedule" object
of a tuning log (docs/performance.md, "Tuning"); the first format's layers held their target's switches as
keys of their own ({"index": 3, ..., "some_switch": true}), which from_json still reads.
"""

from __future__ import annotations

import json
from functools import cached_property

from ..dataclass_cache import dataclass, field, replace
from ..errors import UsageError

_FIELDS = ("index", "type", "target")


@dataclass(frozen=True)
class LayerChoice:
    index: int  # operator index in the model
    type: str
    target: str
    # {target: {switch: value}} as sorted pairs, ((target, ((name, value), ...)), ...): hashable and canonical.
    switches: tuple = ()

    def switches_of(self, target: str) -> dict:
        """{switch: value} set for `target` on this layer."""
        return dict(dict(self.switches).get(target, ()))

    def switch(self, name: str) -> bool | None:
        """The layer's own target's switch `name`, None when the schedule leaves it to the default."""
        return self.switches_of(self.target).get(name)

    def switch_names(self) -> list:
        """The switches this layer sets for its own target."""
        return list(self.switches_of(self.target))

    def changed(self, **changes) -> "LayerChoice":
        """This layer with `changes` applied: index, type, target, or switches of the (new) target by name
        (None drops a switch). Moving the layer to another target keeps the table's other entries."""
        fields = {name: changes.pop(name) for name in _FIELDS if name in changes}
        layer = replace(self, **fields)
        if not changes:
            return layer
        own = layer.switches_of(layer.target)
        for name, value in changes.items():
            if value is None:
                own.pop(name, None)
            else:
                own[name] = value
        return layer.with_switches(layer.target, own)

    def with_switches(self, target: str, switches: dict) -> "LayerChoice":
        """This layer with `target`'s switches replaced by `switches` (empty: none set)."""
        table = {t: dict(s) for t, s in self.switches if t != target}
        if switches:
            table[target] = dict(switches)
        return replace(self, switches=tuple(sorted((t, tuple(sorted(s.items()))) for t, s in table.items())))

    def to_json(self) -> dict:
        return {"index": self.index, "type": self.type, "target": self.target,
                "switches": {target: dict(values) for target, values in self.switches}}


@dataclass(frozen=True)
class CascadeChoice:
    ops: tuple  # operator indices, consecutive in execution order
    stripe_height: int
    first_stripe_rows: int = 0  # rows of the first stripe, 0: stripe_height (ops.stripes.build_schedule)

    def to_json(self) -> dict:
        data = {"ops": list(self.ops), "stripe_height": self.stripe_height}
        if self.first_stripe_rows:  # written only when set: logs without it keep their keys
            data["first_stripe_rows"] = self.first_stripe_rows
        return data


@dataclass(frozen=True)
class Schedule:
    layers: tuple  # LayerChoice per operator, in execution order
    cascades: tuple = ()  # CascadeChoice, in the order the planner takes them
    # Where the schedule came from ({"log": path, "log_sha256": ...}); not part of the schedule itself.
    origin: dict | None = field(default=None, compare=False, hash=False)

    # -- lookups --------------------------------------------------------------------------------------------
    @cached_property
    def _by_index(self) -> dict:
        return {layer.index: layer for layer in self.layers}

    def layer(self, index: int) -> LayerChoice | None:
        return self._by_index.get(index)

    def op_targets(self) -> dict:
        """operator index -> target (the partitioner's `forced`)."""
        return {layer.index: layer.target for layer in self.layers}

    def switch(self, index: int, name: str) -> bool | None:
        """The layer's switch `name` (built-in or a target's own), None when the schedule leaves it to the
        default."""
        layer = self._by_index.get(index)
        return None if layer is None else layer.switch(name)

    def cascade_specs(self) -> list:
        """[(operator indices, stripe height, first stripe's rows)] for cascade.plan_with_groups."""
        return [(c.ops, c.stripe_height, c.first_stripe_rows) for c in self.cascades]

    # -- edits (the search builds neighbours with these) -----------------------------------------------------
    def with_layer(self, index: int, **changes) -> "Schedule":
        layers = tuple(layer.changed(**changes) if layer.index == index else layer for layer in self.layers)
        return replace(self, layers=layers, origin=None)

    def with_cascades(self, cascades) -> "Schedule":
        return replace(self, cascades=tuple(cascades), origin=None)

    def differences(self, other: "Schedule") -> list:
        """Human-readable changes from `other` to this schedule (for the tuning log)."""
        changes = []
        for mine in self.layers:
            theirs = other.layer(mine.index)
            names = dict.fromkeys(["target"] + mine.switch_names() + (theirs.switch_names() if theirs else []))
            for name in names:
                a = (theirs.target if name == "target" else theirs.switch(name)) if theirs else None
                b = mine.target if name == "target" else mine.switch(name)
                if a != b:
                    changes.append(f"op {mine.index} ({mine.type}): {name} {a} -> {b}")
        if self.cascades != other.cascades:
            fmt = lambda cs: ", ".join(f"ops {list(c.ops)} in {c.stripe_height}-row stripes" for c in cs) or "none"
            changes.append(f"cascades: {fmt(other.cascades)} -> {fmt(self.cascades)}")
        return changes

    # -- JSON -----------------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"layers": [layer.to_json() for layer in self.layers],
                "cascades": [c.to_json() for c in self.cascades]}

    def key(self) -> str:
        """Canonical text of the schedule (equal schedules, equal keys)."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, data, where: str = "the tuning log") -> "Schedule":
        try:
            layers = tuple(_layer_from_json(entry) for entry in data["layers"])
            cascades = tuple(CascadeChoice(tuple(int(i) for i in c["ops"]), int(c["stripe_height"]),
                                           int(c.get("first_stripe_rows", 0)))
                             for c in data["cascades"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"The schedule in {where} is malformed ({type(exc).__name__}: {exc}). Re-run "
                             "'edgesdk tune' to write a new log.") from None
        if len({layer.index for layer in layers}) != len(layers):
            raise UsageError(f"The schedule in {where} names an operator twice. Re-run 'edgesdk tune'.")
        return cls(layers, cascades)

    # -- checks against a model -------------------------------------------------------------------------------
    def check_graph(self, graph) -> None:
        """The schedule must name exactly the model's operators, with their types."""
        ops = {op.index: op.type for op in graph.ops if op.file_operator}
        mine = {layer.index: layer.type for layer in self.layers}
        if ops != mine:
            wrong = sorted(set(ops.items()) ^ set(mine.items()))[:3]
            raise UsageError(f"The tuning schedule does not describe this model's operators (first differences, "
                             f"(index, type): {wrong}). It was written for another model or edgesdk version; "
                             "re-run 'edgesdk tune'.")


def _layer_from_json(entry: dict) -> LayerChoice:
    layer = LayerChoice(int(entry["index"]), str(entry["type"]), str(entry["target"]))
    table = entry.get("switches", {})
    if not isinstance(table, dict) or not all(isinstance(s, dict) for s in table.values()):
        raise ValueError(f"'switches' of op {entry['index']} must map each target to its {{switch: value}}")
    # The first format: every key besides index, type and target was a switch of the layer's own target.
    flat = {name: value for name, value in entry.items() if name not in _FIELDS + ("switches",)}
    if flat:
        table = {**table, layer.target: {**table.get(layer.target, {}), **flat}}
    for target, switches in table.items():
        for name, value in switches.items():
            if not isinstance(value, bool):
                raise ValueError(f"'{name}' of op {entry['index']} ({target}) must be true or false")
        layer = layer.with_switches(str(target), switches)
    return layer


def schedule_of(compiled) -> Schedule:
    """The schedule a compiled build used: each op's target, the effective switches (those its target offers,
    Target.layer_switches), the cascade groups."""
    from ..partition.partitioner import target_of
    from ..targets import get_target

    targets = target_of(compiled.regions)
    layers = []
    for op in compiled.graph.ops:
        if not op.file_operator:
            continue  # inserted by the importer, or inlined control flow: always placed by the default rules
        offered = get_target(targets[op]).layer_switches(op)  # {name: default} the op's target lets a schedule set
        switches = {name: _switch(compiled, op, name, default) for name, default in offered.items()}
        layers.append(LayerChoice(op.index, op.type, targets[op]).with_switches(targets[op], switches))
    cascades = tuple(CascadeChoice(tuple(op.index for op in g.ops), g.stripe_height, g.lead_rows)
                     for g in getattr(compiled.plan, "cascades", None) or ())
    return Schedule(tuple(layers), cascades)


def _switch(compiled, op, name: str, default: bool) -> bool:
    schedule = getattr(compiled, "schedule", None)
    value = schedule.switch(op.index, name) if schedule is not None and op.file_operator else None
    return default if value is None else value
