"""Legalizations of ``slice_scatter``, ``index_tensor``, ``index_put``,
``multinomial_from_uniform`` and ``shape_to_tensor``.

``slice_scatter`` copies its input and then writes ``src`` position by position; each written
position is checked against the sliced axis (``T.check_index``, reported as ``scatter``), and
the extents the inference could not compare (symbolic shapes, symbolic bounds) are checked
when the kernel starts, so a wrong ``src`` or slice raises ``VMIndexError`` instead of writing
outside the output. ``index_tensor`` is a gather: every index tensor is checked against the
axis it indexes (:mod:`.index_check`) before the kernel reads with it, and the index tensors'
extents are checked against the broadcast shape, so nothing is read out of bounds.
``index_put`` and ``multinomial_from_uniform`` check each index as they use it (serial,
opaque kernels; repeated positions apply in row-major order). ``shape_to_tensor`` receives
the extents as scalars.
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, select
from relaxvm.ir import op as sop
from relaxvm.ir.relax import (
    BlockBuilder,
    Call,
    RelaxExpr,
    ShapeExpr,
    ShapeStructInfo,
    TensorStructInfo,
)
from relaxvm.ir.relax.op.tvm_extra_b import slice_scatter_count
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
    te,
)
from relaxvm.ir.tir import intrin as T

from ._kernel import (
    LegalizationError,
    OpPattern,
    _Inputs,
    attr,
    call_tir_loops,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
    tuple_fields,
)
from .index_check import _nest, index_check_loops
from .index_ops import _copy, _extent_guards, _finish_te, _loops, _wrap

__all__ = [
    "legalize_index_put",
    "legalize_index_tensor",
    "legalize_multinomial_from_uniform",
    "legalize_shape_to_tensor",
    "legalize_slice_scatter",
]


# ---- slice_scatter --------------------------------------------------------------------------
def _count_guards(count: PrimExpr, src_extent: PrimExpr, axis: int) -> list[Stmt]:
    """Checks, when the kernel starts, that ``src`` has exactly ``count`` rows on ``axis``
    (skipped when both are constants: inference compared them)."""
    if isinstance(count, IntImm) and isinstance(src_extent, IntImm):
        return []
    count, src_extent = sop.cast(count, "int64"), sop.cast(src_extent, "int64")
    one = IntImm("int64", 1)
    # src longer than the slice: its last row would land past the slice.
    too_long = Evaluate(T.check_index(sop.sub(src_extent, one), count, axis, "scatter"))
    # The slice longer than src: its last position has no row of src.
    too_short = Evaluate(T.check_index(sop.sub(count, one), src_extent, axis, "scatter"))
    return [
        IfThenElse(sop.greater(src_extent, 0), too_long),
        IfThenElse(sop.greater(count, 0), too_short),
    ]


@legalizes("relax.slice_scatter")
def legalize_slice_scatter(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A copy of the input, then ``out[.., start + k * step, ..] = src[.., k, ..]`` for every
    row ``k`` of ``src``, each position checked against the axis (serial, opaque kernel)."""
    info = out_tensor_sinfo(call)
    shape, dtype = shape_of(info), str(info.dtype)
    sshape = shape_of(tensor_arg(call, 1, "src"))
    axis = attr(call, "axis", 0) % len(shape)

    def build(
        data: te.Tensor, src: te.Tensor, start: PrimExpr, end: PrimExpr, step: PrimExpr
    ) -> tuple[list[Buffer], Stmt]:
        # The slice's length divides by the step: a run-time step could be 0, so only a
        # constant one is accepted (inference has checked that it is at least 1).
        if not isinstance(step, IntImm) or step.value < 1:
            raise LegalizationError(
                f"{op_name(call)}: cannot legalize: step must be a constant of at least 1, "
                f"got {step}"
            )
        out = Buffer("T_slice_scatter", shape, dtype)
        loops = _loops(sshape, "i")
        at = [var for var, _ in loops]
        start64, step64 = sop.cast(start, "int64"), sop.cast(step, "int64")
        raw = sop.add(start64, sop.mul(at[axis], step64))
        pos = Var("pos", "int64")
        store = BufferStore(out, src.buffer[tuple(at)], [*at[:axis], pos, *at[axis + 1 :]])
        write = LetStmt(pos, T.check_index(raw, shape[axis], axis, "scatter"), store)
        # Both ways on the other axes: a shorter src would leave rows unwritten, a longer one
        # would write outside the output.
        pairs = [(sshape[a], shape[a], a) for a in range(len(shape)) if a != axis]
        pairs += [(shape[a], sshape[a], a) for a in range(len(shape)) if a != axis]
        count = slice_scatter_count(start, end, step)
        body = seq(
            *_extent_guards(pairs, "scatter"),
            *_count_guards(count, sshape[axis], axis),
            _copy(out, data.buffer),
            _nest(write, loops),
        )
        return [out], body

    return call_tir_loops(
        bb, build, *call.args[:5], primfunc_name_hint="slice_scatter",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip


# ---- index_tensor ---------------------------------------------------------------------------
@legalizes("relax.index_tensor")
def legalize_index_tensor(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[b, r] = data[i0[b], i1[b], ..., r]`` with the index tensors broadcast to ``b``,
    every index checked against its axis first."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    fields = tuple_fields(bb, call, call.args[1], "indices")
    ishapes = [
        shape_of(_field_sinfo(field, f"indices[{j}]", call)) for j, field in enumerate(fields)
    ]
    count = len(fields)
    brank = len(out_shape) - (len(shape) - count)
    inputs = _Inputs(op_name(call))
    data, *indices = inputs.convert([call.args[0], *fields])

    def at(j: int, b: list[Any]) -> tuple[PrimExpr, ...]:
        # Right-aligned broadcast: an extent-1 axis of an index tensor always reads 0.
        mine = b[brank - len(ishapes[j]) :]
        zero = IntImm("int64", 0)
        return tuple(zero if _is_one(e) else v for v, e in zip(mine, ishapes[j], strict=True))

    def body(*i: Any) -> PrimExpr:
        b, rest = list(i[:brank]), list(i[brank:])
        picked = [_wrap(indices[j][at(j, b)], shape[j]) for j in range(count)]
        return data[tuple([*picked, *rest])]

    out = te.compute(out_shape, body, name="T_index_tensor")
    pairs: list[tuple[PrimExpr, PrimExpr, int]] = []
    for ishape in ishapes:
        offset = brank - len(ishape)
        pairs += [(out_shape[offset + a], e, a) for a, e in enumerate(ishape) if not _is_one(e)]
    prologue = _extent_guards(pairs, "gather")
    for j in range(count):
        prologue.append(index_check_loops(indices[j].buffer, shape[j], j, "gather"))
    return _finish_te(bb, inputs, out, prologue, "index_tensor")


# ---- index_put ------------------------------------------------------------------------------
def _broadcast_extents(shapes: list[list[PrimExpr]]) -> list[PrimExpr]:
    """The right-aligned broadcast of ``shapes``: per axis the first extent that is not the
    constant 1 (inference proved the others equal or left them to the run-time guards)."""
    rank = max(len(shape) for shape in shapes)
    out: list[PrimExpr] = []
    for axis in range(rank):
        found: PrimExpr = IntImm("int64", 1)
        for shape in shapes:
            offset = rank - len(shape)
            if axis >= offset and not _is_one(shape[axis - offset]):
                found = shape[axis - offset]
                break
        out.append(found)
    return out


def _aligned(shape: list[PrimExpr], at: list[Var]) -> tuple[PrimExpr, ...]:
    """Where a right-aligned broadcast operand of ``shape`` is read at loop position ``at``."""
    mine = at[len(at) - len(shape) :]
    zero = IntImm("int64", 0)
    return tuple(zero if _is_one(e) else v for v, e in zip(mine, shape, strict=True))


@legalizes("relax.index_put")
def legalize_index_put(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A copy of ``data``, then ``out[i0[b], i1[b], ...] = values[b]`` (``+=`` with
    ``accumulate``) for every broadcast position ``b`` in row-major order, each index
    checked against its axis (serial, opaque kernel)."""
    info = out_tensor_sinfo(call)
    shape, dtype = shape_of(info), str(info.dtype)
    fields = tuple_fields(bb, call, call.args[1], "indices")
    ishapes = [shape_of(_field_sinfo(f, f"indices[{j}]", call)) for j, f in enumerate(fields)]
    vshape = shape_of(tensor_arg(call, 2, "values"))
    bshape = _broadcast_extents(ishapes)
    accumulate = bool(attr(call, "accumulate", False))

    def build(data: te.Tensor, values: te.Tensor, *indices: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer("T_index_put", shape, dtype)
        loops = _loops(bshape, "b")
        at = [var for var, _ in loops]
        pos = [Var(f"pos{j}", "int64") for j in range(len(indices))]
        value: PrimExpr = values.buffer[_aligned(vshape, at)]
        if accumulate:
            value = sop.add(out[tuple(pos)], value)
        stmt: Stmt = BufferStore(out, value, pos)
        for j in reversed(range(len(indices))):
            raw = indices[j].buffer[_aligned(ishapes[j], at)]
            stmt = LetStmt(pos[j], T.check_index(raw, shape[j], j, "scatter"), stmt)
        # Every operand read at a broadcast position must reach that far.
        pairs: list[tuple[PrimExpr, PrimExpr, int]] = []
        for operand in [*ishapes, vshape]:
            offset = len(bshape) - len(operand)
            pairs += [(bshape[offset + a], e, a) for a, e in enumerate(operand) if not _is_one(e)]
        body = seq(*_extent_guards(pairs, "scatter"), _copy(out, data.buffer), _nest(stmt, loops))
        return [out], body

    return call_tir_loops(
        bb, build, call.args[0], call.args[2], *fields, primfunc_name_hint="index_put",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip


# ---- multinomial_from_uniform ---------------------------------------------------------------
@legalizes("relax.multinomial_from_uniform")
def legalize_multinomial_from_uniform(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Per sample ``i`` (serial): the row ``sample_indices[i, 0]`` (checked), a running sum of
    its probabilities, and the first ``j`` whose running sum exceeds ``uniform_sample[i, 0]``
    (``vocab - 1`` when none does: the result starts there and only moves down)."""
    info = out_tensor_sinfo(call)
    out_shape, dtype = shape_of(info), str(info.dtype)
    batch, vocab = shape_of(tensor_arg(call, 0, "prob"))
    pdtype = str(tensor_arg(call, 0, "prob").dtype)

    def build(prob: te.Tensor, uniform: te.Tensor, rows: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer("T_multinomial", out_shape, dtype)
        total = Buffer("running_sum", [1], pdtype, scope="local")
        i, j, row = Var("i", "int64"), Var("j", "int64"), Var("row", "int64")
        zero = IntImm("int64", 0)
        u = sop.cast(uniform.buffer[(i, zero)], pdtype)
        acc = sop.add(total[(zero,)], prob.buffer[(row, j)])
        last = sop.cast(sop.sub(sop.cast(vocab, "int64"), 1), dtype)
        found = sop.logical_and(
            sop.less(u, total[(zero,)]), sop.less(j, sop.cast(out[(i, zero)], "int64"))
        )
        scan = For(
            j, 0, vocab, ForKind.SERIAL,
            seq(
                BufferStore(total, acc, [zero]),
                IfThenElse(found, BufferStore(out, sop.cast(j, dtype), [i, zero])),
            ),
        )  # fmt: skip
        sample = seq(
            BufferStore(total, sop.const(0, pdtype), [zero]),
            BufferStore(out, last, [i, zero]),
            scan,
        )
        checked = T.check_index(rows.buffer[(i, zero)], batch, 0, "gather")
        body = For(i, 0, out_shape[0], ForKind.SERIAL, LetStmt(row, checked, sample))
        # The samples' row count comes from uniform_sample: sample_indices must reach as far.
        guards = _extent_guards([(out_shape[0], shape_of(rows_sinfo)[0], 0)], "gather")
        return [out], seq(*guards, Allocate(total, body))

    rows_sinfo = tensor_arg(call, 2, "sample_indices")
    return call_tir_loops(
        bb, build, *call.args[:3], primfunc_name_hint="multinomial_from_uniform",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip


# ---- shape_to_tensor ------------------------------------------------------------------------
@legalizes("relax.shape_to_tensor")
def legalize_shape_to_tensor(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[k] = extent k``: the extents (constants or symbolic variables passed to the kernel
    as scalars) selected by position."""
    sinfo = call.args[0].struct_info
    if not isinstance(sinfo, ShapeStructInfo) or sinfo.values is None:
        raise LegalizationError(
            f"{op_name(call)}: cannot legalize: the argument is {sinfo}, whose extents are not "
            "known (match_cast it to a shape of symbolic extents first)"
        )
    inputs = _Inputs(op_name(call))
    extents = [sop.cast(e, "int64") for e in inputs.convert(ShapeExpr(list(sinfo.values)))]

    def body(k: Any) -> PrimExpr:
        value: PrimExpr = IntImm("int64", 0)
        for position in reversed(range(len(extents))):
            value = select(sop.equal(k, position), extents[position], value)
        return value

    out = te.compute([IntImm("int64", len(extents))], body, name="T_shape_to_tensor")
    return _finish_te(bb, inputs, out, [], "shape_to_tensor")


def _is_one(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value == 1


def _field_sinfo(expr: RelaxExpr, what: str, call: Call) -> TensorStructInfo:
    """The TensorStructInfo of a tuple field, known shape required."""
    sinfo = expr.struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
        raise LegalizationError(
            f"{op_name(call)}: cannot legalize: {what} is {sinfo}, not a tensor of known shape"
        )
    return sinfo
