"""First-party plugins and targets use only the public API of the core.

Our own plugins are written exactly as a third-party plugin would be, so they may not import
an underscore module of ``relaxvm`` (``relaxvm.ir._scalar``, ``relaxvm.ir.relax._base``) nor
an underscore name from it: what they need is made public and documented instead. The example
third-party plugin in ``docs/examples`` is held to the same rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("plugins", "targets", "docs/examples")


def _python_files() -> list[Path]:
    files: list[Path] = []
    for folder in SCANNED:
        base = ROOT / folder
        if base.is_dir():
            files.extend(p for p in sorted(base.rglob("*.py")) if "build" not in p.parts)
    return files


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_core_imports(source: str) -> list[str]:
    """The imports in ``source`` that reach into a private part of ``relaxvm``.

    Parameters
    ----------
    source : str
        Python source text.

    Returns
    -------
    list of str
        One ``"line N: relaxvm.x._y"`` entry per offending import (module-level or not).
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from relaxvm.ir import _scalar` imports relaxvm.ir._scalar (or a private name).
            modules = [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
            modules.append(node.module)
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] != "relaxvm":
                continue
            private = next((i for i, part in enumerate(parts) if _is_private(part)), None)
            if private is not None:  # reported up to the first private part
                found.append(f"line {node.lineno}: {'.'.join(parts[: private + 1])}")
    return sorted(set(found))


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_core_imports(path: Path) -> None:
    offending = private_core_imports(path.read_text(encoding="utf-8"))
    assert not offending, (
        f"{path.relative_to(ROOT)} imports private parts of relaxvm (make what it needs "
        f"public API instead): {', '.join(offending)}"
    )


def test_the_scan_finds_the_first_party_packages() -> None:
    scanned = {p.relative_to(ROOT).parts[1] for p in _python_files() if p.parts}
    assert {"relaxvm_builtins", "relaxvm_ops", "relaxvm_llvm"} <= scanned


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from relaxvm.ir._scalar import is_float_dtype", ["line 1: relaxvm.ir._scalar"]),
        ("import relaxvm.ir.relax._base", ["line 1: relaxvm.ir.relax._base"]),
        ("from relaxvm.ir import _scalar", ["line 1: relaxvm.ir._scalar"]),
        ("def f():\n    from relaxvm.op import _promote", ["line 2: relaxvm.op._promote"]),
        ("from relaxvm.ir.dtype import is_float_dtype", []),
        ("from relaxvm.ir.relax import RelaxExpr", []),
        ("import relaxvm\nv = relaxvm.__version__", []),
        ("from ._kernel import call_te", []),  # a plugin's own private modules are its business
        ("from numpy import _core", []),
    ],
)
def test_the_checker_itself(source: str, expected: list[str]) -> None:
    assert private_core_imports(source) == expected
