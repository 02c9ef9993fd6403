"""Struct info of the spatial ops in TVM's packed layouts (NCHW16c, OIHW16i, OIHW4i4o...): the
shapes TVM v0.23 infers (its relax op tests), symbolic and rank-only inputs, and the errors."""

from __future__ import annotations

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir import floordiv
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op import OpError, infer

from .conftest import assert_rank_only, assert_shape, tvar


def test_conv_packed_data_kernel_and_output() -> None:
    assert_shape(
        infer(op.nn.conv1d(tvar((2, 4, 28, 16)), tvar((48, 4, 3, 16)), data_layout="NCW16c",
                           kernel_layout="OIW16i", out_layout="NWC16c")),
        (2, 26, 3, 16),
    )  # fmt: skip
    assert_shape(
        infer(op.nn.conv2d(tvar((2, 4, 28, 28, 16)), tvar((48, 4, 3, 3, 16)),
                           data_layout="NCHW16c", kernel_layout="OIHW16i",
                           out_layout="NHWC16c")),
        (2, 26, 26, 3, 16),
    )  # fmt: skip
    # Both kernel channel axes packed: (O/4, I/4, H, W, 4i, 4o).
    assert_shape(
        infer(op.nn.conv2d(tvar((1, 2, 6, 6, 4)), tvar((3, 2, 3, 3, 4, 4)), data_layout="NCHW4c",
                           kernel_layout="OIHW4i4o")),
        (1, 3, 4, 4, 4),
    )  # fmt: skip
    assert_shape(
        infer(op.nn.conv3d(tvar((1, 2, 4, 4, 4, 4)), tvar((8, 8, 3, 3, 3)),
                           data_layout="NCDHW4c")),
        (1, 2, 2, 2, 2, 4),
    )  # fmt: skip


def test_conv_packed_with_groups() -> None:
    assert_shape(
        infer(op.nn.conv2d(tvar((2, 8, 28, 28, 16)), tvar((48, 16, 3, 3)),
                           data_layout="NCHW16c", groups=8)),
        (2, 3, 26, 26, 16),
    )  # fmt: skip
    assert_shape(
        infer(op.nn.conv2d(tvar((2, 128, 28, 28)), tvar((48, 2, 3, 3, 8)),
                           kernel_layout="OIHW8i", groups=8)),
        (2, 48, 26, 26),
    )  # fmt: skip
    assert_shape(
        infer(op.nn.conv1d(tvar((2, 8, 28, 16)), tvar((48, 16, 3)), data_layout="NCW16c",
                           groups=8)),
        (2, 3, 26, 16),
    )  # fmt: skip


def test_conv_transpose_packed() -> None:
    assert_shape(
        infer(op.nn.conv2d_transpose(tvar((2, 4, 28, 28, 16)), tvar((4, 48, 3, 3, 16)),
                                     data_layout="NCHW16c", kernel_layout="IOHW16i",
                                     out_layout="NHWC16c")),
        (2, 30, 30, 3, 16),
    )  # fmt: skip
    assert_shape(
        infer(op.nn.conv1d_transpose(tvar((2, 8, 28, 16)), tvar((128, 6, 3)),
                                     data_layout="NCW16c", groups=8)),
        (2, 3, 30, 16),
    )  # fmt: skip


def test_symbolic_packed_shapes() -> None:
    n, c, c16, ih, iw, ko, kh, kw = (
        SymVar(s) for s in ("n", "c", "c16", "ih", "iw", "ko", "kh", "kw")
    )
    # A symbolic sub-axis extent is taken to be the factor (as TVM's shape rule binds it).
    sinfo = infer(op.nn.conv2d(tvar((n, c, ih, iw, c16)), tvar((ko, c, kh, kw, c16)),
                               data_layout="NCHW16c", kernel_layout="OIHW16i",
                               out_layout="NCHW"))  # fmt: skip
    assert_shape(sinfo, (n, ko, ih - kh + 1, iw - kw + 1))
    sinfo = infer(op.nn.max_pool2d(tvar((n, c, ih, iw, c16)), layout="NCHW16c", out_layout="NHWC"))
    assert_shape(sinfo, (n, ih, iw, c * 16))
    # Packed back: ceil(c * 16 / 16) simplifies to c.
    sinfo = infer(op.nn.max_pool2d(tvar((n, c, ih, iw, c16)), layout="NCHW16c"))
    assert_shape(sinfo, (n, c, ih, iw, 16))
    sinfo = infer(op.nn.adaptive_avg_pool2d(tvar((n, c, ih, iw, c16)), layout="NCHW16c",
                                            out_layout="NHWC"))  # fmt: skip
    assert_shape(sinfo, (n, ih, iw, c * 16))
    # Canonical channels packed: ceil(channels / factor) blocks, as TVM's shapediv.
    sinfo = infer(op.nn.conv2d(tvar((2, 3, 8, 8)), tvar((ko, 3, 3, 3)), out_layout="NCHW16c"))
    assert_shape(sinfo, (2, floordiv(ko + 15, 16), 6, 6, 16))


def test_channels_not_a_multiple_of_the_factor_round_up() -> None:
    # TVM infers ceil(50 / 16) = 4 blocks; legalization zero-fills the tail.
    sinfo = infer(op.nn.conv2d(tvar((2, 3, 8, 8)), tvar((50, 3, 3, 3)), out_layout="NCHW16c"))
    assert_shape(sinfo, (2, 4, 6, 6, 16))


def test_unknown_shapes_keep_the_layout_rank() -> None:
    w = tvar(None, ndim=4)
    assert_rank_only(infer(op.nn.conv2d(tvar(None, ndim=5), w, data_layout="NCHW16c")), 5)
    assert_rank_only(infer(op.nn.conv2d(tvar(None, ndim=4), w, out_layout="NCHW16c")), 5)
    assert_rank_only(infer(op.nn.conv1d(tvar(None, ndim=3), tvar(None, ndim=3),
                                        out_layout="NCW16c")), 4)  # fmt: skip
    assert_rank_only(infer(op.nn.max_pool2d(tvar(None, ndim=5), layout="NCHW16c")), 5)
    assert_rank_only(infer(op.nn.adaptive_avg_pool2d(tvar(None, ndim=4), out_layout="NCHW16c")), 5)
    assert_rank_only(infer(op.nn.conv2d_transpose(tvar(None, ndim=4), w, out_layout="NCHW16c")), 5)


def test_pools_and_resize_packed() -> None:
    x = tvar((2, 4, 32, 32, 16))
    for pool in (op.nn.max_pool2d, op.nn.avg_pool2d):
        sinfo = infer(pool(x, layout="NCHW16c", out_layout="NHWC16c"))
        assert_shape(sinfo, (2, 32, 32, 4, 16))
        assert_shape(infer(pool(x, 2, 2, layout="NCHW16c")), (2, 4, 16, 16, 16))
    sinfo = infer(op.nn.adaptive_avg_pool2d(x, layout="NCHW16c", out_layout="NHWC16c"))
    assert_shape(sinfo, (2, 32, 32, 4, 16))
    assert_shape(infer(op.nn.adaptive_avg_pool2d(x, 7, layout="NCHW16c")), (2, 4, 7, 7, 16))
    assert_shape(infer(op.nn.max_pool1d(tvar((2, 4, 9, 8)), 3, layout="NCW8c")), (2, 4, 7, 8))
    assert_shape(
        infer(op.nn.avg_pool3d(tvar((1, 1, 4, 4, 4, 4)), 2, 2, layout="NCDHW4c")),
        (1, 1, 2, 2, 2, 4),
    )
    assert_shape(infer(op.image.resize2d(x, (28, 28), layout="NCHW16c")), (2, 4, 28, 28, 16))


def test_packed_rank_errors() -> None:
    with pytest.raises(OpError, match=r"relax.nn.conv2d: data must have rank 5 \(NCHW16c layout\)"):
        infer(op.nn.conv2d(tvar((2, 3, 28, 28)), tvar((4, 3, 3, 3)), data_layout="NCHW16c"))
    with pytest.raises(OpError, match=r"weight must have rank 6 \(OIHW4i4o layout\)"):
        infer(op.nn.conv2d(tvar((2, 3, 8, 8)), tvar((4, 3, 3, 3)), kernel_layout="OIHW4i4o"))
    with pytest.raises(OpError, match=r"relax.nn.max_pool2d: data must have rank 5"):
        infer(op.nn.max_pool2d(tvar((2, 3, 28, 28)), layout="NCHW4c"))
    with pytest.raises(OpError, match=r"relax.image.resize2d: data must have rank 5"):
        infer(op.image.resize2d(tvar((2, 3, 28, 28)), (4, 4), layout="NCHW4c"))


def test_sub_axis_extent_must_match_its_factor() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.nn.max_pool2d: layout 'NCHW16c' splits axis C by 16, but the tensor's "
        r"axis 4 has extent 8",
    ):
        infer(op.nn.max_pool2d(tvar((2, 3, 28, 28, 8)), layout="NCHW16c"))
    with pytest.raises(OpError, match=r"kernel_layout 'OIHW4i4o' splits axis O by 4"):
        infer(op.nn.conv2d(tvar((1, 1, 6, 6, 4)), tvar((1, 1, 3, 3, 4, 2)),
                           data_layout="NCHW4c", kernel_layout="OIHW4i4o"))  # fmt: skip


def test_packed_channels_must_agree() -> None:
    # 4 x 4 packed data channels against a kernel expecting 8.
    with pytest.raises(OpError, match="has 16 input channels but weight"):
        infer(op.nn.conv2d(tvar((1, 4, 6, 6, 4)), tvar((2, 2, 3, 3, 4)), data_layout="NCHW4c",
                           kernel_layout="OIHW4i"))  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("NCHW0c", r"sub-axis 'c' needs a positive factor before it"),
        ("NCHWc", r"sub-axis 'c' needs a positive factor before it"),
        ("NCHW16", r"the factor 16 ends the layout"),
        ("NCH16W", r"a factor \(16\) may only precede a lower-case sub-axis, not 'W'"),
        ("NCHW4x", r"sub-axis 'x' splits no axis of 'NCHW'"),
        ("NCHW4c2c", r"axis C is split twice"),
        ("NCH-W", r"invalid character '-'"),
        ("NHW16c", r"is not a permutation of 'NCHW'"),
        ("OIHW", r"is not a permutation of 'NCHW'"),
    ],
)
def test_invalid_layout_strings(layout: str, message: str) -> None:
    with pytest.raises(OpError, match=rf"relax.nn.max_pool2d: layout '{layout}'.*{message}"):
        op.nn.max_pool2d(tvar((1, 3, 8, 8)), layout=layout)


def test_kernel_sub_axes_must_split_kernel_axes() -> None:
    with pytest.raises(OpError, match=r"kernel_layout 'OIHW16c': sub-axis 'c' splits no axis"):
        op.nn.conv2d(tvar((1, 3, 8, 8)), tvar((4, 3, 3, 3)), kernel_layout="OIHW16c")
    with pytest.raises(OpError, match=r"out_layout 'NCHW4i': sub-axis 'i' splits no axis"):
        op.nn.conv2d(tvar((1, 3, 8, 8)), tvar((4, 3, 3, 3)), out_layout="NCHW4i")


def test_packed_layouts_are_stored_on_the_call() -> None:
    call = op.nn.conv2d(tvar((1, 1, 8, 8, 4)), tvar((1, 1, 3, 3, 4, 4)), data_layout="NCHW4c",
                        kernel_layout="OIHW4i4o")  # fmt: skip
    assert call.attrs["data_layout"] == "NCHW4c"
    assert call.attrs["kernel_layout"] == "OIHW4i4o"
    assert call.attrs["out_layout"] == "NCHW4c"  # defaults to the data layout
