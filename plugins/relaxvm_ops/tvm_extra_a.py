"""Legalizations of log_add_exp, outer, ewise_fma, bucketize, hamming_window, wrap_param,
nn.relu6 and nn.batch_flatten."""

from __future__ import annotations

import math
from typing import Any

from relaxvm.ir import PrimExpr, cast, select
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, PrimStructInfo, PrimValue, RelaxExpr
from relaxvm.ir.tir import intrin as T
from relaxvm.ir.tir import te

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
    unravel_index,
)
from .elementwise_broadcast import broadcast_pattern, cast_to, elementwise_kernel

__all__: list[str] = []


def _log_add_exp(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``max + log(1 + exp(-|a - b|))``: exp never overflows. Equal operands take the exact
    ``a + log 2``, which also keeps ``-inf, -inf`` at ``-inf`` (their difference is NaN)."""
    dtype = a.dtype
    if not is_float_dtype(dtype):
        # Integers are computed in float64 and truncated back by the kernel's cast.
        a, b = cast(a, "float64"), cast(b, "float64")
    ftype = a.dtype
    one = sop.const(1.0, ftype)
    near = sop.max_expr(a, b) + T.log(one + T.exp(-T.fabs(a - b)))
    return select(sop.equal(a, b), a + sop.const(math.log(2.0), ftype), near)


@legalizes("relax.log_add_exp")
def legalize_log_add_exp(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``log(exp(x1) + exp(x2))`` under numpy broadcasting."""
    if isinstance(call.struct_info, PrimStructInfo):
        raise LegalizationError(
            f"{op_name(call)}: cannot legalize two R.Prim operands; use 0-d tensors"
        )
    return elementwise_kernel(
        bb, call, "log_add_exp", _log_add_exp, call.args, broadcast_pattern(call)
    )


@legalizes("relax.ewise_fma")
def legalize_ewise_fma(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x1 * x2 + x3`` (inference made the three shapes equal)."""

    def fma(a: PrimExpr, b: PrimExpr, c: PrimExpr) -> PrimExpr:
        return a * b + c

    return elementwise_kernel(bb, call, "ewise_fma", fma, call.args, OpPattern.ELEMWISE)


@legalizes("relax.outer")
def legalize_outer(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[i, j] = x1[i] * x2[j]``."""
    shape = shape_of(out_tensor_sinfo(call))
    tensor_arg(call, 0, "x1")
    tensor_arg(call, 1, "x2")

    def kernel(a: te.Tensor, b: te.Tensor) -> te.Tensor:
        return te.compute(shape, lambda i, j: a[i] * b[j], name="T_outer")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint="outer",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.nn.relu6")
def legalize_relu6(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``min(max(x, 0), 6)`` by selects on comparisons, so that NaN passes through."""
    dtype = out_tensor_sinfo(call).dtype
    assert dtype is not None  # out_tensor_sinfo checked it

    def relu6(x: PrimExpr) -> PrimExpr:
        zero, six = cast_to(sop.const(0, "int32"), dtype), cast_to(sop.const(6, "int32"), dtype)
        return select(sop.less(x, zero), zero, select(sop.greater(x, six), six, x))

    return elementwise_kernel(bb, call, "relu6", relu6, call.args[:1], OpPattern.ELEMWISE)


@legalizes("relax.nn.batch_flatten")
def legalize_batch_flatten(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A row-major reshape to ``(N, prod(rest))``."""
    in_shape = shape_of(tensor_arg(call, 0, "data"))
    out_shape = shape_of(out_tensor_sinfo(call))
    rest = in_shape[1:]

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(i: Any, j: Any) -> PrimExpr:
            return x[tuple([i, *unravel_index(j, rest)])]

        return te.compute(out_shape, body, name="T_batch_flatten")

    return call_te(
        bb, kernel, call.args[0], primfunc_name_hint="batch_flatten",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.bucketize")
def legalize_bucketize(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """For each element, the number of boundaries that sort before it: a reduction over the
    boundaries, ``sum(not (x <= b))`` for the left side and ``sum(not (x < b))`` for the right.

    On increasing boundaries that is numpy's ``searchsorted``; the negated comparisons make a
    NaN element count every boundary, since NaN sorts last in numpy."""
    shape = shape_of(out_tensor_sinfo(call))
    dtype = out_tensor_sinfo(call).dtype
    assert dtype is not None  # out_tensor_sinfo checked it
    count = shape_of(tensor_arg(call, 1, "boundaries"))[0]
    tensor_arg(call, 0, "input_tensor")
    before = sop.less if attr(call, "right", False) else sop.less_equal

    def kernel(x: te.Tensor, b: te.Tensor) -> te.Tensor:
        k = te.reduce_axis((0, count), name="k")
        one, zero = sop.const(1, dtype), sop.const(0, dtype)

        def body(*idx: Any) -> Any:
            return te.sum(select(before(x[idx], b[k]), zero, one), axis=k)

        return te.compute(shape, body, name="T_bucketize")

    return call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint="bucketize",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.hamming_window")
def legalize_hamming_window(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``alpha - beta * cos(2 pi i / d)``, ``d`` the size (periodic) or size - 1, in the
    result's dtype; one point gives ``[1]`` (the select discards the 0 / 0 it computes)."""
    sinfo = out_tensor_sinfo(call)
    dtype = sinfo.dtype
    assert dtype is not None  # out_tensor_sinfo checked it
    values = []
    for index, what in enumerate(("window_size", "periodic", "alpha", "beta")):
        arg = call.args[index]
        if not isinstance(arg, PrimValue):
            raise LegalizationError(f"{op_name(call)}: {what} must be a PrimValue, got {arg}")
        values.append(arg.value)
    size, periodic, alpha, beta = values
    shape = shape_of(sinfo)

    def kernel() -> te.Tensor:
        points = cast(size, dtype)
        one = sop.const(1.0, dtype)
        denom = select(sop.not_equal(periodic, sop.const(0, periodic.dtype)), points, points - one)
        two_pi = sop.const(2.0 * math.pi, dtype)

        def body(i: Any) -> PrimExpr:
            wave = cast_to(alpha, dtype) - cast_to(beta, dtype) * T.cos(
                two_pi * cast(i, dtype) / denom
            )
            return select(sop.equal(size, sop.const(1, size.dtype)), one, wave)

        return te.compute(shape, body, name="T_hamming_window")

    return call_te(
        bb, kernel, primfunc_name_hint="hamming_window",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.wrap_param")
def legalize_wrap_param(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A cast, as astype's (to bool: ``!= 0``); the parameter itself when the dtype is its own."""
    data = call.args[0].struct_info
    if getattr(data, "dtype", None) == out_tensor_sinfo(call).dtype:
        return call.args[0]
    return elementwise_kernel(
        bb, call, "wrap_param", lambda x: x, call.args[:1], OpPattern.ELEMWISE
    )
