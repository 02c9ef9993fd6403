"""Spatial ops in TVM's packed layouts (NCHW4c, OIHW4i4o...): legalized as layout conversions
around the canonical kernels, checked against numpy (the canonical result packed by hand)."""

from __future__ import annotations

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

import relaxvm
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, op
from relaxvm.testing.conformance.cases_image import resize2d_ref
from relaxvm.testing.conformance.cases_nn_conv import conv_nd, conv_transpose_nd
from relaxvm.testing.conformance.cases_nn_packed import pack, unpack

RNG = np.random.default_rng(7)


def _f32(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape).astype("float32")


def _param(name: str, value: np.ndarray) -> tuple[str, tuple[int, ...], str]:
    return (name, value.shape, str(value.dtype))


def test_pack_helpers_invert_each_other() -> None:
    x = _f32(2, 8, 3, 5)
    packed = pack(x, "NCHW", "NCHW4c")
    assert packed.shape == (2, 2, 3, 5, 4)
    np.testing.assert_array_equal(packed[1, 1, 2, 3, 2], x[1, 6, 2, 3])  # c = 1 * 4 + 2
    np.testing.assert_array_equal(unpack(packed, "NCHW4c", "NCHW"), x)
    w = _f32(8, 4, 3, 3)
    wp = pack(w, "OIHW", "OIHW4i4o")
    assert wp.shape == (2, 1, 3, 3, 4, 4)
    np.testing.assert_array_equal(wp[1, 0, 2, 1, 3, 2], w[6, 3, 2, 1])  # o = 4 + 2, i = 3
    np.testing.assert_array_equal(unpack(wp, "OIHW4i4o", "OIHW"), w)


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "out_layout"),
    [
        ("NCHW4c", "OIHW4i4o", None),
        ("NCHW4c", "OIHW", "NCHW"),
        ("NHWC", "OIHW4o", "NCHW2c"),
        ("NCHW", "HWIO4i", "NHWC4c"),
    ],
)
def test_conv2d_packed(data_layout: str, kernel_layout: str, out_layout: str | None) -> None:
    x, w = _f32(2, 8, 6, 5), _f32(8, 8, 3, 3)
    xp, wp = pack(x, "NCHW", data_layout), pack(w, "OIHW", kernel_layout)
    got = run(
        lambda d, k: op.nn.conv2d(d, k, strides=(2, 1), padding=1, data_layout=data_layout,
                                  kernel_layout=kernel_layout, out_layout=out_layout),
        [_param("x", xp), _param("w", wp)],
        [xp, wp],
    )  # fmt: skip
    want = conv_nd(x, w, (2, 1), (1,) * 4, (1, 1))
    np.testing.assert_allclose(got, pack(want, "NCHW", out_layout or data_layout), rtol=1e-4,
                               atol=1e-4)  # fmt: skip


def test_conv2d_packed_output_zero_fills_the_last_block() -> None:
    # 6 output channels in blocks of 4: TVM's shape rule gives 2 blocks, the tail is zeros.
    x, w = _f32(1, 3, 5, 5), _f32(6, 3, 2, 2)
    got = run(lambda d, k: op.nn.conv2d(d, k, out_layout="NCHW4c"),
              [_param("x", x), _param("w", w)], [x, w])  # fmt: skip
    want = conv_nd(x, w, (1, 1), (0,) * 4, (1, 1))
    assert got.shape == (1, 2, 4, 4, 4)
    np.testing.assert_allclose(got, pack(want, "NCHW", "NCHW4c"), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[:, 1, :, :, 2:], 0)


def test_conv2d_packed_with_groups_and_symbolic_batch() -> None:
    x, w = _f32(3, 8, 5, 5), _f32(4, 4, 3, 3)
    xp = pack(x, "NCHW", "NCHW4c")
    got = run(lambda d, k: op.nn.conv2d(d, k, groups=2, data_layout="NCHW4c"),
              [("x", ("n", 2, 5, 5, 4), "float32"), _param("w", w)], [xp, w])  # fmt: skip
    want = conv_nd(x, w, (1, 1), (0,) * 4, (1, 1), groups=2)
    np.testing.assert_allclose(got, pack(want, "NCHW", "NCHW4c"), rtol=1e-5, atol=1e-5)


def test_symbolic_channels_packed_and_back() -> None:
    x = _f32(1, 8, 4, 4)
    xp = pack(x, "NCHW", "NCHW4c")
    params = [("x", (1, "c", 4, 4, 4), "float32")]
    mod, _, _ = legalize(lambda d: op.nn.max_pool2d(d, 2, 2, layout="NCHW4c"), params)
    # c * 4 channels are provably whole blocks: the pack kernel needs no zero-fill select.
    assert "T.Select" not in prim_funcs(mod)["layout_pack"].script()
    got = run(lambda d: op.nn.max_pool2d(d, 2, 2, layout="NCHW4c"), params, [xp])
    want = x.reshape(1, 8, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(unpack(got, "NCHW4c", "NCHW"), want)


def test_packed_conversions_are_single_kernels() -> None:
    mod, _, _ = legalize(
        lambda d, k: op.nn.conv2d(d, k, data_layout="NCHW4c", kernel_layout="OIHW4i4o"),
        [("x", (1, 2, 5, 5, 4), "float32"), ("w", (1, 2, 3, 3, 4, 4), "float32")],
    )
    names = sorted(prim_funcs(mod))
    # One gather per packed operand, the canonical conv2d, one scatter back to NCHW4c.
    assert names == ["conv2d", "layout_pack", "layout_unpack", "layout_unpack1"]
    assert all(prim_funcs(mod)[n].attrs["op_pattern"] == 2 for n in names if "layout" in n)


@pytest.mark.parametrize("rank", [1, 3])
def test_conv1d_and_conv3d_packed(rank: int) -> None:
    canonical, kernel = ("NCW", "OIW") if rank == 1 else ("NCDHW", "OIDHW")
    data_layout = canonical + "4c"
    kernel_layout = kernel + "4i"
    x, w = _f32(2, 4, *(4,) * rank), _f32(3, 4, *(2,) * rank)
    xp, wp = pack(x, canonical, data_layout), pack(w, kernel, kernel_layout)
    conv = op.nn.conv1d if rank == 1 else op.nn.conv3d
    got = run(lambda d, k: conv(d, k, data_layout=data_layout, kernel_layout=kernel_layout,
                                out_layout=canonical),
              [_param("x", xp), _param("w", wp)], [xp, wp])  # fmt: skip
    want = conv_nd(x, w, (1,) * rank, (0,) * 2 * rank, (1,) * rank)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_packed() -> None:
    x, w = _f32(1, 4, 3, 3), _f32(4, 8, 2, 2)  # IOHW weight
    xp, wp = pack(x, "NCHW", "NCHW4c"), pack(w, "IOHW", "IOHW4i4o")
    got = run(lambda d, k: op.nn.conv2d_transpose(d, k, strides=2, data_layout="NCHW4c",
                                                  kernel_layout="IOHW4i4o"),
              [_param("x", xp), _param("w", wp)], [xp, wp])  # fmt: skip
    want = conv_transpose_nd(x, w, (2, 2), (0,) * 4, (0, 0), (1, 1))
    np.testing.assert_allclose(got, pack(want, "NCHW", "NCHW4c"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pools_packed(kind: str) -> None:
    x = _f32(2, 16, 6, 6)
    xp = pack(x, "NCHW", "NCHW16c")
    pool = op.nn.max_pool2d if kind == "max" else op.nn.avg_pool2d
    got = run(lambda d: pool(d, 2, 2, layout="NCHW16c"), [_param("x", xp)], [xp])
    want = run(lambda d: pool(d, 2, 2), [_param("x", x)], [x])
    # The same canonical kernel runs between the conversions: bit-identical results.
    np.testing.assert_array_equal(got, pack(want, "NCHW", "NCHW16c"))
    blocks = x.reshape(2, 16, 3, 2, 3, 2)
    expected = blocks.max(axis=(3, 5)) if kind == "max" else blocks.mean(axis=(3, 5))
    np.testing.assert_allclose(unpack(got, "NCHW16c", "NCHW"), expected, rtol=1e-5, atol=1e-6)


def test_adaptive_pool_packed_to_nhwc_and_pool1d() -> None:
    x = _f32(1, 8, 4, 6)
    xp = pack(x, "NCHW", "NCHW4c")
    got = run(lambda d: op.nn.adaptive_avg_pool2d(d, (2, 3), layout="NCHW4c", out_layout="NHWC"),
              [_param("x", xp)], [xp])  # fmt: skip
    want = x.reshape(1, 8, 2, 2, 3, 2).mean(axis=(3, 5)).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    x1 = _f32(2, 8, 6)
    got = run(lambda d: op.nn.max_pool1d(d, 2, 2, layout="NCW8c"),
              [_param("x", pack(x1, "NCW", "NCW8c"))], [pack(x1, "NCW", "NCW8c")])  # fmt: skip
    np.testing.assert_array_equal(unpack(got, "NCW8c", "NCW"), x1.reshape(2, 8, 3, 2).max(-1))


def test_resize2d_packed() -> None:
    x = _f32(1, 8, 4, 5)
    xp = pack(x, "NCHW", "NCHW4c")
    got = run(lambda d: op.image.resize2d(d, (3, 7), layout="NCHW4c"), [_param("x", xp)], [xp])
    want = resize2d_ref(x, (3, 7), "linear", "half_pixel")
    np.testing.assert_allclose(got, pack(want, "NCHW", "NCHW4c"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_packed_conv_and_pool_on_llvm(exec_mode: str) -> None:
    x, w = _f32(2, 8, 6, 6), _f32(8, 8, 3, 3)
    xp, wp = pack(x, "NCHW", "NCHW4c"), pack(w, "OIHW", "OIHW4i4o")
    xv = Var("x", TensorStructInfo(list(xp.shape), "float32"))
    wv = Var("w", TensorStructInfo(list(wp.shape), "float32"))
    bb = BlockBuilder()
    with bb.function("main", [xv, wv]):
        with bb.dataflow():
            y = bb.emit(op.nn.conv2d(xv, wv, padding=1, data_layout="NCHW4c",
                                     kernel_layout="OIHW4i4o"))  # fmt: skip
            y = bb.emit(op.nn.relu(y))
            out = bb.emit_output(op.nn.max_pool2d(y, 2, 2, layout="NCHW4c", out_layout="NCHW"))
        bb.emit_func_output(out)
    ex = relaxvm.compile(bb.get(), target="llvm", exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    got = vm["main"](relaxvm.tensor(xp), relaxvm.tensor(wp)).numpy()
    conv = np.maximum(conv_nd(x, w, (1, 1), (1,) * 4, (1, 1)), 0)
    want = conv.reshape(2, 8, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
