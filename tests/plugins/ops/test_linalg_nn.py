"""matmul, linear, norms, conv2d and pooling legalizations against numpy references."""

from __future__ import annotations

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

from relaxvm.ir.relax import op

RNG = np.random.default_rng(2)


def _f32(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape).astype("float32")


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((2, 3), (3, 4)),
        ((3,), (3, 2)),
        ((2, 3), (3,)),
        ((3,), (3,)),
        ((2, 1, 2, 3), (3, 3, 2)),  # batch dims broadcast: (2, 1) with (3,)
        ((2, 2, 3), (3, 2)),
    ],
)
def test_matmul_numpy_rules(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    a, b = _f32(*a_shape), _f32(*b_shape)
    got = run(op.matmul, [("a", a_shape, "float32"), ("b", b_shape, "float32")], [a, b])
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_symbolic_int_and_out_dtype() -> None:
    a = RNG.integers(-3, 4, size=(3, 2)).astype("int8")
    b = RNG.integers(-3, 4, size=(2, 4)).astype("int8")
    got = run(lambda x, y: op.matmul(x, y, out_dtype="int32"),
              [("a", ("n", "k"), "int8"), ("b", ("k", 4), "int8")], [a, b])  # fmt: skip
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype("int32") @ b.astype("int32"))


def test_matmul_is_one_reduction_kernel() -> None:
    mod, _, _ = legalize(op.matmul, [("a", (2, 3), "float32"), ("b", (3, 4), "float32")])
    func = prim_funcs(mod)["matmul"]
    assert func.attrs["op_pattern"] == 4
    text = func.script()
    # One stage: init and update of the output inside the (i, j) grid, one reduction loop.
    assert text.count("T_matmul[i0, i1] =") == 2 and text.count("for k in range") == 1


@pytest.mark.parametrize("bias", [False, True])
def test_linear(bias: bool) -> None:
    x, w, b = _f32(2, 3), _f32(4, 3), _f32(4)
    params = [("x", ("n", 3), "float32"), ("w", (4, 3), "float32"), ("b", (4,), "float32")]
    if bias:
        got = run(op.linear, params, [x, w, b])
        want = x @ w.T + b
    else:
        got = run(op.linear, params[:2], [x, w])
        want = x @ w.T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _norm_ref(x: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize("axes", [(-1,), (1, 2)])
def test_layer_norm(axes: tuple[int, ...]) -> None:
    x = _f32(2, 3, 4)
    pshape = tuple(x.shape[a] for a in axes)
    gamma, beta = _f32(*pshape), _f32(*pshape)
    params = [("x", ("n", 3, 4), "float32"), ("g", pshape, "float32"), ("b", pshape, "float32")]
    got = run(lambda *a: op.nn.layer_norm(*a, axes=axes, epsilon=1e-5), params, [x, gamma, beta])
    np.testing.assert_allclose(got, _norm_ref(x, axes, 1e-5) * gamma + beta, rtol=1e-4, atol=1e-5)


def test_layer_norm_without_scale_and_center() -> None:
    x, g, b = _f32(2, 4), _f32(4), _f32(4)
    params = [("x", (2, 4), "float32"), ("g", (4,), "float32"), ("b", (4,), "float32")]
    got = run(lambda *a: op.nn.layer_norm(*a, axes=-1, center=False, scale=False), params,
              [x, g, b])  # fmt: skip
    np.testing.assert_allclose(got, _norm_ref(x, (-1,), 1e-5), rtol=1e-4, atol=1e-5)


def test_rms_norm() -> None:
    x, w = _f32(3, 4), _f32(4)
    got = run(op.nn.rms_norm, [("x", ("n", 4), "float32"), ("w", (4,), "float32")], [x, w])
    want = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_batch_norm() -> None:
    x = _f32(2, 3, 2, 2)
    g, b, m = _f32(3), _f32(3), _f32(3)
    v = RNG.uniform(0.5, 2, size=3).astype("float32")
    params = [("x", (2, 3, 2, 2), "float32")] + [(n, (3,), "float32") for n in "gbmv"]
    got = run(op.nn.batch_norm, params, [x, g, b, m, v])
    c = (slice(None), None, None)
    want = (x - m[c]) / np.sqrt(v[c] + 1e-5) * g[c] + b[c]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _conv_ref(x, w, stride, pad, dil, groups):  # type: ignore[no-untyped-def]
    top, left, bottom, right = pad
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, h, wd = xp.shape
    o, ci, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    per = o // groups
    for oc in range(o):
        g = oc // per
        for y in range(oh):
            for xx in range(ow):
                ys, xs = y * stride[0], xx * stride[1]
                patch = xp[:, g * ci:(g + 1) * ci,
                           ys:ys + dil[0] * (kh - 1) + 1:dil[0],
                           xs:xs + dil[1] * (kw - 1) + 1:dil[1]]  # fmt: skip
                out[:, oc, y, xx] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out.astype(x.dtype)


@pytest.mark.parametrize(
    ("strides", "padding", "dilation", "groups"),
    [(1, 0, 1, 1), (2, 1, 1, 1), (1, (1, 0, 0, 1), 2, 1), (1, 1, 1, 2)],
)
def test_conv2d(strides, padding, dilation, groups) -> None:  # type: ignore[no-untyped-def]
    x = _f32(1, 4, 5, 5)
    w = _f32(2, 4 // groups, 3, 3)
    got = run(
        lambda d, k: op.nn.conv2d(d, k, strides=strides, padding=padding, dilation=dilation,
                                  groups=groups),
        [("x", (1, 4, 5, 5), "float32"), ("w", w.shape, "float32")],
        [x, w],
    )  # fmt: skip
    call = op.nn.conv2d  # same attribute normalisation as the op builder, for the reference
    del call
    pad = padding if isinstance(padding, tuple) else (padding,) * 4
    s, d = (strides,) * 2, (dilation,) * 2
    np.testing.assert_allclose(got, _conv_ref(x, w, s, pad, d, groups), rtol=1e-4, atol=1e-4)


def test_conv2d_symbolic_batch_is_one_pattern4_kernel() -> None:
    x, w = _f32(2, 1, 3, 3), _f32(1, 1, 2, 2)
    got = run(op.nn.conv2d, [("x", ("n", 1, 3, 3), "float32"), ("w", (1, 1, 2, 2), "float32")],
              [x, w])  # fmt: skip
    np.testing.assert_allclose(got, _conv_ref(x, w, (1, 1), (0,) * 4, (1, 1), 1), rtol=1e-5)
    mod, _, _ = legalize(op.nn.conv2d, [("x", (1, 1, 3, 3), "float32"),
                                        ("w", (1, 1, 2, 2), "float32")])  # fmt: skip
    assert prim_funcs(mod)["conv2d"].attrs["op_pattern"] == 4


def _pool_ref(x, k, s, pad, ceil_mode, kind, include_pad=False):  # type: ignore[no-untyped-def]
    n, c, h, w = x.shape
    top, left, bottom, right = pad

    def extent(size, lo, hi, kk, ss):  # type: ignore[no-untyped-def]
        num = size + lo + hi - kk + ((ss - 1) if ceil_mode else 0)
        return num // ss + 1

    oh, ow = extent(h, top, bottom, k, s), extent(w, left, right, k, s)
    out = np.zeros((n, c, oh, ow), x.dtype)
    for y in range(oh):
        for xx in range(ow):
            y0, x0 = y * s - top, xx * s - left
            ys = [i for i in range(y0, y0 + k) if 0 <= i < h]
            xs = [j for j in range(x0, x0 + k) if 0 <= j < w]
            win = x[:, :, ys][:, :, :, xs]
            if kind == "max":
                out[:, :, y, xx] = win.max(axis=(2, 3))
            else:
                if include_pad:
                    cy = len([i for i in range(y0, y0 + k) if -top <= i < h + bottom])
                    cx = len([j for j in range(x0, x0 + k) if -left <= j < w + right])
                    count = cy * cx
                else:
                    count = len(ys) * len(xs)
                out[:, :, y, xx] = win.sum(axis=(2, 3)) / count
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(("k", "s", "pad", "ceil_mode"), [(2, 2, 0, False), (3, 2, 1, True)])
def test_pool2d(kind: str, k: int, s: int, pad: int, ceil_mode: bool) -> None:
    x = _f32(1, 2, 5, 5)
    build = op.nn.max_pool2d if kind == "max" else op.nn.avg_pool2d
    got = run(lambda d: build(d, pool_size=k, strides=s, padding=pad, ceil_mode=ceil_mode),
              [("x", (1, 2, 5, 5), "float32")], [x])  # fmt: skip
    want = _pool_ref(x, k, s, (pad,) * 4, ceil_mode, kind)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_max_pool2d_int_symbolic() -> None:
    x = RNG.integers(-9, 9, size=(2, 1, 4, 4)).astype("int32")
    got = run(lambda d: op.nn.max_pool2d(d, pool_size=2, strides=2),
              [("x", ("n", 1, 4, 4), "int32")], [x])  # fmt: skip
    np.testing.assert_array_equal(got, _pool_ref(x, 2, 2, (0,) * 4, False, "max"))


@pytest.mark.parametrize(
    ("in_size", "out_size"), [((4, 4), (2, 2)), ((5, 3), (3, 2)), ((3, 3), None)]
)
def test_adaptive_avg_pool2d(in_size: tuple[int, int], out_size: tuple[int, int] | None) -> None:
    x = _f32(1, 2, *in_size)
    got = run(lambda d: op.nn.adaptive_avg_pool2d(d, out_size),
              [("x", (1, 2, *in_size), "float32")], [x])  # fmt: skip
    oh, ow = out_size or in_size
    want = np.zeros((1, 2, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            r0, r1 = i * in_size[0] // oh, -(-(i + 1) * in_size[0] // oh)
            c0, c1 = j * in_size[1] // ow, -(-(j + 1) * in_size[1] // ow)
            want[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "out_layout"),
    [
        ("NHWC", "HWIO", None),
        ("NHWC", "OHWI", "NCHW"),
        ("NCHW", "HWIO", "NHWC"),
        ("HWCN", "IOHW", None),
    ],
)
def test_conv2d_in_other_layouts(
    data_layout: str, kernel_layout: str, out_layout: str | None
) -> None:
    x, w = _f32(2, 4, 6, 5), _f32(3, 4, 3, 3)  # NCHW / OIHW: the reference's layouts
    x_in = np.ascontiguousarray(x.transpose(["NCHW".index(a) for a in data_layout]))
    w_in = np.ascontiguousarray(w.transpose(["OIHW".index(a) for a in kernel_layout]))
    got = run(
        lambda d, k: op.nn.conv2d(d, k, strides=(2, 1), padding=1, data_layout=data_layout,
                                  kernel_layout=kernel_layout, out_layout=out_layout),
        [("x", x_in.shape, "float32"), ("w", w_in.shape, "float32")],
        [x_in, w_in],
    )  # fmt: skip
    want = _conv_ref(x, w, (2, 1), (1,) * 4, (1, 1), 1)
    out = out_layout or data_layout
    np.testing.assert_allclose(
        got, want.transpose(["NCHW".index(a) for a in out]), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("kind", ["max", "avg", "adaptive"])
def test_pools_in_nhwc(kind: str) -> None:
    x = _f32(1, 2, 5, 5)
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if kind == "adaptive":
        build = lambda d: op.nn.adaptive_avg_pool2d(d, 1, layout="NHWC")  # noqa: E731
        want = x.mean(axis=(2, 3), keepdims=True)
    else:
        pool = op.nn.max_pool2d if kind == "max" else op.nn.avg_pool2d
        build = lambda d: pool(d, pool_size=3, strides=2, padding=1, layout="NHWC")  # noqa: E731
        want = _pool_ref(x, 3, 2, (1,) * 4, False, kind)
    got = run(build, [("x", x_nhwc.shape, "float32")], [x_nhwc])
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("rank", "data_layout", "kernel_layout"), [(1, "NWC", "WIO"), (3, "NDHWC", "DHWIO")]
)
def test_conv1d_and_conv3d_in_channel_last_layouts(
    rank: int, data_layout: str, kernel_layout: str
) -> None:
    canonical, kernel = ("NCW", "OIW") if rank == 1 else ("NCDHW", "OIDHW")
    spatial = (5,) * rank
    x, w = _f32(2, 3, *spatial), _f32(4, 3, *(2,) * rank)
    x_in = np.ascontiguousarray(x.transpose([canonical.index(a) for a in data_layout]))
    w_in = np.ascontiguousarray(w.transpose([kernel.index(a) for a in kernel_layout]))
    conv = op.nn.conv1d if rank == 1 else op.nn.conv3d
    got = run(
        lambda d, k: conv(d, k, data_layout=data_layout, kernel_layout=kernel_layout),
        [("x", x_in.shape, "float32"), ("w", w_in.shape, "float32")],
        [x_in, w_in],
    )
    want = run(conv, [("x", x.shape, "float32"), ("w", w.shape, "float32")], [x, w])
    order = [canonical.index(a) for a in data_layout]
    np.testing.assert_allclose(got, want.transpose(order), rtol=1e-5, atol=1e-5)
    pool = op.nn.max_pool1d if rank == 1 else op.nn.max_pool3d
    got = run(lambda d: pool(d, pool_size=2, layout=data_layout), [("x", x_in.shape, "float32")],
              [x_in])  # fmt: skip
    want = run(lambda d: pool(d, pool_size=2), [("x", x.shape, "float32")], [x])
    np.testing.assert_allclose(got, want.transpose(order), rtol=1e-6)


def _conv_transpose_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Transposed convolution as the scatter it is: each input element adds weight * value to
    a window of the (padded) output; then the padding is cut away. Any rank, groups 1."""
    n, _, *spatial = x.shape
    _, o, *kernel = w.shape
    full = [(s - 1) * stride + k for s, k in zip(spatial, kernel, strict=True)]
    out = np.zeros((n, o, *full), np.float64)
    for pos in np.ndindex(*spatial):
        window = tuple(slice(p * stride, p * stride + k) for p, k in zip(pos, kernel, strict=True))
        contribution = np.einsum("nc,co...->no...", x[(slice(None), slice(None), *pos)], w)
        out[(slice(None), slice(None), *window)] += contribution
    cut = tuple(slice(pad, f - pad) for f in full)
    return out[(slice(None), slice(None), *cut)].astype(x.dtype)


@pytest.mark.parametrize("stride", [1, 2])
def test_conv3d_transpose(stride: int) -> None:
    x, w = _f32(1, 2, 3, 2, 3), _f32(2, 3, 2, 3, 2)
    got = run(
        lambda d, k: op.nn.conv3d_transpose(d, k, strides=stride, padding=1),
        [("x", x.shape, "float32"), ("w", w.shape, "float32")],
        [x, w],
    )
    np.testing.assert_allclose(got, _conv_transpose_ref(x, w, stride, 1), rtol=1e-4, atol=1e-5)


def test_conv2d_transpose_in_nhwc() -> None:
    x, w = _f32(1, 2, 3, 4), _f32(2, 3, 3, 3)  # NCHW data, IOHW weight
    x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    w_hwoi = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    got = run(
        lambda d, k: op.nn.conv2d_transpose(d, k, strides=2, padding=1, data_layout="NHWC",
                                            kernel_layout="HWOI"),
        [("x", x_nhwc.shape, "float32"), ("w", w_hwoi.shape, "float32")],
        [x_nhwc, w_hwoi],
    )  # fmt: skip
    want = _conv_transpose_ref(x, w, 2, 1).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
