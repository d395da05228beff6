"""Resource variables (streaming models) -> state tensors of the graph IR.

The TFLite converter keeps a model's state in resource variables: VAR_HANDLE names a variable, CALL_ONCE runs an
initialization subgraph on the first inference (it assigns constants), READ_VARIABLE copies a variable's value
into a tensor and ASSIGN_VARIABLE copies a tensor into the variable. edgesdk lowers them at import:

* each variable becomes one persistent tensor (Tensor.persistent): a buffer of the memory plan that nothing else
  uses and that keeps its value between inferences;
* the initialization subgraph is evaluated at build time: its values become the tensor's `initial` value, which
  the generated reset function (edgesdk_default_reset) writes at boot and whenever the caller resets the model;
* READ_VARIABLE becomes a copy state -> tensor and ASSIGN_VARIABLE a copy tensor -> state, in model order.

VAR_HANDLE and CALL_ONCE disappear. An initialization subgraph that computes anything but constants is refused.
"""

from __future__ import annotations

from ..errors import UnsupportedOpError
from ..ir.graph import Op, Tensor

HANDLE_OPS = ("VAR_HANDLE", "CALL_ONCE", "READ_VARIABLE", "ASSIGN_VARIABLE")


def _key(op) -> tuple:
    options = op.attrs.get("options", {})
    container, shared = options.get("container", ""), options.get("shared_name", "")
    return (container, shared) if (container or shared) else ("", f"#{op.index}")


def lower_resource_variables(graph, importer) -> None:
    """Rewrite `graph` (the main subgraph) in place; `importer` reads the initialization subgraphs."""
    if not any(op.type in HANDLE_OPS for op in graph.ops):
        return
    handles = {op.outputs[0]: _key(op) for op in graph.ops if op.type == "VAR_HANDLE"}
    initial = {}
    for op in graph.ops:
        if op.type == "CALL_ONCE":
            initial.update(_initial_values(op, importer))
    states: dict = {}

    def state_of(op, handle, like) -> Tensor:
        key = handles.get(handle)
        if key is None:
            raise UnsupportedOpError(f"{op.location} uses a resource that no VAR_HANDLE of the main subgraph "
                                     "creates; edgesdk supports variables created by VAR_HANDLE.")
        if key not in states:
            value = initial.get(key)
            template = value if value is not None else like
            name = key[1] if not key[1].startswith("#") else f"variable_{key[1][1:]}"
            state = Tensor(max(t.id for t in graph.tensors) + 1 + len(states), name, template.shape, template.dtype,
                           template.quant, persistent=True, initial=None if value is None else value.data.copy())
            states[key] = state
            graph.tensors.append(state)
        state = states[key]
        if (tuple(like.shape), like.dtype) != (tuple(state.shape), state.dtype):
            raise UnsupportedOpError(f"{op.location} uses variable '{state.name}' as {like.dtype}{list(like.shape)}, "
                                     f"but it holds {state.dtype}{list(state.shape)}; edgesdk needs a variable to "
                                     "keep its type and shape.")
        return state

    lowered = []
    for op in graph.ops:
        if op.type in ("VAR_HANDLE", "CALL_ONCE"):
            continue
        if op.type == "READ_VARIABLE":
            value = op.outputs[0]
            lowered.append(Op(op.index, op.type, [state_of(op, op.inputs[0], value)], [value]))
        elif op.type == "ASSIGN_VARIABLE":
            value = op.inputs[1]
            lowered.append(Op(op.index, op.type, [value], [state_of(op, op.inputs[0], value)]))
        else:
            lowered.append(op)
    graph.ops = lowered
    graph.tensors = [t for t in graph.tensors if t.dtype != "resource"]


def _initial_values(call_once, importer) -> dict:
    """{variable key: constant Tensor} that the CALL_ONCE's initialization subgraph assigns."""
    index = int(call_once.attrs.get("options", {}).get("init_subgraph_index", -1))
    _tensors, ops, _inputs, _outputs = importer.read_subgraph(index)
    handles = {op.outputs[0]: _key(op) for op in ops if op.type == "VAR_HANDLE"}
    values = {}
    for op in ops:
        if op.type == "VAR_HANDLE":
            continue
        if op.type != "ASSIGN_VARIABLE" or not op.inputs[1].is_const or op.inputs[0] not in handles:
            raise UnsupportedOpError(
                f"{call_once.location} runs initialization subgraph {index}, which computes values ({op.type}); "
                "edgesdk evaluates initialization subgraphs at build time and supports those that assign "
                "constants to variables (what the TFLite converter writes for tf.Variable initial values).")
        values[handles[op.inputs[0]]] = op.inputs[1]
    return values
