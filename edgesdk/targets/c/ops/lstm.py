"""UNIDIRECTIONAL_SEQUENCE_LSTM on the host: edgesdk_lstm_s8 (int8, int16 cell state), edgesdk_lstm_s16 (16x8:
int16 activations, int8 weights, int64 biases, int16 cell state; TFLite Micro only) and edgesdk_lstm_f32
(edgesdk_lstm.c). The hidden and cell state are persistent arena buffers (the op's variable-tensor inputs) that
the kernel updates in place; edgesdk_default_reset() sets them to TFLite's reset value."""

from __future__ import annotations

import numpy as np

from ....errors import UnsupportedOpError
from ....ops.lstm import (BIASES, CELL_STATE, GATES, INPUT, INPUT_WEIGHTS, OUTPUT_STATE, RECURRENT_WEIGHTS,
                          cell_scale_power, variant_inputs)
from ..emit import Emit, c_op, footprint
from ..proof import positive, require

WEIGHTS = tuple(INPUT_WEIGHTS.values()) + tuple(RECURRENT_WEIGHTS.values())


def _present(op, indices):
    return [op.inputs[k] for k in indices if k < len(op.inputs) and op.inputs[k] is not None]


def lstm_standard_variant(op):
    """The LSTM has an input gate and no peephole, projection or layer-norm weights (TFLite Micro's LSTM)"""
    found = [name for name, present in variant_inputs(op).items() if present]
    return not found, f"uses {', '.join(found)}" if found else ""


def lstm_types(op):
    """int8 input, weights and hidden state with int32 biases and an int16 cell state; 16x8: int16 input and hidden state, int8 weights, int64 biases, int16 cell state; or all float32

    A float32 or 16x8 LSTM builds with --rounding tflm only: LiteRT's float LSTM (ruy's CPU-dependent GEMM kernels,
    Eigen's vectorized sigmoid/tanh) is not reproduced, and LiteRT has no 16x8 LSTM kernel."""
    x, y, h, c = op.inputs[INPUT], op.outputs[0], op.inputs[OUTPUT_STATE], op.inputs[CELL_STATE]
    weights, biases = _present(op, WEIGHTS), _present(op, BIASES.values())
    if x.dtype == "float32":
        bad = [t.name for t in [y, h, c, *weights, *biases] if t.dtype != "float32"]
        return not bad, f"float32 input but {', '.join(bad)} not float32" if bad else ""
    act, acc = ("int16", "int64") if x.dtype == "int16" else ("int8", "int32")
    expected = [(x, act), (y, act), (h, act), (c, "int16")] + [(w, "int8") for w in weights] + [
        (b, acc) for b in biases]
    bad = [f"{t.name} ({t.dtype}, not {want})" for t, want in expected if t.dtype != want]
    return not bad, "; ".join(bad)


def lstm_quantization(op):
    """Integer LSTM: every tensor is quantized per tensor, the weights with zero point 0 (16x8: the int16 activations too)"""
    x = op.inputs[INPUT]
    if x.dtype == "float32":
        return True, ""
    tensors = [x, op.outputs[0], op.inputs[OUTPUT_STATE], op.inputs[CELL_STATE], *_present(op, WEIGHTS)]
    bad = [t.name for t in tensors if t.quant is None or t.quant.scale.size != 1]
    if bad:
        return False, f"not quantized per tensor: {', '.join(bad)}"
    symmetric = _present(op, WEIGHTS) + (tensors[:3] if x.dtype == "int16" else [])
    bad = [t.name for t in symmetric if int(t.quant.zero_point[0]) != 0]
    return not bad, f"{'weights' if x.dtype != 'int16' else 'tensors'} with a nonzero zero point: {', '.join(bad)}" \
        if bad else ""


def lstm_cell_activation(op):
    """The cell activation is TANH"""
    act = op.attrs.get("activation", "NONE")
    return act == "TANH", f"activation {act}"


def lstm_cell_scale(op):
    """Integer LSTM: the cell state scale is a power of two from 2^-15 to 2^-9 (LiteRT's int16 tanh formats)"""
    c = op.inputs[CELL_STATE]
    if op.inputs[INPUT].dtype == "float32" or c.quant is None:
        return True, ""
    power, exact = cell_scale_power(float(c.quant.scale[0]))
    return exact and -15 <= power <= -9, f"cell state scale {float(c.quant.scale[0])!r}"


LSTM_CONSTRAINTS = [lstm_standard_variant, lstm_types, lstm_quantization, lstm_cell_activation, lstm_cell_scale]


@c_op("UNIDIRECTIONAL_SEQUENCE_LSTM", constraints=LSTM_CONSTRAINTS, headers=("edgesdk_lstm.h", "edgesdk_mathf.h",
      "edgesdk_mathf_exceptions.h", "edgesdk_layer16.h", "edgesdk_fp64.h"), sources=("edgesdk_lstm.c", "edgesdk_mathf.c"))
def emit_lstm(e: Emit):
    op, d = e.op, e.data
    x, y, h, c = op.inputs[INPUT], op.outputs[0], op.inputs[OUTPUT_STATE], op.inputs[CELL_STATE]
    fields = {"batches": d.batches, "steps": d.steps, "n_input": d.n_input, "n_cell": d.n_cell,
              "time_major": int(d.time_major)}
    if d.kind == "float32":
        if d.arithmetic != "tflm":
            raise UnsupportedOpError(
                f"{op.type} at {op.location} is a float32 LSTM, which edgesdk reproduces for TFLite Micro only: build "
                "with --rounding tflm. LiteRT's float LSTM runs ruy's GEMM kernels (chosen at run time by the host "
                "CPU: fused multiply-adds with AVX2) and Eigen's vectorized sigmoid/tanh approximations, which "
                "edgesdk does not emulate (docs/rounding.md, 'Recurrent ops').")
        fields["cell_clip"] = float(np.float32(d.cell_clip))
        for gate in GATES:
            wx, wh, b = op.inputs[INPUT_WEIGHTS[gate]], op.inputs[RECURRENT_WEIGHTS[gate]], op.inputs[BIASES[gate]]
            fields.setdefault("gate", []).append({"input_weights": e.tensor(wx), "recurrent_weights": e.tensor(wh),
                                                  "bias": e.tensor(b)})
        params = e.params("edgesdk_lstm_f32_params", fields)
        e.call("edgesdk_lstm_f32", params, e.tensor(x), e.arena(h), e.arena(c), e.arena(y))
        e.layer.note = f"float32, {d.steps} steps x {d.n_cell} cells, TFLite Micro arithmetic"
        return e.layer
    if d.kind == "int16":
        return _emit_lstm_s16(e)
    gates = []
    for gate, g in zip(GATES, d.gates):
        wx, wh = op.inputs[INPUT_WEIGHTS[gate]], op.inputs[RECURRENT_WEIGHTS[gate]]
        gates.append({"input_weights": e.tensor(wx), "recurrent_weights": e.tensor(wh),
                      "input_bias": e.int32s(f"{gate}_input_bias", g.input_bias),
                      "recurrent_bias": e.int32s(f"{gate}_recurrent_bias", g.recurrent_bias),
                      "input_multiplier": g.input_multiplier, "input_shift": g.input_shift,
                      "recurrent_multiplier": g.recurrent_multiplier, "recurrent_shift": g.recurrent_shift})
    fields.update(tflm=int(d.arithmetic == "tflm"), gate=gates, clip_cell=int(d.clip_cell),
                  cell_clip=d.quantized_cell_clip, hidden_multiplier=d.hidden_multiplier, hidden_shift=d.hidden_shift,
                  hidden_zero_point=d.hidden_zero_point, tanh_integer_bits=d.tanh_integer_bits,
                  input_cell_shift=d.input_cell_shift, tanh_multiplier=d.tanh_multiplier, tanh_shift=d.tanh_shift,
                  forget_multiplier=d.forget_multiplier, forget_shift=d.forget_shift,
                  input_cell_multiplier=d.input_cell_multiplier, input_cell_shift_tflm=d.input_cell_shift_tflm)
    params = e.params("edgesdk_lstm_s8_params", fields)
    e.call("edgesdk_lstm_s8", params, e.tensor(x), e.arena(h), e.arena(c), e.arena(y))
    e.layer.note = (f"int8, {d.steps} steps x {d.n_cell} cells, "
                    f"{'TFLite Micro' if d.arithmetic == 'tflm' else 'LiteRT'} arithmetic")
    return e.layer


def _emit_lstm_s16(e: Emit):
    op, d = e.op, e.data
    if d.arithmetic != "tflm":
        raise UnsupportedOpError(
            f"{op.type} at {op.location} is a 16x8 LSTM (int16 activations, int64 biases), which only TFLite Micro "
            "runs: build with --rounding tflm. LiteRT has no 16x8 LSTM kernel (its reference refuses the file), so "
            "--rounding ref has no result to match (docs/rounding.md, 'Recurrent ops').")
    x, y, h, c = op.inputs[INPUT], op.outputs[0], op.inputs[OUTPUT_STATE], op.inputs[CELL_STATE]
    gates = []
    for gate, g in zip(GATES, d.gates):
        wx, wh = op.inputs[INPUT_WEIGHTS[gate]], op.inputs[RECURRENT_WEIGHTS[gate]]
        gates.append({"input_weights": e.tensor(wx), "recurrent_weights": e.tensor(wh),
                      "bias": e.const(f"{gate}_bias", np.asarray(g.input_bias, np.int64), "int64_t"),
                      "input_multiplier": g.input_multiplier, "input_shift": g.input_shift,
                      "recurrent_multiplier": g.recurrent_multiplier, "recurrent_shift": g.recurrent_shift})
    fields = {"batches": d.batches, "steps": d.steps, "n_input": d.n_input, "n_cell": d.n_cell,
              "time_major": int(d.time_major), "gate": gates, "clip_cell": int(d.clip_cell),
              "cell_clip": d.quantized_cell_clip, "hidden_multiplier": d.hidden_multiplier,
              "hidden_shift": d.hidden_shift, "tanh_multiplier": d.tanh_multiplier, "tanh_shift": d.tanh_shift,
              "forget_multiplier": d.forget_multiplier, "forget_shift": d.forget_shift,
              "input_cell_multiplier": d.input_cell_multiplier, "input_cell_shift": d.input_cell_shift_tflm}
    params = e.params("edgesdk_lstm_s16_params", fields)
    e.call("edgesdk_lstm_s16", params, e.tensor(x), e.arena(h), e.arena(c), e.arena(y))
    e.layer.note = f"16x8, {d.steps} steps x {d.n_cell} cells, TFLite Micro arithmetic"
    return e.layer


def _shifts_in_range(p, keys) -> list:
    bad = [k for k in keys if not -31 <= int(p[k]) <= 30]
    return require(not bad, f"requantization shifts {', '.join(bad)} outside [-31, 30]")


@footprint("edgesdk_lstm_s8")
def lstm_s8_footprint(call, op) -> list:
    p, x, h, c, y = call.args
    checks = positive(p, "batches", "steps", "n_input", "n_cell")
    if checks:
        return checks
    n_in, n_cell, rows, batches = p["n_input"], p["n_cell"], p["batches"] * p["steps"], p["batches"]
    checks += _shifts_in_range(p, ["hidden_shift", "forget_shift", "input_cell_shift_tflm"])
    checks += require(len(p["gate"]) == 4, "an LSTM has four gates")
    if p["tflm"]:
        checks += require(0 <= p["tanh_shift"] <= 3 and 0 < p["tanh_multiplier"] <= 3 << 6,
                          "the cell tanh's table input rescale follows a cell scale in [2^-15, 2^-9]")
    else:
        checks += require(0 <= p["tanh_integer_bits"] <= 6 and 15 <= p["input_cell_shift"] <= 21,
                          "the cell tanh format and product shift follow a cell scale in [2^-15, 2^-9]")
    accesses = []
    for k, g in enumerate(p["gate"]):
        checks += _shifts_in_range(g, ["input_shift", "recurrent_shift"])
        accesses += [(g["input_weights"], n_cell * n_in, f"gate {k} input weights"),
                     (g["recurrent_weights"], n_cell * n_cell, f"gate {k} recurrent weights"),
                     (g["input_bias"], 4 * n_cell, f"gate {k} input bias"),
                     (g["recurrent_bias"], 4 * n_cell, f"gate {k} recurrent bias")]
    return checks + accesses + [(x, rows * n_in, "input"), (h, batches * n_cell, "output state (read and written)"),
                                (c, 2 * batches * n_cell, "cell state (read and written)"),
                                (y, rows * n_cell, "output")]


@footprint("edgesdk_lstm_s16")
def lstm_s16_footprint(call, op) -> list:
    p, x, h, c, y = call.args
    checks = positive(p, "batches", "steps", "n_input", "n_cell")
    if checks:
        return checks
    n_in, n_cell, rows, batches = p["n_input"], p["n_cell"], p["batches"] * p["steps"], p["batches"]
    checks += _shifts_in_range(p, ["hidden_shift", "forget_shift", "input_cell_shift"])
    checks += require(len(p["gate"]) == 4, "an LSTM has four gates")
    checks += require(0 <= p["tanh_shift"] <= 3 and 0 < p["tanh_multiplier"] <= 3 << 6,
                      "the cell tanh's table input rescale follows a cell scale in [2^-15, 2^-9]")
    accesses = []
    for k, g in enumerate(p["gate"]):  # the 64-bit requantization takes shifts up to 14 (edgesdk_layer16.h)
        bad = [name for name in ("input_shift", "recurrent_shift") if not -31 <= int(g[name]) <= 14]
        checks += require(not bad, f"gate {k} requantization shifts {', '.join(bad)} outside [-31, 14]")
        accesses += [(g["input_weights"], n_cell * n_in, f"gate {k} input weights"),
                     (g["recurrent_weights"], n_cell * n_cell, f"gate {k} recurrent weights"),
                     (g["bias"], 8 * n_cell, f"gate {k} bias")]
    return checks + accesses + [(x, 2 * rows * n_in, "input"),
                                (h, 2 * batches * n_cell, "output state (read and written)"),
                                (c, 2 * batches * n_cell, "cell state (read and written)"),
                                (y, 2 * rows * n_cell, "output")]


@footprint("edgesdk_lstm_f32")
def lstm_f32_footprint(call, op) -> list:
    p, x, h, c, y = call.args
    checks = positive(p, "batches", "steps", "n_input", "n_cell")
    if checks:
        return checks
    n_in, n_cell, rows, batches = p["n_input"], p["n_cell"], p["batches"] * p["steps"], p["batches"]
    checks += require(len(p["gate"]) == 4, "an LSTM has four gates")
    accesses = []
    for k, g in enumerate(p["gate"]):
        accesses += [(g["input_weights"], 4 * n_cell * n_in, f"gate {k} input weights"),
                     (g["recurrent_weights"], 4 * n_cell * n_cell, f"gate {k} recurrent weights"),
                     (g["bias"], 4 * n_cell, f"gate {k} bias")]
    return checks + accesses + [(x, 4 * rows * n_in, "input"),
                                (h, 4 * batches * n_cell, "output state (read and written)"),
                                (c, 4 * batches * n_cell, "cell state (read and written)"),
                                (y, 4 * rows * n_cell, "output")]
