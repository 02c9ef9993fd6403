"""Reductions (sum, mean, max, min, prod, variance, std, argmax, argmin), softmax, log_softmax,
cumsum and cumprod.

sum/max/min are single TE reductions; mean and variance add elementwise stages. prod, the
arg reductions and the scans need combiners TE does not have (a product, a value-index pair, a
running sum or product), so they are written as TIR loops in init-and-update form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, cast
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import dtype_int_range, is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import Allocate, Buffer, BufferStore, For, ForKind, IfThenElse, Stmt, seq, te
from relaxvm.ir.tir import intrin as T
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    call_tir_loops,
    flat_index,
    legalizes,
    op_name,
    out_dtype,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
    unravel_index,
)

__all__ = ["normalize_axes"]


def normalize_axes(call: Call, axes: Sequence[int] | None, ndim: int) -> list[int]:
    """Axes made non-negative and sorted; None means all axes."""
    if axes is None:
        return list(range(ndim))
    out = []
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise LegalizationError(f"{op_name(call)}: axis {axis} is out of range for rank {ndim}")
        out.append(axis % ndim)
    return sorted(set(out))


def _split_index(
    shape: Sequence[PrimExpr], axes: Sequence[int], keepdims: bool
) -> Callable[[Sequence[Any], Sequence[Any]], list[Any]]:
    """Map (output index, reduction vars) to the input index."""

    def index(out_idx: Sequence[Any], red: Sequence[Any]) -> list[Any]:
        result: list[Any] = []
        it_out, it_red = iter(out_idx), iter(red)
        for axis in range(len(shape)):
            if axis in axes:
                result.append(next(it_red))
                if keepdims:
                    next(it_out)
            else:
                result.append(next(it_out))
        return result

    return index


def _reduce_setup(call: Call) -> tuple[list[PrimExpr], list[int], bool, list[PrimExpr]]:
    info = tensor_arg(call, 0, "x")
    shape = shape_of(info)
    axes = normalize_axes(call, attr(call, "axis"), len(shape))
    keepdims = bool(attr(call, "keepdims", False))
    return shape, axes, keepdims, shape_of(out_tensor_sinfo(call))


def _te_reduce(
    x: te.Tensor,
    shape: Sequence[PrimExpr],
    axes: Sequence[int],
    keepdims: bool,
    out_shape: Sequence[PrimExpr],
    combiner: Callable[..., Any],
    name: str,
    value: Callable[[PrimExpr], PrimExpr] = lambda v: v,
) -> te.Tensor:
    index = _split_index(shape, axes, keepdims)

    def body(*idx: Any) -> Any:
        red = [te.reduce_axis((0, shape[a]), name=f"k{a}") for a in axes]
        if not red:  # reducing a 0-d tensor: nothing to combine
            return value(x[tuple(index(idx, []))])
        return combiner(value(x[tuple(index(idx, red))]), axis=red)

    return te.compute(out_shape, body, name=name)


def _make_simple(name: str, combiner: Callable[..., Any]) -> None:
    @legalizes(f"relax.{name}")
    def legalize(bb: BlockBuilder, call: Call) -> RelaxExpr:
        shape, axes, keepdims, out_shape = _reduce_setup(call)

        def kernel(x: te.Tensor) -> te.Tensor:
            return _te_reduce(x, shape, axes, keepdims, out_shape, combiner, f"{x.name}_red")

        return call_te(
            bb, kernel, call.args[0], primfunc_name_hint=name,
            op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
        )  # fmt: skip

    legalize.__name__ = f"legalize_{name}"


_make_simple("sum", te.sum)
_make_simple("max", te.max)
_make_simple("min", te.min)


def _divide_by_count(value: PrimExpr, count: PrimExpr) -> PrimExpr:
    if is_float_dtype(value.dtype):
        return sop.true_div(value, cast(count, value.dtype))
    return sop.truncdiv(value, cast(count, value.dtype))


@legalizes("relax.mean")
def legalize_mean(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A sum stage, then a division by the number of reduced elements."""
    shape, axes, keepdims, out_shape = _reduce_setup(call)
    count = product([shape[a] for a in axes])

    def kernel(x: te.Tensor) -> te.Tensor:
        total = _te_reduce(x, shape, axes, keepdims, out_shape, te.sum, f"{x.name}_red")
        return te.compute(out_shape, lambda *i: _divide_by_count(total[i], count), name="T_divide")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="mean",
        op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
    )  # fmt: skip


def _sqrt(value: PrimExpr) -> PrimExpr:
    """``sqrt`` in the value's type; integers take the truncated root (computed in float64)."""
    if is_float_dtype(value.dtype):
        return T.sqrt(value)
    return cast(T.floor(T.sqrt(cast(value, "float64"))), value.dtype)


@legalizes("relax.variance", "relax.std")
def legalize_variance(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Population variance: ``mean((x - mean(x))**2)`` in separate stages; std adds a square
    root."""
    is_std = op_name(call) == "relax.std"
    shape, axes, keepdims, out_shape = _reduce_setup(call)
    count = product([shape[a] for a in axes])
    keep_shape = [IntImm("int64", 1) if a in axes else d for a, d in enumerate(shape)]

    def kernel(x: te.Tensor) -> te.Tensor:
        total = _te_reduce(x, shape, axes, True, keep_shape, te.sum, f"{x.name}_red")
        mean = te.compute(keep_shape, lambda *i: _divide_by_count(total[i], count), name="T_mean")

        def deviation(*idx: Any) -> PrimExpr:
            mean_idx = [0 if a in axes else idx[a] for a in range(len(shape))]
            d = x[idx] - mean[tuple(mean_idx)]
            return d * d

        sq = te.compute(shape, deviation, name="T_sq_dev")
        sq_total = _te_reduce(sq, shape, axes, keepdims, out_shape, te.sum, "T_sq_sum")
        var = te.compute(
            out_shape, lambda *i: _divide_by_count(sq_total[i], count), name="T_variance"
        )
        if not is_std:
            return var
        return te.compute(out_shape, lambda *i: _sqrt(var[i]), name="T_std")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="std" if is_std else "variance",
        op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
    )  # fmt: skip


# ---- TIR loop reductions ----------------------------------------------------------------------
def _loops(extents: Sequence[PrimExpr], names: str, body: Callable[[list[Var]], Stmt]) -> Stmt:
    variables = [Var(f"{names}{i}", "int64") for i in range(len(extents))]
    stmt = body(variables)
    for var, extent in reversed(list(zip(variables, extents, strict=True))):
        stmt = For(var, 0, extent, ForKind.SERIAL, stmt)
    return stmt


@legalizes("relax.prod")
def legalize_prod(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Product: ``out = 1; for k: out = out * x``."""
    shape, axes, keepdims, out_shape = _reduce_setup(call)
    dtype = out_dtype(call)
    index = _split_index(shape, axes, keepdims)

    def build(x: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer("T_prod", out_shape, dtype)

        def per_output(idx: list[Var]) -> Stmt:
            def update(red: list[Var]) -> Stmt:
                return BufferStore(out, out[tuple(idx)] * x[tuple(index(idx, red))], idx)

            red_extents = [shape[a] for a in axes]
            return seq(BufferStore(out, sop.const(1, dtype), idx), _loops(red_extents, "k", update))

        return [out], _loops(out_shape, "i", per_output)

    return call_tir_loops(
        bb, build, call.args[0], primfunc_name_hint="prod",
        op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
    )  # fmt: skip


def _make_arg(name: str, better: Callable[[PrimExpr, PrimExpr], PrimExpr], worst: float) -> None:
    @legalizes(f"relax.{name}")
    def legalize(bb: BlockBuilder, call: Call) -> RelaxExpr:
        shape, axes, keepdims, out_shape = _reduce_setup(call)
        index = _split_index(shape, axes, keepdims)
        red_extents = [shape[a] for a in axes]
        x_dtype = tensor_arg(call, 0, "x").dtype
        assert x_dtype is not None

        def build(x: te.Tensor) -> tuple[list[Buffer], Stmt]:
            out = Buffer(f"T_{name}", out_shape, "int64")
            best = Buffer("best", [1], x_dtype, scope="local")
            zero = [IntImm("int64", 0)]

            def per_output(idx: list[Var]) -> Stmt:
                def update(red: list[Var]) -> Stmt:
                    value = x[tuple(index(idx, red))]
                    flat = flat_index(red, red_extents)
                    # Strictly better: the first occurrence wins ties, as numpy's does.
                    take = better(value, best[0])
                    if is_float_dtype(x_dtype):
                        # NaN beats every number and the first NaN wins, as in numpy (no
                        # comparison with NaN is true, so `better` alone would skip it).
                        first_nan = sop.logical_and(
                            sop.not_equal(value, value), sop.equal(best[0], best[0])
                        )
                        take = sop.logical_or(take, first_nan)
                    return IfThenElse(
                        take, seq(BufferStore(best, value, zero), BufferStore(out, flat, idx))
                    )

                init = seq(
                    BufferStore(best, _extreme(x_dtype, worst), zero),
                    BufferStore(out, IntImm("int64", 0), idx),
                )
                return seq(init, _loops(red_extents, "k", update))

            return [out], Allocate(best, _loops(out_shape, "i", per_output))

        return call_tir_loops(
            bb, build, call.args[0], primfunc_name_hint=name,
            op_pattern=OpPattern.COMM_REDUCE, op=op_name(call),
        )  # fmt: skip

    legalize.__name__ = f"legalize_{name}"


def _extreme(dtype: DataType, sign: float) -> PrimExpr:
    if is_float_dtype(dtype):
        return sop.const(sign * math.inf, dtype)
    low, high = dtype_int_range(dtype)
    return sop.const(high if sign > 0 else low, dtype)


_make_arg("argmax", sop.greater, -1.0)
_make_arg("argmin", sop.less, 1.0)


# ---- softmax --------------------------------------------------------------------------------
def _softmax_setup(call: Call) -> tuple[list[PrimExpr], int]:
    shape = shape_of(tensor_arg(call, 0, "data"))
    if not shape:
        raise LegalizationError(f"{op_name(call)}: data must have rank >= 1, got a 0-d tensor")
    (axis,) = normalize_axes(call, [attr(call, "axis", -1)], len(shape))
    return shape, axis


def _softmax_stages(
    x: te.Tensor, shape: list[PrimExpr], axis: int
) -> tuple[te.Tensor, te.Tensor, Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """The max and the sum-of-exp stages (reduced axis kept as extent 1)."""
    keep = [IntImm("int64", 1) if a == axis else d for a, d in enumerate(shape)]
    index = _split_index(shape, [axis], True)

    def at(idx: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(0 if a == axis else idx[a] for a in range(len(shape)))

    def max_body(*idx: Any) -> Any:
        k = te.reduce_axis((0, shape[axis]), name="k")
        return te.max(x[tuple(index(idx, [k]))], axis=k)

    maxelem = te.compute(keep, max_body, name="T_softmax_maxelem")
    exp = te.compute(shape, lambda *i: T.exp(x[i] - maxelem[at(i)]), name="T_softmax_exp")

    def sum_body(*idx: Any) -> Any:
        k = te.reduce_axis((0, shape[axis]), name="k")
        return te.sum(exp[tuple(index(idx, [k]))], axis=k)

    expsum = te.compute(keep, sum_body, name="T_softmax_expsum")
    return maxelem, expsum, at


@legalizes("relax.nn.softmax")
def legalize_softmax(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Stages max, exp(x - max), sum, divide (the layout schedules look for)."""
    shape, axis = _softmax_setup(call)

    def kernel(x: te.Tensor) -> te.Tensor:
        maxelem, expsum, at = _softmax_stages(x, shape, axis)
        return te.compute(
            shape,
            lambda *i: T.exp(x[i] - maxelem[at(i)]) / expsum[at(i)],
            name="T_softmax_norm",
        )

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="softmax",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.log_softmax")
def legalize_log_softmax(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x - max - log(sum(exp(x - max)))``."""
    shape, axis = _softmax_setup(call)

    def kernel(x: te.Tensor) -> te.Tensor:
        maxelem, expsum, at = _softmax_stages(x, shape, axis)
        return te.compute(
            shape,
            lambda *i: x[i] - maxelem[at(i)] - T.log(expsum[at(i)]),
            name="T_log_softmax",
        )

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="log_softmax",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


# ---- cumsum ---------------------------------------------------------------------------------
@legalizes("relax.cumsum", "relax.cumprod")
def legalize_cumsum(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A running sum (cumprod: product) along the axis (of the flattened tensor when ``axis``
    is None); exclusive scans start from the identity, 0 or 1."""
    is_prod = op_name(call) == "relax.cumprod"
    combine = sop.mul if is_prod else sop.add
    name = "cumprod" if is_prod else "cumsum"
    shape = shape_of(tensor_arg(call, 0, "data"))
    out_info = out_tensor_sinfo(call)
    out_shape, dtype = shape_of(out_info), out_info.dtype
    assert dtype is not None
    exclusive = bool(attr(call, "exclusive", False))
    raw_axis = attr(call, "axis")
    flat = raw_axis is None
    axis = 0 if flat else normalize_axes(call, [raw_axis], len(shape))[0]

    def build(x: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer(f"T_{name}", out_shape, dtype)
        outer = [d for a, d in enumerate(out_shape) if a != axis]

        def read(idx: list[Any]) -> PrimExpr:
            if flat:
                return x[tuple(unravel_index(idx[0], shape))]
            return x[tuple(idx)]

        def per_line(outer_idx: list[Var]) -> Stmt:
            def full(k: PrimExpr) -> list[Any]:
                rest = iter(outer_idx)
                return [k if a == axis else next(rest) for a in range(len(out_shape))]

            def step(ks: list[Var]) -> Stmt:
                k = ks[0]
                here, prev = full(k), full(sop.sub(k, 1))
                own = cast(read(prev if exclusive else here), dtype)
                first = sop.const(int(is_prod), dtype) if exclusive else own
                # if_then_else runs only the chosen branch, so k - 1 is never read at k == 0.
                value = T.if_then_else(sop.equal(k, 0), first, combine(out[tuple(prev)], own))
                return BufferStore(out, value, here)

            return _loops([out_shape[axis]], "k", step)

        return [out], _loops(outer, "i", per_line)

    return call_tir_loops(
        bb, build, call.args[0], primfunc_name_hint=name,
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip
