"""Core code names no built-in target (issue 11): outside edgesdk/targets/ and edgesdk/boards/, no identifier,
string literal or template expression says "npu" or "dsp", and no string literal is the target name "c".
Comments and docstrings may use a target as an example; board names ("riscv-npu") and peripheral types
("edgesdk-npu1", "Edgesdk.Npu1") are not target names.

The scan reads code, not text: Python through `ast` (identifiers of every kind, string constants other than
docstrings), C, C# and Jinja with their comments removed (Jinja: only what is inside {{ }} / {% %})."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "edgesdk"
OUTSIDE_CORE = ("edgesdk/targets/", "edgesdk/boards/")
# A target name as a word of its own: "npu", "npu,c", "npu_cycles", "libedgesdk_npu" (the underscore separates
# words in names), but not "riscv-npu" or "edgesdk-npu1".
TARGET_WORD = re.compile(r"(?<![A-Za-z0-9-])(npu|dsp)(?![A-Za-z0-9-])", re.IGNORECASE)
BUILTIN_TARGET_WORDS = {"npu", "dsp"}
HOST_TARGET = "c"

# String literals "c" that are not the C target.
NOT_A_TARGET = {
    ("edgesdk/gdbremote.py", "c"),  # GDB remote protocol: the continue packet
    ("edgesdk/tvm/lowering.py", "c"),  # TVM's own C code generator target, tvm.target.Target("c")
}


def _docstring_nodes(tree) -> set:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _identifiers(node) -> list:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[-1]]
    return []


def python_findings(source: str) -> list:
    """(line, text) of every identifier with a built-in target as one of its words and every non-docstring string
    constant that names one."""
    tree = ast.parse(source)
    docstrings = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if TARGET_WORD.search(node.value) or node.value == HOST_TARGET:
                found.append((node.lineno, node.value))
        for name in _identifiers(node):
            if BUILTIN_TARGET_WORDS & set(name.lower().split("_")):
                found.append((node.lineno, name))
    return sorted(found)


def _without_c_comments(text: str) -> str:
    """C/C# source with /* */ and // comments blanked (line numbers kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", text)


def text_findings(text: str) -> list:
    return [(text.count("\n", 0, m.start()) + 1, m.group(0)) for m in TARGET_WORD.finditer(text)]


def jinja_findings(text: str) -> list:
    found = []
    for tag in re.finditer(r"\{\{.*?\}\}|\{%.*?%\}", text, flags=re.DOTALL):
        found += [(text.count("\n", 0, tag.start()) + 1, m.group(0)) for m in TARGET_WORD.finditer(tag.group(0))]
    return found


def core_findings() -> list:
    findings = []
    for path in sorted(CORE.rglob("*")):
        rel = path.relative_to(REPO).as_posix()
        if not path.is_file() or rel.startswith(OUTSIDE_CORE):
            continue
        if path.suffix == ".py":
            found = python_findings(path.read_text())
        elif path.suffix in (".c", ".h", ".cs"):
            found = text_findings(_without_c_comments(path.read_text()))
        elif path.suffix == ".j2":
            found = jinja_findings(path.read_text())
        else:
            continue
        findings += [(rel, line, text) for line, text in found]
    return findings


def _allowed(rel: str, text: str) -> bool:
    return (rel, text) in NOT_A_TARGET


def test_core_code_names_no_builtin_target():
    named = [f"{rel}:{line}: {text[:80]!r}" for rel, line, text in core_findings() if not _allowed(rel, text)]
    assert not named, ("core code names a built-in target; ask the target through the plugin API "
                       "(edgesdk/targets/api.py) instead:\n" + "\n".join(named))


def test_every_allowance_is_still_needed():
    """An allowance that matches nothing any more is removed, so the list only shrinks."""
    findings = core_findings()
    for rel, text in NOT_A_TARGET:
        assert (rel, text) in {(r, t) for r, _, t in findings}, (rel, text)


def test_the_scan_sees_code_and_not_comments():
    """The scan can fail: it finds target names in identifiers, literals and template logic, and only there."""
    source = '''"""Docstring: the npu is an example."""
# a comment about the npu
def run(npu_table, name="dsp"):
    """Also a docstring naming the DSP."""
    board = "riscv-npu"
    kind = "edgesdk-npu1"
    return run_npu(npu_table) if name == "c" else self.dsp_cycles
'''
    found = {text for _, text in python_findings(source)}
    assert found == {"npu_table", "dsp", "run_npu", "c", "dsp_cycles"}
    assert text_findings(_without_c_comments("/* the NPU */ int x; // npu\nnpu_run(x);")) == [(2, "npu")]
    assert jinja_findings('the NPU {% if "npu" in targets %}x{% endif %} {{ dsp_bytes }}') == [(1, "npu"), (1, "dsp")]
