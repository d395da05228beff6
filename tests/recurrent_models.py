"""Hand-written recurrent models (tests/modelgen.py's ModelBuilder): UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF with
their state in TFLite variable tensors.

The TF 2.21 converter makes no SVDF at all and only the Keras LSTM shapes of the corpus, so the kernels' other
shapes, dtypes and quantizations are checked on these: random weights and quantizations, seeded.
"""

from __future__ import annotations

import numpy as np

from edgesdk.importer import import_tflite
from modelgen import ModelBuilder

ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4, "SIGN_BIT": 5}


def _f32(x) -> float:
    return float(np.float32(x))


def _log_uniform(rng, lo, hi) -> float:
    return _f32(np.exp(rng.uniform(np.log(lo), np.log(hi))))


# -- LSTM -------------------------------------------------------------------------------------------------------

def lstm_model(seed: int, batches: int = 1, steps: int = 5, n_input: int = 4, n_cell: int = 6, time_major=False,
               dtype: str = "int8", cell_clip: float = 10.0, cell_scale_power: int = -13, weight_range: int = 127,
               hidden_intermediate: bool = True, bias_axis: int | None = None, per_channel_bias: bool = False,
               activation: str = "TANH", weight_scale=(0.002, 0.02), bias_dtype: str = "int64",
               zero_point: int = 0) -> bytes:
    """A Keras-style LSTM with random weights, quantized like the converter's full-integer LSTM (int8 weights per
    tensor, int32 biases, int8 hidden state, int16 cell state of scale 2^cell_scale_power, the five intermediate
    tensors), the same in 16x8 (dtype "int16": int16 activations of zero point `zero_point`, biases of
    `bias_dtype`) or all float32. `bias_axis`/`per_channel_bias` write the biases' quantization with that quantized
    dimension and one scale per cell (a file LiteRT refuses when the axis is beyond the bias's rank)."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder()
    shape = (steps, batches, n_input) if time_major else (batches, steps, n_input)
    out_shape = (steps, batches, n_cell) if time_major else (batches, steps, n_cell)
    if dtype == "float32":
        x = m.tensor(shape, "float32", name="input")
        weights = [m.const(rng.uniform(-0.6, 0.6, (n_cell, n_input if k < 4 else n_cell)).astype(np.float32), "float32")
                   for k in range(8)]
        biases = [m.const(rng.uniform(-0.5, 0.5, n_cell).astype(np.float32), "float32") for _ in range(4)]
        h = m.tensor((batches, n_cell), "float32", name="output_state", variable=True)
        c = m.tensor((batches, n_cell), "float32", name="cell_state", variable=True)
        y = m.tensor(out_shape, "float32", name="output")
        intermediates = []
    elif dtype == "int16":
        x, weights, biases, h, c, y, intermediates = _lstm_16x8_tensors(
            m, rng, shape, out_shape, batches, n_input, n_cell, cell_scale_power, weight_range, weight_scale,
            hidden_intermediate, bias_dtype, zero_point)
    else:
        x_q = (_log_uniform(rng, 0.004, 0.02), int(rng.integers(-20, 20)))
        h_q = (_log_uniform(rng, 0.002, 0.008), int(rng.integers(-60, 60)))
        x = m.tensor(shape, "int8", *x_q, name="input")
        weights, biases = [], []
        for k in range(8):
            cols = n_input if k < 4 else n_cell
            w_scale = _log_uniform(rng, *weight_scale)
            values = rng.integers(-weight_range, weight_range + 1, (n_cell, cols)).astype(np.int8)
            weights.append(m.const(values, "int8", scale=w_scale, zero_point=0))
        for k in range(4):
            w_scale = m.tensors[weights[k]]["scale"]
            b_scale = _f32(x_q[0] * w_scale)
            values = rng.integers(-int(0.5 / b_scale), int(0.5 / b_scale) + 1, n_cell).astype(np.int32)
            if per_channel_bias:
                scales = [b_scale] * n_cell
                biases.append(m.const(values, "int32", scale=scales, zero_point=[0] * n_cell,
                                      axis=bias_axis if bias_axis is not None else 0))
            else:
                biases.append(m.const(values, "int32", scale=b_scale, zero_point=0,
                                      axis=bias_axis if bias_axis is not None else 0))
        h = m.tensor((batches, n_cell), "int8", *h_q, name="output_state", variable=True)
        c = m.tensor((batches, n_cell), "int16", 2.0 ** cell_scale_power, 0, name="cell_state", variable=True)
        y = m.tensor(out_shape, "int8", *h_q, name="output")
        intermediates = [m.tensor((0,), "float32", name=f"{g}_intermediate") for g in ("input", "forget", "cell",
                                                                                         "output")]
        if hidden_intermediate:
            intermediates.append(m.tensor((0,), "int8", *h_q, name="effective_hidden_scale_intermediate"))
    inputs = [x, *weights[:4], *weights[4:], -1, -1, -1, *biases, -1, -1, h, c, -1, -1, -1, -1]
    m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], "UnidirectionalSequenceLSTMOptions", intermediates=intermediates,
         FusedActivationFunction=ACTIVATIONS[activation], CellClip=cell_clip, ProjClip=0.0, TimeMajor=bool(time_major))
    return m.build([x], [y])


def _lstm_16x8_tensors(m, rng, shape, out_shape, batches, n_input, n_cell, cell_scale_power, weight_range,
                       weight_scale, hidden_intermediate, bias_dtype, zero_point):
    """The 16x8 integer LSTM's tensors (TFLite Micro's EvalLstm<int16_t, int8_t, int16_t, int64_t>): int16 input,
    hidden state and output with zero point 0, int8 symmetric weights per tensor, int64 biases of scale
    input scale x weight scale, the int16 cell state of scale 2^cell_scale_power, and the intermediates."""
    x_q = (_log_uniform(rng, 0.00005, 0.0005), zero_point)
    h_q = (_log_uniform(rng, 0.00003, 0.0002), zero_point)
    x = m.tensor(shape, "int16", *x_q, name="input")
    weights, biases = [], []
    for k in range(8):
        cols = n_input if k < 4 else n_cell
        w_scale = _log_uniform(rng, *weight_scale)
        values = rng.integers(-weight_range, weight_range + 1, (n_cell, cols)).astype(np.int8)
        weights.append(m.const(values, "int8", scale=w_scale, zero_point=0))
    for k in range(4):
        b_scale = _f32(x_q[0] * m.tensors[weights[k]]["scale"])
        limit = int(0.5 / b_scale)
        biases.append(m.const(rng.integers(-limit, limit + 1, n_cell).astype(np.int64), bias_dtype, scale=b_scale,
                              zero_point=0))
    h = m.tensor((batches, n_cell), "int16", *h_q, name="output_state", variable=True)
    c = m.tensor((batches, n_cell), "int16", 2.0 ** cell_scale_power, 0, name="cell_state", variable=True)
    y = m.tensor(out_shape, "int16", *h_q, name="output")
    intermediates = [m.tensor((0,), "float32", name=f"{g}_intermediate") for g in ("input", "forget", "cell",
                                                                                     "output")]
    if hidden_intermediate:
        intermediates.append(m.tensor((0,), "int16", *h_q, name="effective_hidden_scale_intermediate"))
    return x, weights, biases, h, c, y, intermediates


def single_op_from_model(path, op_index: int) -> bytes:
    """The model's recurrent op `op_index` alone: same tensors, weights and quantization, its input a model input
    and its output the model output (a corpus LSTM without the ops around it)."""
    graph = import_tflite(path)
    op = next(o for o in graph.ops if o.index == op_index)
    m = ModelBuilder()
    ids = {}

    def add(t):
        if t is None:
            return -1
        if t not in ids:
            q = t.quant
            quant = {} if q is None else dict(scale=q.scale.tolist() if q.scale.size > 1 else float(q.scale[0]),
                                              zero_point=q.zero_point.tolist() if q.zero_point.size > 1 else
                                              int(q.zero_point[0]), axis=q.axis)
            ids[t] = m.tensor(t.shape, t.dtype, data=t.data, name=t.name, variable=t.persistent, **quant)
        return ids[t]

    inputs = [add(t) for t in op.inputs]
    outputs = [add(t) for t in op.outputs]
    intermediates = [add(t) for t in op.intermediates]
    if op.type == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        m.op(op.type, inputs, outputs, "UnidirectionalSequenceLSTMOptions", intermediates=intermediates,
             FusedActivationFunction=ACTIVATIONS[op.attrs["activation"]], CellClip=op.attrs["cell_clip"],
             ProjClip=op.attrs["proj_clip"], TimeMajor=op.attrs["time_major"])
    else:
        raise ValueError(f"no single-op rebuild for {op.type}")
    return m.build([inputs[0]], outputs)


def lstm_16x8_from_int8(path) -> bytes:
    """A converter-made int8 LSTM model re-quantized to the 16x8 scheme (the converter makes no 16x8 LSTM): the same
    topology, weights and cell state; every int8 activation (input, hidden state, outputs, the hidden-scale
    intermediate) int16 with zero point 0 over the same real range; the int32 gate biases int64 at the new input
    scale x weight scale. Its ops: UNIDIRECTIONAL_SEQUENCE_LSTM and STRIDED_SLICE (lstm_stacked_seq_int8)."""
    graph = import_tflite(path)
    m = ModelBuilder()
    ids, scales = {}, {}

    def int16_scale(t) -> float:
        s, z = float(t.quant.scale[0]), int(t.quant.zero_point[0])
        return _f32(max(abs((-128 - z) * s), abs((127 - z) * s)) / 32767)

    def add(t, bias_of=None):
        if t is None:
            return -1
        if t in ids:
            return ids[t]
        q, dtype, data = t.quant, t.dtype, t.data
        quant = {} if q is None else dict(scale=float(q.scale[0]), zero_point=int(q.zero_point[0]))
        if dtype == "int8" and not t.is_const:  # an activation: int16, symmetric
            dtype, quant = "int16", dict(scale=int16_scale(t), zero_point=0)
            scales[t] = quant["scale"]
        elif bias_of is not None and data is not None:  # a gate bias: int64 at the re-quantized input's scale
            x, w = bias_of
            new_scale = _f32(scales[x] * float(w.quant.scale[0]))
            real = data.astype(np.float64) * float(q.scale[0])
            dtype, data, quant = "int64", np.round(real / new_scale).astype(np.int64), dict(scale=new_scale,
                                                                                           zero_point=0)
        ids[t] = m.tensor(t.shape, dtype, data=data, name=t.name, variable=t.persistent, **quant)
        return ids[t]

    for op in graph.ops:
        if op.type == "UNIDIRECTIONAL_SEQUENCE_LSTM":
            x = op.inputs[0]
            add(x)
            inputs = [add(t, (x, op.inputs[k - 11]) if 12 <= k <= 15 else None) for k, t in enumerate(op.inputs)]
            intermediates = [add(t) if t.dtype != "int8" else m.tensor(
                t.shape, "int16", int16_scale(t), 0, name=t.name) for t in op.intermediates]
            m.op(op.type, inputs, [add(op.outputs[0])], "UnidirectionalSequenceLSTMOptions",
                 intermediates=intermediates, FusedActivationFunction=ACTIVATIONS[op.attrs["activation"]],
                 CellClip=op.attrs["cell_clip"], ProjClip=op.attrs["proj_clip"], TimeMajor=op.attrs["time_major"])
        elif op.type == "STRIDED_SLICE":
            a = op.attrs
            m.op(op.type, [add(t) for t in op.inputs], [add(op.outputs[0])], "StridedSliceOptions",
                 BeginMask=a["begin_mask"], EndMask=a["end_mask"], EllipsisMask=a["ellipsis_mask"],
                 NewAxisMask=a["new_axis_mask"], ShrinkAxisMask=a["shrink_axis_mask"], Offset=a["offset"])
        else:
            raise ValueError(f"no 16x8 rebuild for {op.type}")
    return m.build([ids[t] for t in graph.inputs], [ids[t] for t in graph.outputs])


# -- SVDF -------------------------------------------------------------------------------------------------------

def svdf_model(seed: int, batches: int = 1, input_size: int = 8, num_units: int = 4, rank: int = 2,
               memory_size: int = 6, dtype: str = "int8", state_dtype: str = "int16", activation: str | None = None,
               bias: bool = True, state_zero_point: int = 0, feature_range: int = 127) -> bytes:
    """An SVDF with random weights: int8 input/output with int16 (or int8) weights_time and state, or float32."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder()
    filters = num_units * rank
    if dtype == "float32":
        x = m.tensor((batches, input_size), "float32", name="input")
        wf = m.const(rng.uniform(-0.5, 0.5, (filters, input_size)).astype(np.float32), "float32")
        wt = m.const(rng.uniform(-0.5, 0.5, (filters, memory_size)).astype(np.float32), "float32")
        b = m.const(rng.uniform(-0.3, 0.3, num_units).astype(np.float32), "float32") if bias else -1
        state = m.tensor((batches, memory_size * filters), "float32", name="activation_state", variable=True)
        y = m.tensor((batches, num_units), "float32", name="output")
        act = activation or "NONE"
    else:
        x_q = (_log_uniform(rng, 0.005, 0.05), int(rng.integers(-30, 30)))
        wf_s = _log_uniform(rng, 0.002, 0.02)
        x = m.tensor((batches, input_size), "int8", *x_q, name="input")
        wf = m.const(rng.integers(-feature_range, feature_range + 1, (filters, input_size)).astype(np.int8), "int8",
                     scale=wf_s, zero_point=0)
        typical_dot = np.sqrt(input_size) * 70.0 * 60.0  # integer units of input * weights_feature
        if state_dtype == "int16":
            state_s = _f32(typical_dot * x_q[0] * wf_s / rng.uniform(3000, 12000))
            wt_s = _log_uniform(rng, 1e-4, 1e-3)
            wt = m.const(rng.integers(-8192, 8193, (filters, memory_size)).astype(np.int16), "int16", scale=wt_s,
                         zero_point=0)
            typical_time = np.sqrt(filters // num_units * memory_size) * 6000.0 * 4000.0
        else:
            state_s = _f32(typical_dot * x_q[0] * wf_s / rng.uniform(30, 80))
            wt_s = _log_uniform(rng, 0.002, 0.02)
            wt = m.const(rng.integers(-127, 128, (filters, memory_size)).astype(np.int8), "int8", scale=wt_s,
                         zero_point=0)
            typical_time = np.sqrt(filters // num_units * memory_size) * 50.0 * 60.0
        out_s = _f32(typical_time * state_s * wt_s / rng.uniform(30, 90))
        b_s = _f32(state_s * wt_s)
        b = m.const(rng.integers(-int(0.3 / b_s), int(0.3 / b_s) + 1, num_units).astype(np.int32), "int32",
                    scale=b_s, zero_point=0) if bias else -1
        state = m.tensor((batches, memory_size * filters), state_dtype, state_s, state_zero_point,
                         name="activation_state", variable=True)
        y = m.tensor((batches, num_units), "int8", out_s, int(rng.integers(-20, 20)), name="output")
        act = activation or "RELU"  # LiteRT's integer SVDF requires RELU (and does not apply it)
    m.op("SVDF", [x, wf, wt, b, state], [y], "SVDFOptions", Rank=rank, FusedActivationFunction=ACTIVATIONS[act])
    return m.build([x], [y])
