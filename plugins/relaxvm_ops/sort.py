"""Sorting and einsum legalizations: sort, argsort, topk (TIR kernels, one thread per line)
and einsum (one TE reduction).

Every line along the axis is sorted independently; the lines run in parallel (one
``T.parallel`` loop over the flattened outer dimensions). A line is sorted by the stable merge
sort of :mod:`.sort_kernels` (values only for ``sort``: no index array is carried), except a
``topk`` with a small ``k``, which scans the line once keeping the best ``k``
(:mod:`.topk_select`). Both give numpy's stable order: ascending with NaN last, descending
with NaN first, equal keys (and NaNs) in their original order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, cast
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo, TupleStructInfo
from relaxvm.ir.relax.op.einsum_spec import label_dims, parse_einsum
from relaxvm.ir.tir import Buffer, BufferStore, ForKind, Stmt, seq, te
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    call_tir_loops,
    known_tensor,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
    tuple_fields,
    unravel_index,
)
from .sort_kernels import sort_line
from .sort_tir import I64, Segment, i64, loop
from .topk_select import SELECT_MAX_K, select_line

__all__ = ["legalize_einsum", "legalize_sort"]


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


# ---- einsum ---------------------------------------------------------------------------------
def _einsum_te(
    operands: Sequence[te.Tensor], subscripts: str, out_shape: Sequence[PrimExpr]
) -> te.Tensor:
    shapes = [list(t.shape) for t in operands]
    spec = parse_einsum(subscripts, [len(s) for s in shapes])
    dims = label_dims(spec, shapes)
    extents = dict(zip(spec.output, out_shape, strict=True))
    for label in spec.reduced:
        # A broadcast (size 1) extent yields to the others, as numpy broadcasts it.
        sizes = [d for d in dims[label] if not (isinstance(d, IntImm) and d.value == 1)]
        extents[label] = sizes[0] if sizes else dims[label][0]

    def body(*idx: Var) -> Any:
        index: dict[str, Any] = dict(zip(spec.output, idx, strict=True))
        red = [te.reduce_axis((0, extents[label]), name=f"r_{label}") for label in spec.reduced]
        index.update((label, rv.var) for label, rv in zip(spec.reduced, red, strict=True))
        term: PrimExpr | None = None
        for tensor, labels in zip(operands, spec.inputs, strict=True):
            at = tuple(
                i64(0) if isinstance(d, IntImm) and d.value == 1 else index[label]
                for label, d in zip(labels, tensor.shape, strict=True)
            )
            value = cast(tensor[at], "int8") if logical else tensor[at]
            term = value if term is None else term * value
        assert term is not None  # inference requires one operand at least
        if not red:
            return term
        # bool: "any" of the "and"s, as numpy's einsum; 0/1 products make max an "any".
        return te.max(term, axis=red) if logical else te.sum(term, axis=red)

    logical = bool(operands) and operands[0].dtype == DataType("bool")
    result = te.compute(list(out_shape), body, name="T_einsum")
    if not logical:
        return result
    return te.compute(list(out_shape), lambda *i: sop.not_equal(result[i], 0), name="T_einsum_bool")


@legalizes("relax.einsum")
def legalize_einsum(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One TE kernel: the product of the operands at every label assignment, summed over the
    labels absent from the output (none: a plain product, e.g. an outer product). bool
    operands give numpy's logical einsum: "or" over the reduced labels of the "and"s."""
    subscripts = attr(call, "subscripts", "")
    fields = tuple_fields(bb, call, call.args[0], "operands")
    for index, field in enumerate(fields):
        known_tensor(call, field.struct_info, f"operand {index}")
    out = out_tensor_sinfo(call)

    def kernel(*operands: te.Tensor) -> te.Tensor:
        return _einsum_te(operands, subscripts, shape_of(out))

    return call_te(
        bb, kernel, *fields, primfunc_name_hint="einsum",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
