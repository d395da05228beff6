"""edgesdk's targets as Relax BYOC patterns, for TVM users.

    import tvm
    from edgesdk.tvm.byoc import partition_for_edgesdk
    mod = partition_for_edgesdk(mod, "npu")          # FuseOpsByPattern + MergeCompositeFunctions

or, with TVM's pattern registry:

    from edgesdk.tvm.byoc import register_edgesdk_patterns
    register_edgesdk_patterns("npu")
    patterns = tvm.relax.backend.pattern_registry.get_patterns_with_prefix("edgesdk_npu")
    mod = tvm.relax.transform.FuseOpsByPattern(patterns, annotate_codegen=False)(mod)
    mod = tvm.relax.transform.MergeCompositeFunctions()(mod)

Each pattern is the QDQ shape of one IR op (dequantize -> op -> quantize, optional bias, activation and
TVM's int8 clip). Its check function builds the IR op of the match with the importer's converters
(edgesdk/tvm/qdq.py) and asks the target's own constraint table (the one `edgesdk inspect` and the
partitioner use) whether the target takes it. So the composite functions TVM forms for `edgesdk_npu` are
exactly the ops `edgesdk inspect` puts on the NPU; the merged functions are edgesdk's regions.
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import QuantParams, Tensor
from . import qdq
from .qdq import NotConvertible

CODEGEN_PREFIX = "edgesdk_"


# -- patterns (every call returns fresh pattern nodes: a DFPattern node matches one expression) ----------------

def _dpl():
    from tvm.relax import dpl

    return dpl


def _dq(x):
    d = _dpl()
    return d.is_op("relax.dequantize")(x, d.is_const(), d.is_const())


def _q(x):
    d = _dpl()
    return d.is_op("relax.quantize")(x, d.is_const(), d.is_const())


def _const_tree(depth: int = 3):
    """A constant, possibly dequantized, transposed or reshaped (weights and biases)."""
    d = _dpl()
    pattern = d.is_const()
    if depth == 0:
        return pattern
    return (pattern | _dq(_const_tree(depth - 1)) | d.is_op("relax.permute_dims")(_const_tree(depth - 1))
            | d.is_op("relax.reshape")(_const_tree(depth - 1), d.wildcard()))


def _act_in():
    return _dq(_dpl().wildcard())


def _conv():
    return _dpl().is_op("relax.nn.conv2d")(_act_in(), _const_tree())


def _matmul():
    return _dpl().is_op("relax.matmul")(_act_in(), _const_tree())


def _binary():
    d = _dpl()
    return d.is_op("relax.add")(_act_in(), _act_in()) | d.is_op("relax.multiply")(_act_in(), _act_in())


def _pool():
    d = _dpl()
    return d.is_op("relax.nn.max_pool2d")(_act_in()) | d.is_op("relax.nn.avg_pool2d")(_act_in())


def _unary():
    d = _dpl()
    names = ["relax.sigmoid", "relax.tanh", "relax.nn.relu"]
    pattern = d.is_op("relax.clip")(_act_in(), d.wildcard(), d.wildcard())
    for name in names:
        pattern = pattern | d.is_op(name)(_act_in())
    return pattern


def _with_bias(core):
    d = _dpl()
    return lambda: core() | d.is_op("relax.add")(core(), _const_tree()) | d.is_op("relax.add")(_const_tree(), core())


def _with_activation(body):
    d = _dpl()
    return lambda: body() | d.is_op("relax.nn.relu")(body()) | d.is_op("relax.clip")(body(), d.wildcard(), d.wildcard())


def _requantized(body):
    """(clip-rooted, quantize-rooted) patterns: TVM's TFLite frontend clamps the activation after quantize."""
    d = _dpl()
    return d.is_op("relax.clip")(_q(body()), d.wildcard(), d.wildcard()), _q(body())


def pattern_table() -> list:
    """[(kind, DFPattern, converter)] in priority order (most specific first)."""
    d = _dpl()
    table = []

    def add(kind, body, converter):
        clip_rooted, rooted = _requantized(body)
        table.append((f"{kind}_clip", clip_rooted, converter))
        table.append((kind, rooted, converter))

    add("conv2d", _with_activation(_with_bias(_conv)), qdq.convert_conv2d)
    add("fully_connected", _with_activation(_with_bias(_matmul)), qdq.convert_fully_connected)
    add("add_mul", _with_activation(_binary), qdq.convert_binary)
    add("pool2d", _with_activation(_pool), qdq.convert_pool)
    table.append(("avg_pool2d_int", d.is_op("relax.astype")(d.is_op("relax.nn.avg_pool2d")(
        d.is_op("relax.astype")(d.wildcard()))), qdq.convert_pool))
    table.append(("mean", _q(d.is_op("relax.mean")(_act_in())), qdq.convert_mean))
    table.append(("softmax", _q(d.is_op("relax.nn.softmax")(_act_in())), qdq.convert_softmax))
    table.append(("reshape", _q(d.is_op("relax.reshape")(_act_in(), d.wildcard())), qdq.convert_reshape))
    table.append(("reshape_int", d.is_op("relax.reshape")(d.wildcard(), d.wildcard()), qdq.convert_reshape))
    table.append(("activation", _q(_unary()), qdq.convert_unary))
    return table


# -- the check function: the IR op of a match, judged by the target's constraints -------------------------------

class _MatchContext:
    """qdq.Context over one match: inputs are fresh IR tensors built from the Relax types."""

    def __init__(self, bindings):
        self.bindings = bindings
        self.tensors: dict = {}

    def lookup(self, expr):
        return self.bindings.get(expr, expr) if type(expr).__name__ in ("Var", "DataflowVar") else expr

    def activation(self, expr, perm):
        shape = qdq.shape_of(expr)
        perm = tuple(range(len(shape))) if perm is None else tuple(perm)
        dtype = qdq.dtype_of(expr)
        if dtype not in ("int8", "uint8", "float32"):
            raise NotConvertible(f"{dtype} input")
        key = (expr, perm)
        if key not in self.tensors:
            # Integer inputs without a dequantize in the match (int8 reshape/pool) keep a unit quantization:
            # those ops never rescale, their constraints only compare input and output.
            quant = QuantParams(np.ones(1, np.float32), np.zeros(1, np.int64)) if dtype != "float32" else None
            self.tensors[key] = Tensor(len(self.tensors), getattr(expr, "name", "input"),
                                       tuple(shape[a] for a in perm), "int8" if dtype != "float32" else dtype, quant,
                                       orig_dtype="uint8" if dtype == "uint8" else None)
        return self.tensors[key], perm

    def quant_of(self, tensor, dq):
        tensor.quant = qdq.legalize_quant(qdq.qparams(dq), qdq.dtype_of(dq.args[0]))

    def new_tensor(self, name, shape, dtype, quant, orig_dtype=None, data=None):
        return Tensor(1000 + len(self.tensors), str(name), tuple(int(d) for d in shape), dtype, quant, data, orig_dtype)

    def context(self) -> qdq.Context:
        return qdq.Context(self.lookup, self.activation, self.quant_of, self.new_tensor, next_index=lambda: 0)


def ir_op_of_match(root, bindings, converter):
    """The edgesdk IR op a matched subgraph stands for, or None when it has no integer IR form."""
    try:
        return converter(root, _MatchContext(bindings).context(), "composite").op
    except NotConvertible:
        return None


def _make_check(target: str, converter):
    from ..targets import target_support

    support = target_support(target)

    def check(context) -> bool:
        bindings = dict(context.matched_bindings.items())
        op = ir_op_of_match(context.matched_expr, bindings, converter)
        return op is not None and support.check(op)[0]

    return check


def edgesdk_patterns(target: str) -> list:
    """FusionPatterns named edgesdk_<target>.<kind>, in priority order, for FuseOpsByPattern; `target` is any
    installed target's name (`edgesdk inspect --list-targets` lists them)."""
    from tvm.relax.transform import FusionPattern

    return [FusionPattern(f"{CODEGEN_PREFIX}{target}.{kind}", pattern, {}, _make_check(target, converter))
            for kind, pattern, converter in pattern_table()]


def register_edgesdk_patterns(*targets: str) -> None:
    """Register the patterns of `targets` (none given: every installed target,
    edgesdk.targets.available_targets()) in tvm.relax.backend.pattern_registry.

    The registry gives later entries higher priority, so the table is registered in reverse.
    """
    from tvm.relax.backend.pattern_registry import register_patterns

    from ..targets import available_targets

    for target in targets or available_targets():
        register_patterns([(p.name, p.pattern, {}, p.check) for p in reversed(edgesdk_patterns(target))])


def partition_for_edgesdk(mod, target: str, merge: bool = True):
    """FuseOpsByPattern with `target`'s patterns, then MergeCompositeFunctions (one function per region)."""
    from tvm import relax

    mod = relax.transform.FuseOpsByPattern(edgesdk_patterns(target), bind_constants=True,
                                           annotate_codegen=not merge)(mod)
    if merge:
        mod = relax.transform.MergeCompositeFunctions()(mod)
    return mod


def offloaded_ops(mod) -> list:
    """[(region index, composite name, IR op)] for every composite function main calls, in execution order.

    The IR op is rebuilt from the composite's body, to compare with `edgesdk inspect`.
    """
    from tvm import relax

    converters = {kind: converter for kind, _pattern, converter in pattern_table()}
    result = []
    main = mod["main"]
    region = 0
    for binding in [b for block in main.body.blocks for b in block.bindings]:
        callee = getattr(binding.value, "op", None)
        if not isinstance(callee, relax.GlobalVar):
            continue
        func = mod[callee]
        if func.attrs is None or "Codegen" not in func.attrs:
            continue
        for name, composite in _composites(func):
            kind = name.split(".", 1)[1]
            bindings = relax.analysis.get_var2val(composite)
            root = bindings.get(composite.body.body, composite.body.body)
            result.append((region, name, ir_op_of_match(root, bindings, converters[kind])))
        region += 1
    return result


def _composites(func) -> list:
    """(Composite name, function) of each composite called in `func`, in order (or `func` itself)."""
    if func.attrs is not None and "Composite" in func.attrs:
        return [(str(func.attrs["Composite"]), func)]
    from tvm import relax

    found = []
    var2val = relax.analysis.get_var2val(func)
    for binding in [b for block in func.body.blocks for b in block.bindings]:
        callee = getattr(binding.value, "op", None)
        target = var2val.get(callee, callee) if callee is not None else None
        if isinstance(target, relax.Function) and target.attrs is not None and "Composite" in target.attrs:
            found.append((str(target.attrs["Composite"]), target))
    return found
