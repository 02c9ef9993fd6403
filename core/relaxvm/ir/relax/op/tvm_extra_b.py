"""More of TVM v0.23's ``relax.op``: ``slice_scatter``, ``index_tensor``, ``index_put``,
``multinomial_from_uniform`` and ``shape_to_tensor``.

Signatures, argument order and inference follow TVM: ``slice_scatter`` takes its bounds as
integer PrimValues (so they may be symbolic) and its axis as an attribute; ``index_tensor`` and
``index_put`` take a tuple of integer index tensors that broadcast together (numpy's advanced
indexing ``data[i0, i1, ...]``). Inference rejects what it can prove wrong; what only the run
can tell (symbolic extents, the index values) the kernels check
(``plugins/relaxvm_ops/tvm_extra_b.py``). Where this differs from TVM, ``docs/ops.md`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....runtime.dtype import DataType, DataTypeCode
from ...expr import IntImm, PrimExpr
from ...op import convert, floordiv
from .._base import RelaxExpr
from ..expr import Call, Tuple
from ..struct_info import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ._common import (
    as_int,
    as_prim_value,
    broadcast_shapes,
    dims_text,
    dtype_attr,
    make_call,
    normalize_axis,
    prove_not_equal,
    same_shape,
    tensor,
    unify_dtypes,
)
from .registry import InferContext, OpTypeError, register_op

__all__ = [
    "index_put",
    "index_tensor",
    "multinomial_from_uniform",
    "shape_to_tensor",
    "slice_scatter",
]


def _prove(ctx: InferContext, cond_lhs: PrimExpr, cond_rhs: PrimExpr) -> bool:
    """True when the analyzer proves ``cond_lhs < cond_rhs`` for every value of the variables."""
    diff = ctx.analyzer.simplify(convert(cond_rhs) - convert(cond_lhs))
    if isinstance(diff, IntImm):
        return diff.value > 0
    return bool(ctx.analyzer.const_int_bound(diff).min_value > 0)


# ---- slice_scatter --------------------------------------------------------------------------
def _int_prim(ctx: InferContext, call: Call, index: int, what: str) -> PrimExpr | None:
    """The value of the integer PrimValue argument ``index`` (None when unknown)."""
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, PrimStructInfo):
        raise ctx.type_error(f"{what} must be an integer PrimValue, got {sinfo}")
    if sinfo.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT):
        raise ctx.type_error(f"{what} must be an integer PrimValue, got dtype {sinfo.dtype}")
    return sinfo.value


def slice_scatter_count(start: PrimExpr, end: PrimExpr, step: PrimExpr) -> PrimExpr:
    """How many positions ``start, start + step, ...`` lie below ``end`` (TVM's formula,
    ``(end - start + step - 1) // step``)."""
    total = convert(end) - convert(start) + convert(step) - 1
    return floordiv(total, convert(step))


def _infer_slice_scatter(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "input_tensor")
    src = ctx.tensor_arg(call, 1, "src")
    bounds = [_int_prim(ctx, call, i, w) for i, w in ((2, "start"), (3, "end"), (4, "step"))]
    unify_dtypes(ctx, [data, src], "input_tensor and src")
    if data.ndim == -1:
        return tensor(None, data.dtype, like=data)
    axis = normalize_axis(ctx, ctx.attr(call, "axis", 0), data.ndim)
    if src.ndim != -1 and src.ndim != data.ndim:
        raise ctx.error(
            f"input_tensor and src must have the same rank, got {dims_text(data)} and "
            f"{dims_text(src)}"
        )
    start, end, step = bounds
    if step is not None and _prove(ctx, step, IntImm("int64", 1)):
        raise ctx.error(f"step must be at least 1, got {step}")
    if start is not None and end is not None and _prove(ctx, end, start):
        raise ctx.error(f"start ({start}) must not exceed end ({end})")
    dv, sv = data.shape_values, src.shape_values
    if dv is not None and sv is not None:
        for dim, (a, b) in enumerate(zip(dv, sv, strict=True)):
            if dim != axis and prove_not_equal(ctx, a, b):
                raise ctx.error(
                    f"src must have input_tensor's shape except on axis {axis}; they differ on "
                    f"axis {dim}: {dims_text(data)} vs {dims_text(src)}"
                )
        if start is not None and end is not None and step is not None:
            count = ctx.analyzer.simplify(slice_scatter_count(start, end, step))
            if prove_not_equal(ctx, sv[axis], count):
                raise ctx.error(
                    f"src has extent {sv[axis]} on axis {axis} but the slice {start}:{end}:"
                    f"{step} has {count} elements"
                )
    return same_shape(data, data.dtype)


def slice_scatter(
    input_tensor: RelaxExpr,
    src: RelaxExpr,
    start: RelaxExpr | int | PrimExpr,
    end: RelaxExpr | int | PrimExpr,
    step: RelaxExpr | int | PrimExpr,
    axis: int = 0,
) -> Call:
    """A copy of ``input_tensor`` with ``src`` written over the slice ``start:end:step`` of
    ``axis`` (PyTorch's ``slice_scatter``).

    Parameters
    ----------
    input_tensor : RelaxExpr
        The tensor to copy.
    src : RelaxExpr
        Of ``input_tensor``'s rank and dtype, of its shape except on ``axis``, where its
        extent is the slice's length ``(end - start + step - 1) // step``.
    start, end, step : PrimValue or int or PrimExpr
        Integer bounds of the slice (may be symbolic); ``step`` at least 1 and ``start`` at
        most ``end``. A written position out of ``input_tensor``'s axis raises
        ``VMIndexError`` when the call runs (a negative one counts from the end).
    axis : int
        The axis sliced.

    Returns
    -------
    Call
        Of ``input_tensor``'s shape and dtype.
    """
    name = "relax.slice_scatter"
    bounds = [as_prim_value(name, value) for value in (start, end, step)]
    return make_call(name, [input_tensor, src, *bounds], {"axis": as_int(name, "axis", axis)})


# ---- index_tensor ---------------------------------------------------------------------------
def _index_infos(
    ctx: InferContext, call: Call, codes: tuple[int, ...] = (DataTypeCode.INT,)
) -> list[TensorStructInfo]:
    sinfo = ctx.arg_sinfo(call, 1)
    if not isinstance(sinfo, TupleStructInfo):
        raise ctx.type_error(f"indices must be a tuple of tensors, got {sinfo}")
    kind = "a signed integer" if codes == (DataTypeCode.INT,) else "an integer"
    infos: list[TensorStructInfo] = []
    for position, field in enumerate(sinfo.fields):
        if not isinstance(field, TensorStructInfo):
            raise ctx.type_error(f"indices[{position}] must be a tensor, got {field}")
        if field.dtype is not None and field.dtype.code not in codes:
            raise ctx.type_error(f"indices[{position}] must have {kind} dtype, got {field.dtype}")
        infos.append(field)
    if not infos:
        raise ctx.error("indices must hold at least one index tensor")
    return infos


def _infer_index_tensor(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    infos = _index_infos(ctx, call)
    count = len(infos)
    if data.ndim != -1 and count > data.ndim:
        raise ctx.error(f"got {count} index tensors but data has rank {data.ndim}")
    broadcast = broadcast_shapes(ctx, infos)
    if data.ndim == -1:
        return tensor(None, data.dtype, like=data)
    tail = data.ndim - count
    dv = data.shape_values
    if broadcast is not None and dv is not None:
        return tensor([*broadcast, *dv[count:]], data.dtype, like=data)
    if any(info.ndim == -1 for info in infos):
        return tensor(None, data.dtype, like=data)
    return tensor(None, data.dtype, max(info.ndim for info in infos) + tail, like=data)


def index_tensor(data: RelaxExpr, indices: RelaxExpr | Sequence[RelaxExpr]) -> Call:
    """numpy's advanced indexing ``data[indices[0], indices[1], ...]`` (PyTorch's
    ``aten.index.Tensor``).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to read.
    indices : Tuple or sequence of RelaxExpr
        ``k <= data.ndim`` signed integer tensors that broadcast together; ``indices[j]`` indexes
        axis ``j``. Negative entries count from the end; an entry out of range raises
        ``VMIndexError`` when the call runs.

    Returns
    -------
    Call
        Of shape ``broadcast(indices shapes) + data.shape[k:]`` and ``data``'s dtype.
    """
    if not isinstance(indices, RelaxExpr):
        indices = Tuple(list(indices))
    return make_call("relax.index_tensor", [data, indices], {})


# ---- index_put ------------------------------------------------------------------------------
def _infer_index_put(call: Call, ctx: InferContext) -> StructInfo:
    data = ctx.tensor_arg(call, 0, "data")
    values = ctx.tensor_arg(call, 2, "values")
    infos = _index_infos(ctx, call, (DataTypeCode.INT, DataTypeCode.UINT))
    unify_dtypes(ctx, [data, values], "data and values")
    for position, info in enumerate(infos):
        if info.ndim == 0:
            raise ctx.error(f"indices[{position}] must have rank at least 1, got a scalar")
    if data.ndim == -1:
        return same_shape(data, data.dtype)
    if len(infos) != data.ndim:
        raise ctx.error(
            f"needs one index tensor per axis of data: got {len(infos)} for data of rank "
            f"{data.ndim}"
        )
    broadcast = broadcast_shapes(ctx, infos)
    if broadcast is not None and values.shape_values is not None:
        # values must broadcast to the indexed positions (numpy's ``data[idx] = values``).
        if len(values.shape_values) > len(broadcast):
            raise ctx.error(
                f"values of shape {dims_text(values)} cannot broadcast to the indexed shape "
                f"{_shape_text(broadcast)}"
            )
        broadcast_shapes(ctx, [tensor(broadcast, None), values])
    return same_shape(data, data.dtype)


def _shape_text(values: Sequence[PrimExpr]) -> str:
    inner = ", ".join(str(v) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


def index_put(
    data: RelaxExpr,
    indices: RelaxExpr | Sequence[RelaxExpr],
    values: RelaxExpr,
    accumulate: bool = False,
) -> Call:
    """A copy of ``data`` with ``values`` written at ``data[indices[0], indices[1], ...]``
    (PyTorch's ``index_put``).

    Parameters
    ----------
    data : RelaxExpr
        The tensor to copy.
    indices : Tuple or sequence of RelaxExpr
        One integer tensor (rank at least 1) per axis of ``data``; they broadcast together.
        Negative entries count from the end; an entry out of range raises ``VMIndexError``
        when the call runs.
    values : RelaxExpr
        Of ``data``'s dtype, broadcast to the indices' broadcast shape.
    accumulate : bool
        Add to the element instead of replacing it. Positions apply in row-major order of the
        broadcast indices, so with repeated positions the last value wins (or all add up).

    Returns
    -------
    Call
        Of ``data``'s shape and dtype.
    """
    name = "relax.index_put"
    if not isinstance(indices, RelaxExpr):
        indices = Tuple(list(indices))
    if not isinstance(accumulate, bool):
        raise OpTypeError(f"{name}: accumulate must be a bool, got {accumulate!r}")
    return make_call(name, [data, indices, values], {"accumulate": accumulate})


# ---- multinomial_from_uniform ---------------------------------------------------------------
_FLOAT_CODES = (DataTypeCode.FLOAT, DataTypeCode.BFLOAT)


def _infer_multinomial(call: Call, ctx: InferContext) -> StructInfo:
    prob = ctx.tensor_arg(call, 0, "prob")
    uniform = ctx.tensor_arg(call, 1, "uniform_sample")
    rows = ctx.tensor_arg(call, 2, "sample_indices")
    for info, what in ((prob, "prob"), (uniform, "uniform_sample")):
        if info.dtype is not None and info.dtype.code not in _FLOAT_CODES:
            raise ctx.type_error(f"{what} must have a float dtype, got {info.dtype}")
    if rows.dtype is not None and rows.dtype.code != DataTypeCode.INT:
        raise ctx.type_error(f"sample_indices must have a signed integer dtype, got {rows.dtype}")
    dtype = ctx.attr(call, "dtype", "int64")
    if any(info.ndim == -1 for info in (prob, uniform, rows)):
        return tensor(None, dtype, like=prob)
    for info, what in ((prob, "prob"), (uniform, "uniform_sample"), (rows, "sample_indices")):
        if info.ndim != 2:
            raise ctx.error(f"{what} must have rank 2, got {dims_text(info)}")
    uv, rv = uniform.shape_values, rows.shape_values
    if prob.shape_values is None or uv is None or rv is None:
        return tensor(None, dtype, 2, like=prob)
    if not ctx.analyzer.can_prove_equal(uv[0], rv[0]):
        raise ctx.error(
            f"uniform_sample {dims_text(uniform)} and sample_indices {dims_text(rows)} must "
            "have the same number of rows"
        )
    if not (_is_one(uv[1]) and _is_one(rv[1])):
        raise ctx.error(
            f"uniform_sample {dims_text(uniform)} and sample_indices {dims_text(rows)} must "
            "have shape (n, 1)"
        )
    return tensor([uv[0], IntImm("int64", 1)], dtype, like=prob)


def _is_one(value: PrimExpr) -> bool:
    return isinstance(value, IntImm) and value.value == 1


def multinomial_from_uniform(
    prob: RelaxExpr, uniform_sample: RelaxExpr, sample_indices: RelaxExpr, dtype: str = "int64"
) -> Call:
    """Draw one category per sample from rows of ``prob``, given uniform numbers
    (inverse-CDF sampling).

    Parameters
    ----------
    prob : RelaxExpr
        ``(batch, vocab)`` float probabilities (each row non-negative, summing to 1).
    uniform_sample : RelaxExpr
        ``(n, 1)`` float numbers in ``[0, 1)``, one per sample.
    sample_indices : RelaxExpr
        ``(n, 1)`` signed integer rows of ``prob`` to sample from; negative ones count from the
        end; one out of range raises ``VMIndexError`` when the call runs.
    dtype : str
        The integer dtype of the result.

    Returns
    -------
    Call
        ``(n, 1)``: for sample ``i``, the first ``j`` with ``uniform_sample[i] <
        cumsum(prob[sample_indices[i]])[j]``, or ``vocab - 1`` when there is none.
    """
    name = "relax.multinomial_from_uniform"
    out = dtype_attr(name, dtype)
    if out is None or DataType(out).code not in (DataTypeCode.INT, DataTypeCode.UINT):
        raise OpTypeError(f"{name}: dtype must be an integer dtype, got {dtype!r}")
    return make_call(name, [prob, uniform_sample, sample_indices], {"dtype": out})


# ---- shape_to_tensor ------------------------------------------------------------------------
def _infer_shape_to_tensor(call: Call, ctx: InferContext) -> StructInfo:
    sinfo = ctx.arg_sinfo(call, 0)
    if not isinstance(sinfo, ShapeStructInfo):
        raise ctx.type_error(f"the argument must be a shape, got {sinfo}")
    if sinfo.ndim == -1:
        return tensor(None, "int64", 1)
    return tensor([IntImm("int64", sinfo.ndim)], "int64")


def shape_to_tensor(expr: RelaxExpr) -> Call:
    """A shape value as a 1-d int64 tensor of its extents (the inverse of
    :func:`tensor_to_shape`).

    Parameters
    ----------
    expr : RelaxExpr
        A shape value (``R.shape([...])``, ``R.shape_of(x)``, a shape variable).

    Returns
    -------
    Call
        Of shape ``(ndim,)`` and dtype int64.
    """
    return make_call("relax.shape_to_tensor", [expr], {})


def _register() -> None:
    register_op(
        "relax.slice_scatter",
        num_inputs=5,
        infer=_infer_slice_scatter,
        attrs={"axis": "the axis sliced"},
        doc="write a tensor over a strided slice of another",
    )
    register_op(
        "relax.index_tensor",
        num_inputs=2,
        infer=_infer_index_tensor,
        doc="advanced indexing with broadcast index tensors",
    )
    register_op(
        "relax.index_put",
        num_inputs=3,
        infer=_infer_index_put,
        attrs={"accumulate": "add instead of replacing"},
        doc="write values at advanced-indexing positions",
    )
    register_op(
        "relax.multinomial_from_uniform",
        num_inputs=3,
        infer=_infer_multinomial,
        attrs={"dtype": "the integer dtype of the result"},
        doc="inverse-CDF sampling from rows of probabilities",
    )
    register_op(
        "relax.shape_to_tensor",
        num_inputs=1,
        infer=_infer_shape_to_tensor,
        doc="a shape value as a 1-d int64 tensor",
    )


_register()
