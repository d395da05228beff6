"""The op layer's index (edgesdk/ops/__init__.py _MODULE_TYPES) lets op_def import only the module that defines
a type; it must name exactly the types each module registers."""

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import edgesdk.ops as ops


def test_index_names_every_module_and_type_exactly():
    ops._load_all()
    defined = {}
    for op_type, definition in ops._REGISTRY.items():
        defined.setdefault(type(definition).__module__.rsplit(".", 1)[1], set()).add(op_type)
    indexed = {module: set(types) for module, types in ops._MODULE_TYPES.items()}
    assert indexed == defined, ("edgesdk/ops/__init__.py _MODULE_TYPES is out of date: add each op module's "
                                "`types` there (module name -> types)")


def test_op_def_answers_the_same_from_the_index():
    for info in pkgutil.iter_modules(ops.__path__):
        if not info.name.startswith("_") and info.name != "base":
            importlib.import_module(f"edgesdk.ops.{info.name}")
    for op_type, module in ops._MODULE_OF.items():
        definition = ops.op_def(op_type)
        assert definition is not None and type(definition).__module__ == f"edgesdk.ops.{module}"
        assert ops.is_defined(op_type)
    assert ops.op_def("GELU") is None and not ops.is_defined("GELU")  # an op type no module defines


def test_op_def_imports_only_the_defining_module(tmp_path):
    """A fresh interpreter asking for one op type imports that op's module, not the whole op layer."""
    code = ("import json, sys, edgesdk.ops as o; o.op_def('FULLY_CONNECTED'); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('edgesdk.ops.'))))")
    env = {**os.environ, "PYTHONPATH": str(Path(ops.__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env)
    loaded = json.loads(out.stdout)
    assert "edgesdk.ops.fully_connected" in loaded
    assert "edgesdk.ops.svdf" not in loaded and "edgesdk.ops.lstm" not in loaded


def test_c_target_index_names_every_emitter_module_and_type_exactly():
    """The C target's index (edgesdk/targets/c/emit.py _MODULE_TYPES) names the module registering each type."""
    from edgesdk.targets.c import emit

    defined = {}
    for op_type, entry in emit.c_ops().items():
        defined.setdefault(entry.emit.__module__.rsplit(".", 1)[1], set()).add(op_type)
    indexed = {module: set(types) for module, types in emit._MODULE_TYPES.items()}
    assert indexed == defined, ("edgesdk/targets/c/emit.py _MODULE_TYPES is out of date: add each module's @c_op "
                                "types there (module name -> types)")


def test_c_support_imports_only_the_modules_it_is_asked_about(tmp_path):
    """A fresh interpreter checking one op type against the C target imports that type's emitter module only."""
    code = ("import json, sys; from edgesdk.targets import get_target; s = get_target('c').support; "
            "print(json.dumps(['FULLY_CONNECTED' in s.ops, "
            "sorted(m for m in sys.modules if m.startswith('edgesdk.targets.c.ops.'))]))")
    env = {**os.environ, "PYTHONPATH": str(Path(ops.__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env)
    has_fc, loaded = json.loads(out.stdout)
    assert has_fc
    assert "edgesdk.targets.c.ops.fully_connected" in loaded
    assert "edgesdk.targets.c.ops.svdf" not in loaded and "edgesdk.targets.c.ops.lstm" not in loaded


def test_c_support_table_lists_the_same_rules_lazily_or_whole():
    from edgesdk.targets.c import emit
    from edgesdk.targets.c.supported import _rules_of, c_support

    table = c_support()
    assert list(table.ops) == list(dict.fromkeys(table.ops))  # each type once
    for op_type in table.ops:
        assert [fn.__name__ for fn in table.ops[op_type]] == [fn.__name__ for fn in _rules_of(op_type)]
    assert set(emit.c_ops()) <= set(table.ops)
    assert "GELU" in table.ops and "NO_SUCH_OP" not in table.ops  # lowered through TVM; defined nowhere
