"""The converter-made op corpus (tests/models/ops, made by tests/models/make_op_models.py): its entries, their
inputs, which references run them, and what edgesdk does not run yet.

`NOT_YET` names, per op type, the model modes ("int8", "int16", "float32", ...) edgesdk does not compile yet,
with the reason. tests/test_op_corpus.py holds edgesdk to it both ways: a model outside NOT_YET must compile
and be bit-exact, a model inside it must still be refused (so the list only ever shrinks, honestly).
"""

from __future__ import annotations

import json
from pathlib import Path

from models.check_references import CASES, case_inputs  # noqa: F401  (the inputs the references were checked on)

CORPUS = Path(__file__).resolve().parent / "models" / "ops"
MANIFEST = CORPUS / "manifest.json"
ALL_MODES = ("int8", "int16", "float32", "int8_fio", "int16_fio")

ALL = {m: "not implemented yet (issue 10)" for m in ALL_MODES}
NOT_INT16_FLOAT = {"int16": "int16 kernel not implemented yet (issue 10)", "int16_fio": "int16 kernel not implemented yet",
                   "float32": "float32 kernel not implemented yet"}
# One line per op type: remove an op's line (or narrow its modes) when edgesdk runs it.
NOT_YET = {
    "ADD": NOT_INT16_FLOAT,
    "ADD_N": ALL,
    "ARG_MAX": ALL,
    "ARG_MIN": ALL,
    "ASSIGN_VARIABLE": ALL,
    "AVERAGE_POOL_2D": NOT_INT16_FLOAT,
    "BATCH_MATMUL": ALL,
    "BATCH_TO_SPACE_ND": ALL,
    "BROADCAST_ARGS": ALL,
    "BROADCAST_TO": ALL,
    "CONCATENATION": NOT_INT16_FLOAT,
    "CONV_2D": NOT_INT16_FLOAT,
    "CUMSUM": ALL,
    "DEPTHWISE_CONV_2D": NOT_INT16_FLOAT,
    "DEPTH_TO_SPACE": ALL,
    "DIV": ALL,
    "DYNAMIC_UPDATE_SLICE": ALL,
    "EQUAL": ALL,
    "EXPAND_DIMS": ALL,
    "FILL": ALL,
    "FLOOR_DIV": ALL,
    "FLOOR_MOD": ALL,
    "FULLY_CONNECTED": NOT_INT16_FLOAT,
    "GATHER": ALL,
    "GATHER_ND": ALL,
    "GREATER": ALL,
    "GREATER_EQUAL": ALL,
    "GRU": ALL,
    "IF": ALL,
    "L2_NORMALIZATION": ALL,
    "LESS": ALL,
    "LESS_EQUAL": ALL,
    "LOGICAL_AND": ALL,
    "LOGICAL_NOT": ALL,
    "LOGICAL_OR": ALL,
    "LOG_SOFTMAX": ALL,
    "MAXIMUM": ALL,
    "MAX_POOL_2D": NOT_INT16_FLOAT,
    "MEAN": NOT_INT16_FLOAT,
    "MINIMUM": ALL,
    "MIRROR_PAD": ALL,
    "MUL": NOT_INT16_FLOAT,
    "NOT_EQUAL": ALL,
    "PACK": ALL,
    "PAD": NOT_INT16_FLOAT,
    "PADV2": NOT_INT16_FLOAT,
    "PRELU": ALL,
    "REDUCE_ALL": ALL,
    "REDUCE_ANY": ALL,
    "REDUCE_MAX": ALL,
    "REDUCE_MIN": ALL,
    "RESIZE_BILINEAR": ALL,
    "RESIZE_NEAREST_NEIGHBOR": ALL,
    "REVERSE_V2": ALL,
    "SELECT_V2": ALL,
    "SHAPE": ALL,
    "SIMPLE_RNN": ALL,
    "SLICE": ALL,
    "SOFTMAX": NOT_INT16_FLOAT,
    "SPACE_TO_BATCH_ND": ALL,
    "SPACE_TO_DEPTH": ALL,
    "SPLIT": ALL,
    "SPLIT_V": ALL,
    "SQUARED_DIFFERENCE": ALL,
    "STRIDED_SLICE": ALL,
    "SUB": ALL,
    "SUM": ALL,
    "TRANSPOSE": ALL,
    "TRANSPOSE_CONV": ALL,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": ALL,
    "UNPACK": ALL,
    "WHILE": ALL,
}

def entries() -> list:
    return json.loads(MANIFEST.read_text())["models"]


def expected_unsupported(entry) -> str | None:
    """Why edgesdk does not compile this corpus model yet (None: it must)."""
    for op in entry["ops"]:
        reason = NOT_YET.get(op, {}).get(entry["mode"])
        if reason:
            return f"{op} {entry['mode']}: {reason}"
    return None


def reference_ok(entry, mode: str) -> bool:
    """Whether the reference of rounding mode `mode` (LiteRT's reference kernels / TFLite Micro) runs it."""
    return entry["litert_ref" if mode == "ref" else "tflm"] == "ok"
