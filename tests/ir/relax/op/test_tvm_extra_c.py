"""Struct info inference of nn.attention_bias, hint_on_device, call_inplace_packed and
dynamic_strided_slice (TVM's rules: static, symbolic and unknown shapes, and the errors), and
their script round trip."""

from __future__ import annotations

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import (
    BlockBuilder,
    ExternFunc,
    ObjectStructInfo,
    ShapeStructInfo,
    TensorStructInfo,
    Tuple,
    TupleStructInfo,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.registry import OpTypeError
from relaxvm.ir.relax.structural import assert_structural_equal
from relaxvm.runtime import cpu, device
from relaxvm.script import from_source

from .conftest import assert_rank_only, assert_shape, tvar


# ---- nn.attention_bias --------------------------------------------------------------------------
def test_attention_bias_builds_tvm_op_and_infers_like_attention() -> None:
    b, n, m = SymVar("b"), SymVar("n"), SymVar("m")
    q, k, v = tvar((b, n, 2, 4)), tvar((b, m, 2, 4)), tvar((b, m, 2, 3))
    for bias_shape in ((b, m), (b, n, m), (b, 2, n, m)):
        call = op.nn.attention_bias(q, k, v, tvar(bias_shape), scale=0.5, causal_mask="TopLeft")
        assert call.op.name == "relax.nn.attention_bias"
        assert call.attrs["scale"] == 0.5 and call.attrs["causal_mask"] == "TopLeft"
        assert_shape(infer(call), (b, n, 2, 3))
        # The same struct info as relaxvm's attention with bias=.
        assert_shape(infer(op.nn.attention(q, k, v, tvar(bias_shape))), (b, n, 2, 3))


def test_attention_bias_without_bias_is_plain_attention() -> None:
    # As TVM's builder: no bias, no attention_bias op.
    call = op.nn.attention_bias(tvar((1, 2, 2, 4)), tvar((1, 3, 2, 4)), tvar((1, 3, 2, 4)))
    assert call.op.name == "relax.nn.attention"
    assert len(call.args) == 3


def test_attention_bias_unknown_shapes() -> None:
    unknown = tvar(None, ndim=4)
    assert_rank_only(infer(op.nn.attention_bias(unknown, unknown, unknown, tvar((1, 3)))), 4)
    any_rank = tvar(None)
    assert_rank_only(infer(op.nn.attention_bias(any_rank, any_rank, any_rank, any_rank)), 4)


def test_attention_bias_errors() -> None:
    q, k, v = tvar((1, 2, 2, 4)), tvar((1, 3, 2, 4)), tvar((1, 3, 2, 4))
    with pytest.raises(OpError, match=r"relax.nn.attention_bias: bias with shape \(1, 2, 4\)"):
        infer(op.nn.attention_bias(q, k, v, tvar((1, 2, 4))))
    with pytest.raises(OpError, match=r"relax.nn.attention_bias: bias must have rank 2, 3 or 4"):
        infer(op.nn.attention_bias(q, k, v, tvar((3,))))
    with pytest.raises(OpTypeError, match=r"relax.nn.attention_bias: .*same dtype"):
        infer(op.nn.attention_bias(q, k, v, tvar((1, 3), "float16")))
    with pytest.raises(OpError, match=r"relax.nn.attention_bias: query must have rank 4"):
        infer(op.nn.attention_bias(tvar((2, 4)), k, v, tvar((1, 3))))
    with pytest.raises(OpError, match=r"relax.nn.attention_bias: causal_mask must be"):
        op.nn.attention_bias(q, k, v, tvar((1, 3)), causal_mask="Left")
    with pytest.raises(OpError, match=r"relax.nn.attention_bias: window_size needs a causal_mask"):
        op.nn.attention_bias(q, k, v, tvar((1, 3)), window_size=2)


# ---- hint_on_device -----------------------------------------------------------------------------
def test_hint_on_device_keeps_the_input_struct_info() -> None:
    n = SymVar("n")
    call = op.hint_on_device(tvar((n, 3)), cpu(0))
    assert call.attrs["dst_vdevice"] == cpu(0) and call.attrs["memory_scope"] == "global"
    # TVM's inference is the input's: the device is only a hint for RealizeVDevice.
    sinfo = infer(call)
    assert_shape(sinfo, (n, 3))
    assert isinstance(sinfo, TensorStructInfo) and sinfo.vdevice is None
    assert_rank_only(infer(op.hint_on_device(tvar(None, ndim=2), cpu(0))), 2)
    assert_rank_only(infer(op.hint_on_device(tvar(None, None), cpu(0))), -1, None)


def test_hint_on_device_spellings_and_scope() -> None:
    call = op.hint_on_device(tvar((2,)), "cpu:1", memory_scope="global.texture")
    assert call.attrs["dst_vdevice"] == device("cpu", 1)
    assert call.attrs["memory_scope"] == "global.texture"


def test_hint_on_device_errors() -> None:
    with pytest.raises(OpError, match=r"relax.hint_on_device: dst_vdevice must be a Device, got 3"):
        op.hint_on_device(tvar((2,)), 3)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"dst_vdevice must be a Device or 'kind:index', got 'x:y'"):
        op.hint_on_device(tvar((2,)), "x:y")
    with pytest.raises(OpError, match=r"relax.hint_on_device: memory_scope must be a non-empty"):
        op.hint_on_device(tvar((2,)), cpu(0), "")
    shape = Var("s", ShapeStructInfo([2]))
    with pytest.raises(OpTypeError, match=r"relax.hint_on_device: .*must be a tensor"):
        infer(op.hint_on_device(shape, cpu(0)))


# ---- call_inplace_packed ------------------------------------------------------------------------
def _sinfo(shape: tuple[object, ...] | None, dtype: str = "float32") -> TensorStructInfo:
    return TensorStructInfo(shape, dtype) if shape is not None else TensorStructInfo(None, dtype)


def test_call_inplace_packed_returns_the_declared_struct_info() -> None:
    n = SymVar("n")
    x, y = tvar((n, 3)), tvar((4,), "int32")
    call = op.call_inplace_packed("f", x, y, inplace_indices=0, sinfo_args=_sinfo((n, 3)))
    assert isinstance(call.args[0], ExternFunc) and call.args[0].global_symbol == "f"
    assert call.attrs["inplace_indices"] == [0]
    assert_shape(infer(call), (n, 3))
    # Two outputs: one written into argument 1, one new.
    pair = op.call_inplace_packed(
        "f", x, y, inplace_indices=[1, -1], sinfo_args=[_sinfo((4,), "int32"), _sinfo((2,))]
    )
    sinfo = infer(pair)
    assert isinstance(sinfo, TupleStructInfo) and len(sinfo.fields) == 2
    # Unknown shapes on either side are accepted.
    unknown = op.call_inplace_packed("f", tvar(None), inplace_indices=[0], sinfo_args=_sinfo((2,)))
    assert_shape(infer(unknown), (2,))


def test_call_inplace_packed_errors() -> None:
    x = tvar((2, 3))
    name = "relax.call_inplace_packed"
    with pytest.raises(OpError, match=rf"{name}: inplace_indices \[0, 0\] must name one argument"):
        infer(op.call_inplace_packed("f", x, inplace_indices=[0, 0], sinfo_args=_sinfo((2, 3))))
    with pytest.raises(OpError, match=rf"{name}: at least one of inplace_indices"):
        infer(op.call_inplace_packed("f", x, inplace_indices=-1, sinfo_args=_sinfo((2, 3))))
    with pytest.raises(OpError, match=rf"{name}: inplace_indices\[0\] = 1 is not an argument"):
        infer(op.call_inplace_packed("f", x, inplace_indices=1, sinfo_args=_sinfo((2, 3))))
    with pytest.raises(OpError, match=rf"{name}: argument 0 is named twice"):
        infer(
            op.call_inplace_packed(
                "f", x, inplace_indices=[0, 0], sinfo_args=[_sinfo((2, 3)), _sinfo((2, 3))]
            )
        )
    with pytest.raises(OpError, match=r"output 0 with shape \(3, 2\) cannot overwrite argument 0"):
        infer(op.call_inplace_packed("f", x, inplace_indices=0, sinfo_args=_sinfo((3, 2))))
    with pytest.raises(OpError, match=r"output 0 with shape \(2,\) cannot overwrite"):
        infer(op.call_inplace_packed("f", x, inplace_indices=0, sinfo_args=_sinfo((2,))))
    with pytest.raises(OpTypeError, match=r"output 0 has dtype int32 but argument 0"):
        infer(op.call_inplace_packed("f", x, inplace_indices=0, sinfo_args=_sinfo((2, 3), "int32")))
    with pytest.raises(OpTypeError, match=r"output 0 \(inplace_indices\[0\] = 0\) must be a"):
        infer(op.call_inplace_packed("f", x, inplace_indices=0, sinfo_args=ObjectStructInfo()))
    shape = Var("s", ShapeStructInfo([2]))
    with pytest.raises(OpTypeError, match=r"argument 0 \(inplace_indices\[0\] = 0\) must be a"):
        infer(op.call_inplace_packed("f", shape, inplace_indices=0, sinfo_args=_sinfo((2,))))
    with pytest.raises(OpError, match=rf"{name}: inplace_indices must be an int or a sequence"):
        op.call_inplace_packed("f", x, inplace_indices="0", sinfo_args=_sinfo((2, 3)))  # type: ignore[arg-type]
    with pytest.raises(OpError, match=rf"{name}: sinfo_args must be a StructInfo"):
        op.call_inplace_packed("f", x, inplace_indices=0, sinfo_args=3)  # type: ignore[arg-type]


# ---- dynamic_strided_slice ----------------------------------------------------------------------
def test_dynamic_strided_slice_knows_only_the_rank() -> None:
    n = SymVar("n")
    idx = tvar((2,), "int64")
    assert_rank_only(infer(op.dynamic_strided_slice(tvar((n, 4)), idx, idx, idx)), 2)
    i32 = tvar((3,), "int32")
    assert_rank_only(
        infer(op.dynamic_strided_slice(tvar((2, 3, 4), "int8"), i32, i32, i32)), 3, "int8"
    )
    # Unknown lengths and an unknown rank.
    some = tvar((n,), "int64")
    assert_rank_only(infer(op.dynamic_strided_slice(tvar((2, 3)), some, some, some)), 2)
    assert_rank_only(infer(op.dynamic_strided_slice(tvar(None), idx, idx, idx)), -1)
    anyidx = tvar(None, "int64")
    assert_rank_only(infer(op.dynamic_strided_slice(tvar((2, 3)), anyidx, anyidx, anyidx)), 2)


def test_dynamic_strided_slice_errors() -> None:
    name = "relax.dynamic_strided_slice"
    x, idx = tvar((2, 3)), tvar((2,), "int64")
    with pytest.raises(OpTypeError, match=rf"{name}: end must have an integer dtype, got float32"):
        infer(op.dynamic_strided_slice(x, idx, tvar((2,)), idx))
    with pytest.raises(OpError, match=rf"{name}: strides must be a 1-d tensor, got shape \(2, 1\)"):
        infer(op.dynamic_strided_slice(x, idx, idx, tvar((2, 1), "int64")))
    with pytest.raises(
        OpError, match=rf"{name}: begin must have one value per axis of x \(rank 2\)"
    ):
        infer(op.dynamic_strided_slice(x, tvar((3,), "int64"), idx, idx))
    with pytest.raises(OpTypeError, match=rf"{name}: .*must be a tensor"):
        infer(op.dynamic_strided_slice(x, Var("s", ShapeStructInfo([2])), idx, idx))


# ---- script ------------------------------------------------------------------------------------
def test_script_round_trip() -> None:
    bb = BlockBuilder()
    q = Var("q", TensorStructInfo([1, 2, 2, 4], "float32"))
    kv = Var("kv", TensorStructInfo([1, 3, 2, 4], "float32"))
    bias = Var("bias", TensorStructInfo([1, 2, 3], "float32"))
    begin = Var("b", TensorStructInfo([4], "int64"))
    with bb.function("main", [q, kv, bias, begin]):
        with bb.dataflow():
            h = bb.emit(op.hint_on_device(q, cpu(0)))
            a = bb.emit(op.nn.attention_bias(h, kv, kv, bias, scale=0.25, causal_mask="TopLeft"))
            sinfo = TensorStructInfo([1, 2, 2, 4], "float32")
            p = bb.emit(op.call_inplace_packed("f", a, q, inplace_indices=[0], sinfo_args=sinfo))
            d = bb.emit(op.dynamic_strided_slice(p, begin, begin, begin))
            out = bb.emit_output(Tuple([a, d]))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    for spelling in (
        "R.nn.attention_bias(",
        "R.hint_on_device(",
        'R.call_inplace_packed("f", lv1, q, inplace_indices=[0], sinfo_args=',
        "R.dynamic_strided_slice(",
    ):
        assert spelling in text, text
    assert_structural_equal(from_source(text), mod)
