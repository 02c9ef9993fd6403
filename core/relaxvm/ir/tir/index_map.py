"""``IndexMap``: a function from one index space to another (TVM's ``tir.IndexMap``).

``IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))`` maps a position ``(i, j)`` of a tensor
to a position of a re-laid-out tensor; ``relax.op.layout_transform`` uses one. The final
indices are integer expressions of the initial ones built from ``+ - *`` by constants, ``//``
and ``%`` by positive constants: enough for splitting, fusing, reordering and padding axes,
and what lets :meth:`IndexMap.map_shape` tell the extents of the result exactly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import VMValueError
from ..arith import Analyzer
from ..expr import IntImm, PrimExpr, Var
from ..expr_functor import free_vars, substitute
from ..expr_nodes import Add, FloorDiv, FloorMod, Mul, Sub
from ..op import convert

__all__ = ["IndexMap", "index_map"]


class IndexMap:
    """``initial_indices -> final_indices``.

    Parameters
    ----------
    initial_indices : sequence of Var
        One variable per axis of the source.
    final_indices : sequence of PrimExpr
        One expression (of the initial indices) per axis of the destination.
    inverse_index_map : IndexMap, optional
        Accepted for TVM compatibility; relaxvm never needs the inverse.
    """

    __slots__ = ("final_indices", "initial_indices")

    def __init__(
        self,
        initial_indices: Sequence[Var],
        final_indices: Sequence[Any],
        inverse_index_map: Any = None,
    ) -> None:
        for var in initial_indices:
            if not isinstance(var, Var):
                raise VMValueError(f"IndexMap: initial indices must be Vars, got {var!r}")
        finals = [convert(e) for e in final_indices]
        allowed = set(initial_indices)
        for expr in finals:
            if not isinstance(expr, PrimExpr) or not str(expr.dtype).startswith("int"):
                raise VMValueError(f"IndexMap: final index {expr} is not an integer expression")
            for var in free_vars(expr):
                if var not in allowed:
                    raise VMValueError(
                        f"IndexMap: final index {expr} uses {var.name}, which is not one of "
                        "the initial indices"
                    )
        self.initial_indices: tuple[Var, ...] = tuple(initial_indices)
        self.final_indices: tuple[PrimExpr, ...] = tuple(finals)

    @staticmethod
    def from_func(
        mapping_function: Callable[..., Any],
        ndim: int | None = None,
        inverse_index_map: Any = None,
        index_dtype: str = "int64",
    ) -> IndexMap:
        """Build a map from a Python function of the indices (``lambda i, j: (j, i)``).

        ``ndim`` is needed only when the function takes ``*args``.
        """
        if isinstance(mapping_function, IndexMap):
            return mapping_function
        if not callable(mapping_function):
            raise VMValueError(
                f"IndexMap.from_func: expected a function of the indices, got "
                f"{type(mapping_function).__name__}"
            )
        params = list(inspect.signature(mapping_function).parameters.values())
        names = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            if ndim is None:
                raise VMValueError("IndexMap.from_func: a function of *args needs ndim")
            names += [f"i{k}" for k in range(len(names), ndim)]
        elif ndim is not None and ndim != len(names):
            raise VMValueError(
                f"IndexMap.from_func: the function takes {len(names)} indices, ndim is {ndim}"
            )
        variables = [Var(name, index_dtype) for name in names]
        result = mapping_function(*variables)
        finals = list(result) if isinstance(result, (list, tuple)) else [result]
        return IndexMap(variables, finals)

    # ---- use --------------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """The number of source axes."""
        return len(self.initial_indices)

    def map_indices(self, indices: Sequence[Any]) -> list[PrimExpr]:
        """The destination position of source position ``indices``."""
        if len(indices) != self.ndim:
            raise VMValueError(f"IndexMap: {self.ndim} indices expected, got {len(indices)}")
        vmap = dict(zip(self.initial_indices, (convert(i) for i in indices), strict=True))
        return [substitute(expr, vmap) for expr in self.final_indices]

    def map_shape(self, shape: Sequence[Any], analyzer: Analyzer | None = None) -> list[PrimExpr]:
        """The extents of the destination when the source has extents ``shape``: for each
        final index, its largest value plus one.

        Raises
        ------
        VMValueError
            When a final index is built from something other than ``+ - *`` by constants and
            ``//``/``%`` by positive constants, or may be negative.
        """
        analyzer = analyzer or Analyzer()
        if len(shape) != self.ndim:
            raise VMValueError(f"IndexMap: a {self.ndim}-d shape expected, got {len(shape)}-d")
        ranges: dict[Var, tuple[PrimExpr, PrimExpr]] = {
            var: (IntImm(var.dtype, 0), convert(extent) - 1)
            for var, extent in zip(self.initial_indices, shape, strict=True)
        }
        extents = []
        for expr in self.final_indices:
            low, high = _bounds(expr, ranges)
            if not analyzer.can_prove(low >= 0):
                raise VMValueError(
                    f"IndexMap: final index {expr} may be negative (its least value is {low})"
                )
            extents.append(analyzer.simplify(high + 1))
        return extents

    # ---- text and equality ------------------------------------------------------------------
    def script(self) -> str:
        """``T.index_map(lambda i, j: (j, i))``: how the script format spells the map."""
        names = ", ".join(v.name for v in self.initial_indices)
        finals = ", ".join(str(e) for e in self.final_indices)
        body = f"({finals},)" if len(self.final_indices) == 1 else f"({finals})"
        return f"T.index_map(lambda {names}: {body})"

    def _canonical(self) -> str:
        fresh = [Var(f"i{k}", v.dtype) for k, v in enumerate(self.initial_indices)]
        vmap = dict(zip(self.initial_indices, fresh, strict=True))
        return "; ".join(str(substitute(e, vmap)) for e in self.final_indices)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexMap):
            return NotImplemented
        return self.ndim == other.ndim and self._canonical() == other._canonical()

    def __hash__(self) -> int:
        return hash((self.ndim, self._canonical()))

    def __repr__(self) -> str:
        return self.script()

    __str__ = __repr__


def index_map(
    mapping: Callable[..., Any], *, inverse_index_map: Any = None, index_dtype: str = "int64"
) -> IndexMap:
    """``T.index_map(lambda i, j: ...)``: :meth:`IndexMap.from_func` in the script format."""
    return IndexMap.from_func(mapping, index_dtype=index_dtype)


def _bounds(expr: PrimExpr, ranges: dict[Var, tuple[PrimExpr, PrimExpr]]) -> tuple[Any, Any]:
    """``(least, greatest)`` values of ``expr`` over the box ``ranges`` (interval arithmetic
    over the forms an index map may use)."""
    if isinstance(expr, IntImm):
        return expr, expr
    if isinstance(expr, Var):
        if expr not in ranges:
            raise VMValueError(f"IndexMap: {expr.name} is not an index")
        return ranges[expr]
    if isinstance(expr, (Add, Sub)):
        a_low, a_high = _bounds(expr.a, ranges)
        b_low, b_high = _bounds(expr.b, ranges)
        if isinstance(expr, Add):
            return a_low + b_low, a_high + b_high
        return a_low - b_high, a_high - b_low
    if isinstance(expr, Mul):
        const, other = (expr.b, expr.a) if isinstance(expr.b, IntImm) else (expr.a, expr.b)
        if isinstance(const, IntImm):
            low, high = _bounds(other, ranges)
            return (low * const, high * const) if const.value >= 0 else (high * const, low * const)
    if isinstance(expr, (FloorDiv, FloorMod)) and isinstance(expr.b, IntImm) and expr.b.value > 0:
        low, high = _bounds(expr.a, ranges)
        if isinstance(expr, FloorDiv):
            from ..op import floordiv

            return floordiv(low, expr.b), floordiv(high, expr.b)
        # A split axis gets the whole divisor as its extent, as in TVM, even when the
        # operand's range is shorter: the positions it never reaches are padding.
        return IntImm(expr.dtype, 0), expr.b - 1
    raise VMValueError(
        f"IndexMap: cannot bound the index expression {expr}: use + - * by constants and "
        "// or % by positive constants"
    )
