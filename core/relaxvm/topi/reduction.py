"""Reductions (TVM's ``topi.sum(data, axis=None, keepdims=False)`` and friends).

``axis`` is None (every axis), an int or a sequence of ints (negative counts from the end);
``keepdims`` keeps the reduced axes with extent 1. ``max``/``min`` propagate NaN (a NaN in the
reduced elements gives NaN), as numpy. ``argmax``/``argmin`` return int32 indices; NaN beats
every number and the first NaN wins; ties give the first index (the last with
``select_last_index=True``). With several axes the index is into those axes flattened in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import VMTypeError
from ..ir import IntImm, PrimExpr
from ..ir import op as sop
from ..ir.dtype import is_bool_dtype, is_float_dtype
from ..ir.tir import te
from ..runtime.dtype import DataType
from ._util import normalize_axes, require_tensor

__all__ = ["all", "any", "argmax", "argmin", "max", "mean", "min", "prod", "sum"]


class _ProdReduce(te.Reduce):
    """A product reduction: TE has sum/max/min reducers; lowering only calls ``combine``."""

    def combine(self, accumulated: PrimExpr) -> PrimExpr:
        return sop.mul(accumulated, self.source)


def _layout(
    where: str, data: te.Tensor, axis: Any, keepdims: bool
) -> tuple[list[int], list[PrimExpr], list[te.IterVar]]:
    require_tensor(where, data)
    if is_bool_dtype(data.dtype) and where not in ("topi.all", "topi.any"):
        raise VMTypeError(
            f"{where}: bool tensors have no arithmetic; use topi.all/topi.any, or cast first "
            "(topi.cast(x, 'int32'))"
        )
    axes = normalize_axes(where, axis, data.ndim)
    out_shape: list[PrimExpr] = []
    for position, extent in enumerate(data.shape):
        if position not in axes:
            out_shape.append(extent)
        elif keepdims:
            out_shape.append(IntImm(extent.dtype, 1))
    raxes = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]
    return axes, out_shape, raxes


def _input_index(
    data: te.Tensor, axes: list[int], raxes: list[te.IterVar], idx: Sequence[PrimExpr], keep: bool
) -> tuple[PrimExpr, ...]:
    """The data index at output index ``idx`` and the reduction variables."""
    outer = iter(idx)
    reduced = iter(raxes)
    out: list[PrimExpr] = []
    for position in range(data.ndim):
        if position in axes:
            out.append(next(reduced).var)
            if keep:
                next(outer)
        else:
            out.append(next(outer))
    return tuple(out)


def _reduce(name: str, combine: Callable[..., te.Reduce]) -> Callable[..., te.Tensor]:
    where = f"topi.{name}"

    def op(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        axes, shape, raxes = _layout(where, data, axis, keepdims)

        def body(*idx: PrimExpr) -> te.Reduce:
            return combine(data[_input_index(data, axes, raxes, idx, keepdims)], raxes)

        return te.compute(shape, body, name=f"T_{name}")

    op.__name__ = name
    op.__doc__ = f"""The {name} of ``data`` over ``axis``.

    Parameters
    ----------
    data : te.Tensor
        The input.
    axis : None, int or sequence of int
        The axes to reduce; None reduces all of them.
    keepdims : bool
        Keep the reduced axes, with extent 1.

    Raises
    ------
    VMValueError
        An axis out of range or repeated.
    """
    return op


def _prod(source: PrimExpr, raxes: list[te.IterVar]) -> te.Reduce:
    return _ProdReduce("prod", source, raxes, None, sop.const(1, source.dtype))


sum = _reduce("sum", lambda s, k: te.sum(s, axis=k))
max = _reduce("max", lambda s, k: te.max(s, axis=k))
min = _reduce("min", lambda s, k: te.min(s, axis=k))
prod = _reduce("prod", _prod)


def mean(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
    """The arithmetic mean of a float tensor over ``axis`` (``sum / count``).

    Raises
    ------
    VMTypeError
        A non-float tensor (numpy would compute in float64: cast first).
    """
    require_tensor("topi.mean", data)
    if not is_float_dtype(data.dtype):
        raise VMTypeError(f"topi.mean: expects a float tensor, got {data.dtype}; cast it first")
    axes = normalize_axes("topi.mean", axis, data.ndim)
    total = sum(data, axis, keepdims)
    count: PrimExpr = IntImm(DataType("int64"), 1)
    for a in axes:
        count = sop.mul(count, data.shape[a])
    divisor = sop.cast(count, data.dtype)
    return te.compute(total.shape, lambda *i: sop.true_div(total[i], divisor), name="T_mean")


def _arg(name: str, pick: Callable[..., te.Tensor]) -> Callable[..., te.Tensor]:
    where = f"topi.{name}"

    def op(
        data: te.Tensor, axis: Any = None, keepdims: bool = False, select_last_index: bool = False
    ) -> te.Tensor:
        axes, shape, raxes = _layout(where, data, axis, keepdims)
        best = pick(data, axis, keepdims=True)
        index_type = DataType("int32")

        def body(*idx: PrimExpr) -> te.Reduce:
            point = _input_index(data, axes, raxes, idx, keepdims)
            best_at = tuple(IntImm(p.dtype, 0) if a in axes else p for a, p in enumerate(point))
            value, target = data[point], best[best_at]
            hit = sop.equal(value, target)
            if is_float_dtype(data.dtype):  # the best is NaN only when a NaN was reduced
                hit = sop.logical_or(hit, sop.not_equal(value, value))
            flat: PrimExpr = IntImm(index_type, 0)
            for k, a in zip(raxes, axes, strict=True):
                flat = sop.add(sop.mul(flat, sop.cast(data.shape[a], index_type)), k.var)
            flat = sop.cast(flat, index_type)
            if select_last_index:
                return te.max(flat, axis=raxes, where=hit, init=-1)
            return te.min(flat, axis=raxes, where=hit, init=0x7FFFFFFF)

        return te.compute(shape, body, name=f"T_{name}")

    op.__name__ = name
    op.__doc__ = f"""The int32 index of the {name[3:]}imum of ``data`` over ``axis``.

    Parameters
    ----------
    data : te.Tensor
        The input.
    axis : None, int or sequence of int
        The axes to search; None searches the flattened tensor.
    keepdims : bool
        Keep the reduced axes, with extent 1.
    select_last_index : bool
        On ties, the last index instead of the first.
    """
    return op


argmax = _arg("argmax", max)
argmin = _arg("argmin", min)


def _logical_reduce(name: str, combine: Callable[..., te.Reduce]) -> Callable[..., te.Tensor]:
    where = f"topi.{name}"

    def op(data: te.Tensor, axis: Any = None, keepdims: bool = False) -> te.Tensor:
        axes, shape, raxes = _layout(where, data, axis, keepdims)
        byte = DataType("int8")

        def body(*idx: PrimExpr) -> te.Reduce:
            value = data[_input_index(data, axes, raxes, idx, keepdims)]
            truth = sop.not_equal(value, sop.const(0, value.dtype))
            # Reduced as int8 0/1: TIR's Max/Min take no bools.
            return combine(sop.cast(truth, byte), raxes)

        counted = te.compute(shape, body, name=f"T_{name}_int8")
        return te.compute(
            shape, lambda *i: sop.not_equal(counted[i], sop.const(0, byte)), name=f"T_{name}"
        )

    op.__name__ = name
    op.__doc__ = f"""Whether {"every" if name == "all" else "any"} element of ``data`` over
    ``axis`` is true (nonzero); a bool tensor.

    Parameters
    ----------
    data : te.Tensor
        The input, read as bool.
    axis : None, int or sequence of int
        The axes to reduce; None reduces all of them.
    keepdims : bool
        Keep the reduced axes, with extent 1.
    """
    return op


all = _logical_reduce("all", lambda s, k: te.min(s, axis=k))
any = _logical_reduce("any", lambda s, k: te.max(s, axis=k))
