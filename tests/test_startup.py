"""What a fresh process pays before and during its first compile (issue 13: the compile step as a fresh process
against Vela's command). Counted in modules a fresh interpreter imports, never in seconds: `import
edgesdk.compiler` loads no optional dependency and no later stage, and a compile imports the modules of the
model's own ops and targets, not every emitter a target has (docs/performance.md)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import edgesdk

from conftest import model_path

REPO = Path(edgesdk.__file__).resolve().parents[1]

# Optional or heavy packages a compile never needs (reports, firmware, emulation and other importers do).
OPTIONAL_PACKAGES = ("jinja2", "markupsafe", "onnx", "onnxruntime", "tvm", "unicorn", "ai_edge_litert",
                     "tflite_micro", "tensorflow", "scipy", "robot")
# edgesdk's stages after the compiler passes, and packages a compile of a TFLite model does not use.
LATER_STAGES = ("edgesdk.aot.render", "edgesdk.report", "edgesdk.firmware_build", "edgesdk.emulator",
                "edgesdk.export", "edgesdk.verify", "edgesdk.tune", "edgesdk.hil", "edgesdk.farm", "edgesdk.runner",
                "edgesdk.passdump", "edgesdk.importer.ort_plan")


def _fresh_modules(tmp_path, code: str, *args) -> dict:
    """Run `code` in a fresh interpreter on this checkout; it leaves a JSON object in `out`; that object
    plus "modules": every module the process imported."""
    script = f"import json, sys\nout = {{}}\n{code}\nout['modules'] = sorted(sys.modules)\nprint(json.dumps(out))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=True)
    return json.loads(run.stdout)


def _loaded(modules, names) -> list:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_importing_the_compiler_loads_no_optional_package_later_stage_or_target(tmp_path):
    modules = _fresh_modules(tmp_path, "import edgesdk.compiler")["modules"]
    assert "edgesdk.compiler" in modules and "numpy" in modules  # the probe ran (weights are numpy arrays)
    assert _loaded(modules, OPTIONAL_PACKAGES) == []
    assert _loaded(modules, LATER_STAGES) == []
    # targets are plugins: a build loads the ones its target list names, when it names them
    assert _loaded(modules, ("edgesdk.targets.npu", "edgesdk.targets.c", "edgesdk.targets.dsp")) == []


COMPILE = """
from edgesdk.compiler import BuildOptions, compile_model
compiled = compile_model(sys.argv[1], BuildOptions())
out['regions'] = [[r.target, sorted({op.type for op in r.ops})] for r in compiled.regions]
"""


def test_a_compile_imports_the_emitters_of_its_own_ops_only(tmp_path):
    """KWS: the NPU takes every layer but the SOFTMAX, which runs on the C target; the C target then imports its
    SOFTMAX emitter, not the CONV_2D and ADD ones (CTarget.generate's flash layouts concern only those), and
    the op layer's LOGISTIC module is not imported for a model without LOGISTIC (ops/rules.py)."""
    out = _fresh_modules(tmp_path, COMPILE, model_path("kws"))
    modules = out["modules"]
    assert ["c", ["SOFTMAX"]] in out["regions"]
    assert "edgesdk.targets.c.ops.softmax" in modules and "edgesdk.ops.softmax" in modules
    assert _loaded(modules, ("edgesdk.targets.c.ops.conv_2d", "edgesdk.targets.c.ops.add",
                             "edgesdk.targets.c.ops.layer16", "edgesdk.targets.c.ops.binary")) == []
    assert _loaded(modules, ("edgesdk.ops.sigmoid", "edgesdk.ops.add", "edgesdk.ops.binary")) == []
    assert "pkgutil" not in modules  # ops and emitters are found through their indexes, not by scanning packages
    assert _loaded(modules, OPTIONAL_PACKAGES) == [] and _loaded(modules, LATER_STAGES) == []


def test_a_compile_without_softmax_does_not_import_the_softmax_op(tmp_path):
    """AD: fully connected layers only, all on the NPU."""
    out = _fresh_modules(tmp_path, COMPILE, model_path("ad"))
    assert [target for target, _ in out["regions"]] == ["npu"]
    assert "edgesdk.ops.fully_connected" in out["modules"]
    assert _loaded(out["modules"], ("edgesdk.ops.softmax", "edgesdk.ops.sigmoid", "edgesdk.targets.c.ops")) == []


def test_a_fresh_compile_takes_its_dataclass_methods_from_the_cache(tmp_path, monkeypatch):
    """edgesdk/dataclass_cache.py: the first process compiles each generated dataclass method and keeps it; the
    next compiles none of them (they were ~a sixth of a fresh process's instructions)."""
    count = COMPILE + """
from edgesdk import dataclass_cache
out['methods'] = len(dataclass_cache._used)
out['compiled'] = sum(source not in dataclass_cache._table for source in dataclass_cache._used)
"""
    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path / "cache"))
    first = _fresh_modules(tmp_path, count, model_path("kws"))
    second = _fresh_modules(tmp_path, count, model_path("kws"))
    assert first["methods"] == second["methods"] > 200  # the methods of every dataclass the compile made
    assert first["compiled"] == first["methods"] and second["compiled"] == 0
