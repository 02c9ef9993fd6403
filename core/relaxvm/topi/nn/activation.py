"""Activations and softmax (TVM's ``topi.nn.relu``, ``leaky_relu``, ``softmax``,
``log_softmax``)."""

from __future__ import annotations

from ...errors import VMTypeError
from ...ir import IntImm, PrimExpr
from ...ir import op as sop
from ...ir.dtype import is_float_dtype
from ...ir.tir import intrin as T
from ...ir.tir import te
from .._util import normalize_axis, require_tensor

__all__ = ["leaky_relu", "log_softmax", "relu", "softmax"]


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)``; NaN stays NaN (TIR's Max is numpy's ``maximum``)."""
    require_tensor("topi.nn.relu", x, "x")
    zero = sop.const(0, x.dtype)
    return te.compute(x.shape, lambda *i: sop.max_expr(x[i], zero), name="T_relu")


def leaky_relu(x: te.Tensor, alpha: float) -> te.Tensor:
    """``x`` where ``x > 0``, else ``alpha * x`` (NaN takes the scaled branch and stays NaN)."""
    require_tensor("topi.nn.leaky_relu", x, "x")
    if not is_float_dtype(x.dtype):
        raise VMTypeError(f"topi.nn.leaky_relu: expects a float tensor, got {x.dtype}")
    zero, scale = sop.const(0, x.dtype), sop.const(float(alpha), x.dtype)

    def body(*i: PrimExpr) -> PrimExpr:
        v = x[i]
        return sop.select(sop.greater(v, zero), v, sop.mul(v, scale))

    return te.compute(x.shape, body, name="T_leaky_relu")


def _stats(where: str, x: te.Tensor, axis: int) -> tuple[int, te.Tensor, te.Tensor, te.Tensor]:
    """The axis, ``exp(x - max)``, its sum and the max over the axis (kept as extent 1)."""
    require_tensor(where, x, "x")
    if not is_float_dtype(x.dtype):
        raise VMTypeError(f"{where}: expects a float tensor, got {x.dtype}")
    ax = normalize_axis(where, axis, x.ndim)
    kept = [IntImm(d.dtype, 1) if p == ax else d for p, d in enumerate(x.shape)]

    def along(idx: tuple[PrimExpr, ...], k: PrimExpr) -> tuple[PrimExpr, ...]:
        return tuple(k if p == ax else i for p, i in enumerate(idx))

    k1 = te.reduce_axis((0, x.shape[ax]), name="k")
    top = te.compute(kept, lambda *i: te.max(x[along(i, k1.var)], axis=k1), name="T_softmax_max")
    zero = IntImm(x.shape[ax].dtype, 0)
    shifted = te.compute(
        x.shape, lambda *i: T.exp(sop.sub(x[i], top[along(i, zero)])), name="T_softmax_exp"
    )
    k2 = te.reduce_axis((0, x.shape[ax]), name="k")
    total = te.compute(
        kept, lambda *i: te.sum(shifted[along(i, k2.var)], axis=k2), name="T_softmax_expsum"
    )
    return ax, shifted, total, top


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``; a NaN in a row makes it NaN."""
    ax, shifted, total, _ = _stats("topi.nn.softmax", x, axis)
    zero = IntImm(x.shape[ax].dtype, 0)

    def body(*i: PrimExpr) -> PrimExpr:
        at = tuple(zero if p == ax else v for p, v in enumerate(i))
        return sop.true_div(shifted[i], total[at])

    return te.compute(x.shape, body, name="T_softmax_norm")


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    ax, _, total, top = _stats("topi.nn.log_softmax", x, axis)
    zero = IntImm(x.shape[ax].dtype, 0)

    def body(*i: PrimExpr) -> PrimExpr:
        at = tuple(zero if p == ax else v for p, v in enumerate(i))
        return sop.sub(sop.sub(x[i], top[at]), T.log(total[at]))

    return te.compute(x.shape, body, name="T_log_softmax")
