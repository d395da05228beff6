"""A Relax IRModule (from TVM's ONNX or TFLite frontend, or built in Python) -> edgesdk's graph IR.

The walk goes through the bindings of `main` in order. Every binding that ends an integer value -- a
quantize, TVM's int8 clip after it, an int8 reshape or cast -- is a *root*: the converters of
edgesdk/tvm/qdq.py try, most specific first, to read the subgraph behind it as one IR op (CONV_2D,
FULLY_CONNECTED, ADD, ...). Float intermediates (the dequantizes, the float conv, the bias add) are not
translated on their own: they are the inside of some root's pattern.

Layout: ONNX graphs are NCHW, edgesdk's IR is NHWC. Each Relax value maps to an IR tensor plus the order
its axes are stored in (`perm`, storage = logical.transpose(perm)). A convolution reading an NCHW value
asks for NHWC storage; the importer inserts a TRANSPOSE (or, when only size-1 axes move, a free RESHAPE)
the first time a value is needed in another order, and the rest of the chain stays NHWC.

Long tail: a root no converter accepts (an int8 subtract, an exp, a transpose, ...) becomes one IR op whose
`attrs["relax_function"]` is the Relax subgraph itself (inputs as parameters, one compute op, the
dequantize/quantize around it). The host C target lowers those through TVM (edgesdk/tvm/lowering.py).
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError, UnsupportedOpError
from ..importer.names import sanitize_name
from ..ir.graph import Graph, Op, Tensor
from . import LONG_TAIL_TYPES, qdq
from .qdq import NotConvertible, dtype_of, is_call, is_const, op_name, shape_of

IR_DTYPES = ("int8", "float32", "int32")
# Ops whose operands are read in place: they are part of a constant tree, or the quantization boundary.
_NOT_COMPUTE = ("relax.dequantize", "relax.quantize")


def relax_to_graph(mod, name: str = "model", input_names=None, output_names=None) -> Graph:
    """Import `mod["main"]` into a Graph; raise UnsupportedOpError/ModelError with a message for the user."""
    try:
        func = mod["main"]
    except Exception:
        raise ModelError("The Relax module has no 'main' function; edgesdk compiles the module's main.") from None
    return _RelaxImporter(func, name, input_names, output_names).run()


class _RelaxImporter:
    def __init__(self, func, name: str, input_names, output_names):
        import tvm.relax

        self.func = func
        self.name = sanitize_name(name) or "model"
        self.var2val = tvm.relax.analysis.get_var2val(func)
        self.values: dict = {}  # Relax Var -> (IR Tensor, perm)
        self.layouts: dict = {}  # (Relax Var, perm) -> IR Tensor stored in that order
        self.tensors: list = []
        self.ops: list = []
        self.notes: list = []
        self.input_names = list(input_names or [])
        self.output_names = list(output_names or [])
        # quantize binding -> its position among main's quantize bindings: the k-th QuantizeLinear node of an
        # ONNX file (TVM's frontend emits one per node, in order); --rounding ort maps ONNX Runtime's plan by it.
        self.quantize_ordinal: dict = {}

    # -- driver ---------------------------------------------------------------------------------------------
    def run(self) -> Graph:
        inputs = [self._graph_input(i, p) for i, p in enumerate(self.func.params)]
        bindings = [b for block in self.func.body.blocks for b in block.bindings]
        quantizes = [b.var for b in bindings if is_call(b.value, "relax.quantize")]
        self.quantize_ordinal = {var: k for k, var in enumerate(quantizes)}
        users = self._users(bindings)
        for binding in bindings:
            if self._is_root(binding.value, users.get(binding.var, [])):
                self._convert_root(binding.var, binding.value)
        outputs = [self._graph_output(i, v) for i, v in enumerate(self._output_vars())]
        graph = Graph(self.name, [], self.ops, inputs, outputs, "imported through Apache TVM Relax")
        used = set(graph.inputs) | set(graph.outputs) | {t for op in graph.ops for t in op.inputs + op.outputs if t is not None}
        graph.tensors = [t for t in self.tensors if t in used]
        return graph

    def _users(self, bindings) -> dict:
        users: dict = {}

        def visit(expr, user):
            if type(expr).__name__ in ("Var", "DataflowVar"):
                users.setdefault(expr, []).append(user)
            for arg in getattr(expr, "args", None) or getattr(expr, "fields", None) or []:
                visit(arg, user)

        for b in bindings:
            visit(b.value, b.value)
        return users

    def _is_root(self, value, users) -> bool:
        dtype = dtype_of(value) if hasattr(value, "ty") and hasattr(value.ty, "dtype") else ""
        if is_call(value, "relax.quantize"):
            # TVM's TFLite frontend clamps the fused activation after quantize: the clip is the root then.
            return not (len(users) == 1 and is_call(users[0], "relax.clip"))
        if is_call(value, "relax.clip", "relax.astype", "relax.reshape") and dtype in ("int8", "uint8"):
            return True
        return False

    def _output_vars(self) -> list:
        body = self.func.body.body
        bound = self.var2val.get(body)
        if getattr(bound, "fields", None) is not None:  # main returns a variable bound to a tuple (several outputs)
            body = bound
        fields = getattr(body, "fields", None)
        return list(fields) if fields is not None else [body]

    # -- graph edges ------------------------------------------------------------------------------------------
    def _graph_input(self, index: int, param) -> Tensor:
        dtype = dtype_of(param)
        if dtype not in ("float32", "int8"):
            raise UnsupportedOpError(f"Model input '{param.name}' is {dtype}; edgesdk takes float32 or int8 inputs "
                                     "(quantize uint8 models to int8).")
        name = self.input_names[index] if index < len(self.input_names) else param.name
        tensor = self._new_tensor(name, shape_of(param), dtype, None)
        self.values[param] = (tensor, _identity(tensor.shape))
        return tensor

    def _graph_output(self, index: int, var) -> Tensor:
        """Outputs keep the model's layout; an int8 value read through dequantize becomes DEQUANTIZE."""
        bound = self.var2val.get(var)
        if var not in self.values and is_call(bound, "relax.dequantize") and bound.args[0] in self.values:
            x = self._in_perm(bound.args[0], _identity(shape_of(bound.args[0])))
            self._check_dq(x, bound)
            y = self._new_tensor(var.name, x.shape, "float32", None)
            self.ops.append(Op(len(self.ops), "DEQUANTIZE", [x], [y], {}))
            self.values[var] = (y, _identity(y.shape))
        if var not in self.values:
            if bound is None:
                raise ModelError(f"The Relax main returns '{var.name}', which it does not compute.")
            self._long_tail(var, bound, [])
        tensor = self._in_perm(var, _identity(shape_of(var)))
        if index < len(self.output_names):
            tensor.name = sanitize_name(self.output_names[index])
        return tensor

    # -- roots ------------------------------------------------------------------------------------------------
    def _convert_root(self, var, value) -> None:
        reasons = []
        for kind, converter in qdq.CONVERTERS.items():
            state = self._snapshot()
            try:
                converted = converter(value, self._context(), var.name)
            except NotConvertible as why:
                self._restore(state)
                reasons.append(f"{kind}: {why}")
                continue
            self._mark_root(converted.op, var)
            self.ops.append(converted.op)
            self.values[var] = (converted.op.outputs[0], converted.perm)
            return
        self._long_tail(var, value, reasons)

    def _mark_root(self, op, var) -> None:
        """Record which quantize binding the op ends in (op.attrs["qdq_root"]), if it ends in one."""
        if var in self.quantize_ordinal:
            op.attrs["qdq_root"] = self.quantize_ordinal[var]

    def _context(self) -> qdq.Context:
        return qdq.Context(lookup=self._lookup, activation=self._activation, quant_of=self._check_dq,
                           new_tensor=self._new_tensor, next_index=lambda: len(self.ops), notes=self.notes)

    def _snapshot(self):
        return len(self.ops), dict(self.values), dict(self.layouts)

    def _restore(self, state) -> None:
        count, values, layouts = state
        del self.ops[count:]
        self.values, self.layouts = values, layouts

    def _lookup(self, expr):
        """See through a binding, unless the variable is already an IR tensor (then the tensor is the input)."""
        if expr in self.values:
            return expr
        return self.var2val.get(expr, expr)

    def _activation(self, expr, perm):
        if expr not in self.values:
            bound = self.var2val.get(expr)
            if bound is None or dtype_of(bound) != "float32":
                raise NotConvertible(f"input {getattr(expr, 'name', expr)} is not a known tensor")
            self._materialize(expr, bound)
        tensor, have = self.values[expr]
        if perm is None:
            return tensor, have
        return self._in_perm(expr, perm), tuple(perm)

    def _check_dq(self, tensor: Tensor, dq) -> None:
        """The dequantize must read the tensor with the quantization it was written with."""
        quant = qdq.legalize_quant(qdq.qparams(dq), str(dq.args[0].ty.dtype))
        if tensor.quant is None:
            tensor.quant = quant  # an int8 model input: its quantization is the one it is read with
        elif not (np.array_equal(tensor.quant.scale, quant.scale) and np.array_equal(tensor.quant.zero_point, quant.zero_point)):
            raise NotConvertible(f"'{tensor.name}' is dequantized with other parameters than it was quantized with")

    def _new_tensor(self, name, shape, dtype, quant, orig_dtype=None, data=None) -> Tensor:
        if dtype not in IR_DTYPES:
            raise NotConvertible(f"{dtype} tensor")
        tensor = Tensor(len(self.tensors), sanitize_name(str(name)) or f"t{len(self.tensors)}", tuple(int(d) for d in shape),
                        dtype, quant, data, orig_dtype)
        self.tensors.append(tensor)
        return tensor

    # -- layouts ----------------------------------------------------------------------------------------------
    def _in_perm(self, var, perm) -> Tensor:
        """The IR tensor of `var` stored in axis order `perm`: TRANSPOSE (or a RESHAPE when no data moves)."""
        perm = tuple(perm)
        tensor, have = self.values[var]
        if have == perm:
            return tensor
        if (var, perm) in self.layouts:
            return self.layouts[(var, perm)]
        logical = shape_of(var)
        if len(perm) != len(have):
            raise NotConvertible("rank changes between layouts")
        relative = tuple(have.index(a) for a in perm)  # storage axes of `tensor` in the wanted order
        shape = tuple(logical[a] for a in perm)
        out = self._new_tensor(f"{tensor.name}_{''.join(str(a) for a in perm)}", shape, tensor.dtype, tensor.quant,
                               tensor.orig_dtype)
        if _moves_no_data(tensor.shape, relative):
            self.ops.append(Op(len(self.ops), "RESHAPE", [tensor], [out], {}))
        else:
            func = _transpose_function(tensor, relative)
            self.ops.append(Op(len(self.ops), "TRANSPOSE", [tensor], [out],
                               {"perm": relative, "relax_function": func, "relax_ops": ["relax.permute_dims"]}))
        self.layouts[(var, perm)] = out
        return out

    # -- long tail --------------------------------------------------------------------------------------------
    def _long_tail(self, var, value, reasons) -> None:
        """One IR op that carries its Relax subgraph, for the host C target to lower through TVM."""
        builder = _SliceBuilder(self)
        try:
            func, inputs, compute = builder.build(value)
        except NotConvertible as why:
            raise UnsupportedOpError(
                f"The Relax subgraph ending in '{var.name}' ({op_name(value)}) cannot be imported: {why}. "
                f"No edgesdk pattern matched it ({'; '.join(reasons)})." if reasons else
                f"The Relax value '{var.name}' ({op_name(value)}) cannot be imported: {why}.") from None
        if len(compute) != 1 or compute[0] not in LONG_TAIL_TYPES:
            names = ", ".join(compute) or "no compute op"
            raise UnsupportedOpError(
                f"'{var.name}' computes {names}, which no edgesdk pattern covers (tried: {'; '.join(reasons)}) and "
                f"which edgesdk does not lower through TVM. Long-tail ops lowered through TVM: "
                f"{', '.join(sorted(LONG_TAIL_TYPES))} (one per op, with their dequantize/quantize).")
        out_dtype = dtype_of(value)
        quant = None
        if is_call(value, "relax.quantize"):
            if qdq.out_dtype(value) not in ("int8", "uint8"):
                raise UnsupportedOpError(f"'{var.name}' quantizes to {qdq.out_dtype(value)}; long-tail ops support int8 "
                                         "and uint8.")
            quant = qdq.legalize_quant(qdq.qparams(value), qdq.out_dtype(value))
            out_dtype = "int8"  # a uint8 result is stored as int8 (the function quantizes to int8: _int8_quantization)
        if out_dtype not in ("int8", "float32"):
            raise UnsupportedOpError(f"'{var.name}' produces {out_dtype}; long-tail ops produce int8 or float32.")
        if out_dtype == "int8" and quant is None:
            quant = next((t.quant for t in inputs if t.dtype == "int8" and t.quant is not None), None)
        y = self._new_tensor(var.name, shape_of(value), out_dtype, quant)
        op = Op(len(self.ops), LONG_TAIL_TYPES[compute[0]], inputs, [y],
                {"relax_function": func, "relax_ops": compute})
        if compute[0] == "relax.permute_dims":
            op.attrs["perm"] = tuple(int(a) for a in self.var2val.get(var, value).attrs.axes or [])
        self._mark_root(op, var)
        self.ops.append(op)
        self.values[var] = (y, _identity(y.shape))

    def _materialize(self, var, bound) -> None:
        self._long_tail(var, bound, [])


class _SliceBuilder:
    """Rebuild a root's Relax subgraph as a standalone function over IR tensors.

    Parameters: the IR tensors it reads (native layout) and its float constants (exact values travel as
    const arrays: TVM's C codegen prints float literals with 7 digits). At most one compute op per slice;
    a float input computed by another op is materialized first as its own long-tail op.
    """

    def __init__(self, importer: _RelaxImporter):
        self.imp = importer
        self.params: list = []  # relax Vars
        self.inputs: list = []  # IR tensors, same order
        self.by_source: dict = {}
        self.compute: list = []

    def build(self, root):
        from tvm import relax

        body = self._rebuild(root, allow_compute=True)
        bb = relax.BlockBuilder()
        with bb.function("main", self.params):
            with bb.dataflow():
                out = bb.emit_output(body)
            bb.emit_func_output(out)
        return bb.get()["main"], self.inputs, self.compute

    def _param(self, key, tensor: Tensor):
        from tvm import relax

        if key not in self.by_source:
            var = relax.Var(f"p{len(self.params)}", relax.TensorType(tensor.shape, tensor.dtype))
            self.params.append(var)
            self.inputs.append(tensor)
            self.by_source[key] = var
        return self.by_source[key]

    def _rebuild(self, expr, allow_compute: bool):
        from tvm import relax

        imp = self.imp
        if expr in imp.values:
            return self._param(expr, imp._in_perm(expr, _identity(shape_of(expr))))
        if type(expr).__name__ in ("Var", "DataflowVar"):
            bound = imp.var2val.get(expr)
            if bound is None:
                raise NotConvertible(f"'{expr.name}' is not defined in main")
            if _is_compute(bound, imp) and not allow_compute:
                if dtype_of(bound) != "float32":
                    raise NotConvertible(f"'{expr.name}' is an intermediate {dtype_of(bound)} value of {op_name(bound)}")
                imp._materialize(expr, bound)
                return self._rebuild(expr, allow_compute)
            return self._rebuild(bound, allow_compute)
        if is_const(expr):
            data = qdq.const_array(expr)
            if data.dtype == np.float32:  # exact values: passed as a const array, not a C literal
                tensor = imp._new_tensor(f"const{len(imp.tensors)}", data.shape, "float32", None, None, data)
                return self._param(expr, tensor)  # the node itself: a Python wrapper's id() is reused once it is freed
            return expr
        if hasattr(expr, "op") and hasattr(expr, "args"):
            compute = _is_compute(expr, imp)
            if compute:
                if not allow_compute:
                    raise NotConvertible(f"two compute ops ({self.compute[0]}, {op_name(expr)}) in one subgraph")
                self.compute.append(op_name(expr))
            args = [self._rebuild(a, allow_compute and not compute) for a in expr.args]
            if is_call(expr, "relax.dequantize", "relax.quantize") and "uint8" in (dtype_of(expr.args[0]), dtype_of(expr)):
                return _int8_quantization(expr, args)
            return relax.Call(expr.op, args, expr.attrs)
        fields = getattr(expr, "fields", None)
        if fields is not None:
            return relax.Tuple([self._rebuild(f, allow_compute) for f in fields])
        return expr  # shapes, prim values


def _int8_quantization(expr, args):
    """A uint8 quantize/dequantize rewritten on the int8 tensors the importer made of uint8 ones (values and zero
    point shifted by -128): the same real values, and a uint8 result clamped to [0, 255] is the int8 result + 128."""
    from tvm import relax

    zp = args[2]
    if not is_const(zp):
        raise NotConvertible("uint8 quantization with a non-constant zero point")
    shifted = relax.const((qdq.const_array(zp).astype(np.int16) - 128).astype(np.int8))
    axis = int(expr.attrs.axis)
    if is_call(expr, "relax.dequantize"):
        return relax.op.dequantize(args[0], args[1], shifted, axis, str(expr.attrs.out_dtype))
    return relax.op.quantize(args[0], args[1], shifted, axis, "int8")


def _is_compute(expr, imp) -> bool:
    if not (hasattr(expr, "op") and hasattr(expr, "args")) or op_name(expr) in _NOT_COMPUTE:
        return False
    return not qdq._is_const_tree(expr, qdq.Context(imp._lookup, None, None, None))


def _identity(shape) -> tuple:
    return tuple(range(len(shape)))


def _moves_no_data(shape: tuple, relative: tuple) -> bool:
    """A transpose that only moves size-1 axes keeps every element at its byte offset."""
    moved = [a for a in relative if shape[a] != 1]
    return moved == sorted(moved)


def _transpose_function(tensor: Tensor, perm: tuple):
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(tensor.shape, tensor.dtype))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.permute_dims(x, list(perm)))
        bb.emit_func_output(out)
    return bb.get()["main"]

