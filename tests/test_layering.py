"""The code's direction of flow (docs/architecture.md) is enforced, not just described: import-linter's
contracts in .importlinter (core never imports a built-in target; targets import only the plugin API, the IR,
the op layer and shared utilities; targets are independent; IR <- op layer <- partitioner <- AOT executor), and
no import cycles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Cycles still in the code, each a frozenset of modules (none today); the test fails if one disappears (shrink
# the list) or a new one appears.
KNOWN_CYCLES: set = set()


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter")
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command;"
                           " sys.argv = ['lint-imports']; lint_imports_command()"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _cycles(edges: dict) -> list:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_but_the_known_ones():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("edgesdk", include_external_packages=False)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert set(_cycles(edges)) == KNOWN_CYCLES
