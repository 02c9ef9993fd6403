"""The TIR nodes behind block-level ``T.match_buffer``, ``T.decl_buffer`` and ``T.Let``,
built with their constructors: checks, lowering, structural equality."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import evaluate
from relaxvm.ir.expr import Range
from relaxvm.ir.tir import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IterVar,
    Let,
    MatchBufferRegion,
    PrimFunc,
    Var,
    decl_buffer,
    lower_blocks,
    run_prim_func,
    structural_equal,
)
from relaxvm.ir.tir.lower_blocks import has_blocks, opaque_handles


def _row_view() -> tuple[PrimFunc, MatchBufferRegion]:
    """B[i, j] = 2 * A[i, j] through a block viewing row i of each buffer as a 1-d buffer."""
    a = decl_buffer((3, 4), "float32", "A")
    b = decl_buffer((3, 4), "float32", "B")
    i, vi, j = Var("i", "int64"), Var("vi", "int64"), Var("j", "int64")
    row_a = decl_buffer((4,), "float32", "row_a")
    row_b = decl_buffer((4,), "float32", "row_b")
    match_a = MatchBufferRegion(row_a, BufferRegion(a, [Range.from_min_extent(vi, 1), Range(0, 4)]))
    match_b = MatchBufferRegion(row_b, BufferRegion(b, [Range.from_min_extent(vi, 1), Range(0, 4)]))
    body = For(j, 0, 4, ForKind.SERIAL, BufferStore(row_b, row_a[j] * 2.0, [j]))
    block = Block(
        [IterVar(Range(0, 3), vi, 0)], [], [], "row", body, match_buffers=[match_a, match_b]
    )
    loop = For(i, 0, 3, ForKind.SERIAL, BlockRealize([i], True, block))
    pa, pb = Var("a", "handle"), Var("b", "handle")
    return PrimFunc([pa, pb], loop, {pa: a, pb: b}, {"global_symbol": "rows"}), match_a


def test_match_buffer_region_lowers_to_the_source_buffer() -> None:
    func, match = _row_view()
    assert match.source.buffer.name == "A"
    lowered = lower_blocks(func)
    assert not has_blocks(lowered)
    assert "B[i, j] = A[i, j] * T.float32(2.0)" in lowered.script()
    a = np.arange(12, dtype="float32").reshape(3, 4)
    b = np.zeros((3, 4), "float32")
    run_prim_func(func, a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_match_buffer_region_checks() -> None:
    a = decl_buffer((3, 4), "float32", "A")
    region = BufferRegion(a, [Range(0, 1), Range(0, 4)])
    with pytest.raises(VMValueError, match="a 3-d buffer cannot match a 2-d region of 'A'"):
        MatchBufferRegion(decl_buffer((1, 1, 4), "float32", "V"), region)
    with pytest.raises(VMValueError, match="extent 4 in dimension 1, but the buffer expects 2"):
        MatchBufferRegion(decl_buffer((2,), "float32", "V"), region)
    with pytest.raises(VMValueError, match="extent 1 in dimension 0, but the buffer expects 2"):
        MatchBufferRegion(decl_buffer((2, 4), "float32", "V"), region)
    with pytest.raises(VMTypeError, match="dtype int32 differs from 'A''s float32"):
        MatchBufferRegion(decl_buffer((4,), "int32", "V"), region)
    with pytest.raises(VMTypeError, match="the source must be a buffer region"):
        MatchBufferRegion(decl_buffer((4,), "float32", "V"), a)  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match="match_buffers must be MatchBufferRegions"):
        Block([], [], [], "b", BufferStore(a, 0.0, [0, 0]), match_buffers=[a])  # type: ignore[list-item]


def test_decl_buffer_alias_and_checks() -> None:
    a = decl_buffer((2, 3), "int32", "A")
    flat = decl_buffer((6,), "int32", "flat", data=a.data)
    k = Var("k", "int64")
    body = DeclBuffer(flat, For(k, 0, 6, ForKind.SERIAL, BufferStore(flat, k.astype("int32"), [k])))
    pa = Var("a", "handle")
    func = PrimFunc([pa], body, {pa: a}, {"global_symbol": "iota"})
    assert has_blocks(func) and not has_blocks(lower_blocks(func))
    out = np.zeros((2, 3), "int32")
    run_prim_func(func, out)
    np.testing.assert_array_equal(out.ravel(), np.arange(6))
    with pytest.raises(VMTypeError, match="DeclBuffer: expected a Buffer"):
        DeclBuffer(a.data, body)  # type: ignore[arg-type]


def test_opaque_handles_and_decl_over_a_handle() -> None:
    h = Var("h", "handle")
    view = decl_buffer((4,), "float32", "V", data=h)
    body = DeclBuffer(view, BufferStore(view, 1.0, [0]))
    func = PrimFunc([h], body, {}, {"global_symbol": "f"})
    assert opaque_handles(func) == []
    lowered = lower_blocks(func)
    assert lowered.buffer_map[h] is view
    bare = PrimFunc([h], BufferStore(decl_buffer((1,), "float32", "O"), 1.0, [0]), {}, {})
    assert opaque_handles(bare) == [h]


def test_let_expression() -> None:
    x = Var("x", "int64")
    expr = Let(x, 3, x * x + 1)
    assert expr.dtype == "int64"
    assert evaluate(expr) == 10
    assert str(expr) == "T.Let(x * x + 1, where={x: 3})"
    with pytest.raises(
        VMTypeError, match="Let x: value `1.5` has type float32, the variable int64"
    ):
        Let(x, 1.5, x)
    y = Var("y", "int64")
    # In statements the bound variable is a definition: Lets differing only in its name are
    # equal.
    assert structural_equal(Evaluate(Let(x, 2, x + 1)), Evaluate(Let(y, 2, y + 1)))
    assert not structural_equal(Evaluate(Let(x, 2, x + 1)), Evaluate(Let(y, 3, y + 1)))


def test_structural_equality_compares_the_aliased_memory() -> None:
    a = decl_buffer((4,), "float32", "A")
    b = decl_buffer((4,), "float32", "B")
    pa, pb = Var("a", "handle"), Var("b", "handle")

    def make(source: object) -> PrimFunc:
        view = decl_buffer((4,), "float32", "V", data=source.data)  # type: ignore[attr-defined]
        body = DeclBuffer(view, BufferStore(view, 1.0, [0]))
        return PrimFunc([pa, pb], body, {pa: a, pb: b}, {"global_symbol": "f"})

    assert structural_equal(make(a), make(a))
    assert not structural_equal(make(a), make(b))
