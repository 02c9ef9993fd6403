"""Layout and indexing ops: reshape, flatten, expand_dims, squeeze (copy kernels marked as
reshapes), permute_dims, broadcast_to, concat, split, and strided_slice (``take`` is in :mod:`.indexing`).

reshape-like kernels (reshape, flatten, expand_dims, squeeze) keep the row-major element
order, so they carry the PrimFunc attribute ``relax.reshape_like = True`` besides
``op_pattern = 2``: ``RewriteDataflowReshape`` may turn their ``call_tir`` back into
``R.reshape`` (a ``vm.builtin.reshape`` view, no copy).
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import IntImm, PrimExpr
from relaxvm.ir import op as sop
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import (
    te,
)

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    flat_index,
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
from .elementwise import broadcast_load, checked_broadcast
from .reduction import normalize_axes

__all__ = ["RESHAPE_LIKE_ATTR"]

#: The PrimFunc attribute that marks a pure reshape (a copy in row-major order).
RESHAPE_LIKE_ATTR = "relax.reshape_like"


def _reshape_kernel(bb: BlockBuilder, call: Call, name: str) -> RelaxExpr:
    in_shape = shape_of(tensor_arg(call, 0, "x"))
    out_shape = shape_of(out_tensor_sinfo(call))

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            if not in_shape:
                return x[()]
            return x[tuple(unravel_index(flat_index(idx, out_shape), in_shape))]

        return te.compute(out_shape, body, name=f"T_{name}")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint=name, op_pattern=OpPattern.INJECTIVE,
        attrs={RESHAPE_LIKE_ATTR: True}, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.reshape")
def legalize_reshape(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A row-major copy marked reshape-like.

    When the input's or the result's shape is not known statically (a target shape held in a
    shape variable, for instance) the call stays ``R.reshape``: the VM lowering turns it into
    ``vm.builtin.reshape``, a view that needs no kernel.
    """
    src, dst = (
        getattr(s, "shape_values", None) for s in (call.args[0].struct_info, call.struct_info)
    )
    if src is None or dst is None:
        return call
    # Element counts the compiler cannot prove equal (symbolic target dims) are left to the
    # builtin, which checks them: a copy kernel would read past the input.
    if not Analyzer().can_prove_equal(product(src), product(dst)):
        return call
    return _reshape_kernel(bb, call, "reshape")


@legalizes("relax.flatten")
def legalize_flatten(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A reshape to 1-d."""
    return _reshape_kernel(bb, call, "flatten")


@legalizes("relax.expand_dims")
def legalize_expand_dims(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A reshape inserting extent-1 axes."""
    return _reshape_kernel(bb, call, "expand_dims")


@legalizes("relax.squeeze")
def legalize_squeeze(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A reshape dropping extent-1 axes."""
    return _reshape_kernel(bb, call, "squeeze")


@legalizes("relax.permute_dims")
def legalize_permute_dims(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[i0, i1, ...] = x[...]`` with the axes in the given order (reversed when None)."""
    shape = shape_of(tensor_arg(call, 0, "x"))
    axes = attr(call, "axes")
    order = list(reversed(range(len(shape)))) if axes is None else [a % len(shape) for a in axes]
    out_shape = [shape[a] for a in order]

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            src: list[Any] = [None] * len(shape)
            for position, axis in enumerate(order):
                src[axis] = idx[position]
            return x[tuple(src)]

        return te.compute(out_shape, body, name="T_transpose")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="transpose",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.broadcast_to")
def legalize_broadcast_to(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """numpy broadcasting of ``x`` to the target shape."""
    tensor_arg(call, 0, "x")
    out_shape = shape_of(out_tensor_sinfo(call))
    data = checked_broadcast(bb, call.args[0], out_shape, op_name(call))

    def kernel(x: te.Tensor) -> te.Tensor:
        return te.compute(
            out_shape, lambda *i: broadcast_load(x, out_shape, i), name="T_broadcast_to"
        )

    return call_te(
        bb, kernel, data, primfunc_name_hint="broadcast_to",
        op_pattern=OpPattern.BROADCAST, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.concat")
def legalize_concat(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Reads the piece the output index falls in (``if_then_else`` chain on the axis)."""
    fields = tuple_fields(bb, call, call.args[0], "the argument")
    out_shape = shape_of(out_tensor_sinfo(call))
    (axis,) = normalize_axes(call, [attr(call, "axis", 0)], len(out_shape))

    def kernel(*parts: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            offsets: list[PrimExpr] = [IntImm("int64", 0)]
            for part in parts[:-1]:
                offsets.append(sop.add(offsets[-1], part.shape[axis]))

            # Built from the last piece backwards: each test picks a piece or falls through.
            def read(position: int) -> PrimExpr:
                local = list(idx)
                local[axis] = sop.sub(idx[axis], offsets[position])
                return parts[position][tuple(local)]

            value = read(len(parts) - 1)
            for position in range(len(parts) - 2, -1, -1):
                value = T.if_then_else(
                    sop.less(idx[axis], offsets[position + 1]), read(position), value
                )
            return value

        return te.compute(out_shape, body, name="T_concat")

    return call_te(
        bb, kernel, *fields, primfunc_name_hint="concatenate",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.split")
def legalize_split(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One kernel with an output per piece; the call's result is the tuple of pieces."""
    shape = shape_of(tensor_arg(call, 0, "x"))
    out = call.struct_info
    pieces = [shape_of(known_tensor(call, f, "a result field")) for f in getattr(out, "fields", [])]
    if not pieces:
        raise LegalizationError(f"{op_name(call)}: cannot legalize: the result is {out}")
    (axis,) = normalize_axes(call, [attr(call, "axis", 0)], len(shape))
    spec = attr(call, "indices_or_sections")
    starts: list[PrimExpr] = []
    if isinstance(spec, int):
        for position in range(spec):
            starts.append(sop.mul(pieces[0][axis], position))
    else:
        bounds = [0, *spec]
        starts = [sop.min_expr(IntImm("int64", b), shape[axis]) for b in bounds]

    def kernel(x: te.Tensor) -> list[te.Tensor]:
        outs = []
        for position, piece in enumerate(pieces):

            def body(*idx: Any, start: PrimExpr = starts[position]) -> PrimExpr:
                src = list(idx)
                src[axis] = sop.add(idx[axis], start)
                return x[tuple(src)]

            outs.append(te.compute(piece, body, name=f"T_split_{position}"))
        return outs

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="split",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


def _slice_start(dim: PrimExpr, begin: int, stride: int) -> PrimExpr:
    """Python's normalised slice start for extent ``dim``."""
    if isinstance(dim, IntImm):
        return IntImm("int64", slice(begin, None, stride).indices(dim.value)[0])
    if stride > 0:
        if begin < 0:
            return sop.max_expr(sop.add(dim, begin), 0)
        return sop.min_expr(IntImm("int64", begin), dim)
    if begin < 0:
        return sop.max_expr(sop.add(dim, begin), -1)
    return sop.min_expr(IntImm("int64", begin), sop.sub(dim, 1))


@legalizes("relax.strided_slice")
def legalize_strided_slice(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[i] = x[start + i * stride]`` per sliced axis (Python slice semantics)."""
    shape = shape_of(tensor_arg(call, 0, "x"))
    out_shape = shape_of(out_tensor_sinfo(call))
    raw_axes = [a % len(shape) for a in attr(call, "axes", ())] if shape else []
    begin, strides = attr(call, "begin", ()), attr(call, "strides") or (1,) * len(raw_axes)
    plan = {
        axis: (_slice_start(shape[axis], b, s), s)
        for axis, b, s in zip(raw_axes, begin, strides, strict=True)
    }

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            src = []
            for axis, i in enumerate(idx):
                if axis in plan:
                    start, stride = plan[axis]
                    src.append(sop.add(start, sop.mul(i, stride)))
                else:
                    src.append(i)
            return x[tuple(src)]

        return te.compute(out_shape, body, name="T_strided_slice")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="strided_slice",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip
