"""No module of `toolkit` imports, directly or through others, a module that imports it back.

Every `import` counts, wherever it is written: at the top, inside a function (a lazy import is still
a dependency, and the cycle bites the first time that function runs while the other module is half
imported) and under `TYPE_CHECKING` (mypy follows it). The cycle issue 21 named,
catalog/checks.py -> providers/registry.py -> providers/base.py -> catalog/checks.py (for
CheckResult), ended when CheckResult moved to toolkit/catalog/result.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def modules() -> dict[str, Path]:
    """Every module of the toolkit package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((REPO / "toolkit").rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the toolkit modules it imports anywhere in its text."""
    known = modules()

    def owner(name: str) -> str | None:  # `toolkit.x.y.Name` -> the module that holds it
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, base] if base else parent)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                found = owner(target) if target.startswith("toolkit") else None
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_the_imports_the_cycle_was_made_of() -> None:
    """The check itself: the edges it must see (a top-level, a lazy and a TYPE_CHECKING import)."""
    graph = import_graph()
    assert "toolkit.providers.base" in graph["toolkit.providers.registry"]  # top level
    assert "toolkit.providers.registry" in graph["toolkit.catalog.checks"]  # inside check_spec
    assert "toolkit.catalog.result" in graph["toolkit.providers.base"]  # under TYPE_CHECKING
    assert "toolkit.catalog.checks" not in graph["toolkit.providers.base"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_toolkit_module_is_part_of_an_import_cycle() -> None:
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("module", ["toolkit.catalog.checks", "toolkit.providers.base", "toolkit.providers.registry",
                                    "toolkit.catalog.result"])
def test_each_module_of_the_old_cycle_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    # Alone and first: a cycle shows as an ImportError (a name of a module still half imported).
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stderr) == (0, "")
