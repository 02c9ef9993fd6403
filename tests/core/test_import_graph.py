"""The shape of core/relaxvm: no module-level import cycles, core never imports a plugin.

The graph is read from the source with :mod:`ast` (nothing is imported): an edge for every
import at module level, including those inside module-level ``if``/``try`` blocks but not
those under ``if TYPE_CHECKING:``; ``from pkg import name`` is an edge to ``pkg.name`` when
that is a module, else to ``pkg``. Imports inside functions are deliberate late bindings and
are not edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import relaxvm

CORE_ROOT = Path(relaxvm.__file__).resolve().parent.parent
FIRST_PARTY_PLUGINS = ("relaxvm_builtins", "relaxvm_ops", "relaxvm_llvm", "relaxvm_cuda")


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in (root / "relaxvm").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _is_type_checking_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking_block(node):
            pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
    return found


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the relaxvm modules it imports at module level."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        edges: set[str] = set()
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
                continue
            target = (
                _resolve(module, is_package, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                edges.add(submodule if submodule in modules else target)
        graph[module] = {edge for edge in edges if edge in modules and edge != module}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_core_has_no_module_level_import_cycles() -> None:
    cycles = find_cycles(import_graph(CORE_ROOT))
    assert not cycles, "module-level import cycles in core/relaxvm:\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_the_checker_finds_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "relaxvm"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text("from .sub import b\nA = 1\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .. import a\n"
        "def late():\n    from ..a import A\n"
        "from relaxvm import a\n"
    )
    graph = import_graph(tmp_path)
    assert graph["relaxvm.sub.b"] == {"relaxvm.a"}
    assert find_cycles(graph) == [["relaxvm.a", "relaxvm.sub.b"]]


@pytest.mark.parametrize("module", sorted(_modules(CORE_ROOT)))
def test_core_never_imports_a_plugin_or_target(module: str) -> None:
    path, _ = _modules(CORE_ROOT)[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in FIRST_PARTY_PLUGINS, (
                f"{module} imports {name}: core knows plugins and targets only by name"
            )
