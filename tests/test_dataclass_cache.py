"""edgesdk.dataclass_cache: the classes are the standard decorator's, and its table of compiled methods is
reused by the next process, extended (never wrong) when a class changes, and optional (a damaged file or an
unwritable folder only costs the compiles)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from edgesdk import dataclass_cache

REPO = Path(__file__).resolve().parents[1]
GENERATED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__",
             "__gt__", "__ge__")
OPTIONS = ({}, {"frozen": True}, {"order": True}, {"eq": False}, {"unsafe_hash": True}, {"frozen": True, "order": True})


def _make(decorator, options: dict):
    class Sample:
        name: str
        count: int = 0
        items: list = dataclasses.field(default_factory=list)
        hidden: float = dataclasses.field(default=1.5, repr=False, compare=False)

    Sample.__module__ = __name__
    return decorator(**options)(Sample)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "default")
def test_classes_are_the_standard_decorators(options, tmp_path, monkeypatch):
    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path))
    mine, standard = _make(dataclass_cache.dataclass, options), _make(dataclasses.dataclass, options)
    for name in GENERATED:
        ours, theirs = vars(mine).get(name), vars(standard).get(name)
        assert (ours is None) == (theirs is None), name
        if hasattr(theirs, "__code__"):
            assert ours.__code__ == theirs.__code__, name
            assert ours.__qualname__.split(".")[-1] == theirs.__qualname__.split(".")[-1]
    assert [(f.name, f.default, f.repr, f.compare) for f in dataclasses.fields(mine)] == \
        [(f.name, f.default, f.repr, f.compare) for f in dataclasses.fields(standard)]
    assert repr(mine("a", 2)) == repr(standard("a", 2))
    assert (mine("a") == mine("a")) == (standard("a") == standard("a"))
    assert mine.__doc__ == standard.__doc__
    assert "exec" not in vars(dataclasses)  # the hook is only in place while a class is made


def test_bare_decorator_form(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path))

    @dataclass_cache.dataclass
    class Point:
        x: int
        y: int = 2

    assert Point(1) == Point(1, 2) and repr(Point(1)).endswith("Point(x=1, y=2)")


def _run(code: str, cache: Path) -> str:
    env = {**os.environ, "EDGESDK_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


PROBE = """
    import builtins
    from edgesdk import dataclass_cache
    compiled = []
    real_compile = builtins.compile
    builtins.compile = lambda *a, **k: compiled.append(a[0]) or real_compile(*a, **k)

    @dataclass_cache.dataclass(frozen=True)
    class Probe:
        {field}: int
        b: str = "x"

    builtins.compile = real_compile
    assert Probe(1) == Probe(1) and Probe(1).{field} == 1
    print(len(compiled))
"""


def test_the_next_process_compiles_nothing_and_a_changed_class_is_added(tmp_path):
    first = int(_run(PROBE.format(field="a"), tmp_path))
    assert first >= 3  # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    (entry,) = (tmp_path / "dataclass-code").iterdir()
    assert int(_run(PROBE.format(field="a"), tmp_path)) == 0
    assert int(_run(PROBE.format(field="renamed"), tmp_path)) > 0  # another text: compiled, not reused
    assert int(_run(PROBE.format(field="renamed"), tmp_path)) == 0
    assert int(_run(PROBE.format(field="a"), tmp_path)) == 0  # both kept
    assert entry.exists()


def test_a_damaged_file_or_an_unwritable_folder_only_costs_the_compiles(tmp_path):
    _run(PROBE.format(field="a"), tmp_path)
    (entry,) = (tmp_path / "dataclass-code").iterdir()
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    assert int(_run(PROBE.format(field="a"), tmp_path)) > 0
    assert int(_run(PROBE.format(field="a"), tmp_path)) == 0  # written again whole
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert int(_run(PROBE.format(field="a"), blocked)) > 0
    assert int(_run(PROBE.format(field="a"), blocked)) > 0
    assert blocked.read_text() == "not a folder"


def test_a_refused_class_raises_as_the_standard_decorator_does_and_leaves_no_hook(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path))

    class Bad:
        a: int = 1
        b: int  # a field without a default after one with a default

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        dataclass_cache.dataclass(Bad)
    assert "exec" not in vars(dataclasses)
