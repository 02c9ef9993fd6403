"""Padding, 2-D convolution and pooling on NCHW tensors (TVM's ``topi.nn.pad``,
``conv2d_nchw``, ``pool2d``, ``global_pool`` and ``adaptive_pool``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import VMTypeError, VMValueError
from ...ir import IntImm, PrimExpr
from ...ir import op as sop
from ...ir.dtype import is_float_dtype
from ...ir.tir import intrin as T
from ...ir.tir import te
from ...runtime.dtype import DataType
from .._util import cast_to, const_like, require_tensor, static_int

__all__ = ["adaptive_pool", "conv2d_nchw", "global_pool", "pad", "pool2d"]


def _pair(where: str, name: str, value: Any) -> tuple[int, int]:
    items = [value, value] if isinstance(value, int) else list(value)
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise VMValueError(f"{where}: {name} must be an int or a pair of ints, got {value!r}")
    if name != "padding" and min(items) < 1:
        raise VMValueError(f"{where}: {name} must be positive, got {value!r}")
    return items[0], items[1]


def _padding(where: str, value: Any) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from an int, a pair (h, w) or a 4-tuple."""
    items = [value] * 4 if isinstance(value, int) else list(value)
    if len(items) == 2:
        items = [items[0], items[1], items[0], items[1]]
    if len(items) != 4 or not all(isinstance(v, int) and v >= 0 for v in items):
        raise VMValueError(
            f"{where}: padding must be an int, (h, w) or (top, left, bottom, right) of "
            f"non-negative ints, got {value!r}"
        )
    return items[0], items[1], items[2], items[3]


def _nchw(where: str, data: Any, layout: str = "NCHW") -> te.Tensor:
    require_tensor(where, data)
    if layout != "NCHW":
        raise VMValueError(f"{where}: only the NCHW layout is supported, got {layout!r}")
    if data.ndim != 4:
        raise VMValueError(f"{where}: expects a 4-D NCHW tensor, got rank {data.ndim}")
    return data


def pad(
    data: te.Tensor,
    pad_before: Sequence[int],
    pad_after: Sequence[int] | None = None,
    pad_value: float = 0.0,
    name: str = "PadInput",
) -> te.Tensor:
    """``data`` with ``pad_before[d]``/``pad_after[d]`` elements of ``pad_value`` around axis d.

    Raises
    ------
    VMValueError
        Pad lists whose length is not the rank, or negative pads.
    """
    where = "topi.nn.pad"
    require_tensor(where, data)
    before = list(pad_before)
    after = before if pad_after is None else list(pad_after)
    if len(before) != data.ndim or len(after) != data.ndim:
        raise VMValueError(
            f"{where}: pad_before and pad_after need {data.ndim} entries (one per axis), got "
            f"{len(before)} and {len(after)}"
        )
    if any(p < 0 for p in before + after):
        raise VMValueError(f"{where}: pads must be non-negative, got {before} and {after}")
    fill = const_like(pad_value, data.dtype, f"{where} pad_value")
    shape = [sop.add(d, b + a) for d, b, a in zip(data.shape, before, after, strict=True)]

    def body(*idx: PrimExpr) -> PrimExpr:
        inside: PrimExpr = sop.const(True)
        src: list[PrimExpr] = []
        for i, d, b, a in zip(idx, data.shape, before, after, strict=True):
            j = sop.sub(i, b)
            if b:
                inside = sop.logical_and(inside, sop.greater_equal(j, 0))
            if a:
                inside = sop.logical_and(inside, sop.less(j, d))
            src.append(j)
        # if_then_else evaluates one branch only: the padding never reads data.
        return T.if_then_else(inside, data[tuple(src)], fill)

    return te.compute(shape, body, name=name)


def conv2d_nchw(
    Input: te.Tensor,  # TVM's parameter names
    Filter: te.Tensor,
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    out_dtype: str | None = None,
) -> te.Tensor:
    """2-D convolution: ``Input`` ``[N, C, H, W]``, ``Filter`` ``[O, C, KH, KW]``.

    ``padding`` is an int, ``(h, w)`` or ``(top, left, bottom, right)``; ``out_dtype`` (default
    the input's) is the accumulation dtype.

    Raises
    ------
    VMValueError
        Wrong ranks, channel counts that differ, or bad stride/padding/dilation.
    """
    where = "topi.nn.conv2d_nchw"
    data = _nchw(where, Input)
    weight = require_tensor(where, Filter, "Filter")
    if weight.ndim != 4:
        raise VMValueError(f"{where}: Filter must be 4-D [O, C, KH, KW], got rank {weight.ndim}")
    c_in, c_w = static_int(data.shape[1]), static_int(weight.shape[1])
    if c_in is not None and c_w is not None and c_in != c_w:
        raise VMValueError(f"{where}: Input has {c_in} channels but Filter expects {c_w}")
    sh, sw = _pair(where, "stride", stride)
    dh, dw = _pair(where, "dilation", dilation)
    top, left, bottom, right = _padding(where, padding)
    dtype = DataType(out_dtype) if out_dtype is not None else data.dtype
    padded = pad(data, [0, 0, top, left], [0, 0, bottom, right], name="pad_temp")
    kh, kw = weight.shape[2], weight.shape[3]
    oh = sop.add(sop.floordiv(sop.sub(padded.shape[2], sop.add(sop.mul(kh - 1, dh), 1)), sh), 1)
    ow = sop.add(sop.floordiv(sop.sub(padded.shape[3], sop.add(sop.mul(kw - 1, dw), 1)), sw), 1)
    rc = te.reduce_axis((0, data.shape[1]), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def body(n: PrimExpr, f: PrimExpr, y: PrimExpr, x: PrimExpr) -> te.Reduce:
        value = padded[n, rc.var, y * sh + ry.var * dh, x * sw + rx.var * dw]
        w = weight[f, rc.var, ry.var, rx.var]
        return te.sum(sop.mul(cast_to(value, dtype), cast_to(w, dtype)), axis=[rc, ry, rx])

    return te.compute((data.shape[0], weight.shape[0], oh, ow), body, name="conv2d_nchw")


def _window(
    where: str, extent: PrimExpr, k: int, s: int, d: int, lo: int, hi: int, ceil_mode: bool
) -> PrimExpr:
    span = d * (k - 1) + 1
    total = sop.sub(sop.add(extent, lo + hi), span)
    out = sop.add(sop.floordiv(sop.add(total, s - 1 if ceil_mode else 0), s), 1)
    if ceil_mode:
        # The last window must start inside the input or its leading pad (PyTorch's rule),
        # as a min rather than a select: symbolic extents stay valid buffer shapes.
        last_start = sop.add(sop.floordiv(sop.sub(sop.add(extent, lo), 1), s), 1)
        out = sop.min_expr(out, last_start)
    return out


def pool2d(
    data: te.Tensor,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    pool_type: str,
    ceil_mode: bool = False,
    layout: str = "NCHW",
    count_include_pad: bool = True,
) -> te.Tensor:
    """Max or average pooling over the H and W axes of an NCHW tensor.

    ``padding`` is ``(top, left, bottom, right)`` (an int or ``(h, w)`` also work). Max pooling
    ignores padding and propagates NaN; average pooling divides by the window positions inside
    the padded input (``count_include_pad=True``) or inside the input only.

    Raises
    ------
    VMValueError
        An unknown ``pool_type`` or layout, or bad window parameters.
    """
    where = "topi.nn.pool2d"
    x = _nchw(where, data, layout)
    if pool_type not in ("max", "avg"):
        raise VMValueError(f"{where}: pool_type must be 'max' or 'avg', got {pool_type!r}")
    kh, kw = _pair(where, "kernel", kernel)
    sh, sw = _pair(where, "stride", stride)
    dh, dw = _pair(where, "dilation", dilation)
    top, left, bottom, right = _padding(where, padding)
    h, w = x.shape[2], x.shape[3]
    oh = _window(where, h, kh, sh, dh, top, bottom, ceil_mode)
    ow = _window(where, w, kw, sw, dw, left, right, ceil_mode)
    shape = (x.shape[0], x.shape[1], oh, ow)
    ry, rx = te.reduce_axis((0, kh), name="ry"), te.reduce_axis((0, kw), name="rx")

    def position(oy: PrimExpr, ox: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        return oy * sh + ry.var * dh - top, ox * sw + rx.var * dw - left

    def inside(iy: PrimExpr, ix: PrimExpr, pads: tuple[int, int, int, int]) -> PrimExpr:
        t, lf, b, r = pads
        return sop.logical_and(
            sop.logical_and(sop.greater_equal(iy, -t), sop.less(iy, sop.add(h, b))),
            sop.logical_and(sop.greater_equal(ix, -lf), sop.less(ix, sop.add(w, r))),
        )

    def reduced(n: PrimExpr, c: PrimExpr, oy: PrimExpr, ox: PrimExpr) -> te.Reduce:
        iy, ix = position(oy, ox)
        cond = inside(iy, ix, (0, 0, 0, 0))
        if pool_type == "max":
            return te.max(x[n, c, iy, ix], axis=[ry, rx], where=cond)
        return te.sum(x[n, c, iy, ix], axis=[ry, rx], where=cond)

    pooled = te.compute(shape, reduced, name=f"pool_{pool_type}")
    if pool_type == "max":
        return pooled
    if not is_float_dtype(x.dtype):
        raise VMTypeError(f"{where}: average pooling expects a float tensor, got {x.dtype}")
    pads = (top, left, bottom, right) if count_include_pad else (0, 0, 0, 0)

    def counted(n: PrimExpr, c: PrimExpr, oy: PrimExpr, ox: PrimExpr) -> te.Reduce:
        iy, ix = position(oy, ox)
        return te.sum(sop.const(1, "int32"), axis=[ry, rx], where=inside(iy, ix, pads))

    count = te.compute(shape, counted, name="pool_count")

    def average(*i: PrimExpr) -> PrimExpr:
        divisor = sop.cast(sop.max_expr(count[i], sop.const(1, "int32")), x.dtype)
        return sop.true_div(pooled[i], divisor)

    return te.compute(shape, average, name="pool_avg_div")


def global_pool(data: te.Tensor, pool_type: str, layout: str = "NCHW") -> te.Tensor:
    """Max or average over H and W: ``[N, C, H, W]`` to ``[N, C, 1, 1]``."""
    from ..reduction import max as max_reduce
    from ..reduction import mean

    x = _nchw("topi.nn.global_pool", data, layout)
    if pool_type == "max":
        return max_reduce(x, axis=(2, 3), keepdims=True)
    if pool_type == "avg":
        return mean(x, axis=(2, 3), keepdims=True)
    raise VMValueError(f"topi.nn.global_pool: pool_type must be 'max' or 'avg', got {pool_type!r}")


def adaptive_pool(
    data: te.Tensor, output_size: int | Sequence[int], pool_type: str, layout: str = "NCHW"
) -> te.Tensor:
    """Pooling to a fixed ``output_size`` ``(OH, OW)``: window ``i`` covers rows
    ``floor(i * H / OH)`` to ``ceil((i + 1) * H / OH)``, as PyTorch and TVM."""
    where = "topi.nn.adaptive_pool"
    x = _nchw(where, data, layout)
    if pool_type not in ("max", "avg"):
        raise VMValueError(f"{where}: pool_type must be 'max' or 'avg', got {pool_type!r}")
    oh, ow = _pair(where, "output_size", output_size)
    h, w = x.shape[2], x.shape[3]

    def bounds(i: PrimExpr, extent: PrimExpr, out: int) -> tuple[PrimExpr, PrimExpr]:
        start = sop.floordiv(sop.mul(i, extent), out)
        end = sop.floordiv(sop.add(sop.mul(sop.add(i, 1), extent), out - 1), out)
        return start, sop.sub(end, start)

    def body(n: PrimExpr, c: PrimExpr, oy: PrimExpr, ox: PrimExpr) -> Any:
        y0, ky = bounds(oy, h, oh)
        x0, kx = bounds(ox, w, ow)
        ry, rx = te.reduce_axis((0, ky), name="ry"), te.reduce_axis((0, kx), name="rx")
        value = x[n, c, y0 + ry.var, x0 + rx.var]
        if pool_type == "max":
            return te.max(value, axis=[ry, rx])
        return te.sum(value, axis=[ry, rx])

    shape = (x.shape[0], x.shape[1], IntImm("int64", oh), IntImm("int64", ow))
    pooled = te.compute(shape, body, name=f"adaptive_pool_{pool_type}")
    if pool_type == "max":
        return pooled

    def average(n: PrimExpr, c: PrimExpr, oy: PrimExpr, ox: PrimExpr) -> PrimExpr:
        _, ky = bounds(oy, h, oh)
        _, kx = bounds(ox, w, ow)
        return sop.true_div(pooled[n, c, oy, ox], sop.cast(sop.mul(ky, kx), x.dtype))

    return te.compute(shape, average, name="adaptive_pool_avg")
