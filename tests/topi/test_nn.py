"""topi.nn against numpy references: activations, softmax, products, conv, pooling, norm."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir.tir import te

RNG = np.random.default_rng(2)
X = RNG.standard_normal((2, 3, 5, 6)).astype("float32")


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_relu_and_leaky_relu(interp) -> None:
    v = np.array([-2.0, -0.0, 0.5, np.nan], "float32")
    np.testing.assert_array_equal(interp(topi.nn.relu, v), np.maximum(v, 0))
    np.testing.assert_allclose(
        interp(lambda x: topi.nn.leaky_relu(x, 0.1), v), np.where(v > 0, v, v * np.float32(0.1))
    )


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_and_log_softmax(interp, axis) -> None:
    np.testing.assert_allclose(
        interp(topi.nn.softmax, X, axis=axis), _softmax(X, axis), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        interp(topi.nn.log_softmax, X, axis=axis), np.log(_softmax(X, axis)), rtol=1e-4, atol=1e-5
    )


def test_softmax_row_with_nan_is_nan(interp) -> None:
    v = np.array([[1.0, np.nan], [1.0, 2.0]], "float32")
    out = interp(topi.nn.softmax, v)
    assert np.isnan(out[0]).all() and not np.isnan(out[1]).any()


@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(interp, ta, tb) -> None:
    a = RNG.standard_normal((4, 3) if ta else (3, 4)).astype("float32")
    b = RNG.standard_normal((5, 4) if tb else (4, 5)).astype("float32")
    want = (a.T if ta else a) @ (b.T if tb else b)
    got = interp(lambda x, y: topi.nn.matmul(x, y, transpose_a=ta, transpose_b=tb), a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dense_with_bias_and_batch_matmul(interp) -> None:
    a = RNG.standard_normal((3, 4)).astype("float32")
    w = RNG.standard_normal((5, 4)).astype("float32")
    bias = RNG.standard_normal(5).astype("float32")
    np.testing.assert_allclose(
        interp(topi.nn.dense, a, w, bias), a @ w.T + bias, rtol=1e-5, atol=1e-5
    )
    p = RNG.standard_normal((2, 3, 4)).astype("float32")
    q = RNG.standard_normal((1, 5, 4)).astype("float32")  # batch 1 broadcasts; B is [b, N, K]
    np.testing.assert_allclose(
        interp(topi.nn.batch_matmul, p, q), p @ q.transpose(0, 2, 1), rtol=1e-5, atol=1e-5
    )
    r = RNG.standard_normal((2, 4, 5)).astype("float32")
    got = interp(lambda x, y: topi.nn.batch_matmul(x, y, transpose_b=False), p, r)
    np.testing.assert_allclose(got, p @ r, rtol=1e-5, atol=1e-5)


def test_int8_matmul_accumulates_in_out_dtype(interp) -> None:
    a = np.full((2, 64), 100, "int8")
    got = interp(lambda x, y: topi.nn.matmul(x, y, out_dtype="int32"), a, a.T.copy())
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype("int32") @ a.T.astype("int32"))


def test_pad(interp) -> None:
    v = np.arange(6, dtype="float32").reshape(2, 3)
    got = interp(lambda x: topi.nn.pad(x, [1, 0], [0, 2], pad_value=-1.0), v)
    np.testing.assert_array_equal(got, np.pad(v, [(1, 0), (0, 2)], constant_values=-1.0))


def _conv_ref(x, w, stride, pad, dil):
    n, _c, _h, _wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])])
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), "float32")
    for i in range(oh):
        for j in range(ow):
            patch = xp[
                :,
                :,
                i * stride[0] : i * stride[0] + dil[0] * (kh - 1) + 1 : dil[0],
                j * stride[1] : j * stride[1] + dil[1] * (kw - 1) + 1 : dil[1],
            ]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


@pytest.mark.parametrize(
    ("stride", "padding", "dilation", "pads"),
    [(1, 0, 1, (0, 0, 0, 0)), (2, 1, 1, (1, 1, 1, 1)), ((1, 2), (1, 0, 0, 2), 2, (1, 0, 0, 2))],
)
def test_conv2d_nchw(interp, stride, padding, dilation, pads) -> None:
    w = RNG.standard_normal((4, 3, 3, 2)).astype("float32")
    got = interp(lambda x, f: topi.nn.conv2d_nchw(x, f, stride, padding, dilation), X, w)
    s = (stride, stride) if isinstance(stride, int) else stride
    d = (dilation, dilation)
    np.testing.assert_allclose(got, _conv_ref(X, w, s, pads, d), rtol=1e-4, atol=1e-4)


def _pool_ref(x, k, s, pads, pool_type, include_pad):
    fill = -np.inf if pool_type == "max" else 0.0
    xp = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])], constant_values=np.nan)
    oh = (xp.shape[2] - k[0]) // s[0] + 1
    ow = (xp.shape[3] - k[1]) // s[1] + 1
    out = np.zeros((*x.shape[:2], oh, ow), "float32")
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0] : i * s[0] + k[0], j * s[1] : j * s[1] + k[1]]
            valid = ~np.isnan(win)
            vals = np.where(valid, win, fill)
            if pool_type == "max":
                out[:, :, i, j] = vals.max(axis=(2, 3))
            else:
                count = k[0] * k[1] if include_pad else valid.sum(axis=(2, 3))
                out[:, :, i, j] = vals.sum(axis=(2, 3)) / count
    return out


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("include_pad", [True, False])
def test_pool2d(interp, pool_type, include_pad) -> None:
    pads = (1, 0, 1, 1)
    got = interp(
        lambda x: topi.nn.pool2d(
            x, (3, 2), (2, 2), (1, 1), pads, pool_type, count_include_pad=include_pad
        ),
        X,
    )
    want = _pool_ref(X, (3, 2), (2, 2), pads, pool_type, include_pad)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_pool2d_ceil_mode_shape(interp) -> None:
    got = interp(lambda x: topi.nn.pool2d(x, 2, 2, 1, 0, "max", ceil_mode=True), X)
    assert got.shape == (2, 3, 3, 3)
    np.testing.assert_array_equal(got[:, :, 2, :2], X[:, :, 4, 0:4].reshape(2, 3, 2, 2).max(-1))


def test_global_and_adaptive_pool(interp) -> None:
    np.testing.assert_allclose(
        interp(topi.nn.global_pool, X, pool_type="avg"),
        X.mean(axis=(2, 3), keepdims=True),
        rtol=1e-5,
    )
    np.testing.assert_array_equal(
        interp(topi.nn.global_pool, X, pool_type="max"), X.max(axis=(2, 3), keepdims=True)
    )
    got = interp(lambda x: topi.nn.adaptive_pool(x, (2, 4), "max"), X)
    rows, cols = [(0, 3), (2, 5)], [(0, 2), (1, 3), (3, 5), (4, 6)]
    want = np.stack(
        [
            np.stack([X[:, :, r0:r1, c0:c1].max(axis=(2, 3)) for c0, c1 in cols], -1)
            for r0, r1 in rows
        ],
        -2,
    )
    np.testing.assert_array_equal(got, want)
    avg = interp(lambda x: topi.nn.adaptive_pool(x, 1, "avg"), X)
    np.testing.assert_allclose(avg, X.mean(axis=(2, 3), keepdims=True), rtol=1e-5)


def test_layer_norm(interp) -> None:
    gamma = RNG.standard_normal((5, 6)).astype("float32")
    beta = RNG.standard_normal((5, 6)).astype("float32")
    got = interp(
        lambda x, g, b: topi.nn.layer_norm(x, g, b, axis=(-2, -1), epsilon=1e-5), X, gamma, beta
    )
    mean = X.mean(axis=(2, 3), keepdims=True)
    var = X.var(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(
        got, (X - mean) / np.sqrt(var + 1e-5) * gamma + beta, rtol=1e-4, atol=1e-5
    )


def test_nn_errors() -> None:
    x = te.placeholder((2, 3, 5, 6), name="x")
    with pytest.raises(
        VMValueError, match="topi.nn.matmul: expects 2-D operands, got ranks 4 and 2"
    ):
        topi.nn.matmul(x, te.placeholder((3, 3), name="y"))
    with pytest.raises(VMValueError, match="topi.nn.matmul: reduction extents differ: 3 vs 4"):
        topi.nn.matmul(te.placeholder((2, 3), name="a"), te.placeholder((4, 2), name="b"))
    with pytest.raises(VMTypeError, match="give out_dtype to mix them"):
        topi.nn.dense(te.placeholder((2, 3), name="a"), te.placeholder((2, 3), "float16", name="b"))
    with pytest.raises(
        VMValueError, match="topi.nn.conv2d_nchw: Input has 3 channels but Filter expects 2"
    ):
        topi.nn.conv2d_nchw(x, te.placeholder((4, 2, 3, 3), name="w"), 1, 0, 1)
    with pytest.raises(
        VMValueError, match="topi.nn.pool2d: pool_type must be 'max' or 'avg', got 'l2'"
    ):
        topi.nn.pool2d(x, 2, 2, 1, 0, "l2")
    with pytest.raises(VMValueError, match="topi.nn.pool2d: only the NCHW layout is supported"):
        topi.nn.pool2d(x, 2, 2, 1, 0, "max", layout="NHWC")
    with pytest.raises(VMValueError, match="topi.nn.pad: pad_before and pad_after need 4 entries"):
        topi.nn.pad(x, [1, 1])
    with pytest.raises(VMValueError, match="topi.nn.softmax: axis 4 is out of range"):
        topi.nn.softmax(x, axis=4)
    with pytest.raises(VMValueError, match=r"topi.nn.layer_norm: gamma has shape \['5'\]"):
        topi.nn.layer_norm(x, te.placeholder((5,), name="g"), None, axis=-1)
    with pytest.raises(VMTypeError, match="topi.nn.softmax: expects a float tensor, got int32"):
        topi.nn.softmax(te.placeholder((2,), "int32", name="i"))


def test_pool2d_ceil_mode_drops_a_window_starting_in_the_trailing_pad(interp) -> None:
    v = np.arange(9, dtype="float32").reshape(1, 1, 3, 3)
    got = interp(lambda x: topi.nn.pool2d(x, 2, 2, 1, 1, "max", ceil_mode=True), v)
    # PyTorch's max_pool2d(kernel 2, stride 2, padding 1, ceil_mode) gives 2x2 here, not 3x3.
    np.testing.assert_array_equal(got, [[[[0.0, 2.0], [6.0, 8.0]]]])


def test_bias_add_and_flatten(interp) -> None:
    bias = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(interp(topi.nn.bias_add, X, bias), X + bias[:, None, None])
    last = np.arange(6, dtype="float32")
    np.testing.assert_array_equal(
        interp(lambda x, b: topi.nn.bias_add(x, b, axis=-1), X, last), X + last
    )
    np.testing.assert_array_equal(interp(topi.nn.flatten, X), X.reshape(2, -1))
    with pytest.raises(
        VMValueError, match="topi.nn.bias_add: bias has 4 elements but axis 1 of data has 3"
    ):
        topi.nn.bias_add(te.placeholder((2, 3), name="d"), te.placeholder((4,), name="b"))
