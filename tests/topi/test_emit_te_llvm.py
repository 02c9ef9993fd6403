"""topi through ``BlockBuilder.emit_te``, compiled for llvm, with static and symbolic shapes."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.ir import Var
from relaxvm.ir import relax as rx
from relaxvm.ir.relax.block_builder import BlockBuilder

RNG = np.random.default_rng(3)
A = RNG.standard_normal((5, 4)).astype("float32")


def test_import_relaxvm_topi() -> None:
    import relaxvm.topi

    assert relaxvm.topi.add is topi.add and relaxvm.topi.nn.relu is topi.nn.relu


def test_emit_te_names_the_kernel_and_infers_struct_info() -> None:
    n = Var("n")
    x = rx.Var("x", rx.TensorStructInfo([n, 4], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        lv = bb.emit_te(topi.sum, x, axis=1, keepdims=True)
        bb.emit_func_output(lv)
    assert lv.struct_info == rx.TensorStructInfo([n, 1], "float32")
    assert "sum" in bb.get()


@pytest.mark.parametrize("symbolic", [False, True])
def test_binary_with_scalar(llvm, symbolic) -> None:
    b = RNG.standard_normal(4).astype("float32")
    shapes = [[Var("n"), 4], [4]] if symbolic else None
    got = llvm(lambda x, y: topi.add(topi.multiply(x, 2), y), A, b, shapes=shapes)
    np.testing.assert_allclose(got, A * 2 + b, rtol=1e-6)


@pytest.mark.parametrize("symbolic", [False, True])
def test_softmax_and_reductions(llvm, symbolic) -> None:
    shapes = [[Var("n"), 4]] if symbolic else None
    e = np.exp(A - A.max(1, keepdims=True))
    np.testing.assert_allclose(
        llvm(topi.nn.softmax, A, shapes=shapes), e / e.sum(1, keepdims=True), rtol=1e-5
    )
    np.testing.assert_allclose(llvm(topi.sum, A, axis=0, shapes=shapes), A.sum(0), rtol=1e-5)
    np.testing.assert_array_equal(llvm(topi.argmax, A, axis=1, shapes=shapes), A.argmax(1))
    np.testing.assert_allclose(llvm(topi.prod, A, axis=1, shapes=shapes), A.prod(1), rtol=1e-5)


def test_strided_slice_and_concat_symbolic(llvm) -> None:
    shapes = [[Var("n"), 4]]
    got = llvm(lambda x: topi.strided_slice(x, [-1, 0], [0, 4], [-2, 1]), A, shapes=shapes)
    np.testing.assert_array_equal(got, A[-1:0:-2])
    got = llvm(lambda x: topi.concatenate([x, x], axis=0), A, shapes=shapes)
    np.testing.assert_array_equal(got, np.concatenate([A, A]))


def test_take_clip(llvm) -> None:
    idx = np.array([0, 9, -3], "int64")
    got = llvm(lambda x, i: topi.take(x, i, axis=0), A, idx)
    np.testing.assert_array_equal(got, np.take(A, idx, axis=0, mode="clip"))


def test_conv_pool_and_norm(llvm) -> None:
    x = RNG.standard_normal((1, 2, 6, 6)).astype("float32")
    w = RNG.standard_normal((3, 2, 3, 3)).astype("float32")
    conv = llvm(lambda d, f: topi.nn.conv2d_nchw(d, f, 1, 1, 1), x, w)
    assert conv.shape == (1, 3, 6, 6)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    np.testing.assert_allclose(
        conv[0, :, 2, 3], np.einsum("chw,ochw->o", xp[0, :, 2:5, 3:6], w), rtol=1e-4, atol=1e-5
    )
    pooled = llvm(lambda d: topi.nn.pool2d(d, 2, 2, 1, 0, "avg"), x)
    np.testing.assert_allclose(pooled, x.reshape(1, 2, 3, 2, 3, 2).mean((3, 5)), rtol=1e-5)
    adaptive = llvm(lambda d: topi.nn.adaptive_pool(d, 3, "max"), x)
    np.testing.assert_array_equal(adaptive, x.reshape(1, 2, 3, 2, 3, 2).max((3, 5)))
    gamma, beta = np.ones(4, "float32"), np.zeros(4, "float32")
    normed = llvm(lambda d, g, b: topi.nn.layer_norm(d, g, b, axis=-1), A, gamma, beta)
    want = (A - A.mean(1, keepdims=True)) / np.sqrt(A.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(normed, want, rtol=1e-4, atol=1e-5)


def test_split_emits_a_tuple_of_tensors() -> None:
    import relaxvm

    x = rx.Var("x", rx.TensorStructInfo([4, 6], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit_te(topi.split, x, 3, axis=1)
        bb.emit_func_output(out)
    assert out.struct_info == rx.TupleStructInfo([rx.TensorStructInfo([4, 2], "float32")] * 3)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target="llvm"), relaxvm.cpu())
    data = np.arange(24, dtype="float32").reshape(4, 6)
    parts = vm["main"](relaxvm.tensor(data))
    for got, want in zip(parts, np.split(data, 3, axis=1), strict=True):
        np.testing.assert_array_equal(got.numpy(), want)


def test_symbolic_spatial_conv_and_pools_match_static(llvm, interp) -> None:
    h, w = Var("h"), Var("w")
    data = RNG.standard_normal((1, 2, 7, 5)).astype("float32")
    weight = RNG.standard_normal((3, 2, 3, 3)).astype("float32")
    shapes = [[1, 2, h, w], [3, 2, 3, 3]]

    def conv(d, f):
        return topi.nn.conv2d_nchw(d, f, 2, 1, 1)

    np.testing.assert_allclose(
        llvm(conv, data, weight, shapes=shapes), interp(conv, data, weight), rtol=1e-5, atol=1e-5
    )

    def pool(d):
        return topi.nn.pool2d(d, 3, 2, 1, 1, "avg", ceil_mode=True, count_include_pad=False)

    np.testing.assert_allclose(llvm(pool, data, shapes=shapes[:1]), interp(pool, data), rtol=1e-6)

    def adaptive(d):
        return topi.nn.adaptive_pool(d, (3, 2), "avg")

    np.testing.assert_allclose(
        llvm(adaptive, data, shapes=shapes[:1]), interp(adaptive, data), rtol=1e-6
    )
