"""Arithmetic analysis of symbolic integer expressions (TVM's ``tvm.arith``).

:class:`Analyzer` simplifies, proves and bounds; :class:`ConstIntBound` is its interval type.
See ``docs/ir_arith.md`` for what the simplifier can and cannot prove.
"""

from __future__ import annotations

from .analyzer import Analyzer
from .bound import ConstIntBound

__all__ = ["Analyzer", "ConstIntBound"]
