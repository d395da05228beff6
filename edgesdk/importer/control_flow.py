"""Control flow (WHILE, IF) -> one schedule: the subgraphs they run are inlined into the graph's op list.

TFLite keeps a loop's condition and body, and an IF's two branches, in subgraphs of their own, and copies tensor
data between the op and its subgraphs (bytes, whatever the quantization parameters). edgesdk inlines them, so
that every later step -- folding, partitioning, the one static memory plan of the arena, code generation, the
safety proof -- sees one list of ops in execution order, each op of a subgraph once:

    WHILE   init (inputs -> loop variables)  loop {  <cond ops>  test (leave unless the condition holds)
            <body ops>  copy (body results that could be overwritten while the loop variables are updated)
            next (body results -> loop variables)  }end
    IF      if (condition) {  <then ops>  results (then results -> outputs)  } else {  <else ops>
            results (else results -> outputs)  }end

Each part is an op of the control-flow op's own type (WHILE or IF) with `attrs["part"]` saying which
(edgesdk/ops/control_flow.py), and the same operator index; the inlined ops keep their index within their
subgraph and record it in `Op.subgraph`. Their tensors get fresh ids after the file's.

Memory. The loop variables are the WHILE op's output tensors: written before the loop and at the end of each
iteration, read by the condition and the body, so their live range covers the whole loop and nothing else
takes their bytes while it runs; everything the condition or the body computes lives within one iteration.
The branches of an IF follow one another in the schedule, so a buffer of the then branch is dead before the
else branch starts and the two share memory, as only one of them runs. The memory planner needs no rule of its
own: live ranges over this schedule are a safe over-approximation of every path the firmware can take.

A subgraph input that has the type, shape and quantization of the tensor passed in *is* that tensor (no copy);
otherwise a "copy" part copies the bytes into it. A body result that is a loop variable, or a view of one
(RESHAPE and the other ops whose output the planner aliases with their input), is first copied aside: all the
loop variables of the next iteration are computed from the results of this one, as TFLite's copies do.
"""

from __future__ import annotations

from ..errors import ModelError
from ..ir.graph import ALIAS_OPS, Op, Tensor  # ALIAS_OPS: outputs the memory plan may give their input's bytes

CONTROL_FLOW_OPS = ("WHILE", "IF")


def inline_control_flow(graph, importer) -> None:
    """Rewrite `graph` (the main subgraph) in place: every WHILE and IF with its subgraphs inlined, recursively.
    `importer` reads the subgraphs (edgesdk/importer/tflite_importer.py)."""
    if not any(op.type in CONTROL_FLOW_OPS for op in graph.ops):
        return
    inliner = _Inliner(importer, max((t.id for t in graph.tensors), default=-1) + 1)
    graph.ops = inliner.expand(graph.ops, (0,))
    graph.tensors.extend(inliner.new_tensors)


class _Inliner:
    def __init__(self, importer, next_id: int):
        self.importer = importer
        self.next_id = next_id
        self.new_tensors: list = []

    def fail(self, op, what: str) -> ModelError:
        return self.importer.fail(f"{op.location} {what}")

    def expand(self, ops: list, stack: tuple) -> list:
        result = []
        for op in ops:
            if op.type == "WHILE":
                result += self.lower_while(op, stack)
            elif op.type == "IF":
                result += self.lower_if(op, stack)
            else:
                result.append(op)
        return result

    # -- the parts ---------------------------------------------------------------------------------------
    def part(self, op, name: str, inputs: list, outputs: list) -> Op:
        attrs = {k: v for k, v in op.attrs.items() if k.endswith("_subgraph")}
        return Op(op.index, op.type, list(inputs), list(outputs), {"part": name, **attrs}, subgraph=op.subgraph)

    def lower_while(self, op, stack: tuple) -> list:
        loop_vars = list(op.outputs)
        for x, v in zip(op.inputs, loop_vars):
            self.require_same_bytes(op, x, v, "loop variable")
        body_ops, body_results, body_inputs = self.inline(op, op.attrs["body_subgraph"], loop_vars, stack, "body")
        if len(body_results) != len(loop_vars):
            raise self.fail(op, f"has {len(loop_vars)} loop variables but its body subgraph "
                                f"({op.attrs['body_subgraph']}) returns {len(body_results)} values")
        # Result j that is the body's input k (k != j): another loop variable passed on unchanged. TFLite Micro
        # updates the loop variables all at once; LiteRT one after the other, so that this one reads variable k
        # as already updated (edgesdk/ops/control_flow.py While.prepare). Either way the condition sees the
        # values the body returned: it gets its own copy of such a variable.
        passthrough = {j: body_inputs.index(t) for j, t in enumerate(body_results)
                       if any(t is s for s in body_inputs) and body_inputs.index(t) != j}
        copies, results = [], []
        for j, (t, v) in enumerate(zip(body_results, loop_vars)):
            self.require_same_bytes(op, t, v, f"body result {j}")
            shared = not any(t is s for s in body_inputs) and self.may_share_loop_variable(t, loop_vars, body_ops)
            if j in passthrough or shared:
                aside = self.tensor_like(t, f"{t.name}_next")
                copies.append(self.part(op, "copy", [t], [aside]))
                t = aside
            results.append(t)
        own = {j: self.tensor_like(loop_vars[j], f"{loop_vars[j].name}_cond") for j in sorted(passthrough)}
        cond_values = [own.get(j, v) for j, v in enumerate(loop_vars)]
        cond_ops, cond_outputs, _ = self.inline(op, op.attrs["cond_subgraph"], cond_values, stack, "condition")
        if len(cond_outputs) != 1 or cond_outputs[0].dtype != "bool" or cond_outputs[0].num_elements != 1:
            got = ", ".join(f"{t.dtype}{list(t.shape)}" for t in cond_outputs) or "nothing"
            raise self.fail(op, f"has a condition subgraph ({op.attrs['cond_subgraph']}) that returns {got}, not one "
                                "bool of one element")
        init = self.part(op, "init", [*op.inputs, *(op.inputs[j] for j in own)], [*loop_vars, *own.values()])
        update = self.part(op, "next", [*results, *(results[j] for j in own)], [*loop_vars, *own.values()])
        update.attrs["passthrough"] = passthrough
        return [init, self.part(op, "loop", [], []), *cond_ops, self.part(op, "test", cond_outputs, []), *body_ops,
                *copies, update, self.part(op, "end", [], [])]

    def lower_if(self, op, stack: tuple) -> list:
        cond, values, outputs = op.inputs[0], op.inputs[1:], list(op.outputs)
        branches = []
        for role in ("then", "else"):
            ops, results, inputs = self.inline(op, op.attrs[f"{role}_subgraph"], values, stack, f"{role} branch")
            if len(results) != len(outputs):
                raise self.fail(op, f"has {len(outputs)} outputs but its {role} branch (subgraph "
                                    f"{op.attrs[f'{role}_subgraph']}) returns {len(results)}")
            for j, (t, y) in enumerate(zip(results, outputs)):
                self.require_same_bytes(op, t, y, f"{role} branch result {j}")
            branches.append((ops, results, inputs))
        (then_ops, then_results, _), (else_ops, else_results, _) = branches
        return [self.part(op, "if", [cond], []), *then_ops, self.part(op, "results", then_results, outputs),
                self.part(op, "else", [], []), *else_ops, self.part(op, "results", else_results, outputs),
                self.part(op, "end", [], [])]

    # -- subgraphs -----------------------------------------------------------------------------------------
    def inline(self, op, index: int, values: list, stack: tuple, role: str) -> tuple:
        """(ops, results, inputs) of subgraph `index` run on `values`: its inputs bound to them (each input is
        the value passed in, or a copy of it), nested control flow inlined too."""
        if index in stack:
            raise self.fail(op, f"runs subgraph {index} as its {role} from within subgraph {index} itself; "
                                "recursive control flow has no static schedule")
        if index == 0:
            raise self.fail(op, f"runs the main subgraph (0) as its {role}")
        tensors, ops, inputs, outputs = self.importer.read_subgraph(index)
        for t in tensors:
            t.id = self.next_id
            self.next_id += 1
        for o in ops:
            o.subgraph = index
        if len(inputs) != len(values):
            raise self.fail(op, f"passes {len(values)} tensors to its {role} (subgraph {index}), which takes "
                                f"{len(inputs)}")
        written = {t for o in ops for t in o.outputs}
        bound, copies = {}, []
        for k, (s, v) in enumerate(zip(inputs, values)):
            self.require_same_bytes(op, v, s, f"{role} input {k}")
            if s in written:
                raise self.fail(op, f"has a {role} (subgraph {index}) whose operators write into its input "
                                    f"'{s.name}'")
            if s.is_const or s in inputs[:k]:
                raise self.fail(op, f"has a {role} (subgraph {index}) whose input '{s.name}' is "
                                    f"{'a constant' if s.is_const else 'listed twice'}")
            if _interchangeable(s, v):
                bound[s] = v
            else:
                copies.append(self.part(op, "copy", [v], [s]))
        for o in ops:
            o.inputs = [bound.get(t, t) if t is not None else None for t in o.inputs]
            o.intermediates = [bound.get(t, t) for t in o.intermediates]
        self.new_tensors += [t for t in tensors if t not in bound]
        results = [bound.get(t, t) for t in outputs]
        return copies + self.expand(ops, stack + (index,)), results, [bound.get(t, t) for t in inputs]

    def tensor_like(self, t: Tensor, name: str) -> Tensor:
        copy = Tensor(self.next_id, name, t.shape, t.dtype, t.quant, orig_dtype=t.orig_dtype)
        self.next_id += 1
        self.new_tensors.append(copy)
        return copy

    @staticmethod
    def may_share_loop_variable(t, loop_vars: list, body_ops: list) -> bool:
        """Whether result `t` is a loop variable or may be planned into one's bytes (a chain of aliasing ops)."""
        producer = {out: o for o in body_ops for out in o.outputs}
        seen = set()
        while t not in loop_vars:
            o = producer.get(t)
            if o is None or o.type not in ALIAS_OPS or not o.inputs or o.inputs[0] is None or t in seen:
                return False
            seen.add(t)
            t = o.inputs[0]
        return True

    def require_same_bytes(self, op, src, dst, what: str) -> None:
        """TFLite copies tensor data between the op and its subgraphs: the same type and element count."""
        if src.dtype != dst.dtype or src.num_elements != dst.num_elements:
            raise self.fail(op, f"passes {src.dtype}{list(src.shape)} '{src.name}' as its {what}, which is "
                                f"{dst.dtype}{list(dst.shape)} '{dst.name}' (edgesdk compiles static shapes: the "
                                "types and element counts must match)")


def _interchangeable(a: Tensor, b: Tensor) -> bool:
    """The same type, shape and quantization: every op computes the same reading either tensor."""
    if (a.dtype, tuple(a.shape), a.orig_dtype) != (b.dtype, tuple(b.shape), b.orig_dtype) or a.persistent or b.persistent:
        return False
    if (a.quant is None) != (b.quant is None):
        return False
    if a.quant is None:
        return True
    qa, qb = a.quant, b.quant
    return (qa.axis == qb.axis and qa.scale.shape == qb.scale.shape and bool((qa.scale == qb.scale).all())
            and qa.zero_point.shape == qb.zero_point.shape and bool((qa.zero_point == qb.zero_point).all()))
