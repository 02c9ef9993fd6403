"""relax.nn conv1d, max_pool1d, avg_pool1d, adaptive_avg_pool1d, conv1d_transpose,
conv2d_transpose, conv3d, max_pool3d, avg_pool3d and adaptive_avg_pool3d: builders (attribute canonicalization and errors), StructInfo inference
(dtypes, symbolic shapes, unknown ranks, errors), the script form and numeric results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Analyzer
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import TensorStructInfo, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source
from relaxvm.testing.conformance.cases_nn_conv import conv_nd, conv_transpose_nd

N = SymVar("n")
W = SymVar("w")


def tvar(
    shape: Sequence[Any] | None = None, dtype: str | None = "float32", ndim: int = -1
) -> rx.Var:
    return rx.Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


def same(sinfo: Any, expected: Sequence[Any]) -> bool:
    assert isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None, sinfo
    analyzer = Analyzer()
    values = list(sinfo.shape_values)
    return len(values) == len(expected) and all(
        analyzer.can_prove_equal(a, b) for a, b in zip(values, expected, strict=True)
    )


# ---- conv1d -------------------------------------------------------------------------------------
def test_conv1d_shape_attrs_and_dtype() -> None:
    call = op.nn.conv1d(tvar((2, 4, 10)), tvar((6, 2, 3)), strides=2, padding=1, groups=2)
    assert call.attrs["strides"] == (2,) and call.attrs["padding"] == (1, 1)
    assert call.attrs["dilation"] == (1,) and call.attrs["groups"] == 2
    sinfo = infer(call)
    assert same(sinfo, [2, 6, 5]) and str(sinfo.dtype) == "float32"
    wide = infer(op.nn.conv1d(tvar((1, 3, 8), "int8"), tvar((2, 3, 3), "int8"), out_dtype="int32"))
    assert same(wide, [1, 2, 6]) and str(wide.dtype) == "int32"


def test_conv1d_symbolic_and_unknown() -> None:
    sinfo = infer(op.nn.conv1d(tvar((N, 4, W)), tvar((8, 4, 3)), padding=(0, 2), dilation=2))
    assert same(sinfo, [N, 8, W - 2])
    unknown = infer(op.nn.conv1d(tvar(None, "float32", ndim=3), tvar((8, 4, 3))))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 3
    assert unknown.shape is None and str(unknown.dtype) == "float32"
    any_rank = infer(op.nn.conv1d(tvar(None, None), tvar((8, 4, 3))))
    assert isinstance(any_rank, TensorStructInfo) and any_rank.ndim == 3
    assert any_rank.dtype is None


@pytest.mark.parametrize(
    ("data", "weight", "kwargs", "message"),
    [
        ((1, 4, 8), (2, 3, 3), {}, r"has 4 input channels but weight with shape \(2, 3, 3\) "
         r"expects 3 x groups=1 = 3"),
        ((1, 4, 2), (2, 4, 3), {}, r"does not fit data with shape \(1, 4, 2\): the output "
         r"width would be 0"),
        ((1, 4, 8, 1), (2, 4, 3), {}, r"data must have rank 3 \(NCW layout\), got shape "
         r"\(1, 4, 8, 1\)"),
        ((1, 4, 8), (3, 2, 3), {"groups": 2}, r"3 output channels, not a multiple of groups=2"),
    ],
    ids=["channels", "too-small", "rank", "groups"],
)  # fmt: skip
def test_conv1d_inference_errors(
    data: tuple[int, ...], weight: tuple[int, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.conv1d: .*" + message):
        infer(op.nn.conv1d(tvar(data), tvar(weight), **kwargs))


def test_conv1d_dtype_mismatch() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.conv1d: operands must have the same dtype"):
        infer(op.nn.conv1d(tvar((1, 4, 8)), tvar((2, 4, 3), "float16")))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"data_layout": "NCW4x"}, r"data_layout 'NCW4x': sub-axis 'x' splits no axis of 'NCW'"),
        ({"kernel_layout": "WIH"}, r"kernel_layout 'WIH' is not a permutation of 'OIW'"),
        ({"padding": (1, 2, 3)}, r"padding must have 1 or 2 entries, got \[1, 2, 3\]"),
        ({"padding": -1}, r"padding entries must be >= 0, got \[-1, -1\]"),
        ({"strides": 0}, r"strides entries must be >= 1, got \[0\]"),
        ({"dilation": (1, 1)}, r"dilation must have 1 entry, got \[1, 1\]"),
        ({"groups": 0}, r"groups must be >= 1, got 0"),
        ({"strides": 1.5}, r"strides must be an int or a list of ints, got 1\.5"),
    ],
    ids=["layout", "kernel-layout", "padding", "neg-padding", "strides", "dilation", "groups",
         "float"],
)  # fmt: skip
def test_conv1d_builder_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.conv1d: " + message):
        op.nn.conv1d(tvar((1, 4, 8)), tvar((2, 4, 3)), **kwargs)


# ---- 1-d pooling --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["max_pool1d", "avg_pool1d"])
def test_pool1d_shapes(name: str) -> None:
    build = getattr(op.nn, name)
    call = build(tvar((N, 3, 10), "int32"), 3, 2, 1, ceil_mode=True, count_include_pad=True)
    assert call.attrs["pool_size"] == (3,) and call.attrs["padding"] == (1, 1)
    assert call.attrs["ceil_mode"] is True and call.attrs["count_include_pad"] is True
    sinfo = infer(call)
    assert same(sinfo, [N, 3, 6]) and str(sinfo.dtype) == "int32"
    assert same(infer(build(tvar((1, 3, W)), 2, 2)), [1, 3, (W - 2) // 2 + 1])
    unknown = infer(build(tvar(None, "float32")))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 3


def test_pool1d_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.max_pool1d: pool_size \(3,\) does not fit "
                       r"data with shape \(1, 4, 2\): the output width would be 0"):  # fmt: skip
        infer(op.nn.max_pool1d(tvar((1, 4, 2)), 3))
    with pytest.raises(OpError, match=r"relax\.nn\.avg_pool1d: data must have rank 3"):
        infer(op.nn.avg_pool1d(tvar((1, 4)), 2))
    with pytest.raises(OpError, match=r"relax\.nn\.avg_pool1d: layout 'NW' is not a permutation"):
        op.nn.avg_pool1d(tvar((1, 4, 4)), 2, layout="NW")
    with pytest.raises(OpError, match=r"relax\.nn\.max_pool1d: pool_size entries must be >= 1"):
        op.nn.max_pool1d(tvar((1, 4, 4)), 0)


def test_adaptive_avg_pool1d() -> None:
    assert same(infer(op.nn.adaptive_avg_pool1d(tvar((N, 3, W)), 4)), [N, 3, 4])
    assert same(infer(op.nn.adaptive_avg_pool1d(tvar((N, 3, W)))), [N, 3, W])
    assert op.nn.adaptive_avg_pool1d(tvar((1, 3, 8)), [2]).attrs["output_size"] == (2,)
    with pytest.raises(
        OpError, match=r"relax\.nn\.adaptive_avg_pool1d: output_size entries must be >= 1"
    ):
        op.nn.adaptive_avg_pool1d(tvar((1, 4, 8)), 0)


# ---- transposed convolutions --------------------------------------------------------------------
def test_conv_transpose_shapes() -> None:
    call = op.nn.conv1d_transpose(tvar((2, 4, 10)), tvar((4, 3, 3)), 2, 1, 1)
    assert call.attrs["output_padding"] == (1,) and call.attrs["padding"] == (1, 1)
    assert same(infer(call), [2, 3, 20])  # (10 - 1) * 2 - 2 + 2 + 1 + 1
    two = op.nn.conv2d_transpose(tvar((N, 4, 5, W)), tvar((4, 3, 3, 3)), 2, 1, groups=2)
    assert two.attrs["padding"] == (1, 1, 1, 1) and two.attrs["strides"] == (2, 2)
    assert same(infer(two), [N, 6, 9, W * 2 - 1])
    typed = infer(
        op.nn.conv2d_transpose(tvar((1, 2, 2, 2), "int8"), tvar((2, 1, 1, 1), "int8"),
                               out_dtype="int32")
    )  # fmt: skip
    assert same(typed, [1, 1, 2, 2]) and str(typed.dtype) == "int32"
    unknown = infer(op.nn.conv2d_transpose(tvar(None, None), tvar((4, 3, 3, 3))))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 4


def test_conv_transpose_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.conv2d_transpose: output_padding must be "
                       r"smaller than strides, got output_padding \[2, 2\] and strides \[2, 2\]"):  # fmt: skip
        op.nn.conv2d_transpose(tvar((1, 4, 8, 8)), tvar((4, 2, 3, 3)), 2, output_padding=2)
    with pytest.raises(OpError, match=r"relax\.nn\.conv2d_transpose: data with shape "
                       r"\(1, 3, 8, 8\) has 3 input channels but weight with shape "
                       r"\(4, 2, 3, 3\) \(input channels first\) expects 4"):  # fmt: skip
        infer(op.nn.conv2d_transpose(tvar((1, 3, 8, 8)), tvar((4, 2, 3, 3))))
    with pytest.raises(OpError, match=r"relax\.nn\.conv1d_transpose: padding \[1, 1\] does not "
                       r"fit data with shape \(1, 4, 1\): the output width would be -1"):  # fmt: skip
        infer(op.nn.conv1d_transpose(tvar((1, 4, 1)), tvar((4, 2, 1)), padding=1))
    with pytest.raises(OpError, match=r"relax\.nn\.conv2d_transpose: kernel_layout 'IOHW4c': "
                       r"sub-axis 'c' splits no axis of 'IOHW'"):  # fmt: skip
        op.nn.conv2d_transpose(tvar((1, 4, 8, 8)), tvar((4, 2, 3, 3)), kernel_layout="IOHW4c")
    # Output channels first is a permutation like any other: (O=2, I=4) weights.
    swapped = op.nn.conv2d_transpose(tvar((1, 4, 8, 8)), tvar((2, 4, 3, 3)), kernel_layout="OIHW")
    assert same(infer(swapped), (1, 2, 10, 10))
    three = op.nn.conv3d_transpose(tvar((1, 4, 2, 3, 4)), tvar((4, 5, 2, 2, 2)), strides=2)
    assert same(infer(three), (1, 5, 4, 6, 8))
    with pytest.raises(OpError, match=r"relax\.nn\.conv1d_transpose: weight must have rank 3 "
                       r"\(IOW layout\)"):  # fmt: skip
        infer(op.nn.conv1d_transpose(tvar((1, 4, 8)), tvar((4, 2, 3, 3))))


# ---- 3-d ---------------------------------------------------------------------------------------
def test_conv3d_and_pool3d_shapes() -> None:
    data = tvar((N, 4, 5, 6, W))
    conv = op.nn.conv3d(data, tvar((6, 2, 3, 3, 3)), strides=(1, 2, 1), padding=1, groups=2)
    assert conv.attrs["padding"] == (1,) * 6 and conv.attrs["strides"] == (1, 2, 1)
    assert same(infer(conv), [N, 6, 5, 3, W])
    assert same(infer(op.nn.max_pool3d(data, 2, 2, ceil_mode=True)), [N, 4, 3, 3, (W - 1) // 2 + 1])
    avg = op.nn.avg_pool3d(data, (1, 2, 3), padding=(0, 1, 1))
    assert avg.attrs["padding"] == (0, 1, 1, 0, 1, 1)
    assert same(infer(avg), [N, 4, 5, 7, W])
    assert same(infer(op.nn.adaptive_avg_pool3d(data, 2)), [N, 4, 2, 2, 2])
    assert same(infer(op.nn.adaptive_avg_pool3d(data)), [N, 4, 5, 6, W])
    unknown = infer(op.nn.conv3d(tvar(None, "float32"), tvar((6, 2, 3, 3, 3))))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 5


def test_conv3d_and_pool3d_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.conv3d: weight must have rank 5 \(OIDHW "
                       r"layout\), got shape \(6, 2, 3, 3\)"):  # fmt: skip
        infer(op.nn.conv3d(tvar((1, 2, 4, 4, 4)), tvar((6, 2, 3, 3))))
    with pytest.raises(OpError, match=r"relax\.nn\.conv3d: padding must have 1, 3 or 6 "
                       r"entries, got \[1, 1\]"):  # fmt: skip
        op.nn.conv3d(tvar((1, 2, 4, 4, 4)), tvar((6, 2, 3, 3, 3)), padding=(1, 1))
    with pytest.raises(OpError, match=r"relax\.nn\.max_pool3d: pool_size \(5, 1, 1\) does not "
                       r"fit data with shape \(1, 2, 4, 4, 4\): the output depth, height and "
                       r"width would be 0, 4, 4"):  # fmt: skip
        infer(op.nn.max_pool3d(tvar((1, 2, 4, 4, 4)), (5, 1, 1)))
    with pytest.raises(OpError, match=r"relax\.nn\.avg_pool3d: out_layout 'NCHW' is not a"):
        op.nn.avg_pool3d(tvar((1, 2, 4, 4, 4)), 2, layout="NDHWC", out_layout="NCHW")


# ---- script form and numbers --------------------------------------------------------------------
SOURCE = """
from relaxvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 8), "float32"), w: R.Tensor((4, 2, 3), "float32")):
        y = R.nn.conv1d(x, w, strides=2, padding=1, groups=2)
        z = R.nn.conv1d_transpose(y, w, strides=2, output_padding=1)
        return z
"""


def test_script_form_infers() -> None:
    module = from_source(SOURCE)
    assert same(module["main"].ret_struct_info, [1, 2, 10])


def test_numpy_references_agree_with_the_definitions() -> None:
    # The transposed convolution is the adjoint of the convolution: <conv(x), y> == <x, conv^T(y)>.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 8))
    w = rng.standard_normal((6, 2, 3))
    y = rng.standard_normal((1, 6, 4))
    forward = conv_nd(x, w, (2,), (1, 1), (1,), groups=2)
    assert forward.shape == (1, 6, 4)
    # conv's OIW weight (6, 2, 3) is read as the IOW weight of the transposed op (6 -> 4).
    backward = conv_transpose_nd(y, w, (2,), (1, 1), (1,), (1,), groups=2)
    assert backward.shape == x.shape
    np.testing.assert_allclose((forward * y).sum(), (x * backward).sum(), rtol=1e-10)
