"""Replacing buffer views by the buffers they view (TVM's ``LowerMatchBuffer`` and the
aliasing half of ``DeclBuffer``), a step of :mod:`relaxvm.ir.tir.lower_blocks`.

* A block's ``A_sub = T.match_buffer(A[r0:r0 + 4, c], (4,))`` binds ``A_sub`` to a region of
  ``A``: every ``A_sub[i]`` becomes ``A[r0 + i, c]`` (leading region dimensions of extent 1
  are fixed at their start, the others are offset by it).
* ``B = T.decl_buffer(shape, dtype, data=A.data)`` declares ``B`` over ``A``'s memory: with
  the same shape and layout ``B[idx]`` becomes ``A[idx]``; otherwise the element ``B[idx]``
  addresses (through ``B``'s strides and offset) is found in ``A`` by its flat position.

After this the interpreter and the code generators see only the underlying buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...errors import VMValueError
from ..arith import Analyzer
from ..expr import IntImm, PrimExpr
from ..op import cast, const, floordiv, floormod
from ..structural import structural_equal
from .block import MatchBufferRegion
from .buffer import Buffer, BufferLoad
from .stmt import BufferStore, Stmt
from .stmt_functor import StmtMutator

__all__ = ["alias_indices", "match_indices", "redirect_buffers"]

#: Maps a view's indices to (the underlying buffer, its indices).
Redirect = Callable[[tuple[PrimExpr, ...]], tuple[Buffer, tuple[PrimExpr, ...]]]


def match_indices(match: MatchBufferRegion) -> Redirect:
    """The access map of a block-level ``T.match_buffer``."""
    source = match.source
    region = source.region
    lead = len(region) - match.buffer.ndim

    def redirect(indices: tuple[PrimExpr, ...]) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        fixed = [rng.min for rng in region[:lead]]
        moved = [_add(rng.min, index) for rng, index in zip(region[lead:], indices, strict=True)]
        return source.buffer, (*fixed, *moved)

    return redirect


def alias_indices(view: Buffer, base: Buffer) -> Redirect:
    """The access map of ``T.decl_buffer(..., data=base.data)`` declaring ``view``."""
    same_layout = (
        not view.strides
        and not base.strides
        and structural_equal(view.elem_offset, base.elem_offset)
        and len(view.shape) == len(base.shape)
        and all(structural_equal(a, b) for a, b in zip(view.shape, base.shape, strict=True))
    )
    if same_layout:
        return lambda indices: (base, indices)
    if base.strides:
        raise VMValueError(
            f"decl_buffer {view.name!r}: aliasing the strided buffer {base.name!r} with a "
            "different shape is not supported; declare the alias with the same shape"
        )
    analyzer = Analyzer()
    view_strides = view.strides or _compact_strides(view.shape)

    return _unravel(view, base, view_strides, analyzer)


def _unravel(
    view: Buffer, base: Buffer, view_strides: tuple[PrimExpr, ...], analyzer: Analyzer
) -> Redirect:
    def redirect(indices: tuple[PrimExpr, ...]) -> tuple[Buffer, tuple[PrimExpr, ...]]:
        flat: PrimExpr = _i64(view.elem_offset) - _i64(base.elem_offset)
        for index, stride in zip(indices, view_strides, strict=True):
            flat = flat + _i64(index) * _i64(stride)
        if base.ndim == 0:
            return base, ()
        out: list[PrimExpr] = []
        # Innermost dimension first: index = flat % extent, carry = flat // extent; the
        # outermost dimension takes the whole carry (no wrap-around, as a flat offset).
        for dim in reversed(base.shape[1:]):
            extent = _i64(dim)
            out.append(analyzer.simplify(floormod(flat, extent)))
            flat = floordiv(flat, extent)
        out.append(analyzer.simplify(flat))
        return base, tuple(reversed(out))

    return redirect


def _compact_strides(shape: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
    strides: list[PrimExpr] = []
    step: PrimExpr = const(1, "int64")
    for extent in reversed(shape):
        strides.append(step)
        step = step * _i64(extent)
    return tuple(reversed(strides))


def _i64(expr: PrimExpr) -> PrimExpr:
    return expr if str(expr.dtype) == "int64" else cast(expr, "int64")


def _add(base: PrimExpr, index: PrimExpr) -> PrimExpr:
    if isinstance(base, IntImm) and base.value == 0:
        return index
    if base.dtype != index.dtype:
        base, index = _i64(base), _i64(index)
    return base + index


def redirect_buffers(stmt: Stmt, redirects: Mapping[Buffer, Redirect]) -> Stmt:
    """``stmt`` with every load and store of a buffer in ``redirects`` sent to the buffer and
    indices its map gives."""
    if not redirects:
        return stmt
    return _Redirector(redirects).visit_stmt(stmt)


class _Redirector(StmtMutator):
    def __init__(self, redirects: Mapping[Buffer, Redirect]) -> None:
        self.redirects = redirects

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        return self._expr(expr)

    def _expr(self, expr: PrimExpr) -> PrimExpr:
        operands = expr.operands
        if isinstance(expr, BufferLoad):
            indices = tuple(self._expr(index) for index in expr.indices)
            redirect = self.redirects.get(expr.buffer)
            if redirect is not None:
                buffer, new = redirect(indices)
                return BufferLoad(buffer, new)
            if all(a is b for a, b in zip(indices, expr.indices, strict=True)):
                return expr
            return BufferLoad(expr.buffer, indices)
        if not operands:
            return expr
        return expr.with_operands(*(self._expr(operand) for operand in operands))

    def visit_buffer_store_(self, stmt: BufferStore) -> Stmt:
        value = self._expr(stmt.value)
        indices = tuple(self._expr(index) for index in stmt.indices)
        redirect = self.redirects.get(stmt.buffer)
        if redirect is None:
            return self._rebuild(stmt, value=value, indices=self._same(indices, stmt.indices))
        buffer, new = redirect(indices)
        return BufferStore(buffer, value, new)

    @staticmethod
    def _same(new: tuple[PrimExpr, ...], old: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return old if all(a is b for a, b in zip(new, old, strict=True)) else new
