"""Small TIR-building helpers shared by the sorting kernels (:mod:`.sort_kernels`,
:mod:`.sort_merge`, :mod:`.topk_select`): int64 loops, ``LetStmt`` chains, scalars kept in
registers, the sort order with NaN, and the line being sorted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_float_dtype
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    ForKind,
    LetStmt,
    Stmt,
)
from relaxvm.runtime.dtype import DataType

__all__ = ["I64", "Line", "Scalars", "Segment", "before_rule", "bind", "i64", "let", "loop"]

I64 = "int64"

Expr = Callable[[PrimExpr], PrimExpr]


def i64(value: int) -> PrimExpr:
    """An int64 constant."""
    return IntImm(I64, value)


def loop(
    name: str, extent: PrimExpr, body: Callable[[Var], Stmt], kind: ForKind = ForKind.SERIAL
) -> Stmt:
    """``for name in range(extent): body(name)`` with an int64 loop variable."""
    var = Var(name, I64)
    return For(var, i64(0), sop.cast(extent, I64), kind, body(var))


def let(name: str, value: PrimExpr, body: Callable[[Var], Stmt]) -> Stmt:
    """``name = value`` (computed once) in scope for ``body(name)``."""
    var = Var(name, value.dtype)
    return LetStmt(var, value, body(var))


class Scalars:
    """Named scalars in one ``local`` buffer read and written at constant indices only, so
    LLVM keeps them in registers (TIR has no mutable scalar variable)."""

    def __init__(self, name: str, dtype: str, names: Sequence[str]) -> None:
        self.buffer = Buffer(name, [len(names)], dtype, scope="local")
        self._slot = {key: i64(index) for index, key in enumerate(names)}

    def __getitem__(self, name: str) -> PrimExpr:
        return self.buffer[self._slot[name]]

    def set(self, name: str, value: PrimExpr) -> Stmt:
        """``name = value``."""
        return BufferStore(self.buffer, sop.cast(value, self.buffer.dtype), [self._slot[name]])

    def add(self, name: str, value: PrimExpr) -> Stmt:
        """``name += value``."""
        return self.set(name, sop.add(self[name], sop.cast(value, self.buffer.dtype)))

    def around(self, body: Stmt) -> Stmt:
        """``body`` with the scalars allocated."""
        return Allocate(self.buffer, body)


def before_rule(dtype: DataType, descending: bool) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    """``before(a, b)``: ``a`` strictly precedes ``b`` in the sorted order, NaN the greatest
    value (last ascending, first descending)."""
    strict = sop.greater if descending else sop.less

    def before(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if not is_float_dtype(dtype):
            return strict(a, b)
        # No comparison with NaN is true, so NaN's place is spelled out.
        nan_rule = (
            sop.logical_and(sop.not_equal(a, a), sop.equal(b, b))
            if descending
            else sop.logical_and(sop.equal(a, a), sop.not_equal(b, b))
        )
        return sop.logical_or(strict(a, b), nan_rule)

    return before


@dataclass(frozen=True)
class Segment:
    """Positions ``start .. start + count - 1`` of a sorted line: ``value(t)`` and
    ``index(t)`` (the original position, int64) are its ``t``-th element."""

    start: PrimExpr
    count: PrimExpr
    value: Expr
    index: Expr


@dataclass
class Line:
    """What the phases of one line's sort share. ``keys``/``order`` hold two halves of ``n``
    (the ping-pong of the merge passes); the result ends in the first."""

    read: Expr
    n: PrimExpr
    dtype: DataType
    before: Callable[[PrimExpr, PrimExpr], PrimExpr]
    keys: Buffer
    order: Buffer | None
    #: Numbers (non-NaN elements) in the line: the part the runs and merges sort.
    m: PrimExpr
    #: The numbers are in ``keys``/``order`` already (the NaN split ran).
    split: bool

    def key_at(self, k: PrimExpr) -> PrimExpr:
        return self.keys[k] if self.split else self.read(k)

    def index_at(self, k: PrimExpr) -> PrimExpr:
        assert self.order is not None
        return self.order[k] if self.split else sop.cast(k, self.order.dtype)

    def store(self, at: PrimExpr, key: PrimExpr, index: PrimExpr | None) -> list[Stmt]:
        stores: list[Stmt] = [BufferStore(self.keys, key, [at])]
        if self.order is not None and index is not None:
            stores.append(BufferStore(self.order, sop.cast(index, self.order.dtype), [at]))
        return stores


def bind(
    steps: Sequence[tuple[str, Callable[[dict[str, Var]], PrimExpr]]],
    body: Callable[[dict[str, Var]], Stmt],
) -> Stmt:
    """Nested ``LetStmt`` s: each step's value may use the names bound before it."""
    env: dict[str, Var] = {}

    def nest(index: int) -> Stmt:
        if index == len(steps):
            return body(env)
        name, value = steps[index]

        def inner(var: Var) -> Stmt:
            env[name] = var
            return nest(index + 1)

        return let(name, value(env), inner)

    return nest(0)
