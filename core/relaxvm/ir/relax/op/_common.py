"""Helpers shared by the op families: building calls, axes, broadcasting, dtype rules."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from ....runtime.dtype import DataType
from ...expr import IntImm, PrimExpr
from ...op import convert, mul
from .._base import RelaxExpr
from .._operators import is_number, number_hint
from ..expr import Call, Op, PrimValue, ShapeExpr
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from .registry import InferContext, OpError, OpTypeError

Dims = tuple[PrimExpr, ...]


def make_call(
    name: str,
    args: Sequence[RelaxExpr],
    attrs: Mapping[str, Any] | None = None,
    sinfo_args: Sequence[StructInfo] = (),
) -> Call:
    """A Call of op ``name``; raises OpError when an argument is not a Relax expression."""
    for index, arg in enumerate(args):
        if not isinstance(arg, RelaxExpr):
            hint = f"; {number_hint(name, args, index)}" if is_number(arg) else ""
            raise OpError(
                f"{name}: argument {index} must be a Relax expression, got "
                f"{type(arg).__name__}{hint}"
            )
    return Call(Op.get(name), list(args), attrs, sinfo_args)


def as_shape_expr(name: str, shape: Any) -> RelaxExpr:
    """``shape`` as a Relax value of shape type: a ShapeExpr from a list, or the expr itself."""
    if isinstance(shape, RelaxExpr):
        return shape
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        return ShapeExpr(list(shape))
    except Exception as err:
        # A dimension of the wrong kind (a Relax var, a float) is a TypeError, as in TVM.
        kind = OpTypeError if isinstance(err, TypeError) else OpError
        raise kind(f"{name}: cannot use {shape!r} as a shape: {err}") from None


def as_prim_value(name: str, value: Any) -> RelaxExpr:
    """``value`` as a Relax expression: a PrimValue from a number or PrimExpr."""
    if isinstance(value, RelaxExpr):
        return value
    if isinstance(value, (int, float, PrimExpr)) and not isinstance(value, bool):
        return PrimValue(value)
    raise OpError(f"{name}: expected a number or PrimExpr, got {value!r}")


def as_int(name: str, param: str, value: Any) -> int:
    """``value`` as a Python int; an OpError naming ``param`` otherwise."""
    if isinstance(value, bool):
        raise OpTypeError(f"{name}: {param} must be an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise OpTypeError(f"{name}: {param} must be an int, got {value!r}") from None


def as_int_tuple(name: str, param: str, value: Any, length: int | None = None) -> tuple[int, ...]:
    """An int or sequence of ints as a tuple (a single int repeated ``length`` times)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * (length or 1)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise OpTypeError(f"{name}: {param} must be an int or a list of ints, got {value!r}")
    return tuple(as_int(name, f"{param}[{i}]", v) for i, v in enumerate(value))


def as_axes(name: str, axis: Any) -> tuple[int, ...] | None:
    """The ``axis`` attribute in canonical form: None, or a tuple of ints (not normalized)."""
    if axis is None:
        return None
    return as_int_tuple(name, "axis", axis)


def dtype_attr(name: str, dtype: Any) -> str | None:
    """A dtype attribute as a string; None/""/"void" mean unknown."""
    if dtype is None or dtype in ("", "void"):
        return None
    try:
        return str(DataType(dtype))
    except Exception as err:
        raise OpError(f"{name}: invalid dtype {dtype!r}: {err}") from None


def dims_text(sinfo: TensorStructInfo) -> str:
    """The shape of a tensor for an error message: ``(n, 4)``, or its rank when unknown."""
    values = sinfo.shape_values
    if values is not None:
        inner = ", ".join(str(v) for v in values)
        return f"({inner},)" if len(values) == 1 else f"({inner})"
    if sinfo.shape is not None:
        return str(sinfo.shape.name_hint)  # type: ignore[union-attr]
    return "(unknown rank)" if sinfo.ndim == -1 else f"(rank {sinfo.ndim})"


def tensor(
    shape: Sequence[PrimExpr | int] | None,
    dtype: DataType | str | None,
    ndim: int = -1,
    like: TensorStructInfo | None = None,
) -> TensorStructInfo:
    """A result TensorStructInfo; ``like`` supplies the vdevice of the input."""
    vdevice = like.vdevice if like is not None else None
    if shape is not None:
        return TensorStructInfo(list(shape), dtype, vdevice=vdevice)
    return TensorStructInfo(None, dtype, ndim=ndim, vdevice=vdevice)


def same_shape(src: TensorStructInfo, dtype: DataType | str | None) -> TensorStructInfo:
    """A tensor with ``src``'s shape (literal, variable or rank-only) and ``dtype``."""
    return TensorStructInfo(src.shape, dtype, ndim=src.ndim, vdevice=src.vdevice)


def normalize_axis(ctx: InferContext, axis: int, ndim: int, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``, negatives counted from the end; an OpError when out of range."""
    if not -ndim <= axis < ndim:
        raise ctx.error(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def normalize_axes(ctx: InferContext, axes: Sequence[int], ndim: int) -> list[int]:
    """Normalized, duplicate-free axes."""
    result = [normalize_axis(ctx, a, ndim) for a in axes]
    if len(set(result)) != len(result):
        raise ctx.error(f"axes {list(axes)} repeat an axis (rank {ndim})")
    return result


def product(values: Sequence[PrimExpr]) -> PrimExpr:
    """The product of extents (1 for none)."""
    result: PrimExpr = IntImm(1)
    for value in values:
        result = mul(result, value)
    return result


def is_const(value: PrimExpr, number: int) -> bool:
    """True when ``value`` is literally the integer ``number``."""
    return isinstance(value, IntImm) and value.value == number


def prove_equal(ctx: InferContext, a: PrimExpr, b: PrimExpr) -> bool:
    """True when the analyzer proves ``a == b``."""
    return a == b or ctx.analyzer.can_prove_equal(a, b)


def prove_not_equal(ctx: InferContext, a: PrimExpr, b: PrimExpr) -> bool:
    """True when the analyzer proves ``a != b`` for every value of the variables."""
    diff = ctx.analyzer.simplify(convert(a) - convert(b))
    if isinstance(diff, IntImm):
        return diff.value != 0
    # A bound that excludes zero (e.g. n - 1 with n known to be >= 2) also proves it.
    bound = ctx.analyzer.const_int_bound(diff)
    return bool(bound.min_value > 0 or bound.max_value < 0)


def shape_arg_values(ctx: InferContext, call: Call, index: int) -> Dims | None:
    """The extents given by a shape argument (ShapeExpr or shape-typed value), when known."""
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, ShapeStructInfo):
        raise ctx.type_error(f"argument {index} must be a shape, got {sinfo}")
    return sinfo.values


def shape_arg_ndim(ctx: InferContext, call: Call, index: int) -> int:
    """The rank of a shape argument (-1 when unknown)."""
    sinfo = ctx.arg_sinfo(call, index)
    if not isinstance(sinfo, ShapeStructInfo):
        raise ctx.type_error(f"argument {index} must be a shape, got {sinfo}")
    return sinfo.ndim


def unify_dtypes(
    ctx: InferContext, infos: Sequence[TensorStructInfo], what: str = "operands"
) -> DataType | None:
    """The common dtype of ``infos``: unknown if any is unknown; an OpError if two differ."""
    known = [info.dtype for info in infos]
    if any(d is None for d in known):
        return None
    first = known[0]
    for info in infos[1:]:
        if info.dtype != first:
            shapes = " and ".join(f"{dims_text(i)} {i.dtype}" for i in infos)
            raise ctx.type_error(f"{what} must have the same dtype, got {shapes}")
    return first


def broadcast_dim(ctx: InferContext, a: PrimExpr, b: PrimExpr, describe: str) -> PrimExpr:
    """Broadcast two extents (numpy rules); ``describe`` is the error text for a mismatch.

    1 yields to the other side; equal (as proved by the analyzer) keeps one; a static
    non-1 side wins over a symbolic one, because that is the only value for which the call
    can succeed. Two extents that are provably different and provably not 1 are an error;
    otherwise the left symbolic extent is kept (the run-time shape check catches the rest).
    """
    if is_const(a, 1):
        return b
    if is_const(b, 1) or prove_equal(ctx, a, b):
        return a
    a_static, b_static = isinstance(a, IntImm), isinstance(b, IntImm)
    if a_static and b_static:
        raise ctx.error(describe)
    if (
        prove_not_equal(ctx, a, b)
        and prove_not_equal(ctx, a, IntImm(1))
        and prove_not_equal(ctx, b, IntImm(1))
    ):
        raise ctx.error(describe)
    if b_static:
        return b
    return a


def broadcast_extent(ctx: InferContext, a: PrimExpr, b: PrimExpr, describe: str) -> PrimExpr | None:
    """Broadcast two extents as TVM's ``InferBinaryBroadcastShape`` does; None when unknown.

    A literal 1 yields to the other side, and extents the analyzer proves equal keep the
    first. Two different literals are an error (``describe``). Any other pair (a symbolic
    extent against a different symbol or a literal other than 1) cannot be decided before
    run time, so the result shape is unknown rather than guessed.
    """
    if is_const(a, 1):
        return b
    if is_const(b, 1) or prove_equal(ctx, a, b):
        return a
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        raise ctx.error(describe)
    return None


def broadcast_shapes(ctx: InferContext, infos: Sequence[TensorStructInfo]) -> Dims | None:
    """The numpy broadcast of the literal shapes of ``infos``, folded left to right.

    None when a shape is not literal or when a pair of extents cannot be decided statically
    (see :func:`broadcast_extent`); the caller then falls back to the broadcast rank.
    """
    shapes = [info.shape_values for info in infos]
    if any(s is None for s in shapes):
        return None
    result: Dims = shapes[0]  # type: ignore[assignment]
    for index in range(1, len(shapes)):
        shape: Dims = shapes[index]  # type: ignore[assignment]
        folded: list[PrimExpr] = []
        for position in range(1, max(len(result), len(shape)) + 1):
            if position > len(result):
                folded.append(shape[-position])
                continue
            if position > len(shape):
                folded.append(result[-position])
                continue
            axis = max(len(result), len(shape)) - position
            describe = (
                f"operands with shapes {dims_text(infos[index - 1])} and "
                f"{dims_text(infos[index])} cannot broadcast: dimension {axis} is "
                f"{result[-position]} vs {shape[-position]}"
            )
            dim = broadcast_extent(ctx, result[-position], shape[-position], describe)
            if dim is None:
                return None
            folded.append(dim)
        result = tuple(reversed(folded))
    return result


def broadcast_ndim(infos: Sequence[TensorStructInfo]) -> int:
    """The result rank of a broadcast: the largest rank, unknown if any rank is unknown."""
    if any(info.ndim == -1 for info in infos):
        return -1
    return max(info.ndim for info in infos)
