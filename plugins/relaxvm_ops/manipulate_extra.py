"""More layout ops: tril, triu, flip, tile, repeat, stack, meshgrid (injective copies) and
collapse_sum_like / collapse_sum_to (a sum reduction)."""

from __future__ import annotations

from typing import Any

from relaxvm.ir import IntImm, PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import te

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    known_tensor,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
    tuple_fields,
    unravel_index,
)
from .reduction import normalize_axes

__all__: list[str] = []


def _i64(value: PrimExpr) -> PrimExpr:
    return value if str(value.dtype) == "int64" else cast(value, "int64")


def _triangle(bb: BlockBuilder, call: Call, lower: bool) -> RelaxExpr:
    shape = shape_of(tensor_arg(call, 0, "x"))
    name = "tril" if lower else "triu"

    def kernel(x: te.Tensor, k: PrimExpr) -> te.Tensor:
        offset = _i64(k)

        def body(*idx: Any) -> PrimExpr:
            diagonal = sop.sub(_i64(idx[-1]), _i64(idx[-2]))
            keep = (
                sop.less_equal(diagonal, offset) if lower else sop.greater_equal(diagonal, offset)
            )
            return sop.select(keep, x[idx], sop.const(0, x.dtype))

        return te.compute(shape, body, name=f"T_{name}")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint=name,
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.tril")
def legalize_tril(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x`` where ``j - i <= k`` on the last two axes, zero elsewhere."""
    return _triangle(bb, call, lower=True)


@legalizes("relax.triu")
def legalize_triu(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x`` where ``j - i >= k`` on the last two axes, zero elsewhere."""
    return _triangle(bb, call, lower=False)


@legalizes("relax.flip")
def legalize_flip(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[..., i, ...] = x[..., extent - 1 - i, ...]`` on the flipped axis."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    (axis,) = normalize_axes(call, [attr(call, "axis")], len(shape))

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            src = list(idx)
            src[axis] = sop.sub(sop.sub(shape[axis], 1), idx[axis])
            return x[tuple(src)]

        return te.compute(shape, body, name="T_reverse_sequence")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="flip",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.tile")
def legalize_tile(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[i] = x[i mod extent]`` on the trailing axes of the result."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    lead = len(out_shape) - len(shape)

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            src = [sop.floormod(i, dim) for i, dim in zip(idx[lead:], shape, strict=True)]
            return x[tuple(src)]

        return te.compute(out_shape, body, name="T_tile")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="tile",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.repeat")
def legalize_repeat(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[..., i, ...] = x[..., i // repeats, ...]`` (of the flattened ``x`` for axis None)."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    repeats, axis = attr(call, "repeats"), attr(call, "axis")
    if axis is not None:
        (axis,) = normalize_axes(call, [axis], len(shape))

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            if axis is None:
                flat = sop.floordiv(idx[0], repeats)
                return x[tuple(unravel_index(flat, shape))] if shape else x[()]
            src = list(idx)
            src[axis] = sop.floordiv(idx[axis], repeats)
            return x[tuple(src)]

        return te.compute(out_shape, body, name="T_repeat")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="repeat",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.stack")
def legalize_stack(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Reads the input the index on the new axis names (an ``if_then_else`` chain)."""
    fields = tuple_fields(bb, call, call.args[0], "the argument")
    out_shape = shape_of(out_tensor_sinfo(call))
    (axis,) = normalize_axes(call, [attr(call, "axis", 0)], len(out_shape))

    def kernel(*parts: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            src = tuple(i for position, i in enumerate(idx) if position != axis)
            value: PrimExpr = parts[-1][src]
            for position in range(len(parts) - 2, -1, -1):
                value = sop.select(sop.equal(idx[axis], position), parts[position][src], value)
            return value

        return te.compute(out_shape, body, name="T_stack")

    return call_te(
        bb, kernel, *fields, primfunc_name_hint="stack",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.meshgrid")
def legalize_meshgrid(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One kernel with an output per input: ``out_k[i0, i1, ...] = x_k[i_k]``."""
    fields = tuple_fields(bb, call, call.args[0], "the argument")
    out = call.struct_info
    grids = [shape_of(known_tensor(call, f, "a result field")) for f in getattr(out, "fields", [])]
    if not grids:
        raise LegalizationError(f"{op_name(call)}: cannot legalize: the result is {out}")
    swap = attr(call, "indexing", "ij") == "xy" and len(fields) >= 2

    def kernel(*vectors: te.Tensor) -> list[te.Tensor]:
        outs = []
        for position, vector in enumerate(vectors):
            axis = position
            if swap and position < 2:
                axis = 1 - position

            def body(*idx: Any, vector: te.Tensor = vector, axis: int = axis) -> PrimExpr:
                return vector[(idx[axis],)]

            outs.append(te.compute(grids[position], body, name=f"T_meshgrid_{position}"))
        return outs

    return call_te(
        bb, kernel, *fields, primfunc_name_hint="meshgrid",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


def _collapse_sum(bb: BlockBuilder, call: Call, name: str) -> RelaxExpr:
    shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    lead = len(shape) - len(out_shape)
    # Summed: the leading axes the target lacks, and the axes where the target has extent 1
    # (summing an extent-1 data axis too is harmless: it has a single term).
    summed = set(range(lead)) | {
        lead + i for i, dim in enumerate(out_shape) if isinstance(dim, IntImm) and dim.value == 1
    }

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> Any:
            red = {a: te.reduce_axis((0, shape[a]), name=f"k{a}") for a in sorted(summed)}
            src = [red[a].var if a in red else idx[a - lead] for a in range(len(shape))]
            if not red:
                return x[tuple(src)]
            return te.sum(x[tuple(src)], axis=list(red.values()))

        return te.compute(out_shape, body, name=f"T_{name}")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint=name,
        op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.collapse_sum_like")
def legalize_collapse_sum_like(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A sum of ``data`` over the broadcast axes (the target tensor is not read)."""
    return _collapse_sum(bb, call, "collapse_sum")


@legalizes("relax.collapse_sum_to")
def legalize_collapse_sum_to(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A sum of ``data`` over the broadcast axes."""
    return _collapse_sum(bb, call, "collapse_sum")
