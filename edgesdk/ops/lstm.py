"""UNIDIRECTIONAL_SEQUENCE_LSTM: a Keras-style LSTM over a sequence, its hidden and cell state in TFLite variable
tensors (persistent tensors of the IR: they keep their value between inferences).

Inputs (TFLite's order): 0 input [batch, time, n_input] (or [time, batch, n_input] when time_major); 1-4 the
input-to-gate weights (input, forget, cell, output gate) [n_cell, n_input]; 5-8 the recurrent weights
[n_cell, n_output]; 9-11 peephole weights; 12-15 the gate biases [n_cell]; 16-17 projection weights and bias;
18 the output (hidden) state and 19 the cell state, both variable tensors; 20-23 layer-norm coefficients.
Output 0 [batch, time, n_output]: the hidden state after every time step.

Build-time data (LstmData): sizes and, for the full-integer LSTM (int8 activations, int8 weights, int32 biases,
int16 cell state), the requantization constants of both references, which compute it differently (docs/rounding.md,
"Recurrent ops"); the 16x8 LSTM (int16 activations, int64 biases) exists in TFLite Micro only, with its
arithmetic:

* LiteRT (`ref`, PopulateQuantizedLstmParams8x8_16): effective scales in float32, gemmlowp int16 fixed-point
  sigmoid/tanh, cell products by rounding shifts, the hidden scale from the op's 5th intermediate tensor
  (rounded to float32), the recurrent sum added to the saturated input sum;
* TFLite Micro (`tflm`, lstm_eval_common.cc): table-interpolated int16 sigmoid/tanh, cell and hidden products
  through MultiplyByQuantizedMultiplier with multipliers from double scales, input and recurrent sums saturated
  separately, the hidden scale of the output state tensor.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from . import register
from .base import FUSED_ACTIVATIONS, OpDef, Operands, input_of, op_error

INPUT_NAMES = ("input", "input_to_input_weights", "input_to_forget_weights", "input_to_cell_weights",
               "input_to_output_weights", "recurrent_to_input_weights", "recurrent_to_forget_weights",
               "recurrent_to_cell_weights", "recurrent_to_output_weights", "cell_to_input_weights",
               "cell_to_forget_weights", "cell_to_output_weights", "input_gate_bias", "forget_gate_bias",
               "cell_gate_bias", "output_gate_bias", "projection_weights", "projection_bias", "output_state",
               "cell_state", "input_layer_norm_coefficients", "forget_layer_norm_coefficients",
               "cell_layer_norm_coefficients", "output_layer_norm_coefficients")
OPTIONAL = ("input_to_input_weights", "recurrent_to_input_weights", "cell_to_input_weights", "cell_to_forget_weights",
            "cell_to_output_weights", "input_gate_bias", "projection_weights", "projection_bias",
            "input_layer_norm_coefficients", "forget_layer_norm_coefficients", "cell_layer_norm_coefficients",
            "output_layer_norm_coefficients")

INPUT, OUTPUT_STATE, CELL_STATE = 0, 18, 19
GATES = ("input", "forget", "cell", "output")  # the kernels' gate order
INPUT_WEIGHTS = {"input": 1, "forget": 2, "cell": 3, "output": 4}
RECURRENT_WEIGHTS = {"input": 5, "forget": 6, "cell": 7, "output": 8}
PEEPHOLE = (9, 10, 11)
BIASES = {"input": 12, "forget": 13, "cell": 14, "output": 15}
PROJECTION = (16, 17)
LAYER_NORM = (20, 21, 22, 23)

GATE_INPUT_SCALE = 2.0 ** -12  # both references: gate pre-activations in Q3.12
GATE_OUTPUT_SCALE = 2.0 ** -15  # sigmoid/tanh outputs in Q0.15


def variant_inputs(op) -> dict:
    """{variant: [input indices present]} for the optional LSTM parts (CIFG is the absence of the input gate)."""
    present = {k for k, t in enumerate(op.inputs) if t is not None}
    return {"peephole": sorted(present & set(PEEPHOLE)), "projection": sorted(present & set(PROJECTION)),
            "layer norm": sorted(present & set(LAYER_NORM)),
            "CIFG (no input gate)": [] if {1, 5} & present else [1, 5]}


@dataclass(frozen=True)
class LstmGate:
    """One gate's two matrix products: requantization of the input and of the recurrent sum, and the effective
    biases (gate bias minus input zero point times the row sums; minus output state zero point times the
    recurrent row sums) that make both sums plain int8 dot products."""

    input_multiplier: int
    input_shift: int
    recurrent_multiplier: int
    recurrent_shift: int
    input_bias: np.ndarray  # [n_cell]: int32 (int8 LSTM), int64 (16x8)
    recurrent_bias: np.ndarray  # [n_cell]: int32 (int8 LSTM), int64 (16x8)


@dataclass(frozen=True)
class LstmData:
    kind: str  # "int8" (8x8->16 integer LSTM), "int16" (16x8->16, TFLite Micro only) or "float32"
    arithmetic: str  # "litert" or "tflm": which reference's computation (follows the rounding mode)
    batches: int
    steps: int
    n_input: int
    n_cell: int
    n_output: int
    time_major: bool
    cell_clip: float  # float LSTM: clip of the cell state (0: none)
    # -- integer LSTM only --
    gates: tuple = ()  # LstmGate per GATES entry
    quantized_cell_clip: int = 0
    clip_cell: bool = False
    cell_scale_power: int = 0  # cell state scale = 2^cell_scale_power
    hidden_multiplier: int = 0  # output gate * tanh(cell) -> hidden state
    hidden_shift: int = 0
    hidden_zero_point: int = 0
    # LiteRT: tanh of the cell in gemmlowp Q(15 + cell_scale_power); input gate * cell gate >> (30 + power)
    tanh_integer_bits: int = 0
    input_cell_shift: int = 0
    # TFLite Micro: the cell tanh's input rescale (x * multiplier + round) >> shift; the two cell products
    tanh_multiplier: int = 0
    tanh_shift: int = 0
    forget_multiplier: int = 0
    forget_shift: int = 0
    input_cell_multiplier: int = 0
    input_cell_shift_tflm: int = 0


def lstm_sizes(op) -> tuple:
    """(batches, steps, n_input, n_cell, n_output) from the input and the output-gate weights."""
    x = op.inputs[INPUT]
    time_major = bool(op.attrs.get("time_major", False))
    steps, batches = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    n_cell = op.inputs[INPUT_WEIGHTS["output"]].shape[0]
    n_output = op.inputs[RECURRENT_WEIGHTS["output"]].shape[1]
    return int(batches), int(steps), int(x.shape[2]), int(n_cell), int(n_output)


def cell_scale_power(scale: float) -> tuple:
    """TFLite's CheckedLog2 of the cell state scale: (rounded log2 computed in float32, whether it is exact)."""
    log2 = np.float32(np.log(np.float32(scale))) * np.float32(1.0 / np.log(np.float32(2.0)))
    rounded = np.float32(np.round(log2))
    return int(rounded), bool(abs(np.float32(log2 - rounded)) < np.float32(1e-3))


def _row_sums(w) -> np.ndarray:
    return w.data.astype(np.int64).reshape(w.shape[0], -1).sum(axis=1)


def _wrap32(values) -> np.ndarray:
    values = np.asarray(values, dtype=np.int64)
    return ((values + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _scale(t) -> np.float32:
    return np.float32(t.quant.scale[0])


def hidden_quantization(op, arithmetic: str) -> tuple:
    """(scale, zero point) of the hidden state the output gate product is requantized to: LiteRT reads the 5th
    intermediate tensor (the converter's 'effective_hidden_scale_intermediate'), TFLite Micro the output state.
    Without a quantized 5th intermediate (a file LiteRT refuses) both use the output state."""
    h = op.inputs[OUTPUT_STATE]
    if arithmetic == "litert" and len(op.intermediates) >= 5 and op.intermediates[4].quant is not None:
        q = op.intermediates[4].quant
        return np.float32(q.scale[0]), int(q.zero_point[0])
    return _scale(h), int(h.quant.zero_point[0])


def _integer_data(op, mode: str, sizes: tuple, time_major: bool, cell_clip: float) -> LstmData:
    """The integer LSTM's constants. int8: each reference's; int16 (16x8): TFLite Micro's, whatever the mode
    (LiteRT has no 16x8 LSTM: the C target refuses it under --rounding ref), with the biases kept in int64."""
    arithmetic = "tflm" if mode == "tflm" else "litert"
    x, h, c = op.inputs[INPUT], op.inputs[OUTPUT_STATE], op.inputs[CELL_STATE]
    kind = "int16" if x.dtype == "int16" else "int8"
    constants = "tflm" if kind == "int16" else arithmetic
    x_scale, h_scale, x_zp, h_zp = _scale(x), _scale(h), int(x.quant.zero_point[0]), int(h.quant.zero_point[0])
    gates = []
    for gate in GATES:
        wx, wh, b = op.inputs[INPUT_WEIGHTS[gate]], op.inputs[RECURRENT_WEIGHTS[gate]], op.inputs[BIASES[gate]]
        if constants == "litert":  # float32: weight_scale * input_scale / intermediate_scale
            sx = float(np.float32(_scale(wx) * x_scale) / np.float32(GATE_INPUT_SCALE))
            sh = float(np.float32(_scale(wh) * h_scale) / np.float32(GATE_INPUT_SCALE))
        else:  # double(float32 product) / double(2^-12): GetQuantizedConvolutionMultipler
            sx = float(np.float32(x_scale * _scale(wx))) / GATE_INPUT_SCALE
            sh = float(np.float32(h_scale * _scale(wh))) / GATE_INPUT_SCALE
        mx, ex = quant.quantize_multiplier(sx)
        mh, eh = quant.quantize_multiplier(sh)
        bias = b.data.astype(np.int64) if b is not None else np.zeros(sizes[3], np.int64)
        input_bias, recurrent_bias = bias - x_zp * _row_sums(wx), -h_zp * _row_sums(wh)
        if kind == "int8":  # TFLite's int32 accumulator wraps; the 16x8 one is int64
            input_bias, recurrent_bias = _wrap32(input_bias), _wrap32(recurrent_bias)
        gates.append(LstmGate(mx, ex, mh, eh, input_bias, recurrent_bias))
    c_scale = _scale(c)
    power, _exact = cell_scale_power(c_scale)
    hidden_scale, hidden_zp = hidden_quantization(op, constants)
    common = dict(kind=kind, arithmetic=arithmetic, batches=sizes[0], steps=sizes[1], n_input=sizes[2],
                  n_cell=sizes[3], n_output=sizes[4], time_major=time_major, cell_clip=cell_clip, gates=tuple(gates),
                  cell_scale_power=power, hidden_zero_point=hidden_zp)
    if constants == "litert":
        clip = 0
        if cell_clip > 0:  # float32 division, truncated to int16
            clip = int(min(max(np.float32(cell_clip) / c_scale, np.float32(-32768.0)), np.float32(32767.0)))
        # std::pow(2, -15) / intermediate_scale * std::pow(2, -15) in double, stored in a float
        hidden = float(np.float32(2.0 ** -15 / float(hidden_scale) * 2.0 ** -15))
        hm, hs = quant.quantize_multiplier(hidden)
        return LstmData(**common, quantized_cell_clip=clip, clip_cell=clip > 0, hidden_multiplier=hm,
                        hidden_shift=hs, tanh_integer_bits=15 + power, input_cell_shift=30 + power)
    clip = int(min(max(float(np.float32(cell_clip)) / float(c_scale), -32768.0), 32767.0))
    tanh_shift, tanh_multiplier = 15 + power - 3, 0
    if tanh_shift < 0:
        tanh_shift, tanh_multiplier = -tanh_shift, 3
    if tanh_multiplier == 0:  # the reference's power-of-two case: multiplier 3 << shift, no shift
        tanh_multiplier, tanh_shift = 3 << tanh_shift, 0
    q15 = GATE_OUTPUT_SCALE
    fm, fs = quant.quantize_multiplier(q15 * float(c_scale) / float(c_scale))
    im, ish = quant.quantize_multiplier(q15 * q15 / float(c_scale))
    hm, hs = quant.quantize_multiplier(q15 * q15 / float(hidden_scale))
    return LstmData(**common, quantized_cell_clip=clip, clip_cell=cell_clip > 0, hidden_multiplier=hm,
                    hidden_shift=hs, tanh_multiplier=tanh_multiplier, tanh_shift=tanh_shift, forget_multiplier=fm,
                    forget_shift=fs, input_cell_multiplier=im, input_cell_shift_tflm=ish)


@register
class UnidirectionalSequenceLstm(OpDef):
    types = ("UNIDIRECTIONAL_SEQUENCE_LSTM",)
    operands = Operands(inputs=INPUT_NAMES, optional=OPTIONAL)
    options = "UnidirectionalSequenceLSTMOptions"

    def attributes(self, op, options: dict) -> dict:
        code = options.get("fused_activation_function", 0)
        if code not in FUSED_ACTIVATIONS:
            raise op_error(op, f"has an unknown fused activation code {code}")
        return {"activation": FUSED_ACTIVATIONS[code], "cell_clip": float(options.get("cell_clip", 0.0)),
                "proj_clip": float(options.get("proj_clip", 0.0)), "time_major": bool(options.get("time_major", False)),
                "asymmetric_quantize_inputs": bool(options.get("asymmetric_quantize_inputs", False)),
                "diagonal_recurrent_tensors": bool(options.get("diagonal_recurrent_tensors", False))}

    def check(self, op) -> None:
        x, y = op.inputs[INPUT], op.outputs[0]
        if len(x.shape) != 3:
            raise op_error(op, f"input {list(x.shape)} must be 3-D ([batch, time, features], or time-major)")
        for k in (OUTPUT_STATE, CELL_STATE):
            state = op.inputs[k]
            if not state.persistent:
                raise op_error(op, f"input {k} ({INPUT_NAMES[k]}) '{state.name}' must be a variable tensor (the "
                                   "LSTM keeps its state there between inferences)")
        for k in list(INPUT_WEIGHTS.values()) + list(RECURRENT_WEIGHTS.values()) + list(BIASES.values()):
            t = input_of(op, k)
            if t is not None and not t.is_const:
                from ..errors import UnsupportedOpError

                raise UnsupportedOpError(f"{op.type} at {op.location} has non-constant weights or bias "
                                         f"('{t.name}'); edgesdk needs constant weights.")
        batches, steps, n_input, n_cell, n_output = lstm_sizes(op)
        for gate in GATES:
            wx, wh, b = (input_of(op, INPUT_WEIGHTS[gate]), input_of(op, RECURRENT_WEIGHTS[gate]),
                         input_of(op, BIASES[gate]))
            if (wx is None) != (wh is None):
                raise op_error(op, f"has only one of the {gate} gate's input and recurrent weights")
            if wx is not None and tuple(wx.shape) != (n_cell, n_input):
                raise op_error(op, f"{gate} gate input weights {list(wx.shape)} must be [{n_cell}, {n_input}]")
            if wh is not None and len(wh.shape) == 2 and tuple(wh.shape) != (n_cell, n_output):
                raise op_error(op, f"{gate} gate recurrent weights {list(wh.shape)} must be [{n_cell}, {n_output}]")
            if wh is not None and len(wh.shape) not in (1, 2):
                raise op_error(op, f"{gate} gate recurrent weights {list(wh.shape)} must be 2-D (or 1-D diagonal)")
            if b is not None and tuple(b.shape) != (n_cell,):
                raise op_error(op, f"{gate} gate bias {list(b.shape)} must be [{n_cell}]")
            if gate != "input" and (wx is None or b is None):
                raise op_error(op, f"has no {gate} gate weights or bias")
        if input_of(op, PROJECTION[0]) is None and n_output != n_cell:
            raise op_error(op, f"has {n_cell} cells but {n_output} outputs without a projection")
        h, c = op.inputs[OUTPUT_STATE], op.inputs[CELL_STATE]
        if h.num_elements != batches * n_output or c.num_elements != batches * n_cell:
            raise op_error(op, f"state tensors {list(h.shape)} and {list(c.shape)} must hold {batches} x "
                               f"{n_output} outputs and {batches} x {n_cell} cells")
        want = (steps, batches, n_output) if op.attrs.get("time_major") else (batches, steps, n_output)
        if tuple(y.shape) != want:
            raise op_error(op, f"output {list(y.shape)} must be {list(want)}")

    def prepare(self, op, mode: str) -> LstmData | None:
        x = op.inputs[INPUT]
        sizes = lstm_sizes(op)
        time_major = bool(op.attrs.get("time_major", False))
        cell_clip = float(op.attrs.get("cell_clip", 0.0))
        if x.dtype == "float32":
            return LstmData("float32", "tflm" if mode == "tflm" else "litert", *sizes, time_major, cell_clip)
        if x.dtype not in ("int8", "int16") or any(op.inputs[k].quant is None for k in (INPUT, OUTPUT_STATE, CELL_STATE)):
            return None
        if any(input_of(op, k) is None for k in (1, 5)) or any(input_of(op, k) is not None for k in
                                                                PEEPHOLE + PROJECTION + LAYER_NORM):
            return None  # variants: refused by the target's constraints
        if any(input_of(op, k).quant is None for k in list(INPUT_WEIGHTS.values()) + list(RECURRENT_WEIGHTS.values())):
            return None
        return _integer_data(op, mode, sizes, time_major, cell_clip)
