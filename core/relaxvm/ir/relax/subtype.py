"""Subtyping of StructInfo: is every value described by ``derived`` also described by ``base``?

The answer has four levels, as TVM's ``BaseCheckResult``, because a "no" comes in strengths
that callers treat differently:

* ``FAIL_L0`` (0): the two describe disjoint sets of values (a tensor is never a shape;
  ``float32`` is never ``int32``; a provably different extent). Passing one where the other is
  expected is a static error.
* ``FAIL_L1`` (1): ``base`` asks for *static* facts that ``derived`` does not state: a known
  dtype, rank, device or kind where ``derived`` leaves it open (``R.Object`` where a tensor is
  wanted). A run-time check of the kind/dtype/rank could still make it pass.
* ``FAIL_L2`` (2): the static facts agree but symbolic *values* (extents, prim values) cannot be
  proved equal, e.g. ``(n,)`` against ``(m,)``. A run-time check of the values is needed.
* ``PASS`` (3): proved: ``base`` is a base of ``derived``.

For compound struct info the result is the weakest of the parts. Inside a callable's
parameters an ``FAIL_L1`` counts as ``FAIL_L2``, as in TVM: the arguments are checked when the
function runs.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from ...errors import VMTypeError
from ..arith import Analyzer
from ..expr import PrimExpr
from .expr import ShapeExpr
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["BaseCheckResult", "is_base_of", "struct_info_base_check"]


class BaseCheckResult(enum.IntEnum):
    """Outcome of :func:`struct_info_base_check` (TVM's ``BaseCheckResult``); see the module."""

    FAIL_L0 = 0
    FAIL_L1 = 1
    FAIL_L2 = 2
    PASS = 3


_L0, _L1, _L2, _PASS = (
    BaseCheckResult.FAIL_L0,
    BaseCheckResult.FAIL_L1,
    BaseCheckResult.FAIL_L2,
    BaseCheckResult.PASS,
)


def struct_info_base_check(
    base: StructInfo, derived: StructInfo, analyzer: Analyzer | None = None
) -> BaseCheckResult:
    """How far ``base`` is from being a base (supertype) of ``derived``.

    Parameters
    ----------
    base, derived : StructInfo
    analyzer : Analyzer, optional
        Decides symbolic extents (``n * 4`` against ``4 * n``) under its known facts; a fresh
        one is used when omitted.

    Returns
    -------
    BaseCheckResult
    """
    for role, value in (("base", base), ("derived", derived)):
        if not isinstance(value, StructInfo):
            raise VMTypeError(
                f"struct_info_base_check: {role} must be a StructInfo, got {type(value).__name__}"
            )
    return _Checker(analyzer or Analyzer()).check(base, derived)


def is_base_of(
    base: StructInfo, derived: StructInfo, analyzer: Analyzer | None = None
) -> BaseCheckResult:
    """Alias of :func:`struct_info_base_check`; ``result == BaseCheckResult.PASS`` means yes.

    The result is an ``IntEnum`` with ``FAIL_L0 == 0``, so ``bool(result)`` is False only for
    a definite "no"; compare with ``BaseCheckResult.PASS`` to ask for a proved "yes".
    """
    return struct_info_base_check(base, derived, analyzer)


class _Checker:
    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer

    def check(self, base: StructInfo, derived: StructInfo) -> BaseCheckResult:
        if isinstance(base, ObjectStructInfo):
            return _PASS
        if not isinstance(derived, type(base)):
            # Only R.Object can still turn out to be the wanted kind at run time.
            return _L1 if isinstance(derived, ObjectStructInfo) else _L0
        if isinstance(base, PrimStructInfo):
            return self._prim(base, derived)  # type: ignore[arg-type]
        if isinstance(base, ShapeStructInfo):
            return self._shape(base, derived)  # type: ignore[arg-type]
        if isinstance(base, TensorStructInfo):
            return self._tensor(base, derived)  # type: ignore[arg-type]
        if isinstance(base, TupleStructInfo):
            return self._tuple(base, derived)  # type: ignore[arg-type]
        if isinstance(base, FuncStructInfo):
            return self._func(base, derived)  # type: ignore[arg-type]
        raise VMTypeError(f"struct_info_base_check: unknown StructInfo {type(base).__name__}")

    # ---- symbolic values -------------------------------------------------------------------
    def _values_match(self, lhs: PrimExpr, rhs: PrimExpr) -> BaseCheckResult:
        if lhs == rhs:
            return _PASS
        if lhs.dtype != rhs.dtype:
            # An int32 extent and an int64 extent may still hold the same number.
            lhs, rhs = lhs.astype("int64"), rhs.astype("int64")
        if self.analyzer.can_prove_equal(lhs, rhs):
            return _PASS
        if self.analyzer.can_prove(lhs.not_equal(rhs)):
            return _L0
        return _L2

    def _shape_values_match(
        self, lhs: Sequence[PrimExpr], rhs: Sequence[PrimExpr]
    ) -> BaseCheckResult:
        if len(lhs) != len(rhs):
            return _L0
        result = _PASS
        for left, right in zip(lhs, rhs, strict=True):
            result = min(result, self._values_match(left, right))
            if result == _L0:
                break
        return result

    # ---- each kind -------------------------------------------------------------------------
    def _prim(self, base: PrimStructInfo, derived: PrimStructInfo) -> BaseCheckResult:
        if base.dtype != derived.dtype:
            return _L0
        if base.value is None:
            return _PASS
        if derived.value is None:
            return _L2
        return self._values_match(base.value, derived.value)

    def _shape(self, base: ShapeStructInfo, derived: ShapeStructInfo) -> BaseCheckResult:
        if base.ndim != -1 and base.ndim != derived.ndim:
            return _L1 if derived.ndim == -1 else _L0
        if base.values is None:
            return _PASS
        if derived.values is None:
            return _L2
        return self._shape_values_match(base.values, derived.values)

    def _tensor(self, base: TensorStructInfo, derived: TensorStructInfo) -> BaseCheckResult:
        if base.ndim != -1 and base.ndim != derived.ndim:
            return _L1 if derived.ndim == -1 else _L0
        if base.dtype is not None and base.dtype != derived.dtype:
            return _L1 if derived.dtype is None else _L0
        if base.vdevice is not None and base.vdevice != derived.vdevice:
            return _L1 if derived.vdevice is None else _L0
        if base.shape is None:
            return _PASS
        if derived.shape is None:
            return _L2
        if isinstance(base.shape, ShapeExpr) and isinstance(derived.shape, ShapeExpr):
            return self._shape_values_match(base.shape.values, derived.shape.values)
        # A shape held in a variable only matches that same variable statically.
        return _PASS if base.shape is derived.shape else _L2

    def _tuple(self, base: TupleStructInfo, derived: TupleStructInfo) -> BaseCheckResult:
        if len(base.fields) != len(derived.fields):
            return _L0
        result = _PASS
        for left, right in zip(base.fields, derived.fields, strict=True):
            result = min(result, self.check(left, right))
            if result == _L0:
                break
        return result

    def _func(self, base: FuncStructInfo, derived: FuncStructInfo) -> BaseCheckResult:
        # A pure function can stand in for an impure one, never the reverse.
        if base.purity and not derived.purity:
            return _L0
        if base.params is None:
            return self.check(base.ret, derived.ret)
        if derived.params is None:
            return _L2
        if len(base.params) != len(derived.params):
            return _L0
        result = _PASS
        for base_param, derived_param in zip(base.params, derived.params, strict=True):
            # Parameters are contravariant: the derived callable must accept every argument
            # the base one accepts. A static shortfall there is checked when the call runs.
            param_result = self.check(derived_param, base_param)
            result = min(result, _L2 if param_result == _L1 else param_result)
            if result == _L0:
                return result
        return min(result, self.check(base.ret, derived.ret))
