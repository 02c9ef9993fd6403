"""TIR block nodes: construction, visitors, structural equality and lowering to loops."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Range
from relaxvm.ir.tir import (
    Block,
    BlockRealize,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterVar,
    IterVarType,
    PrimFunc,
    StmtMutator,
    Var,
    decl_buffer,
    lower_blocks,
    post_order_visit,
    run_prim_func,
    structural_equal,
    structural_hash,
)
from relaxvm.ir.tir.lower_blocks import as_loop_nests, has_blocks, lower_blocks_stmt


def _rowsum(reduction_outside: bool = False) -> PrimFunc:
    """B[i] = sum_k A[i, k] in block form, built with the node constructors (loops ``i, k``,
    or ``k, i`` with ``reduction_outside``)."""
    a = decl_buffer((4, 6), "float32", "A")
    b = decl_buffer((4,), "float32", "B")
    i, k = Var("i", "int64"), Var("k", "int64")
    vi, vk = Var("vi", "int64"), Var("vk", "int64")
    block = Block(
        [
            IterVar(Range(0, 4), vi, IterVarType.DATA_PAR),
            IterVar(Range(0, 6), vk, IterVarType.COMM_REDUCE),
        ],
        reads=[BufferRegion(a, [Range.from_min_extent(vi, 1), Range.from_min_extent(vk, 1)])],
        writes=[BufferRegion(b, [Range.from_min_extent(vi, 1)])],
        name_hint="B",
        body=BufferStore(b, b[vi] + a[vi, vk], [vi]),
        init=BufferStore(b, 0.0, [vi]),
    )
    realize = BlockRealize([i, k], True, block)
    if reduction_outside:
        body = For(k, 0, 6, ForKind.SERIAL, For(i, 0, 4, ForKind.SERIAL, realize))
    else:
        body = For(i, 0, 4, ForKind.SERIAL, For(k, 0, 6, ForKind.SERIAL, realize))
    pa, pb = Var("a", "handle"), Var("b", "handle")
    return PrimFunc([pa, pb], body, {pa: a, pb: b}, {"global_symbol": "rowsum"})


def test_rowsum_lowers_to_init_before_the_reduction_loop_and_runs() -> None:
    # The reduction loop is innermost and bound to the "R" variable alone, so the init is
    # hoisted in front of it: the loop nest te's reductions lower to.
    func = _rowsum()
    lowered = lower_blocks(func)
    assert not has_blocks(lowered) and has_blocks(func)
    assert lowered.script().splitlines()[-4:] == [
        "    for i in range(T.int64(4)):",
        "        B[i] = T.float32(0.0)",
        "        for k in range(T.int64(6)):",
        "            B[i] = B[i] + A[i, k]",
    ]
    a = np.arange(24, dtype="float32").reshape(4, 6)
    b = np.full(4, 99.0, "float32")
    run_prim_func(func, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1))


def test_reduction_loop_outside_keeps_the_guarded_init() -> None:
    # With the reduction loop outermost, the init must run at k == 0 for every i (TVM's
    # LowerInitBlock form).
    func = _rowsum(reduction_outside=True)
    text = lower_blocks(func).script()
    assert "if k == T.int64(0):" in text
    assert "B[i] = B[i] + A[i, k]" in text
    a = np.arange(24, dtype="float32").reshape(4, 6)
    b = np.full(4, 99.0, "float32")
    run_prim_func(func, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1))


def test_lower_blocks_leaves_block_free_functions_alone() -> None:
    lowered = lower_blocks(_rowsum())
    assert lower_blocks(lowered) is lowered


def test_predicate_and_alloc_buffers_lower_to_if_and_allocate() -> None:
    out = decl_buffer((3,), "int32", "O")
    scratch = decl_buffer((1,), "int32", "S")
    i, vi = Var("i", "int64"), Var("vi", "int64")
    block = Block(
        [IterVar(Range(0, 3), vi, 0)],
        [],
        [],
        "b",
        BufferStore(out, 5, [vi]),
        alloc_buffers=[scratch],
    )
    stmt = lower_blocks_stmt(BlockRealize([i], i < 2, block))
    assert isinstance(stmt, IfThenElse)
    assert "T.alloc_buffer" in str(stmt) and "O[i] = T.int32(5)" in str(stmt)


def test_block_without_reduction_runs_init_unconditionally() -> None:
    out = decl_buffer((2,), "int32", "O")
    i, vi = Var("i", "int64"), Var("vi", "int64")
    block = Block(
        [IterVar(Range(0, 2), vi, IterVarType.DATA_PAR)],
        [],
        [],
        "b",
        BufferStore(out, out[vi] + 1, [vi]),
        init=BufferStore(out, 10, [vi]),
    )
    text = str(lower_blocks_stmt(BlockRealize([i], True, block)))
    assert text.splitlines() == ["O[i] = T.int32(10)", "O[i] = O[i] + T.int32(1)"]


def test_unrealized_root_block_lowers_and_one_with_axes_is_an_error() -> None:
    out = decl_buffer((1,), "int32", "O")
    root = Block([], [], [], "root", BufferStore(out, 1, [0]))
    assert str(lower_blocks_stmt(root)) == "O[T.int64(0)] = T.int32(1)"
    vi = Var("vi", "int64")
    bad = Block([IterVar(Range(0, 1), vi, 0)], [], [], "b", Evaluate(0))
    with pytest.raises(VMTypeError, match="block 'b' has iteration variables but no"):
        lower_blocks_stmt(bad)


def test_structural_equality_pairs_iteration_variables() -> None:
    first, second = _rowsum(), _rowsum()
    assert structural_equal(first, second)
    assert structural_hash(first) == structural_hash(second)
    renamed = first.body.body.body  # type: ignore[attr-defined]
    # A block's name is a hint: TVM's structural equality and hash ignore it.
    changed = renamed.replace(block=renamed.block.replace(name_hint="other"))
    assert structural_equal(renamed, changed)
    assert structural_hash(renamed) == structural_hash(changed)
    different_kind = renamed.block.replace(
        iter_vars=(
            renamed.block.iter_vars[0],
            IterVar(renamed.block.iter_vars[1].dom, renamed.block.iter_vars[1].var, 0),
        )
    )
    assert not structural_equal(renamed.block, different_kind)


def test_mutator_rewrites_regions_and_visitor_sees_blocks() -> None:
    func = _rowsum()

    class _Twice(StmtMutator):
        def visit_expr(self, expr):  # type: ignore[no-untyped-def]
            return expr * 2 if isinstance(expr, Var) and expr.name == "vi" else expr

    realize = func.body.body.body  # type: ignore[attr-defined]
    new = _Twice().visit_stmt(realize)
    assert new is not realize
    assert str(new.block.reads[0].region[0].min) == "vi * 2"
    assert _Twice().visit_stmt(BlockRealize([], True, Block([], [], [], "e", Evaluate(0))))
    kinds: list[str] = []
    post_order_visit(func.body, lambda node: kinds.append(type(node).__name__))
    assert kinds[-4:] == ["Block", "BlockRealize", "For", "For"]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda v: IterVar(Range(0, 4), Var("f", "float32"), 0), VMTypeError, "integer Var"),
        (lambda v: IterVar((0, 4), v, 0), VMTypeError, "dom must be a Range"),
        (lambda v: IterVar(Range(0, 4), v, 9), VMValueError, "unknown iter_type 9"),
        (
            lambda v: BufferRegion(decl_buffer((4, 4), "float32", "A"), [Range(0, 4)]),
            VMValueError,
            "1 ranges for a buffer of 2 dimensions",
        ),
        (lambda v: Block([v], [], [], "b", Evaluate(0)), VMTypeError, "must be IterVars"),
        (lambda v: Block([], [], [], "b", None), VMTypeError, "body must be a Stmt"),
        (
            lambda v: BlockRealize([1, 2], True, Block([], [], [], "b", Evaluate(0))),
            VMValueError,
            "2 values for 0 iteration variables",
        ),
        (
            lambda v: BlockRealize([], v, Block([], [], [], "b", Evaluate(0))),
            VMTypeError,
            "predicate `v` must be bool",
        ),
    ],
)
def test_constructor_errors(make, error, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=message):
        make(Var("v", "int64"))


def test_lower_blocks_rejects_other_objects() -> None:
    with pytest.raises(VMTypeError, match="lower_blocks: expected a PrimFunc or an IRModule"):
        lower_blocks(3)


def test_as_loop_nests_lowers_only_functions_with_blocks() -> None:
    func = _rowsum()
    lowered = as_loop_nests(func)
    assert has_blocks(func) and not has_blocks(lowered)
    tir_text = lowered.script()
    assert "B[i] = T.float32(0.0)" in tir_text and "T.block" not in tir_text
    assert as_loop_nests(lowered) is lowered  # no blocks: the same function
    a = np.arange(24, dtype="float32").reshape(4, 6)
    b = np.zeros(4, "float32")
    run_prim_func(lowered, a, b)
    np.testing.assert_allclose(b, a.sum(axis=1))
