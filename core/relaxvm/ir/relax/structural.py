"""Structural equality for Relax IR: the one implementation of :mod:`relaxvm.ir.structural`.

Kept so that ``relaxvm.ir.relax.structural_equal`` (TVM's ``relax`` spelling) and imports from
this module keep working; the functions are the same objects as ``relaxvm.ir.structural_equal``
and friends, which accept every IR node, Relax or TIR.
"""

from __future__ import annotations

from ..structural import (
    StructuralEqualError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
)

__all__ = [
    "StructuralEqualError",
    "assert_structural_equal",
    "structural_equal",
    "structural_hash",
]
