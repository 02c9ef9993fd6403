"""Scheduled kernels compiled by the LLVM target agree with numpy.

Static and symbolic shapes with odd sizes (edge tiles, tails), on the host CPU's vector
width, with the parallel cutoff at zero so the parallel paths run even on small inputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from relaxvm.ir import Var
from relaxvm.ir.tir import PrimFunc
from relaxvm_llvm.schedule import CpuConfig, cpu_config, schedule_prim_func
from relaxvm_llvm.schedule import workloads as wl

HOST = replace(cpu_config(None), parallel_cutoff=0, num_threads=2)


@pytest.fixture(autouse=True)
def _always_parallel() -> Iterator[None]:
    """Dispatch every parallel loop to the thread pool, however small its work."""
    try:
        from relaxvm_llvm import parallel
    except ImportError:  # no llvmlite: only the interpreter tests run
        yield
        return
    with parallel.always_parallel():
        yield


def build(func: PrimFunc, config: CpuConfig = HOST):  # type: ignore[no-untyped-def]
    from relaxvm_llvm.target import build as llvm_build

    scheduled = schedule_prim_func(func, config)
    return llvm_build(scheduled)[scheduled.name]


def rand(*shape: int, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + sum(shape))
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-7, 8, shape).astype(dtype)


def test_elementwise_add_static_and_symbolic() -> None:
    kernel = build(wl.add((37, 29)))
    a, b = rand(37, 29), rand(37, 29, seed=1)
    out = np.empty_like(a)
    kernel(a, b, out)
    np.testing.assert_array_equal(out, a + b)
    n, m = Var("n"), Var("m")
    kernel = build(wl.add((n, m), bshape=(m,)))
    for shape in [(5, 3), (1, 1), (7, 70), (64, 17)]:
        a, b = rand(*shape), rand(shape[1], seed=2)
        out = np.empty_like(a)
        kernel(a, b, out)
        np.testing.assert_array_equal(out, a + b)


def test_large_1d_add_parallel() -> None:
    kernel = build(wl.add((100_003,)))
    a, b = rand(100_003), rand(100_003, seed=3)
    out = np.empty_like(a)
    kernel(a, b, out)
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize(("m", "n", "k"), [(13, 37, 19), (64, 64, 64), (1, 70, 33), (130, 100, 80)])
def test_matmul_static(m: int, n: int, k: int) -> None:
    kernel = build(wl.matmul(m, n, k))
    a, b = rand(m, k), rand(k, n, seed=1)
    out = np.empty((m, n), "float32")
    kernel(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_symbolic_with_bias_relu() -> None:
    n = Var("n")
    kernel = build(wl.matmul(n, 96, 70, bias=True, relu=True))
    b, bias = rand(70, 96, seed=1), rand(96, seed=2)
    for rows in (1, 5, 6, 7, 64, 131):
        a = rand(rows, 70)
        out = np.empty((rows, 96), "float32")
        kernel(a, b, bias, out)
        np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_matmul_symbolic_columns_and_packing() -> None:
    m, n = Var("m"), Var("n")
    kernel = build(wl.matmul(m, n, 90))
    for rows, cols in [(50, 45), (3, 7), (40, 100)]:
        a, b = rand(rows, 90), rand(90, cols, seed=1)
        out = np.empty((rows, cols), "float32")
        kernel(a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_batch_matmul_dense_and_int32() -> None:
    kernel = build(wl.matmul(9, 20, 7, batch=3))
    a, b = rand(3, 9, 7), rand(3, 7, 20, seed=1)
    out = np.empty((3, 9, 20), "float32")
    kernel(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    kernel = build(wl.dense(10, 12, 33))
    a, w = rand(10, 33), rand(12, 33, seed=1)
    out = np.empty((10, 12), "float32")
    kernel(a, w, out)
    np.testing.assert_allclose(out, a @ w.T, rtol=1e-4, atol=1e-4)
    kernel = build(wl.matmul(11, 19, 5, dtype="int32"))
    a, b = rand(11, 5, dtype="int32"), rand(5, 19, dtype="int32", seed=1)
    out = np.empty((11, 19), "int32")
    kernel(a, b, out)
    np.testing.assert_array_equal(out, a @ b)


def _conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, _, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow), "float64")
    for dy in range(kh):
        for dx in range(kw):
            patch = xp[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, dy, dx])
    return out


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_bias_relu(stride: int) -> None:
    kernel = build(wl.conv2d_nchw(1, 5, 13, 11, 10, stride=stride, bias=True, relu=True))
    x, w, bias = rand(1, 5, 13, 11), rand(10, 5, 3, 3, seed=1), rand(10, seed=2)
    ref = np.maximum(_conv_ref(x, w, stride, 1) + bias[None, :, None, None], 0)
    out = np.empty(ref.shape, "float32")
    kernel(x, w, bias, out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_pooling_and_reductions() -> None:
    kernel = build(wl.max_pool2d(2, 3, 11, 12, stride=2))
    x = rand(2, 3, 11, 12)
    out = np.empty((2, 3, 5, 5), "float32")
    kernel(x, out)
    ref = np.max(
        [x[:, :, dy : dy + 9 : 2, dx : dx + 9 : 2] for dy in range(3) for dx in range(3)], axis=0
    )
    np.testing.assert_array_equal(out, ref)
    n, m = Var("n"), Var("m")
    kernel = build(wl.reduce_sum((n, m), axis=1))
    for shape in [(3, 100), (5, 7), (1, 1)]:
        x = rand(*shape)
        out = np.empty(shape[:1], "float32")
        kernel(x, out)
        np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    kernel = build(wl.reduce_sum((n, 37), axis=0, op="max"))
    x = rand(9, 37)
    out = np.empty((37,), "float32")
    kernel(x, out)
    np.testing.assert_array_equal(out, x.max(axis=0))


def test_softmax_and_layer_norm() -> None:
    n = Var("n")
    kernel = build(wl.softmax(n, 77))
    x = rand(6, 77)
    out = np.empty_like(x)
    kernel(x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    kernel = build(wl.layer_norm(n, 50))
    x, g, b = rand(4, 50), rand(50, seed=1), rand(50, seed=2)
    out = np.empty_like(x)
    kernel(x, g, b, out)
    mu = x.mean(axis=1, keepdims=True)
    ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_dense_static_and_symbolic_rows() -> None:
    n = Var("n")
    w = rand(50, 70, seed=1)
    for func, row_counts in ((wl.dense(40, 50, 70), (40,)), (wl.dense(n, 50, 70), (40, 3, 17))):
        kernel = build(func)
        for rows in row_counts:
            a = rand(rows, 70)
            out = np.empty((rows, 50), "float32")
            kernel(a, w, out)
            np.testing.assert_allclose(out, a @ w.T, rtol=1e-4, atol=1e-4)


def test_other_dtypes() -> None:
    from relaxvm.ir.tir import te

    n = Var("n")
    kernel = build(wl.matmul(n, 33, 20, dtype="float64"))
    a, b = rand(37, 20, dtype="float64"), rand(20, 33, dtype="float64", seed=1)
    out = np.empty((37, 33))
    kernel(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)
    x = te.placeholder((30, 40), "int8", name="A")
    y = te.placeholder((40, 50), "int8", name="B")
    k = te.reduce_axis((0, 40), name="k")
    z = te.compute(
        (30, 50),
        lambda i, j: te.sum(x[i, k].astype("int32") * y[k, j].astype("int32"), axis=k),
        name="C",
    )
    kernel = build(te.create_prim_func([x, y, z]))
    a8, b8 = rand(30, 40, dtype="int8"), rand(40, 50, dtype="int8", seed=1)
    out32 = np.empty((30, 50), "int32")
    kernel(a8, b8, out32)
    np.testing.assert_array_equal(out32, a8.astype("int32") @ b8.astype("int32"))
    kernel = build(wl.reduce_sum((7, 300), axis=1, dtype="uint8", op="max"))
    u8 = np.random.default_rng(3).integers(0, 255, (7, 300)).astype("uint8")
    out8 = np.empty((7,), "uint8")
    kernel(u8, out8)
    np.testing.assert_array_equal(out8, u8.max(axis=1))
    kernel = build(wl.add((5, 77), dtype="float16"))
    h1, h2 = rand(5, 77, dtype="float16"), rand(5, 77, dtype="float16", seed=1)
    out16 = np.empty_like(h1)
    kernel(h1, h2, out16)
    np.testing.assert_array_equal(out16, h1 + h2)
