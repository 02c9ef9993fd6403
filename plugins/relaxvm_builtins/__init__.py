"""relaxvm's own VM builtins (``vm.builtin.*``) and the CPU device API.

This package is a relaxvm plugin like any other: it is found through the ``builtins`` entry
point in the ``relaxvm`` group and registers through ``relaxvm_register_builtins``. Each
builtin is declared with :func:`~relaxvm_builtins._table.builtin` next to its definition.
"""

from __future__ import annotations

from .shape import MakeShapeCode, MatchShapeCode

__all__ = ["MakeShapeCode", "MatchShapeCode"]
