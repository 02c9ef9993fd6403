"""Shared helpers of the operator library: operands, axes, shapes and constants."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import VMTypeError, VMValueError
from ..ir import IntImm, PrimExpr, structural_equal
from ..ir import op as sop
from ..ir.dtype import dtype_int_range, is_bool_dtype, is_float_dtype, is_int_dtype
from ..ir.tir import te
from ..runtime.dtype import DataType

__all__ = [
    "Operand",
    "as_index",
    "broadcast_index",
    "broadcast_shape",
    "cast_to",
    "const_like",
    "dtype_min_max",
    "normalize_axes",
    "normalize_axis",
    "product",
    "require_tensor",
    "static_int",
]

#: What an elementwise operator accepts: a tensor, a scalar expression or a Python number.
Operand = te.Tensor | PrimExpr | int | float | bool

_INDEX = DataType("int64")


def require_tensor(where: str, value: Any, what: str = "data") -> te.Tensor:
    """``value`` if it is a te tensor, else a VMTypeError naming ``where`` and ``what``."""
    if not isinstance(value, te.Tensor):
        raise VMTypeError(f"{where}: {what} must be a te.Tensor, got {type(value).__name__}")
    return value


def static_int(value: Any) -> int | None:
    """The Python int of a constant extent, or None for a symbolic one."""
    if isinstance(value, IntImm):
        return int(value.value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def as_index(value: Any, where: str) -> PrimExpr:
    """An extent or index as an integer PrimExpr (Python ints become int64 constants)."""
    if isinstance(value, te.IterVar):
        return value.var
    if isinstance(value, PrimExpr):
        if not is_int_dtype(value.dtype):
            raise VMTypeError(f"{where}: expected an integer expression, got {value.dtype}")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise VMTypeError(f"{where}: expected an int or integer PrimExpr, got {value!r}")
    return IntImm(_INDEX, value)


def product(values: Sequence[PrimExpr]) -> PrimExpr:
    """The product of extents (1 for none), folded where constant."""
    total: PrimExpr = IntImm(_INDEX, 1)
    for value in values:
        total = sop.mul(total, value)
    return total


def normalize_axis(where: str, axis: Any, ndim: int, *, extra: int = 0) -> int:
    """``axis`` in ``[-(ndim + extra), ndim + extra)`` as a non-negative int."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise VMTypeError(f"{where}: axis must be an int, got {axis!r}")
    bound = ndim + extra
    if not -bound <= axis < bound:
        raise VMValueError(
            f"{where}: axis {axis} is out of range for a tensor of rank {ndim} "
            f"(expected -{bound} <= axis < {bound})"
        )
    return axis + bound if axis < 0 else axis


def normalize_axes(where: str, axis: Any, ndim: int) -> list[int]:
    """``axis`` (None for all, an int or a sequence of ints) as sorted distinct axes."""
    if axis is None:
        return list(range(ndim))
    items = [axis] if isinstance(axis, int) else list(axis)
    axes = [normalize_axis(where, a, ndim) for a in items]
    if len(set(axes)) != len(axes):
        raise VMValueError(f"{where}: axis {list(items)} repeats an axis")
    return sorted(axes)


def _is_one(value: PrimExpr) -> bool:
    return static_int(value) == 1


def broadcast_shape(where: str, *shapes: Sequence[PrimExpr]) -> list[PrimExpr]:
    """The numpy broadcast of ``shapes``.

    Trailing dimensions line up; an extent of 1 stretches. Two constants that differ (and are
    not 1) are an error. Two different symbolic extents broadcast to their ``max``: equal at run
    time, or one of them 1, as numpy requires (which is not checked at run time, as in TVM).
    """
    ndim = max((len(s) for s in shapes), default=0)
    out: list[PrimExpr] = []
    for position in range(ndim):
        result: PrimExpr | None = None
        for shape in shapes:
            offset = position - (ndim - len(shape))
            if offset < 0:
                continue
            dim = shape[offset]
            if result is None or _is_one(result):
                result = dim
            elif _is_one(dim) or structural_equal(dim, result):
                continue
            else:
                a, b = static_int(result), static_int(dim)
                if a is not None and b is not None:
                    raise VMValueError(
                        f"{where}: shapes {[list(map(str, s)) for s in shapes]} do not "
                        f"broadcast (dimension {position}: {a} vs {b})"
                    )
                result = (
                    dim if b is not None else result if a is not None else sop.max_expr(result, dim)
                )
        assert result is not None  # every position is covered by the longest shape
        out.append(result)
    return out


def broadcast_index(
    tensor: te.Tensor, out_shape: Sequence[PrimExpr], idx: Sequence[PrimExpr]
) -> list[PrimExpr]:
    """The index into ``tensor`` that output index ``idx`` reads under broadcasting."""
    offset = len(out_shape) - tensor.ndim
    indices: list[PrimExpr] = []
    for axis, dim in enumerate(tensor.shape):
        out_dim, i = out_shape[offset + axis], idx[offset + axis]
        if _is_one(dim):
            indices.append(IntImm(i.dtype, 0))
        elif static_int(dim) is not None or structural_equal(dim, out_dim):
            indices.append(i)
        else:  # a symbolic extent may be 1 at run time
            indices.append(sop.select(sop.equal(dim, 1), IntImm(i.dtype, 0), i))
    return indices


def cast_to(value: PrimExpr, dtype: DataType) -> PrimExpr:
    """``value`` as ``dtype``; to bool means ``!= 0``, as numpy's ``astype``."""
    if value.dtype == dtype:
        return value
    if is_bool_dtype(dtype):
        return sop.not_equal(value, sop.const(0, value.dtype))
    return sop.cast(value, dtype)


def const_like(value: Any, dtype: DataType, where: str) -> PrimExpr:
    """A Python number (or a PrimExpr, cast) as a constant of ``dtype``."""
    if isinstance(value, PrimExpr):
        return cast_to(value, dtype)
    if not isinstance(value, (int, float)):
        raise VMTypeError(f"{where}: expected a number or PrimExpr, got {type(value).__name__}")
    if is_bool_dtype(dtype):
        return sop.const(bool(value), dtype)
    if is_float_dtype(dtype):
        return sop.const(float(value), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise VMValueError(f"{where}: {value} is not representable as {dtype}")
    return sop.const(int(value), dtype)


def dtype_min_max(dtype: DataType) -> tuple[PrimExpr, PrimExpr]:
    """The lowest and highest value of ``dtype`` (``-inf``/``inf`` for floats)."""
    if is_float_dtype(dtype):
        return sop.const(-math.inf, dtype), sop.const(math.inf, dtype)
    if is_bool_dtype(dtype):
        return sop.const(False, dtype), sop.const(True, dtype)
    low, high = dtype_int_range(dtype)
    return sop.const(low, dtype), sop.const(high, dtype)
