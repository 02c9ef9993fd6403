"""relax.nn leakyrelu, softplus, gelu_tanh, selu, prelu, dropout, pad, pixel_shuffle, group_norm,
instance_norm and relax.std, cumprod, median: builders, StructInfo inference (dtypes, symbolic
shapes, unknown ranks, errors), the script and printed forms."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Analyzer
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import TensorStructInfo, TupleStructInfo, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.text import RelaxPrinter
from relaxvm.script import from_source

N = SymVar("n")


def tvar(
    shape: Sequence[Any] | None = None, dtype: str | None = "float32", ndim: int = -1
) -> rx.Var:
    return rx.Var("x", TensorStructInfo(shape, dtype, ndim=ndim))


def shape_of(sinfo: Any) -> list[Any]:
    assert isinstance(sinfo, TensorStructInfo), sinfo
    assert sinfo.shape_values is not None, sinfo
    return list(sinfo.shape_values)


def same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    analyzer = Analyzer()
    return len(a) == len(b) and all(
        analyzer.can_prove_equal(x, y) for x, y in zip(a, b, strict=True)
    )


# ---- activations ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "build",
    [
        lambda x: op.nn.leakyrelu(x, 0.2),
        lambda x: op.nn.softplus(x, beta=2.0, threshold=5.0),
        op.nn.gelu_tanh,
    ],
    ids=["leakyrelu", "softplus", "gelu_tanh"],
)
def test_float_activations_keep_shape_and_dtype(build: Any) -> None:
    sinfo = infer(build(tvar((N, 8), "float16")))
    assert same(shape_of(sinfo), [N, 8]) and str(sinfo.dtype) == "float16"
    unknown = infer(build(tvar(None, None, ndim=-1)))
    assert isinstance(unknown, TensorStructInfo)
    assert unknown.ndim == -1 and unknown.dtype is None


@pytest.mark.parametrize("name", ["leakyrelu", "softplus", "gelu_tanh"])
def test_float_activations_reject_ints(name: str) -> None:
    with pytest.raises(
        OpError, match=rf"relax\.nn\.{name}: data must have a float dtype, got int32"
    ):
        infer(getattr(op.nn, name)(tvar((2,), "int32")))


def test_activation_attributes_and_defaults() -> None:
    assert dict(op.nn.leakyrelu(tvar((2,))).attrs) == {"alpha": 0.01}
    assert dict(op.nn.softplus(tvar((2,))).attrs) == {"beta": 1.0, "threshold": 20.0}
    assert op.nn.leakyrelu(tvar((2,)), 1).attrs["alpha"] == 1.0
    assert isinstance(op.nn.leakyrelu(tvar((2,)), 1).attrs["alpha"], float)


def test_activation_attribute_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.leakyrelu: alpha must be a number, got '0\.1'"):
        op.nn.leakyrelu(tvar((2,)), "0.1")  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax\.nn\.softplus: beta must be nonzero, got 0\.0"):
        op.nn.softplus(tvar((2,)), beta=0)
    with pytest.raises(OpError, match=r"relax\.nn\.softplus: threshold must be finite, got inf"):
        op.nn.softplus(tvar((2,)), threshold=float("inf"))
    with pytest.raises(OpError, match=r"relax\.nn\.leakyrelu: argument 0 must be a Relax"):
        op.nn.leakyrelu(np.ones(2))  # type: ignore[arg-type]


# ---- prelu ------------------------------------------------------------------------------------
def test_prelu_inference() -> None:
    c = SymVar("c")
    sinfo = infer(op.nn.prelu(tvar((N, c, 4)), tvar((c,))))
    assert same(shape_of(sinfo), [N, c, 4]) and str(sinfo.dtype) == "float32"
    assert same(shape_of(infer(op.nn.prelu(tvar((N, 3)), tvar((3,)), axis=-1))), [N, 3])
    # alpha of unknown shape, data of unknown rank: nothing to check yet.
    assert same(shape_of(infer(op.nn.prelu(tvar((2, 3)), tvar(None, ndim=1)))), [2, 3])
    unknown = infer(op.nn.prelu(tvar(None, ndim=-1), tvar((3,)), axis=7))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == -1
    assert op.nn.prelu(tvar((2, 3)), tvar((3,))).attrs["axis"] == 1


def test_prelu_errors() -> None:
    with pytest.raises(OpError, match=r"relax\.nn\.prelu: data must have a float dtype, got int8"):
        infer(op.nn.prelu(tvar((2, 3), "int8"), tvar((3,), "int8")))
    with pytest.raises(OpError, match=r"relax\.nn\.prelu: axis 2 is out of range .* rank 2"):
        infer(op.nn.prelu(tvar((2, 3)), tvar((3,)), axis=2))
    with pytest.raises(
        OpError, match=r"relax\.nn\.prelu: alpha must be a 1-d tensor, got shape \(1, 3\)"
    ):
        infer(op.nn.prelu(tvar((2, 3)), tvar((1, 3))))
    with pytest.raises(
        OpError,
        match=r"relax\.nn\.prelu: alpha with shape \(4,\) must have one slope per channel: "
        r"data with shape \(2, 3\) has 3 at axis 1",
    ):
        infer(op.nn.prelu(tvar((2, 3)), tvar((4,))))
    with pytest.raises(OpError, match=r"relax\.nn\.prelu: alpha must have data's dtype float32"):
        infer(op.nn.prelu(tvar((2, 3)), tvar((3,), "float16")))
    with pytest.raises(OpError, match=r"relax\.nn\.prelu: data must have rank >= 1"):
        infer(op.nn.prelu(tvar(()), tvar((1,))))
    with pytest.raises(OpError, match=r"relax\.nn\.prelu: axis must be an int, got 1\.0"):
        op.nn.prelu(tvar((2, 3)), tvar((3,)), axis=1.0)  # type: ignore[arg-type]


# ---- dropout ----------------------------------------------------------------------------------
def test_dropout_returns_output_and_mask() -> None:
    sinfo = infer(op.nn.dropout(tvar((N, 4)), rate=0.3))
    assert isinstance(sinfo, TupleStructInfo) and len(sinfo.fields) == 2
    for field in sinfo.fields:
        assert same(shape_of(field), [N, 4]) and str(field.dtype) == "float32"
    assert op.nn.dropout(tvar((2,))).attrs["rate"] == 0.5


def test_dropout_accepts_any_dtype_and_checks_rate() -> None:
    sinfo = infer(op.nn.dropout(tvar((2,), "int32"), rate=1.0))
    assert isinstance(sinfo, TupleStructInfo)
    assert [str(f.dtype) for f in sinfo.fields] == ["int32", "int32"]
    with pytest.raises(OpError, match=r"relax\.nn\.dropout: rate must be in \[0, 1\], got 1\.5"):
        op.nn.dropout(tvar((2,)), rate=1.5)


# ---- pad --------------------------------------------------------------------------------------
def test_pad_inference() -> None:
    call = op.nn.pad(tvar((N, 4), "int32"), [1, 2, 0, 3])
    assert dict(call.attrs) == {"pad_width": (1, 2, 0, 3), "pad_mode": "constant", "pad_value": 0.0}
    sinfo = infer(call)
    assert same(shape_of(sinfo), [N + 3, 7]) and str(sinfo.dtype) == "int32"
    rank_only = infer(op.nn.pad(tvar(None, ndim=3), [0] * 6, pad_mode="edge"))
    assert isinstance(rank_only, TensorStructInfo) and rank_only.ndim == 3
    assert rank_only.shape_values is None
    # Unknown rank: pad_width fixes it.
    unknown = infer(op.nn.pad(tvar(None, ndim=-1), [1, 1, 2, 2]))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 2
    assert same(shape_of(infer(op.nn.pad(tvar((N, 4)), [0, 0, 3, 3], "reflect"))), [N, 10])


def test_pad_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax\.nn\.pad: pad_width must have 2 entries \(before, after\) per axis of data "
        r"with shape \(2, 3\), i\.e\. 4, got 2: \[1, 1\]",
    ):
        infer(op.nn.pad(tvar((2, 3)), [1, 1]))
    with pytest.raises(OpError, match=r"relax\.nn\.pad: pad_width must be a list of non-negative"):
        op.nn.pad(tvar((2, 3)), [1, -1, 0, 0])
    assert op.nn.pad(tvar((2, 3)), ((1, 2), (0, 3))).attrs["pad_width"] == (1, 2, 0, 3)
    with pytest.raises(
        OpError, match=r"relax\.nn\.pad: each pad_width pair must be \(before, after\)"
    ):
        op.nn.pad(tvar((2, 3)), ((1, 2, 3), (0, 3)))
    with pytest.raises(OpError, match=r"relax\.nn\.pad: pad_width must have an even length"):
        op.nn.pad(tvar((2, 3)), [1, 1, 0])
    with pytest.raises(
        OpError,
        match=r"relax\.nn\.pad: pad_mode must be one of constant, edge, reflect, got 'wrap'",
    ):
        op.nn.pad(tvar((2, 3)), [0, 0, 1, 1], pad_mode="wrap")
    with pytest.raises(
        OpError,
        match=r"relax\.nn\.pad: reflect padding of axis 1 needs pad widths below its extent 3, "
        r"got \(3, 0\)",
    ):
        infer(op.nn.pad(tvar((2, 3)), [0, 0, 3, 0], pad_mode="reflect"))
    with pytest.raises(OpError, match=r"relax\.nn\.pad: edge padding of axis 0 needs a non-empty"):
        infer(op.nn.pad(tvar((0, 3)), [1, 0, 0, 0], pad_mode="edge"))


# ---- group_norm / instance_norm ---------------------------------------------------------------
def test_channel_norm_inference() -> None:
    c = SymVar("c")
    call = op.nn.group_norm(tvar((N, 8, 5)), tvar((8,)), tvar((8,)), 4, 1, [2], epsilon=1e-3)
    assert dict(call.attrs) == {
        "num_groups": 4,
        "channel_axis": 1,
        "axes": (2,),
        "epsilon": 1e-3,
        "center": True,
        "scale": True,
    }
    assert same(shape_of(infer(call)), [N, 8, 5])
    call = op.nn.instance_norm(tvar((N, c, 5)), tvar((c,)), tvar((c,)), channel_axis=1, axes=-1)
    assert call.attrs["axes"] == (-1,)
    assert same(shape_of(infer(call)), [N, c, 5])
    # Symbolic channels: divisibility by num_groups is a run-time matter.
    assert same(
        shape_of(infer(op.nn.group_norm(tvar((2, c)), tvar((c,)), tvar((c,)), 3, 1, []))), [2, c]
    )
    unknown = infer(op.nn.group_norm(tvar(None, ndim=-1), tvar((4,)), tvar((4,)), 2, 1, [2]))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == -1


def test_channel_norm_errors() -> None:
    g, b = tvar((8,)), tvar((8,))
    with pytest.raises(
        OpError,
        match=r"relax\.nn\.group_norm: the 8 channels of data with shape \(2, 8, 5\) do not "
        r"split into num_groups=3 groups",
    ):
        infer(op.nn.group_norm(tvar((2, 8, 5)), g, b, 3, 1, [2]))
    with pytest.raises(
        OpError, match=r"relax\.nn\.group_norm: channel_axis 1 must not be one of the normalized"
    ):
        infer(op.nn.group_norm(tvar((2, 8, 5)), g, b, 2, 1, [1, 2]))
    with pytest.raises(OpError, match=r"relax\.nn\.instance_norm: channel_axis 3 is out of range"):
        infer(op.nn.instance_norm(tvar((2, 8, 5)), g, b, 3, [2]))
    with pytest.raises(OpError, match=r"relax\.nn\.instance_norm: data must have a float dtype"):
        infer(op.nn.instance_norm(tvar((2, 8, 5), "int32"), g, b, 1, [2]))
    with pytest.raises(
        OpError,
        match=r"relax\.nn\.instance_norm: beta with shape \(7,\) must have one entry per "
        r"channel: data with shape \(2, 8, 5\) has 8",
    ):
        infer(op.nn.instance_norm(tvar((2, 8, 5)), g, tvar((7,)), 1, [2]))
    with pytest.raises(OpError, match=r"relax\.nn\.group_norm: gamma must be a 1-d tensor"):
        infer(op.nn.group_norm(tvar((2, 8, 5)), tvar((8, 1)), b, 2, 1, [2]))
    with pytest.raises(OpError, match=r"relax\.nn\.group_norm: gamma must have data's dtype"):
        infer(op.nn.group_norm(tvar((2, 8, 5)), tvar((8,), "float16"), b, 2, 1, [2]))
    with pytest.raises(OpError, match=r"relax\.nn\.group_norm: num_groups must be >= 1, got 0"):
        op.nn.group_norm(tvar((2, 8, 5)), g, b, 0, 1, [2])
    with pytest.raises(OpError, match=r"relax\.nn\.instance_norm: epsilon must be a number"):
        op.nn.instance_norm(tvar((2, 8, 5)), g, b, 1, [2], epsilon="small")  # type: ignore[arg-type]


# ---- std / cumprod ----------------------------------------------------------------------------
def test_std_is_a_reduction() -> None:
    sinfo = infer(op.std(tvar((N, 4, 5), "int32"), axis=[0, -1]))
    assert same(shape_of(sinfo), [4]) and str(sinfo.dtype) == "int32"
    assert same(shape_of(infer(op.std(tvar((N, 4)), keepdims=True))), [1, 1])
    assert shape_of(infer(op.std(tvar(None, ndim=-1)))) == []
    assert dict(op.std(tvar((2,)), 0).attrs) == {"axis": (0,), "keepdims": False}
    with pytest.raises(OpError, match=r"relax\.std: axis 2 is out of range"):
        infer(op.std(tvar((2, 3)), axis=2))


def test_cumprod_inference() -> None:
    call = op.cumprod(tvar((N, 4), "int32"), axis=-1, dtype="int64", exclusive=True)
    assert dict(call.attrs) == {"axis": -1, "dtype": "int64", "exclusive": True}
    sinfo = infer(call)
    assert same(shape_of(sinfo), [N, 4]) and str(sinfo.dtype) == "int64"
    flat = infer(op.cumprod(tvar((N, 4))))
    assert same(shape_of(flat), [N * 4]) and str(flat.dtype) == "float32"
    rank_only = infer(op.cumprod(tvar(None, ndim=-1)))
    assert isinstance(rank_only, TensorStructInfo) and rank_only.ndim == 1
    with pytest.raises(OpError, match=r"relax\.cumprod: axis 2 is out of range"):
        infer(op.cumprod(tvar((2, 3)), axis=2))
    with pytest.raises(OpError, match=r"relax\.cumprod: data must have rank >= 1 to scan"):
        infer(op.cumprod(tvar(()), axis=0))
    with pytest.raises(OpError, match=r"relax\.cumprod: axis must be an int, got 'x'"):
        op.cumprod(tvar((2,)), axis="x")  # type: ignore[arg-type]


def test_median_returns_indices_for_one_axis() -> None:
    sinfo = infer(op.median(tvar((N, 4), "int32"), axis=-1, keepdims=True))
    assert isinstance(sinfo, TupleStructInfo)
    values, indices = sinfo.fields
    assert same(shape_of(values), [N, 1]) and str(values.dtype) == "int32"
    assert same(shape_of(indices), [N, 1]) and str(indices.dtype) == "int64"
    # No axis, or several: the values alone.
    assert shape_of(infer(op.median(tvar((N, 4))))) == []
    both = infer(op.median(tvar((N, 4)), axis=[0, 1], keepdims=True))
    assert same(shape_of(both), [1, 1])
    unknown = infer(op.median(tvar(None, ndim=-1), axis=0))
    assert isinstance(unknown, TupleStructInfo)
    assert [f.ndim for f in unknown.fields] == [-1, -1]
    with pytest.raises(OpError, match=r"relax\.median: axis 2 is out of range"):
        infer(op.median(tvar((2, 3)), axis=2))


# ---- script, printer, end to end --------------------------------------------------------------
SCRIPT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), a: R.Tensor((3,), "float32")):
        with R.dataflow():
            y = R.nn.leakyrelu(x, alpha=0.5)
            z = R.nn.prelu(y, a, axis=1)
            s = R.nn.softplus(z, beta=1.0, threshold=20.0)
            g = R.nn.gelu_tanh(s)
            p = R.nn.pad(g, [1, 0, 0, 2], pad_mode="constant", pad_value=7.0)
            d = R.nn.dropout(p, rate=0.5)
            out = d[0]
            R.output(out)
        return out
"""


def test_script_parses_every_op_with_its_struct_info() -> None:
    # Running the ops is the conformance matrix's job (every target, NaN/inf/-0.0 edges).
    main = from_source(SCRIPT)["main"]
    sinfo = main.ret_struct_info
    assert isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == "float32"
    n = main.params[0].struct_info.shape_values[0]
    assert same(shape_of(sinfo), [n + 1, 5])
    text = main.script()
    for name in ("leakyrelu(x, alpha=0.5)", "prelu(y, a, axis=1)", "gelu_tanh(s)", "dropout(p"):
        assert f"R.nn.{name}" in text


@pytest.mark.parametrize(
    "call",
    [
        lambda x, v: op.nn.leakyrelu(x, alpha=0.2),
        lambda x, v: op.nn.softplus(x, beta=2.0, threshold=10.0),
        lambda x, v: op.nn.gelu_tanh(x),
        lambda x, v: op.nn.prelu(x, v, axis=-1),
        lambda x, v: op.nn.dropout(x, rate=0.1),
        lambda x, v: op.nn.pad(x, [1, 0, 2, 3], pad_mode="edge", pad_value=-1.5),
        lambda x, v: op.nn.group_norm(x, v, v, 2, channel_axis=1, axes=[], epsilon=1e-3),
        lambda x, v: op.nn.instance_norm(x, v, v, 1, [0], center=False, scale=False),
        lambda x, v: op.std(x, axis=[1], keepdims=True),
        lambda x, v: op.cumprod(x, axis=0, dtype="float64", exclusive=True),
        lambda x, v: op.median(x, axis=1, keepdims=True),
    ],
)
def test_printed_call_rebuilds_the_call(call: Any) -> None:
    x = rx.Var("x", TensorStructInfo([N, 4], "float32"))
    vec = rx.Var("vec", TensorStructInfo([4], "float32"))
    built = call(x, vec)
    text = RelaxPrinter().call(built)
    assert text.startswith("R.")
    namespace = {
        "R": types.SimpleNamespace(nn=op.nn, std=op.std, cumprod=op.cumprod, median=op.median)
    }
    namespace.update(x=x, vec=vec)
    rebuilt = eval(text, namespace)  # the text comes from our own printer
    rx.assert_structural_equal(rebuilt, built)


# ---- selu and pixel_shuffle ---------------------------------------------------------------------
def test_selu_keeps_shape_and_rejects_integers() -> None:
    sinfo = infer(op.nn.selu(tvar((N, 3), "float16")))
    assert same(shape_of(sinfo), [N, 3]) and str(sinfo.dtype) == "float16"
    with pytest.raises(OpError, match=r"relax\.nn\.selu: data must have a float dtype, got int32"):
        infer(op.nn.selu(tvar((2,), "int32")))


def test_pixel_shuffle_shapes_and_errors() -> None:
    call = op.nn.pixel_shuffle(tvar((N, 2, 18, 4, 5), "int8"), 3)
    assert call.attrs["upscale_factor"] == 3
    sinfo = infer(call)
    assert same(shape_of(sinfo), [N, 2, 2, 12, 15]) and str(sinfo.dtype) == "int8"
    c = SymVar("c")
    assert same(shape_of(infer(op.nn.pixel_shuffle(tvar((c, 4, 4)), 2))), [c // 4, 8, 8])
    unknown = infer(op.nn.pixel_shuffle(tvar(None, "float32", ndim=4), 2))
    assert isinstance(unknown, TensorStructInfo) and unknown.ndim == 4
    with pytest.raises(OpError, match=r"relax\.nn\.pixel_shuffle: the 6 channels of data with "
                       r"shape \(1, 6, 2, 2\) are not a multiple of upscale_factor \*\* 2 = 4"):  # fmt: skip
        infer(op.nn.pixel_shuffle(tvar((1, 6, 2, 2)), 2))
    with pytest.raises(OpError, match=r"relax\.nn\.pixel_shuffle: data must have rank >= 3"):
        infer(op.nn.pixel_shuffle(tvar((4, 2)), 2))
    with pytest.raises(OpError, match=r"relax\.nn\.pixel_shuffle: upscale_factor must be >= 1"):
        op.nn.pixel_shuffle(tvar((1, 4, 2, 2)), 0)
