"""Ops that index with user data: ``take`` here, gather/scatter/one_hot in :mod:`.index_ops`.

The index check they share lives in :mod:`.index_check` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaxvm.ir import PrimExpr, Var, select
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, PrimStructInfo, RelaxExpr
from relaxvm.ir.tir import BufferStore, Evaluate, PrimFunc, Stmt, seq, te
from relaxvm.ir.tir.intrin import FLAT_AXIS, check_index

from . import index_ops  # noqa: F401  (registers the gather/scatter/one_hot legalizations)
from ._kernel import (
    OpPattern,
    _finish,
    _Inputs,
    attr,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
    unravel_index,
)
from .elementwise import _scalar_operand
from .index_check import (
    CHECK_CHUNKS,
    _nest,
    checked_index_loops,
    index_check_loops,
    report_bad_index,
)

__all__ = [
    "CHECK_CHUNKS",
    "checked_index_loops",
    "index_check_loops",
    "legalize_take",
    "legalize_take_unchecked",
    "report_bad_index",
]


@legalizes("relax.take")
def legalize_take(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Gather along ``axis`` (from the flattened ``x`` when None); negative indices count
    from the end, as in numpy, and an index out of range raises ``VMIndexError`` naming the
    op, the axis and the index (checked while gathering: :func:`checked_index_loops`)."""
    return _take(bb, call, checked=True)


def legalize_take_unchecked(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``take`` without the index check, for measuring the check (``benchmarks/bench_take.py``).

    Not registered: an index out of range makes this kernel read outside its input. Never use
    it where indices come from users.
    """
    return _take(bb, call, checked=False)


def _take(bb: BlockBuilder, call: Call, checked: bool) -> RelaxExpr:
    if isinstance(call.args[1].struct_info, PrimStructInfo):
        return _take_scalar(bb, call, checked)
    shape = shape_of(tensor_arg(call, 0, "x"))
    index_shape = shape_of(tensor_arg(call, 1, "indices"))
    out_shape = shape_of(out_tensor_sinfo(call))
    raw_axis = attr(call, "axis")
    flat = raw_axis is None
    axis = FLAT_AXIS if flat else raw_axis % len(shape)
    extent = product(shape) if flat else shape[axis]

    def source(x: Any, picked: PrimExpr, outer: Sequence[PrimExpr]) -> PrimExpr:
        """The element of ``x`` an output element reads, given its (wrapped) index."""
        if flat:
            return x[tuple(unravel_index(picked, shape))] if shape else x[()]
        return x[tuple([*outer[:axis], picked, *outer[axis + len(index_shape) :]])]

    def unchecked(x: te.Tensor, indices: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            at = idx if flat else idx[axis : axis + len(index_shape)]
            i = sop.cast(indices[tuple(at)], "int64")
            return source(x, select(sop.less(i, 0), sop.add(i, extent), i), idx)

        return te.compute(out_shape, body, name="T_take")

    inputs = _Inputs(op_name(call))
    x, indices = inputs.convert([call.args[0], call.args[1]])
    out = unchecked(x, indices)
    # Where one index moves one element, checking while gathering saves a read of the indices
    # (the gather's main cost); where an index moves a row or is reused across outer axes,
    # the indices are small next to the data: check them first and keep the gather's schedule.
    fused = checked and (flat or (axis == 0 and len(shape) == 1))
    if fused:
        pre = [] if flat else shape[:axis]
        post = [] if flat else shape[axis + 1 :]
        loops = [(Var(f"i{d}", "int64"), e) for d, e in enumerate([*pre, *index_shape, *post])]
        outer, inner = loops[: len(pre) + len(index_shape)], loops[len(pre) + len(index_shape) :]
        loop_vars = [var for var, _ in loops]

        def use(picked: Var) -> Stmt:
            value = source(x, picked, loop_vars)
            return _nest(BufferStore(out.buffer, value, loop_vars), inner)

        index_at = [var for var, _ in outer[len(pre) :]]
        body = checked_index_loops(indices.buffer, index_at, extent, axis, "take", outer, use)

    elif checked:
        check = index_check_loops(indices.buffer, extent, axis, "take")

    def make(scalars: list[Var]) -> PrimFunc:
        func = te.create_loop_func([*inputs.placeholders, out, *scalars], name="take")
        if fused:
            return func.with_body(body)
        return func.with_body(seq(check, func.body)) if checked else func

    return _finish(bb, inputs, [out.buffer], make, "take", OpPattern.INJECTIVE, None)


def _take_scalar(bb: BlockBuilder, call: Call, checked: bool) -> RelaxExpr:
    """``take`` with one scalar index (an ``R.Prim``): the slice at that index.

    The index is a TIR value of the kernel (a symbolic one bound by ``match_cast`` when it is
    known only at run time); it is checked and wrapped like a tensor's indices.
    """
    shape = shape_of(tensor_arg(call, 0, "x"))
    out_shape = shape_of(out_tensor_sinfo(call))
    raw_axis = attr(call, "axis")
    flat = raw_axis is None
    axis = FLAT_AXIS if flat else raw_axis % len(shape)
    extent = product(shape) if flat else shape[axis]
    index = sop.cast(_scalar_operand(bb, call, 1), "int64")
    picked = select(sop.less(index, 0), sop.add(index, extent), index)
    # The index is checked once, before the loops: a check inside them could land in a
    # vectorized or parallel loop, where it cannot return the kernel's status.
    check = Evaluate(check_index(index, extent, axis, "take")) if checked else None
    inputs = _Inputs(op_name(call))
    (x,) = inputs.convert([call.args[0]])
    inputs._scalar(index)  # a run-time index becomes a scalar parameter of the kernel

    def body(*idx: Any) -> PrimExpr:
        if flat:
            return x[tuple(unravel_index(picked, shape))] if shape else x[()]
        return x[tuple([*idx[:axis], picked, *idx[axis:]])]

    out = te.compute(out_shape, body, name="T_take")

    def make(scalars: list[Var]) -> PrimFunc:
        func = te.create_loop_func([*inputs.placeholders, out, *scalars], name="take")
        return func if check is None else func.with_body(seq(check, func.body))

    return _finish(bb, inputs, [out.buffer], make, "take", OpPattern.INJECTIVE, None)
