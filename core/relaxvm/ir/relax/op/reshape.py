"""``reshape``: its builder (TVM's special values ``0`` and ``-1``) and its inference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...expr import IntImm, PrimExpr
from ...op import floordiv
from .._base import RelaxExpr
from ..expr import Call, ShapeExpr, Var
from ..struct_info import ShapeStructInfo, StructInfo, TensorStructInfo
from ._common import (
    as_shape_expr,
    dims_text,
    is_const,
    make_call,
    product,
    prove_equal,
    prove_not_equal,
    shape_arg_ndim,
    shape_arg_values,
    tensor,
)
from .registry import InferContext, OpError, OpTypeError

__all__ = ["reshape"]


def shape_text(values: Sequence[PrimExpr]) -> str:
    """A shape for an error message: ``(2, n)``, ``(4,)``."""
    inner = ", ".join(str(v) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


def _source_values(info: TensorStructInfo) -> tuple[PrimExpr, ...] | None:
    """The extents of a tensor, looking through a shape variable whose struct info knows
    them (TVM's ``GetShape``)."""
    values = info.shape_values
    if values is not None:
        return tuple(values)
    shape = info.shape
    if isinstance(shape, Var) and isinstance(shape.struct_info, ShapeStructInfo):
        known = shape.struct_info.values
        return None if known is None else tuple(known)
    return None


def _resolve_zeros(values: Sequence[Any], x: RelaxExpr) -> list[Any]:
    """``values`` with each literal 0 replaced by x's extent at that position, as TVM's
    reshape builder does; unchanged when x's shape is not known yet (inference resolves it).
    """
    if not any(isinstance(v, int) and not isinstance(v, bool) and v == 0 for v in values):
        return list(values)
    sinfo = getattr(x, "struct_info", None)
    source = _source_values(sinfo) if isinstance(sinfo, TensorStructInfo) else None
    if source is None:
        return list(values)
    out = []
    for index, value in enumerate(values):
        if isinstance(value, int) and not isinstance(value, bool) and value == 0:
            if index >= len(source):
                raise OpError(
                    f"relax.reshape: new shape {tuple(values)} copies extent {index} of x "
                    f"(a 0 there), but x has rank {len(source)}"
                )
            out.append(source[index])
        else:
            out.append(value)
    return out


def _is_minus_one(value: Any) -> bool:
    if isinstance(value, IntImm):
        return value.value == -1
    return isinstance(value, int) and not isinstance(value, bool) and value == -1


def _check_deducible(values: Sequence[Any], x: RelaxExpr) -> None:
    """Reject a literal ``-1`` when x is a tensor whose extents are unknown, as TVM's builder
    does: the -1 stands for "the rest of x's elements", and x's element count cannot be
    proved equal to any product of the new shape. (A shape *value* such as
    ``R.shape([-1])`` is left to inference, which keeps the rank only, as in TVM.)
    """
    if not any(_is_minus_one(v) for v in values):
        return
    sinfo = getattr(x, "struct_info", None)
    if not isinstance(sinfo, TensorStructInfo) or _source_values(sinfo) is not None:
        return
    others = [v for v in values if not _is_minus_one(v)]
    known = product([IntImm("int64", v) if isinstance(v, int) else v for v in others])
    raise OpError(
        f"relax.reshape: cannot infer the -1 in new shape {tuple(values)}: x "
        f"{dims_text(sinfo)} has an unknown number of elements, which cannot be proved equal "
        f"to the new shape's {known} * (the -1) elements; give x a known shape (match_cast) "
        "or write the extent instead of -1"
    )


def reshape(x: RelaxExpr, shape: Any) -> Call:
    """Reshape ``x`` to ``shape``.

    Parameters
    ----------
    x : RelaxExpr
        The tensor.
    shape : tuple, list, ShapeExpr or shape Var
        The new shape. As in TVM, a ``0`` in a tuple copies x's extent at that position and
        one ``-1`` stands for the remaining extent; unlike TVM's builder, the ``-1`` stays in
        the call and inference resolves it in the result.

    Raises
    ------
    OpTypeError
        ``shape`` is a bare int or PrimExpr rather than a tuple or shape value.
    OpError
        ``shape`` is a tuple with a ``-1`` while x's extents are unknown (TVM raises there
        too: x's element count cannot be proved equal to the new shape's).
    """
    if not isinstance(shape, (RelaxExpr, list, tuple)):
        hint = f" (write ({shape},) for a 1-d shape)" if isinstance(shape, (int, PrimExpr)) else ""
        raise OpTypeError(
            f"relax.reshape: shape must be a tuple/list of extents or a shape value, got "
            f"{type(shape).__name__} {shape!r}{hint}"
        )
    if isinstance(shape, (list, tuple)):
        shape = _resolve_zeros(shape, x)
        _check_deducible(shape, x)
    return make_call("relax.reshape", [x, as_shape_expr("relax.reshape", shape)])


def infer_reshape(call: Call, ctx: InferContext) -> StructInfo:
    """The struct info of ``relax.reshape``: the new shape, with a -1 or 0 resolved."""
    info = ctx.tensor_arg(call, 0, "x")
    target = shape_arg_values(ctx, call, 1)
    shape_arg = call.args[1]
    if target is None:
        if isinstance(shape_arg, Var):
            return TensorStructInfo(shape_arg, info.dtype, vdevice=info.vdevice)
        return tensor(None, info.dtype, shape_arg_ndim(ctx, call, 1), like=info)
    inferred = [i for i, v in enumerate(target) if is_const(v, -1)]
    if len(inferred) > 1:
        raise ctx.error(f"new shape {shape_text(target)} has more than one -1")
    for index, value in enumerate(target):
        if isinstance(value, IntImm) and value.value < -1:
            raise ctx.error(f"new shape {shape_text(target)} has a negative extent at {index}")
    source = _source_values(info)
    if isinstance(shape_arg, ShapeExpr) and any(is_const(v, 0) for v in target):
        # A 0 the builder could not resolve (x had no struct info then): copy x's extent.
        if source is None:
            raise ctx.error(
                f"new shape {shape_text(target)} copies extents of x (a 0) but the shape of "
                f"x {dims_text(info)} is not known"
            )
        target = tuple(source[i] if is_const(v, 0) else v for i, v in enumerate(target))
    if source is None:
        if inferred:
            return tensor(None, info.dtype, len(target), like=info)
        return tensor(target, info.dtype, like=info)
    total = ctx.analyzer.simplify(product(source))
    if inferred:
        others = ctx.analyzer.simplify(
            product([v for i, v in enumerate(target) if i != inferred[0]])
        )
        static = isinstance(total, IntImm) and isinstance(others, IntImm)
        if static and (others.value == 0 or total.value % others.value):  # type: ignore[attr-defined]
            raise ctx.error(
                f"cannot reshape x of shape {dims_text(info)} ({total} elements) to "
                f"{shape_text(target)}: {total} is not a multiple of {others}"
            )
        resolved = list(target)
        resolved[inferred[0]] = _missing_extent(
            ctx, source, [v for i, v in enumerate(target) if i != inferred[0]]
        )
        return tensor(resolved, info.dtype, like=info)
    new_total = ctx.analyzer.simplify(product(target))
    if not prove_equal(ctx, total, new_total) and prove_not_equal(ctx, total, new_total):
        raise ctx.error(
            f"cannot reshape x of shape {dims_text(info)} ({total} elements) to "
            f"{shape_text(target)} ({new_total} elements)"
        )
    # A shape variable whose extents are known is replaced by them, as in TVM.
    return tensor(target, info.dtype, like=info)


def _missing_extent(
    ctx: InferContext, source: Sequence[PrimExpr], known: Sequence[PrimExpr]
) -> PrimExpr:
    """The extent a -1 stands for: ``product(source) // product(known)``.

    Symbolic factors present on both sides cancel first (``(n, 4) -> (n, 2, -1)`` gives 2,
    not ``n * 4 // (n * 2)``, which the analyzer cannot reduce because n may be 0).
    """
    remaining = list(source)
    leftover: list[PrimExpr] = []
    for dim in known:
        match = next((i for i, s in enumerate(remaining) if prove_equal(ctx, s, dim)), None)
        if match is None:
            leftover.append(dim)
        else:
            del remaining[match]
    numer = ctx.analyzer.simplify(product(remaining))
    if not leftover:
        return numer
    denom = ctx.analyzer.simplify(product(leftover))
    if prove_equal(ctx, numer, denom):
        # (a, b, c, d) -> (c, a * b * d, -1): the rest is a * b * d // (a * b * d) = 1.
        return IntImm(1)
    return ctx.analyzer.simplify(floordiv(numer, denom))
