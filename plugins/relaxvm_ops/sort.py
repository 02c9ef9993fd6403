"""Sorting legalizations: sort, argsort, topk (TIR kernels, one thread per line); einsum is
in :mod:`.einsum`.

Every line along the axis is sorted independently; the lines run in parallel (one
``T.parallel`` loop over the flattened outer dimensions). A line is sorted by the stable merge
sort of :mod:`.sort_kernels` (values only for ``sort``: no index array is carried, and a long
float line tries the bucket sort of :mod:`.sort_bucket` first), except a
``topk`` with a small ``k``, which scans the line once keeping the best ``k``
(:mod:`.topk_select`). Both give numpy's stable order: ascending with NaN last, descending
with NaN first, equal keys (and NaNs) in their original order.
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, cast
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo, TupleStructInfo
from relaxvm.ir.tir import Buffer, BufferStore, ForKind, Stmt, seq, te

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_tir_loops,
    known_tensor,
    legalizes,
    op_name,
    product,
    shape_of,
    tensor_arg,
    unravel_index,
)
from .sort_kernels import sort_line
from .sort_tir import I64, Segment, i64, loop
from .topk_select import SELECT_MAX_K, select_line

__all__ = ["legalize_sort"]


def _same(extent: PrimExpr, n: PrimExpr) -> bool:
    """Whether an output extent is provably the line length ``n``."""
    if extent is n:
        return True
    return isinstance(extent, IntImm) and isinstance(n, IntImm) and extent.value == n.value


def _at_most(extent: PrimExpr, n: PrimExpr) -> bool:
    """Whether an output extent is provably at most the line length ``n``."""
    if _same(extent, n):
        return True
    return isinstance(extent, IntImm) and isinstance(n, IntImm) and extent.value <= n.value


def _outputs(call: Call) -> list[TensorStructInfo]:
    sinfo = call.struct_info
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else [sinfo]
    return [known_tensor(call, f, "the result") for f in fields]


@legalizes("relax.sort", "relax.argsort", "relax.topk")
def legalize_sort(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One kernel per call: every line sorted (or, for ``topk`` with a small ``k``, its best
    ``k`` selected), then the values and/or indices written out (``topk``: the first ``k``)."""
    name = op_name(call).removeprefix("relax.")
    data = tensor_arg(call, 0, "data")
    shape, dtype = shape_of(data), data.dtype
    assert dtype is not None
    ndim = len(shape)
    raw_axis = attr(call, "axis", -1)
    if not -ndim <= raw_axis < ndim:
        raise LegalizationError(f"relax.{name}: axis {raw_axis} is out of range for rank {ndim}")
    axis = raw_axis % ndim
    if name == "topk":
        descending = bool(attr(call, "largest", True))
        ret_type = attr(call, "ret_type", "both")
        kinds = {"both": ["values", "indices"], "values": ["values"]}.get(ret_type, ["indices"])
    else:
        descending = bool(attr(call, "descending", False))
        kinds = ["values"] if name == "sort" else ["indices"]
    out_infos = _outputs(call)
    n = sop.cast(shape[axis], I64)
    outer = [d for a, d in enumerate(shape) if a != axis]
    extent = sop.cast(shape_of(out_infos[0])[axis], I64)
    select_k = 0
    if name == "topk" and isinstance(extent, IntImm) and 1 <= extent.value <= SELECT_MAX_K:
        select_k = int(extent.value)
    # Indices are carried through the sort only when they are wanted (32-bit when they fit).
    order_dtype = None
    if "indices" in kinds:
        order_dtype = "int32" if isinstance(n, IntImm) and n.value < 2**31 else I64

    def build(x: te.Tensor) -> tuple[list[Buffer], Stmt]:
        outs = [
            Buffer(f"T_{name}_{kind}", shape_of(info), info.dtype or dtype)
            for kind, info in zip(kinds, out_infos, strict=True)
        ]

        def per_line(flat: Var) -> Stmt:
            outer_idx = unravel_index(flat, outer)

            def full(k: PrimExpr) -> tuple[PrimExpr, ...]:
                rest = iter(outer_idx)
                return tuple(k if a == axis else next(rest) for a in range(ndim))

            def finish(segments: list[Segment]) -> Stmt:
                return _write(outs, kinds, segments, extent, n, full)

            def read(k: PrimExpr) -> PrimExpr:
                return x[full(k)]

            if select_k:
                return select_line(read, n, dtype, descending, select_k, finish)
            return sort_line(read, n, dtype, descending, order_dtype, finish)

        return outs, loop("line", product(outer), per_line, ForKind.PARALLEL)

    result = call_tir_loops(
        bb, build, call.args[0], primfunc_name_hint=name,
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip
    return result


def _write(
    outs: list[Buffer],
    kinds: list[str],
    segments: list[Segment],
    extent: PrimExpr,
    n: PrimExpr,
    full: Any,
) -> Stmt:
    """Store the first ``extent`` positions of a sorted line; positions past the line's end
    (``topk`` with ``k`` past a short symbolic line) are left as zeros."""
    parts: list[Stmt] = []
    for segment in segments:
        count = segment.count
        if not _same(extent, n):
            room = sop.max_expr(sop.sub(extent, segment.start), i64(0))
            count = sop.min_expr(count, room)

        def store(t: Var, segment: Segment = segment) -> Stmt:
            at = full(sop.add(segment.start, t))
            stores = []
            for kind, out in zip(kinds, outs, strict=True):
                value = segment.value(t) if kind == "values" else cast(segment.index(t), out.dtype)
                stores.append(BufferStore(out, value, at))
            return seq(*stores)

        parts.append(loop("t", count, store))
    if not _at_most(extent, n):
        surplus = sop.max_expr(sop.sub(extent, n), i64(0))

        def zero(t: Var) -> Stmt:
            at = full(sop.add(n, t))
            return seq(*(BufferStore(o, sop.const(0, o.dtype), at) for o in outs))

        parts.append(loop("t", surplus, zero))
    return seq(*parts)
