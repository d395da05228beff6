"""The importer loads the `tflite` package's generated classes one by one (edgesdk/importer/tflite_schema.py):
fewer modules in a fresh process, and the package looks the same to any other code of the process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import edgesdk

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models" / "mlcommons_tiny"
ENV = {**os.environ, "PYTHONPATH": str(Path(edgesdk.__file__).parents[1])}
NAMESPACE = ("print(json.dumps(sorted((k, type(v).__name__, getattr(v, '__module__', None)) "
             "for k, v in vars(tflite).items() if not k.startswith('_'))))")


def _run(code: str, tmp_path) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path,
                          env=ENV).stdout


def test_import_loads_only_the_schema_modules_a_model_uses(tmp_path):
    model = MODELS / "kws_ref_model.tflite"
    code = ("import json, sys; from edgesdk.importer import import_model; "
            f"g = import_model({str(model)!r}); print(json.dumps([len(g.ops), "
            "sorted(m for m in sys.modules if m.startswith('tflite.'))]))")
    ops, loaded = json.loads(_run(code, tmp_path))
    assert ops > 0
    assert "tflite.Model" in loaded and "tflite.Conv2DOptions" in loaded
    assert "tflite.StablehloScatterOptions" not in loaded and len(loaded) < 40  # the package has ~190


def test_the_package_completes_to_the_real_one_on_first_unknown_name(tmp_path):
    real = json.loads(_run(f"import json, tflite; {NAMESPACE}", tmp_path))
    code = ("import json; from edgesdk.importer import tflite_schema; tflite_schema.install(); "
            "import tflite, tflite.Model; assert tflite.Model.__name__ == 'Model'; "
            f"tflite.AbsOptions; {NAMESPACE}")
    assert json.loads(_run(code, tmp_path)) == real
