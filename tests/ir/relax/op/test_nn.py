"""relax.nn ops: activations, softmax, normalizations, conv2d and pooling."""

from __future__ import annotations

import pytest

from relaxvm.ir import Analyzer, ConstIntBound
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op import OpError, infer

from .conftest import assert_rank_only, assert_shape, tvar


@pytest.mark.parametrize("name", ["relu", "gelu", "silu"])
def test_activations(name: str) -> None:
    n = SymVar("n")
    assert_shape(infer(getattr(op.nn, name)(tvar((n, 8)))), (n, 8))
    assert_rank_only(infer(getattr(op.nn, name)(tvar(None, ndim=-1))), -1)


def test_relu_accepts_ints_but_gelu_needs_floats() -> None:
    assert_shape(infer(op.nn.relu(tvar((2,), "int32"))), (2,), "int32")
    with pytest.raises(OpError, match="relax.nn.gelu: data must have a float dtype, got int32"):
        infer(op.nn.gelu(tvar((2,), "int32")))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(name: str) -> None:
    n = SymVar("n")
    fn = getattr(op.nn, name)
    assert_shape(infer(fn(tvar((n, 10)))), (n, 10))
    assert_shape(infer(fn(tvar((2, 10)), axis=0)), (2, 10))
    assert_rank_only(infer(fn(tvar(None, ndim=-1), axis=5)), -1)
    with pytest.raises(OpError, match=rf"relax.nn.{name}: axis 2 is out of range"):
        infer(fn(tvar((2, 10)), axis=2))
    with pytest.raises(OpError, match=rf"relax.nn.{name}: data must have rank >= 1"):
        infer(fn(tvar(())))


def test_layer_norm_and_rms_norm() -> None:
    n = SymVar("n")
    call = op.nn.layer_norm(tvar((n, 4, 8)), tvar((8,)), tvar((8,)), axes=-1)
    assert_shape(infer(call), (n, 4, 8))
    call = op.nn.layer_norm(tvar((n, 4, 8)), tvar((4, 8)), tvar((4, 8)), axes=[1, 2])
    assert_shape(infer(call), (n, 4, 8))
    assert_shape(infer(op.nn.rms_norm(tvar((n, 16)), tvar((16,)))), (n, 16))
    assert_rank_only(infer(op.nn.rms_norm(tvar(None, ndim=-1), tvar((16,)))), -1)


def test_norm_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.nn.layer_norm: gamma with shape \(7,\) does not match data with shape "
        r"\(2, 8\) at axis 1: 7 vs 8",
    ):
        infer(op.nn.layer_norm(tvar((2, 8)), tvar((7,)), tvar((8,)), axes=-1))
    with pytest.raises(OpError, match=r"relax.nn.rms_norm: weight must have rank 1"):
        infer(op.nn.rms_norm(tvar((2, 8)), tvar((2, 8))))
    with pytest.raises(OpError, match=r"relax.nn.rms_norm: data and weight must have the same"):
        infer(op.nn.rms_norm(tvar((2, 8)), tvar((8,), "float16")))
    with pytest.raises(OpError, match=r"relax.nn.layer_norm: axis 2 is out of range"):
        infer(op.nn.layer_norm(tvar((2, 8)), tvar((8,)), tvar((8,)), axes=2))


def test_batch_norm_returns_the_normalized_tensor() -> None:
    n = SymVar("n")
    params = [tvar((16,)) for _ in range(4)]
    assert_shape(infer(op.nn.batch_norm(tvar((n, 16, 5, 5)), *params)), (n, 16, 5, 5))
    with pytest.raises(OpError, match=r"relax.nn.batch_norm: moving_var with shape \(15,\)"):
        infer(op.nn.batch_norm(tvar((2, 16, 5, 5)), *params[:3], tvar((15,))))


def _conv_ref(size: int, kernel: int, pad: int, stride: int, dilation: int) -> int:
    return (size + pad - dilation * (kernel - 1) - 1) // stride + 1


@pytest.mark.parametrize(
    ("strides", "padding", "dilation"),
    [(1, 0, 1), (2, 1, 1), ((2, 1), (1, 2), (1, 2)), (1, (0, 1, 2, 3), 1)],
)
def test_conv2d_static(strides: object, padding: object, dilation: object) -> None:
    call = op.nn.conv2d(tvar((1, 3, 32, 30)), tvar((8, 3, 3, 5)), strides, padding, dilation)
    attrs = call.attrs or {}
    top, left, bottom, right = attrs["padding"]
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilation"]
    expected = (
        1,
        8,
        _conv_ref(32, 3, top + bottom, sh, dh),
        _conv_ref(30, 5, left + right, sw, dw),
    )
    assert_shape(infer(call), expected)


def test_conv2d_symbolic_groups_and_errors() -> None:
    n, h, w = SymVar("n"), SymVar("h"), SymVar("w")
    sinfo = infer(op.nn.conv2d(tvar((n, 4, h, w)), tvar((8, 2, 3, 3)), padding=1, groups=2))
    assert_shape(sinfo, (n, 8, h, w))
    sinfo = infer(op.nn.conv2d(tvar((n, 4, h, w)), tvar((8, 4, 3, 3)), strides=2))
    assert_shape(sinfo, (n, 8, (h - 3) // 2 + 1, (w - 3) // 2 + 1))
    assert_rank_only(infer(op.nn.conv2d(tvar(None, ndim=-1), tvar((8, 4, 3, 3)))), 4)
    with pytest.raises(OpError, match=r"relax.nn.conv2d: data with shape \(1, 3, 8, 8\) has 3 in"):
        infer(op.nn.conv2d(tvar((1, 3, 8, 8)), tvar((8, 4, 3, 3))))
    with pytest.raises(OpError, match="not a multiple of groups=2"):
        infer(op.nn.conv2d(tvar((1, 4, 8, 8)), tvar((3, 2, 3, 3)), groups=2))
    with pytest.raises(OpError, match="the output height would be -1"):
        infer(op.nn.conv2d(tvar((1, 4, 2, 8)), tvar((3, 4, 4, 3))))
    with pytest.raises(OpError, match=r"relax.nn.conv2d: data must have rank 4"):
        infer(op.nn.conv2d(tvar((4, 8, 8)), tvar((3, 4, 3, 3))))
    with pytest.raises(OpError, match="padding must have 1, 2 or 4 entries"):
        op.nn.conv2d(tvar((1, 4, 8, 8)), tvar((3, 4, 3, 3)), padding=(1, 2, 3))
    with pytest.raises(OpError, match="data_layout 'NCHW4x': sub-axis 'x' splits no axis"):
        op.nn.conv2d(tvar((1, 8, 8, 4)), tvar((3, 4, 3, 3)), data_layout="NCHW4x")
    with pytest.raises(OpError, match="kernel_layout 'OIHH' is not a permutation of 'OIHW'"):
        op.nn.conv2d(tvar((1, 8, 8, 4)), tvar((3, 4, 3, 3)), kernel_layout="OIHH")
    with pytest.raises(OpError, match="groups must be >= 1"):
        op.nn.conv2d(tvar((1, 4, 8, 8)), tvar((3, 4, 3, 3)), groups=0)


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d"])
def test_pool2d(name: str) -> None:
    fn = getattr(op.nn, name)
    assert_shape(infer(fn(tvar((1, 3, 8, 8)), pool_size=2, strides=2)), (1, 3, 4, 4))
    assert_shape(infer(fn(tvar((1, 3, 7, 7)), 2, 2)), (1, 3, 3, 3))
    assert_shape(infer(fn(tvar((1, 3, 7, 7)), 2, 2, ceil_mode=True)), (1, 3, 4, 4))
    assert_shape(infer(fn(tvar((1, 3, 7, 7)), 3, 1, padding=1)), (1, 3, 7, 7))
    h = SymVar("h")
    analyzer = Analyzer()
    analyzer.update(h, ConstIntBound(1, 4096))
    sinfo = op.infer_struct_info(fn(tvar((1, 3, h * 2, 8)), 2, 2), analyzer)
    assert_shape(sinfo, (1, 3, h, 4))
    assert_rank_only(infer(fn(tvar(None, ndim=-1), 2)), 4)
    with pytest.raises(OpError, match=rf"relax.nn.{name}: pool_size \(5, 5\) does not fit"):
        infer(fn(tvar((1, 3, 4, 4)), 5))
    with pytest.raises(OpError, match="strides entries must be >= 1"):
        fn(tvar((1, 3, 4, 4)), 2, 0)


def test_adaptive_avg_pool2d() -> None:
    n = SymVar("n")
    assert_shape(infer(op.nn.adaptive_avg_pool2d(tvar((n, 3, 9, 9)), 1)), (n, 3, 1, 1))
    assert_shape(infer(op.nn.adaptive_avg_pool2d(tvar((n, 3, 9, 9)), (2, 3))), (n, 3, 2, 3))
    assert_shape(infer(op.nn.adaptive_avg_pool2d(tvar((n, 3, 9, 9)))), (n, 3, 9, 9))
    assert_rank_only(infer(op.nn.adaptive_avg_pool2d(tvar(None, ndim=4), 1)), 4)
    with pytest.raises(OpError, match="output_size entries must be >= 1"):
        op.nn.adaptive_avg_pool2d(tvar((1, 3, 9, 9)), 0)
    with pytest.raises(OpError, match=r"relax.nn.adaptive_avg_pool2d: data must have rank 4"):
        infer(op.nn.adaptive_avg_pool2d(tvar((3, 9, 9)), 1))


def test_hand_built_calls_use_default_attrs() -> None:
    from relaxvm.ir.relax import Call, Op

    call = Call(Op.get("relax.nn.conv2d"), [tvar((1, 3, 8, 8)), tvar((4, 3, 3, 3))])
    assert_shape(infer(call), (1, 4, 6, 6))
    call = Call(Op.get("relax.nn.max_pool2d"), [tvar((1, 3, 8, 8))], {"pool_size": (2, 2)})
    assert_shape(infer(call), (1, 3, 7, 7))


def test_conv2d_and_pools_in_other_layouts() -> None:
    # NHWC data, HWIO weight: the result follows the data layout unless out_layout says.
    sinfo = infer(
        op.nn.conv2d(
            tvar((2, 9, 10, 3)), tvar((3, 3, 3, 4)), strides=2, padding=1,
            data_layout="NHWC", kernel_layout="HWIO",
        )
    )  # fmt: skip
    assert_shape(sinfo, (2, 5, 5, 4))
    nchw = op.nn.conv2d(
        tvar((2, 9, 10, 3)), tvar((4, 3, 3, 3)), data_layout="NHWC", out_layout="NCHW"
    )
    assert_shape(infer(nchw), (2, 4, 7, 8))
    assert nchw.attrs["out_layout"] == "NCHW" and nchw.attrs["kernel_layout"] == "OIHW"
    # Canonical calls store no layout attribute (they print as before).
    assert "data_layout" not in op.nn.conv2d(tvar((1, 3, 8, 8)), tvar((4, 3, 3, 3))).attrs
    with pytest.raises(OpError, match=r"has 5 input channels but weight"):
        infer(op.nn.conv2d(tvar((1, 8, 8, 5)), tvar((3, 3, 3, 4)), data_layout="NHWC",
                           kernel_layout="HWIO"))  # fmt: skip
    assert_shape(infer(op.nn.max_pool2d(tvar((1, 8, 6, 3)), pool_size=2, layout="NHWC")),
                 (1, 7, 5, 3))  # fmt: skip
    assert_shape(
        infer(op.nn.avg_pool2d(tvar((1, 8, 6, 3)), pool_size=2, layout="NHWC", out_layout="NCHW")),
        (1, 3, 7, 5),
    )
    assert_shape(infer(op.nn.adaptive_avg_pool2d(tvar((1, 8, 6, 3)), 1, layout="NHWC")),
                 (1, 1, 1, 3))  # fmt: skip
    with pytest.raises(OpError, match="layout 'NHW' is not a permutation of 'NCHW'"):
        op.nn.max_pool2d(tvar((1, 8, 6, 3)), layout="NHW")
