"""The kernel shapes of the ONNX models (issue 16), scheduled and compiled, against numpy.

* convolutions tiled over output channels (stride 2, 1x1 projections, narrow outputs), with
  odd sizes and a symbolic batch;
* a matmul whose epilogue is the erf form of GELU (vectorized float32 ``erf``);
* the reshape + transpose kernels that split and merge attention heads, whose flat-index
  divisions the injective schedule resolves from the loop ranges.

The parallel cutoff is zero, so the parallel paths run even on these small inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from relaxvm.ir import FloorDiv, FloorMod, IntImm, PrimExpr, Var, convert
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.expr_functor import post_order_visit, substitute
from relaxvm.ir.op import floordiv, floormod
from relaxvm.ir.tir import PrimFunc, erf, te
from relaxvm_llvm.schedule import CpuConfig, cpu_config, schedule_prim_func
from relaxvm_llvm.schedule import workloads as wl
from relaxvm_llvm.schedule.indexing import simplify_index

HOST = replace(cpu_config(None), parallel_cutoff=0, num_threads=2)
LANES = HOST.lanes("float32")


@pytest.fixture(autouse=True)
def _always_parallel() -> Iterator[None]:
    from relaxvm_llvm import parallel

    with parallel.always_parallel():
        yield


def build(func: PrimFunc, config: CpuConfig = HOST) -> tuple[Any, str]:
    from relaxvm_llvm.target import build as llvm_build

    scheduled = schedule_prim_func(func, config)
    return llvm_build(scheduled)[scheduled.name], scheduled.script()


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype("float32")


def conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    n, _, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow), "float64")
    for dy in range(kh):
        for dx in range(kw):
            patch = xp[:, :, dy : dy + stride * oh : stride, dx : dx + stride * ow : stride]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, dy, dx])
    return out


# ---- convolutions tiled over output channels ---------------------------------------------------
CONVS = [
    # batch, cin, h, w, cout, kernel, stride, pad
    (3, 5, 17, 15, 37, 3, 2, 1),  # odd everything, stride 2: edge rows and channels
    (2, 32, 16, 16, 64, 3, 2, 1),  # the CNN's strided 3x3
    (2, 8, 9, 7, 20, 1, 2, 0),  # a 1x1 stride-2 projection
    (2, 16, 4, 4, 2 * LANES + 3, 3, 1, 1),  # stride 1 on a narrow 4x4 output
    (1, 3, 5, 6, LANES, 2, 1, 0),  # exactly one vector of channels, one image
]


@pytest.mark.parametrize(("batch", "cin", "h", "w", "cout", "k", "stride", "pad"), CONVS)
def test_channel_tiled_conv(
    batch: int, cin: int, h: int, w: int, cout: int, k: int, stride: int, pad: int
) -> None:
    func = wl.conv2d_nchw(batch, cin, h, w, cout, kh=k, kw=k, stride=stride, pad=pad)
    kernel, text = build(func)
    assert "weight_packed" in text  # the channel tiles pack the weight
    x, wt = rand(batch, cin, h, w), rand(cout, cin, k, k, seed=1)
    ref = conv_ref(x, wt, stride, pad)
    out = np.full(ref.shape, np.nan, "float32")
    kernel(x, wt, out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bits", [128, 256, 512])
def test_channel_tiled_conv_other_vector_widths(bits: int) -> None:
    # The tile comes from the target: SSE, AVX2 and AVX-512 shapes all compute the same.
    config = replace(HOST, vector_bits=bits)
    lanes = config.lanes("float32")
    func = wl.conv2d_nchw(2, 7, 9, 9, 3 * lanes + 1, stride=2)
    kernel, text = build(func, config)
    assert "weight_packed" in text
    x, wt = rand(2, 7, 9, 9), rand(3 * lanes + 1, 7, 3, 3, seed=1)
    ref = conv_ref(x, wt, 2, 1)
    out = np.full(ref.shape, np.nan, "float32")
    kernel(x, wt, out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_channel_tiled_conv_symbolic_batch_bias_relu() -> None:
    n = Var("n")
    func = wl.conv2d_nchw(n, 6, 11, 9, 2 * LANES + 1, stride=2, bias=True, relu=True)
    kernel, text = build(func)
    assert "weight_packed" in text
    for batch in (1, 2, 5):
        x, wt, bias = (
            rand(batch, 6, 11, 9),
            rand(2 * LANES + 1, 6, 3, 3, seed=1),
            rand(2 * LANES + 1),
        )
        ref = np.maximum(conv_ref(x, wt, 2, 1) + bias[None, :, None, None], 0)
        out = np.full(ref.shape, np.nan, "float32")
        kernel(x, wt, bias, out)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_wide_stride_one_conv_keeps_the_default_tile() -> None:
    # A wide output row is a good vector axis: the default tile (no weight packing) stays.
    kernel, text = build(wl.conv2d_nchw(1, 4, 9, 4 * LANES, 8))
    assert "weight_packed" not in text
    x, wt = rand(1, 4, 9, 4 * LANES), rand(8, 4, 3, 3, seed=1)
    out = np.empty((1, 8, 9, 4 * LANES), "float32")
    kernel(x, wt, out)
    np.testing.assert_allclose(out, conv_ref(x, wt, 1, 1), rtol=1e-4, atol=1e-4)


# ---- erf and the GELU epilogue -------------------------------------------------------------------
def _erf64(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x.ravel()]).reshape(x.shape)


def test_vector_erf_accuracy_and_edge_values() -> None:
    a = te.placeholder((Var("n"),), "float32", name="A")
    b = te.compute(a.shape, lambda i: erf(a[i]), name="B")
    kernel, _ = build(te.create_prim_func([a, b], name="erf_vec"))
    x = np.concatenate(
        [np.linspace(-5, 5, 20001), np.geomspace(1e-30, 5, 3001), -np.geomspace(1e-30, 5, 3001)]
    ).astype("float32")
    out = np.empty_like(x)
    kernel(x, out)
    want = _erf64(x)
    ulps = np.abs(out - want) / np.spacing(np.abs(want).astype("float32")).astype("float64")
    assert float(ulps.max()) <= 4.0
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.25, -1.25, 9.0, -1e-45], "float32")
    got = np.empty_like(special)
    kernel(special, got)
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[1]) and np.isnan(got[4])
    np.testing.assert_allclose(got[5:], _erf64(special[5:]), rtol=3e-7, atol=1e-45)


def gelu_matmul(m: Any, n: int, k: int) -> PrimFunc:
    """``A @ B + bias`` then GELU as ONNX exporters write it, as FuseTIR leaves it."""
    a = te.placeholder((m, k), "float32", name="A")
    b = te.placeholder((k, n), "float32", name="B")
    bias = te.placeholder((n,), "float32", name="bias")
    r = te.reduce_axis((0, k), name="k")
    mm = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="T_matmul")
    biased = te.compute((m, n), lambda i, j: mm[i, j] + bias[j], name="T_add")
    gelu = te.compute(
        (m, n),
        lambda i, j: biased[i, j] * (erf(biased[i, j] / math.sqrt(2.0)) + 1.0) * 0.5,
        name="T_gelu",
    )
    return te.create_prim_func([a, b, bias, gelu], name="matmul_gelu")


@pytest.mark.parametrize(("m", "n", "k"), [(37, 3 * LANES + 5, 29), (64, 128, 64)])
def test_matmul_erf_gelu_epilogue(m: int, n: int, k: int) -> None:
    kernel, text = build(gelu_matmul(m, n, k))
    assert text.count("erf") >= 1
    a, b, bias = rand(m, k), rand(k, n, seed=1), rand(n, seed=2)
    z = a.astype("float64") @ b + bias
    ref = z * (_erf64(z / math.sqrt(2.0)) + 1.0) * 0.5
    out = np.empty((m, n), "float32")
    kernel(a, b, bias, out)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_matmul_erf_gelu_symbolic_rows() -> None:
    kernel, _ = build(gelu_matmul(Var("m"), 2 * LANES + 1, 40))
    for m in (1, 3, 17, 70):
        a, b, bias = rand(m, 40), rand(40, 2 * LANES + 1, seed=1), rand(2 * LANES + 1, seed=2)
        z = a.astype("float64") @ b + bias
        ref = z * (_erf64(z / math.sqrt(2.0)) + 1.0) * 0.5
        out = np.empty(ref.shape, "float32")
        kernel(a, b, bias, out)
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


# ---- attention head split / merge -------------------------------------------------------------
def _divisions(expr: PrimExpr) -> int:
    count = 0

    def visit(node: PrimExpr) -> None:
        nonlocal count
        count += isinstance(node, (FloorDiv, FloorMod))

    post_order_visit(expr, visit)
    return count


def split_heads(heads: int, dim: int, keys_last: bool = False) -> PrimFunc:
    """``(B, S, H*D) -> (B, H, S, D)`` (or ``(B, H, D, S)``) written as legalized reshape +
    transpose: every input index computed from the flat output position."""
    batch, seq = Var("batch"), Var("seq")
    x = te.placeholder((batch, seq, heads * dim), "float32", name="X")

    def value(b: Any, h: Any, s: Any, d: Any) -> Any:
        flat = ((b * seq + s) * heads + h) * dim + d
        width = heads * dim
        return x[floormod(floordiv(floordiv(flat, width), seq), batch),
                 floormod(floordiv(flat, width), seq), floormod(flat, width)]  # fmt: skip

    shape: tuple[Any, ...]
    if keys_last:
        shape = (batch, heads, dim, seq)
        out = te.compute(shape, lambda b, h, d, s: value(b, h, s, d), name="T_transpose")
    else:
        shape = (batch, heads, seq, dim)
        out = te.compute(shape, lambda b, h, s, d: value(b, h, s, d), name="T_transpose")
    return te.create_prim_func([x, out], name="split_heads")


def merge_heads(heads: int, dim: int) -> PrimFunc:
    """``(B, H, S, D) -> (B, S, H*D)`` as legalized transpose + reshape."""
    batch, seq = Var("batch"), Var("seq")
    x = te.placeholder((batch, heads, seq, dim), "float32", name="X")

    def value(b: Any, s: Any, c: Any) -> Any:
        flat = (b * seq + s) * (heads * dim) + c
        return x[floormod(floordiv(floordiv(floordiv(flat, dim), heads), seq), batch),
                 floormod(floordiv(flat, dim), heads),
                 floormod(floordiv(floordiv(flat, dim), heads), seq),
                 floormod(flat, dim)]  # fmt: skip

    out = te.compute((batch, seq, heads * dim), value, name="T_reshape")
    return te.create_prim_func([x, out], name="merge_heads")


@pytest.mark.parametrize(("heads", "dim"), [(4, 64), (3, 5), (1, 7)])
@pytest.mark.parametrize("keys_last", [False, True])
def test_split_heads(heads: int, dim: int, keys_last: bool) -> None:
    kernel, _ = build(split_heads(heads, dim, keys_last))
    for batch, seq in [(2, 7), (1, 1), (3, 64)]:
        x = rand(batch, seq, heads * dim)
        perm = (0, 2, 3, 1) if keys_last else (0, 2, 1, 3)
        ref = x.reshape(batch, seq, heads, dim).transpose(perm)
        out = np.full(ref.shape, np.nan, "float32")
        kernel(x, out)
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize(("heads", "dim"), [(4, 64), (3, 5)])
def test_merge_heads(heads: int, dim: int) -> None:
    kernel, _ = build(merge_heads(heads, dim))
    for batch, seq in [(2, 7), (1, 1), (3, 33)]:
        x = rand(batch, heads, seq, dim)
        ref = x.transpose(0, 2, 1, 3).reshape(batch, seq, heads * dim)
        out = np.full(ref.shape, np.nan, "float32")
        kernel(x, out)
        np.testing.assert_array_equal(out, ref)


def test_simplify_index_resolves_head_split_divisions() -> None:
    batch, seq = Var("batch"), Var("seq")
    b, h, s, d = Var("b"), Var("h"), Var("s"), Var("d")
    extents = {b: batch, h: convert(4), s: seq, d: convert(64)}
    flat = ((b * seq + s) * 4 + h) * 64 + d
    first = floormod(floordiv(floordiv(flat, 256), seq), batch)
    assert simplify_index(first, extents) is b
    assert _divisions(simplify_index(floormod(flat, 256), extents)) == 0
    # d may reach 63, so d // 32 is not 0: the division stays (and stays exact).
    kept = simplify_index(floordiv(b * 32 + d, 32), extents)
    assert _divisions(kept) == 1
    for bv, dv in [(0, 0), (2, 31), (5, 63)]:
        folded = Analyzer().simplify(substitute(kept, {b: convert(bv), d: convert(dv)}))
        assert isinstance(folded, IntImm) and folded.value == (bv * 32 + dv) // 32
