"""TVM's ``tvm.ir.base`` spellings: the structural comparison functions and :class:`Span`.

``from relaxvm.ir.base import assert_structural_equal`` works as in TVM; the functions are the
very ones in :mod:`relaxvm.ir.structural` (also ``relaxvm.ir.assert_structural_equal``).
"""

from __future__ import annotations

from .relax._base import Span
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = ["Span", "assert_structural_equal", "structural_equal", "structural_hash"]
