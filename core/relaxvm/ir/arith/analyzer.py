"""The arithmetic :class:`Analyzer`: simplify, prove and bound integer expressions.

It keeps facts about variables (bounds, bindings to expressions, scoped constraints) and answers
with three-valued honesty: ``can_prove`` returns True only when the claim holds for every value
of the variables that respects those facts (and no integer overflow happens); False means
"false or unknown", never "proved false".
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from ...errors import VMTypeError, VMValueError
from .._scalar import is_bool_dtype, is_int_dtype
from ..expr import EQ, GE, GT, LE, LT, And, ExprLike, IntImm, Or, PrimExpr, Range, Var
from ..expr_functor import free_vars
from ..op import convert, sub
from ..structural import structural_equal
from .bound import INF, Bound, BoundAnalyzer, ConstIntBound, intersect
from .simplify import Simplifier

__all__ = ["Analyzer"]

_MISSING: Any = object()


class Analyzer:
    """Simplifier, prover and bound analysis over a set of facts (TVM's ``arith.Analyzer``).

    Examples
    --------
    >>> n = Var("n")
    >>> ana = Analyzer()
    >>> ana.can_prove_equal(n * 4, 4 * n)
    True
    >>> str(ana.simplify((n * 8 + 4) // 4))
    'n * 2 + 1'
    """

    def __init__(self) -> None:
        self._var_bounds: dict[Var, Bound] = {}
        self._bindings: dict[Var, PrimExpr] = {}
        self._facts: list[PrimExpr] = []
        self._bounds = BoundAnalyzer(self._var_bounds, self._bindings)
        self._simplifier = Simplifier(self._bounds, self._bindings)

    # ---- simplification ----------------------------------------------------------------------
    def simplify(self, expr: ExprLike, steps: int = 2) -> PrimExpr:
        """The canonical simplified form of ``expr`` under the known facts.

        ``steps`` is accepted for TVM compatibility; one pass reaches the canonical form.
        """
        return self._simplifier.simplify(convert(expr))

    def canonical_simplify(self, expr: ExprLike) -> PrimExpr:
        """Same as :meth:`simplify` (TVM's name for the polynomial normaliser)."""
        return self.simplify(expr)

    def rewrite_simplify(self, expr: ExprLike) -> PrimExpr:
        """Same as :meth:`simplify` (TVM's name for its rule-based simplifier)."""
        return self.simplify(expr)

    # ---- proving -----------------------------------------------------------------------------
    def can_prove(self, cond: ExprLike) -> bool:
        """True only if the bool condition holds for every allowed value of its variables.

        Raises
        ------
        VMTypeError
            If ``cond`` is not a bool expression.
        """
        cond = convert(cond)
        if not is_bool_dtype(cond.dtype):
            raise VMTypeError(
                f"Analyzer.can_prove: the condition must be a bool expression, got `{cond}` "
                f"of type {cond.dtype}"
            )
        return self._proved(self.simplify(cond))

    def _proved(self, cond: PrimExpr) -> bool:
        if isinstance(cond, IntImm):
            return bool(cond.value)
        if isinstance(cond, And):
            return self._proved(cond.a) and self._proved(cond.b)
        if isinstance(cond, Or):
            return self._proved(cond.a) or self._proved(cond.b)
        # A condition assumed by an enclosing constraint_scope holds by assumption.
        return any(structural_equal(cond, fact) for fact in self._facts)

    def can_prove_equal(self, lhs: ExprLike, rhs: ExprLike) -> bool:
        """True only if ``lhs`` and ``rhs`` are equal for every allowed value of the variables.

        Integer expressions are compared through the canonical form of ``lhs - rhs``; other
        types by the structure of their simplified forms.
        """
        lhs, rhs = convert(lhs), convert(rhs)
        if is_int_dtype(lhs.dtype) and is_int_dtype(rhs.dtype):
            difference = self.simplify(sub(lhs, rhs))
            return isinstance(difference, IntImm) and difference.value == 0
        return structural_equal(self.simplify(lhs), self.simplify(rhs))

    # ---- bounds -----------------------------------------------------------------------------
    def const_int_bound(self, expr: ExprLike) -> ConstIntBound:
        """The interval of an integer expression, intersecting the bounds of its written and
        simplified forms.

        Raises
        ------
        VMTypeError
            For a non-integer expression.
        """
        expr = convert(expr)
        if not (is_int_dtype(expr.dtype) or is_bool_dtype(expr.dtype)):
            raise VMTypeError(
                f"Analyzer.const_int_bound: needs an integer expression, got `{expr}` of type "
                f"{expr.dtype}"
            )
        bound = self._bounds.bound(expr)
        if is_int_dtype(expr.dtype):
            poly = self._simplifier.to_poly(expr)
            if poly is not None:
                bound = intersect(bound, self._simplifier.poly_bound(poly))
        return ConstIntBound(bound[0], bound[1])

    # ---- facts ------------------------------------------------------------------------------
    def update(
        self,
        var: Var,
        info: ConstIntBound | float | None = _MISSING,
        max_value: float | None = _MISSING,
        *,
        override: bool = False,
    ) -> None:
        """Record that ``var`` lies in an inclusive interval.

        Accepts ``update(var, lo, hi)`` (None for an open end) and TVM's
        ``update(var, ConstIntBound(lo, hi), override=False)``. Without ``override`` the new
        interval is intersected with what was known (facts only ever narrow).

        Raises
        ------
        VMValueError
            If the interval is empty, or contradicts what was known.
        """
        _check_int_var("Analyzer.update", var)
        if isinstance(info, ConstIntBound):
            if isinstance(max_value, bool):  # TVM's positional update(var, info, override)
                override = max_value
            new: Bound = (info.min_value, info.max_value)
        else:
            low = None if info is _MISSING else info
            high = None if max_value is _MISSING else max_value
            new = (-INF if low is None else int(low), INF if high is None else int(high))
        if new[0] > new[1]:
            raise VMValueError(f"Analyzer.update: empty interval {list(new)} for '{var.name}'")
        old = self._var_bounds.get(var)
        if old is not None and not override:
            narrowed = intersect(old, new)
            if narrowed[0] > narrowed[1]:
                raise VMValueError(
                    f"Analyzer.update: interval {list(new)} for '{var.name}' contradicts the "
                    f"known {list(old)}; pass override=True to replace it"
                )
            new = narrowed
        self._var_bounds[var] = new
        self._bounds.clear()

    def bind(self, var: Var, value: ExprLike | Range, allow_override: bool = False) -> None:
        """Tell the analyzer that ``var`` equals ``value`` (an expression or number), or, for a
        :class:`Range`, that ``var`` lies in ``[range.min, range.min + range.extent)``.

        Raises
        ------
        VMValueError
            If ``var`` is already bound (without ``allow_override``), the binding would be
            cyclic, or the range is empty.
        """
        _check_int_var("Analyzer.bind", var)
        if isinstance(value, Range):
            low = self.const_int_bound(value.min).min_value
            high = self.const_int_bound(sub(value.min + value.extent, 1)).max_value
            if low > high:
                raise VMValueError(f"Analyzer.bind: the range for '{var.name}' is empty")
            self.update(
                var,
                None if math.isinf(low) else low,
                None if math.isinf(high) else high,
                override=allow_override,
            )
            return
        if var in self._bindings and not allow_override:
            raise VMValueError(
                f"Analyzer.bind: '{var.name}' is already bound to `{self._bindings[var]}`; "
                "pass allow_override=True to rebind it"
            )
        expr = convert(value) if isinstance(value, PrimExpr) else IntImm(var.dtype, value)
        if expr.dtype != var.dtype:
            raise VMTypeError(
                f"Analyzer.bind: '{var.name}' has type {var.dtype} but `{expr}` has type "
                f"{expr.dtype}"
            )
        resolved = self.simplify(expr)
        if any(used is var for used in free_vars(resolved)):
            raise VMValueError(
                f"Analyzer.bind: binding '{var.name}' to `{expr}` is cyclic (it depends on "
                f"'{var.name}' itself)"
            )
        self._bindings[var] = resolved
        self._bounds.clear()

    @contextlib.contextmanager
    def constraint_scope(self, constraint: ExprLike) -> Iterator[None]:
        """Assume ``constraint`` (a bool expression) inside a ``with`` block.

        Comparisons between a variable and anything with known bounds narrow that variable;
        other constraints are still remembered as facts that :meth:`can_prove` accepts.
        """
        saved_bounds = dict(self._var_bounds)
        saved_facts = list(self._facts)
        cond = self.simplify(constraint)
        try:
            for part in _conjuncts(cond):
                self._facts.append(part)
                self._learn(part)
            self._bounds.clear()
            yield
        finally:
            self._var_bounds.clear()
            self._var_bounds.update(saved_bounds)
            self._facts[:] = saved_facts
            self._bounds.clear()

    def _learn(self, cond: PrimExpr) -> None:
        """Narrow variable bounds from one simplified comparison (ignoring what it cannot use)."""
        if not isinstance(cond, (LT, LE, GT, GE, EQ)) or not is_int_dtype(cond.a.dtype):
            return
        left, right = cond.a, cond.b
        if isinstance(cond, (GT, GE)):
            left, right = right, left
        left_bound, right_bound = self._bounds.bound(left), self._bounds.bound(right)
        if isinstance(cond, EQ):
            updates = [(left, right_bound), (right, left_bound)]
        else:
            # left < right (strict) or left <= right, over the integers.
            gap = 1 if isinstance(cond, (LT, GT)) else 0
            updates = [
                (left, (-INF, right_bound[1] - gap)),
                (right, (left_bound[0] + gap, INF)),
            ]
        for side, bound in updates:
            if isinstance(side, Var):
                narrowed = intersect(self._var_bounds.get(side, (-INF, INF)), bound)
                # An impossible constraint teaches nothing safe to use; keep the old bound.
                if narrowed[0] <= narrowed[1]:
                    self._var_bounds[side] = narrowed
                    self._bounds.clear()


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _check_int_var(where: str, var: Any) -> None:
    if not isinstance(var, Var):
        raise VMTypeError(f"{where}: expected a Var, got {type(var).__name__}")
    if not is_int_dtype(var.dtype):
        raise VMTypeError(f"{where}: '{var.name}' has type {var.dtype}; only integer variables")
