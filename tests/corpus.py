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
# One line per op type: remove an op's line (or narrow its modes) when edgesdk runs it. Empty: every op type and
# mode of the corpus runs (the int16 PADV2 files are invalid, below).
NOT_YET = {}

# Single models edgesdk will not compile, whatever the op type's status, with the reason.
NOT_SUPPORTED_MODELS = {
    "fill_dims_input_float32.tflite": "FILL's dims are a model input: its output shape is dynamic, and edgesdk "
                                      "compiles static shapes only",
}
# The converter gives int16 PADV2 a float32 pad value: both references refuse these files (the pad value must
# have the input's type), and so does edgesdk. A valid int16 PADV2 (an int16 pad value of the output's
# quantization) is tested in tests/test_ops_shape.py.
NOT_SUPPORTED_MODELS.update({f"padv2_{spec}_int16.tflite": "PADV2's pad value is float32 and the input int16: "
                             "LiteRT and TFLite Micro refuse the file" for spec in ("value", "rank1_range", "rank2_neg")})

# Reference results that are not defined, per (op type, model mode, rounding mode): models with such an op are
# checked against the other reference only (docs/rounding.md says what edgesdk computes instead).
REFERENCE_DEFECTS = {
    ("SUM", "int16", "ref"): "LiteRT's reference SUM reads int16 tensors as uint8 bytes and never writes half "
                             "of the output bytes (they keep whatever the arena held)",
}


def entries() -> list:
    return json.loads(MANIFEST.read_text())["models"]


def expected_unsupported(entry, op_types=None) -> str | None:
    """Why edgesdk does not compile this corpus model yet (None: it must). `op_types`: the op types left to
    compile (after build-time folding), by default every op type of the model."""
    if entry["file"] in NOT_SUPPORTED_MODELS:
        return NOT_SUPPORTED_MODELS[entry["file"]]
    for op in entry["ops"] if op_types is None else [t for t in entry["ops"] if t in op_types]:
        reason = NOT_YET.get(op, {}).get(entry["mode"])
        if reason:
            return f"{op} {entry['mode']}: {reason}"
    return None


def reference_ok(entry, mode: str) -> bool:
    """Whether the reference of rounding mode `mode` (LiteRT's reference kernels / TFLite Micro) runs it, with a
    defined result."""
    if any((op, entry["mode"], mode) in REFERENCE_DEFECTS for op in entry["ops"]):
        return False
    return entry["litert_ref" if mode == "ref" else "tflm"] == "ok"
