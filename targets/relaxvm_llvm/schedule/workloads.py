"""TE definitions of the kernels the schedules are built for, shaped as the op legalizations
write them. Used by the schedule tests and ``benchmarks/bench_llvm_kernels.py``; each returns
an unscheduled :class:`PrimFunc` whose parameters are the inputs followed by the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias, Union

from relaxvm.ir import PrimExpr, Var
from relaxvm.ir.tir import PrimFunc, exp, if_then_else, rsqrt, te
from relaxvm.ir.tir import max as tmax

__all__ = [
    "add",
    "conv2d_nchw",
    "dense",
    "layer_norm",
    "matmul",
    "max_pool2d",
    "reduce_sum",
    "softmax",
]

Dim: TypeAlias = Union[int, Var]  # noqa: UP007 - a runtime alias must work on 3.10


def _f(value: float, dtype: str) -> PrimExpr:
    from relaxvm.ir import const

    return const(value, dtype)


def add(
    shape: Sequence[Dim], dtype: str = "float32", bshape: Sequence[Dim] | None = None
) -> PrimFunc:
    """``C = A + B`` with B broadcast from the trailing dims ``bshape``."""
    a = te.placeholder(tuple(shape), dtype, name="A")
    bshape = tuple(shape) if bshape is None else tuple(bshape)
    b = te.placeholder(bshape, dtype, name="B")
    off = len(shape) - len(bshape)
    c = te.compute(tuple(shape), lambda *i: a[i] + b[i[off:]], name="C")
    return te.create_prim_func([a, b, c], name="add")


def matmul(
    m: Dim, n: Dim, k: Dim, dtype: str = "float32", batch: Dim | None = None,
    bias: bool = False, relu: bool = False,
) -> PrimFunc:  # fmt: skip
    """``C = A @ B`` (``A[b, m, k]``, ``B[b, k, n]`` when ``batch``), optionally followed by
    ``+ bias[n]`` and ``max(., 0)`` stages as FuseTIR leaves them."""
    lead = (batch,) if batch is not None else ()
    a = te.placeholder((*lead, m, k), dtype, name="A")
    b = te.placeholder((*lead, k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")

    def body(*idx: Any) -> Any:
        *bt, i, j = idx
        return te.sum(a[tuple([*bt, i, r])] * b[tuple([*bt, r, j])], axis=r)

    out = te.compute((*lead, m, n), body, name="T_matmul")
    args: list[Any] = [a, b]
    if bias:
        bb = te.placeholder((n,), dtype, name="bias")
        args.append(bb)
        prev = out
        out = te.compute(prev.shape, lambda *i: prev[i] + bb[i[-1]], name="T_add")
    if relu:
        prev2 = out
        out = te.compute(prev2.shape, lambda *i: tmax(prev2[i], _f(0, dtype)), name="T_relu")
    return te.create_prim_func([*args, out], name="fused_matmul")


def dense(m: Dim, n: Dim, k: Dim, dtype: str = "float32") -> PrimFunc:
    """``C = A @ W.T`` with ``W[n, k]`` (relax.linear's kernel)."""
    a = te.placeholder((m, k), dtype, name="A")
    w = te.placeholder((n, k), dtype, name="W")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * w[j, r], axis=r), name="T_dense")
    return te.create_prim_func([a, w, c], name="dense")


def reduce_sum(shape: Sequence[Dim], axis: int, dtype: str = "float32", op: str = "sum",
               mean: bool = False) -> PrimFunc:  # fmt: skip
    """Sum (or max) over one axis; ``mean`` adds a divide stage."""
    a = te.placeholder(tuple(shape), dtype, name="A")
    r = te.reduce_axis((0, shape[axis]), name="k")
    out_shape = tuple(d for p, d in enumerate(shape) if p != axis)
    reducer = {"sum": te.sum, "max": te.max, "min": te.min}[op]

    def body(*idx: Any) -> Any:
        full = (*idx[:axis], r, *idx[axis:])
        return reducer(a[full], axis=r)

    out = te.compute(out_shape, body, name="T_red")
    if mean:
        prev = out
        count = _f(float(shape[axis]) if isinstance(shape[axis], int) else 1.0, dtype)
        out = te.compute(out_shape, lambda *i: prev[i] / count, name="T_mean")
    return te.create_prim_func([a, out], name="reduce")


def softmax(n: Dim, m: Dim, dtype: str = "float32") -> PrimFunc:
    """Softmax over the last axis: max, exp, sum, divide stages."""
    x = te.placeholder((n, m), dtype, name="X")
    k1 = te.reduce_axis((0, m), name="k")
    mx = te.compute((n,), lambda i: te.max(x[i, k1], axis=k1), name="T_max")
    ex = te.compute((n, m), lambda i, j: exp(x[i, j] - mx[i]), name="T_exp")
    k2 = te.reduce_axis((0, m), name="k")
    sm = te.compute((n,), lambda i: te.sum(ex[i, k2], axis=k2), name="T_sum")
    out = te.compute((n, m), lambda i, j: ex[i, j] / sm[i], name="T_softmax")
    return te.create_prim_func([x, out], name="softmax")


def layer_norm(n: Dim, m: int, dtype: str = "float32", eps: float = 1e-5) -> PrimFunc:
    """Layer norm over the last axis with gamma and beta."""
    x = te.placeholder((n, m), dtype, name="X")
    g = te.placeholder((m,), dtype, name="gamma")
    b = te.placeholder((m,), dtype, name="beta")
    k1 = te.reduce_axis((0, m), name="k")
    s = te.compute((n,), lambda i: te.sum(x[i, k1], axis=k1), name="T_sum")
    mean = te.compute((n,), lambda i: s[i] / _f(m, dtype), name="T_mean")
    dev = te.compute((n, m), lambda i, j: x[i, j] - mean[i], name="T_dev")
    k2 = te.reduce_axis((0, m), name="k")
    var = te.compute((n,), lambda i: te.sum(dev[i, k2] * dev[i, k2], axis=k2), name="T_var")
    out = te.compute(
        (n, m),
        lambda i, j: dev[i, j] * rsqrt(var[i] / _f(m, dtype) + _f(eps, dtype)) * g[j] + b[j],
        name="T_layer_norm",
    )
    return te.create_prim_func([x, g, b, out], name="layer_norm")


def conv2d_nchw(
    batch: Dim, cin: int, h: Dim, w: Dim, cout: int, kh: int = 3, kw: int = 3, stride: int = 1,
    pad: int = 1, dtype: str = "float32", bias: bool = False, relu: bool = False,
) -> PrimFunc:  # fmt: skip
    """Direct NCHW convolution with a padding stage, optionally ``+ bias[c]`` and relu."""
    data = te.placeholder((batch, cin, h, w), dtype, name="data")
    weight = te.placeholder((cout, cin, kh, kw), dtype, name="weight")
    ph, pw = h + 2 * pad, w + 2 * pad
    padded = te.compute(
        (batch, cin, ph, pw),
        lambda b, c, y, x: if_then_else(
            (y >= pad) & (y < h + pad) & (x >= pad) & (x < w + pad),
            data[b, c, y - pad, x - pad],
            _f(0, dtype),
        ),
        name="pad_temp",
    )
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (w + 2 * pad - kw) // stride + 1
    rc = te.reduce_axis((0, cin), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out = te.compute(
        (batch, cout, oh, ow),
        lambda b, f, y, x: te.sum(
            padded[b, rc, y * stride + ry.var, x * stride + rx.var] * weight[f, rc, ry, rx],
            axis=[rc, ry, rx],
        ),
        name="conv2d_nchw",
    )
    args: list[Any] = [data, weight]
    if bias:
        bvec = te.placeholder((cout,), dtype, name="bias")
        args.append(bvec)
        prev = out
        out = te.compute(prev.shape, lambda b, f, y, x: prev[b, f, y, x] + bvec[f], name="T_add")
    if relu:
        prev2 = out
        out = te.compute(prev2.shape, lambda *i: tmax(prev2[i], _f(0, dtype)), name="T_relu")
    return te.create_prim_func([*args, out], name="conv2d")


def max_pool2d(batch: Dim, c: int, h: int, w: int, k: int = 3, stride: int = 1,
               dtype: str = "float32") -> PrimFunc:  # fmt: skip
    """Max pooling without padding."""
    data = te.placeholder((batch, c, h, w), dtype, name="data")
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    ry = te.reduce_axis((0, k), name="ry")
    rx = te.reduce_axis((0, k), name="rx")
    out = te.compute(
        (batch, c, oh, ow),
        lambda b, f, y, x: te.max(
            data[b, f, y * stride + ry.var, x * stride + rx.var], axis=[ry, rx]
        ),
        name="pool_max",
    )
    return te.create_prim_func([data, out], name="max_pool2d")
