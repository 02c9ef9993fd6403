"""Layout and indexing ops: reshape, flatten, expand_dims, squeeze (copy kernels marked as
reshapes), permute_dims, broadcast_to, concat, split, strided_slice and take.

reshape-like kernels (reshape, flatten, expand_dims, squeeze) keep the row-major element
order, so they carry the PrimFunc attribute ``relax.reshape_like = True`` besides
``op_pattern = 2``: ``RewriteDataflowReshape`` may turn their ``call_tir`` back into
``R.reshape`` (a ``vm.builtin.reshape`` view, no copy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, select
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    Stmt,
    seq,
    te,
)
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir.intrin import FLAT_AXIS

from ._kernel import (
    LegalizationError,
    OpPattern,
    _finish,
    _Inputs,
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
from .elementwise import broadcast_load
from .reduction import normalize_axes

__all__ = ["RESHAPE_LIKE_ATTR", "index_check_loops", "legalize_take_unchecked"]

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
    known = [getattr(s, "shape_values", None) for s in (call.args[0].struct_info, call.struct_info)]
    if any(values is None for values in known):
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

    def kernel(x: te.Tensor) -> te.Tensor:
        return te.compute(
            out_shape, lambda *i: broadcast_load(x, out_shape, i), name="T_broadcast_to"
        )

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="broadcast_to",
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


#: Parallel chunks of the up-front index scan.
CHECK_CHUNKS = 32


def index_check_loops(indices: Buffer, extent: PrimExpr, axis: int, op: str) -> Stmt:
    """Statements checking every element of ``indices`` against ``extent``, run up front.

    A kernel that indexes with user data runs this first, so the gather after it may stay
    parallel and vectorized and never sees a bad index. The common case costs one pass that
    LLVM vectorizes: the smallest and largest index (a min/max reduction, no branch per
    element). Only when they fall outside ``[-extent, extent)`` does a second loop find the
    first bad index and stop the kernel with ``T.check_index``'s error, naming ``op``,
    ``axis`` and that index, exactly like a check per element would.
    """
    # The scan runs in CHECK_CHUNKS parallel chunks of the outermost index axis, each with
    # its own (min, max) pair: a serial scan would cost as much as a parallel gather.
    outer = indices.shape[0] if indices.shape else IntImm("int64", 1)
    chunk = sop.floordiv(sop.add(outer, CHECK_CHUNKS - 1), CHECK_CHUNKS)
    # Signed indices widen exactly to int64; unsigned ones scan as uint64 (a huge uint64 must
    # not turn negative and pass as a numpy-style negative index).
    signed = not str(indices.dtype).startswith("uint")
    scan_type = "int64" if signed else "uint64"
    bounds = Buffer("index_bounds", [2 * CHECK_CHUNKS], scan_type, scope="local")
    part = Var("part", "int64")
    low, high = sop.mul(part, 2), sop.add(sop.mul(part, 2), 1)
    loop_vars = [Var(f"c{dim}", "int64") for dim in range(len(indices.shape))]
    start = sop.mul(part, chunk)
    shifted = [sop.add(loop_vars[0], start), *loop_vars[1:]] if loop_vars else []
    value = sop.cast(indices[tuple(shifted)], scan_type)

    def nest(body: Stmt, extents: list[PrimExpr], variables: list[Var]) -> Stmt:
        for var, dim in zip(reversed(variables), reversed(extents), strict=True):
            body = For(var, 0, dim, ForKind.SERIAL, body)
        return body

    scan_body: Stmt = seq(
        BufferStore(bounds, sop.min_expr(bounds[(low,)], value), [low]),
        BufferStore(bounds, sop.max_expr(bounds[(high,)], value), [high]),
    )
    if loop_vars:
        rows = sop.max_expr(sop.min_expr(chunk, sop.sub(outer, start)), 0)
        scan_body = nest(scan_body, [rows, *indices.shape[1:]], loop_vars)
    lowest, highest = (-(2**63), 2**63 - 1) if signed else (0, 2**64 - 1)
    scan = For(
        part,
        0,
        CHECK_CHUNKS,
        ForKind.PARALLEL,
        seq(
            BufferStore(bounds, IntImm(scan_type, highest), [low]),
            BufferStore(bounds, IntImm(scan_type, lowest), [high]),
            scan_body,
        ),
    )
    zero, one = IntImm("int64", 0), IntImm("int64", 1)
    combine = For(
        part,
        1,
        CHECK_CHUNKS - 1,
        ForKind.SERIAL,
        seq(
            BufferStore(bounds, sop.min_expr(bounds[(zero,)], bounds[(low,)]), [zero]),
            BufferStore(bounds, sop.max_expr(bounds[(one,)], bounds[(high,)]), [one]),
        ),
    )
    extent = sop.cast(extent, "int64")
    outside = sop.greater_equal(bounds[(one,)], sop.cast(extent, scan_type))
    if signed:
        outside = sop.logical_or(sop.less(bounds[(zero,)], sop.neg(extent)), outside)
    report = nest(
        Evaluate(T.check_index(indices[tuple(loop_vars)], extent, axis, op)),
        list(indices.shape),
        loop_vars,
    )
    return Allocate(bounds, seq(scan, combine, IfThenElse(outside, report)))


def _checked_take(
    bb: BlockBuilder,
    call: Call,
    kernel: Callable[..., te.Tensor],
    extent: PrimExpr,
    axis: int,
    checked: bool,
) -> RelaxExpr:
    """``call_te`` of a gather whose argument 1 holds user indices, with the check prepended
    (left out when ``checked`` is false: see :func:`legalize_take_unchecked`)."""
    inputs = _Inputs(op_name(call))
    x, indices = inputs.convert([call.args[0], call.args[1]])
    out = kernel(x, indices)
    check = index_check_loops(indices.buffer, extent, axis, "take") if checked else None

    def make(scalars: list[Var]) -> PrimFunc:
        func = te.create_prim_func([*inputs.placeholders, out, *scalars], name="take")
        return func if check is None else func.with_body(seq(check, func.body))

    return _finish(bb, inputs, [out.buffer], make, "take", OpPattern.INJECTIVE, None)


@legalizes("relax.take")
def legalize_take(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Gather along ``axis`` (from the flattened ``x`` when None); negative indices count
    from the end, as in numpy, and an index out of range raises ``VMIndexError`` naming the
    op, the axis and the index (all indices are checked before the gather)."""
    return _take(bb, call, checked=True)


def legalize_take_unchecked(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``take`` without the index check, for measuring the check (``benchmarks/bench_take.py``).

    Not registered: an index out of range makes this kernel read outside its input. Never use
    it where indices come from users.
    """
    return _take(bb, call, checked=False)


def _take(bb: BlockBuilder, call: Call, checked: bool) -> RelaxExpr:
    shape = shape_of(tensor_arg(call, 0, "x"))
    index_shape = shape_of(tensor_arg(call, 1, "indices"))
    out_shape = shape_of(out_tensor_sinfo(call))
    raw_axis = attr(call, "axis")

    def wrap(i: PrimExpr, extent: PrimExpr) -> PrimExpr:
        # The check ran first, so the index is in [-extent, extent): only the wrap remains.
        i = sop.cast(i, "int64")
        return select(sop.less(i, 0), sop.add(i, extent), i)

    def kernel(x: te.Tensor, indices: te.Tensor) -> te.Tensor:
        n_idx = len(index_shape)

        def body(*idx: Any) -> PrimExpr:
            if raw_axis is None:
                total = product(shape)
                flat = wrap(indices[tuple(idx)], total)
                return x[tuple(unravel_index(flat, shape))] if shape else x[()]
            axis = raw_axis % len(shape)
            picked = wrap(indices[tuple(idx[axis : axis + n_idx])], shape[axis])
            src = [*idx[:axis], picked, *idx[axis + n_idx :]]
            return x[tuple(src)]

        return te.compute(out_shape, body, name="T_take")

    if raw_axis is None:
        return _checked_take(bb, call, kernel, product(shape), FLAT_AXIS, checked)
    axis = raw_axis % len(shape)
    return _checked_take(bb, call, kernel, shape[axis], axis, checked)
