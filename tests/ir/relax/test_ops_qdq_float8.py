"""Inference of quantize / dequantize with float8 types and of astype to and from float8, as
TVM v0.23: the accepted dtypes, the result, and the errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import TensorStructInfo, Var, op
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source

N = SymVar("n", "int64")
F8 = ("float8_e4m3fn", "float8_e5m2")


def tvar(shape: Sequence[Any], dtype: str = "float32", name: str = "x") -> Var:
    return Var(name, TensorStructInfo(list(shape), dtype))


def _scale(shape: Sequence[Any] = (), dtype: str = "float32") -> Var:
    return tvar(shape, dtype, "scale")


def _zero(shape: Sequence[Any] = (), dtype: str = "int8") -> Var:
    return tvar(shape, dtype, "zp")


def _dtype_and_shape(sinfo: Any) -> tuple[str, str]:
    assert isinstance(sinfo, TensorStructInfo)
    return str(sinfo.dtype), str(sinfo.shape)


@pytest.mark.parametrize("f8", F8)
@pytest.mark.parametrize("data_dtype", ["float32", "float16"])
def test_quantize_to_float8(f8: str, data_dtype: str) -> None:
    call = op.quantize(tvar([N, 4], data_dtype), _scale([4]), _zero([4]), out_dtype=f8)
    assert call.attrs == {"axis": -1, "out_dtype": f8}
    assert _dtype_and_shape(infer(call)) == (f8, str(TensorStructInfo([N, 4], f8).shape))


@pytest.mark.parametrize("f8", F8)
@pytest.mark.parametrize("out", ["float32", "float16"])
def test_dequantize_from_float8(f8: str, out: str) -> None:
    call = op.dequantize(tvar([3, N], f8), _scale([3]), _zero([3]), axis=0, out_dtype=out)
    assert _dtype_and_shape(infer(call))[0] == out


@pytest.mark.parametrize("data_dtype", ["float16", "float32"])
def test_dequantize_accepts_float_data_as_tvm(data_dtype: str) -> None:
    sinfo = infer(op.dequantize(tvar([2], data_dtype), _scale(), _zero()))
    assert _dtype_and_shape(sinfo)[0] == "float32"


@pytest.mark.parametrize("f8", F8)
def test_astype_to_and_from_float8(f8: str) -> None:
    assert _dtype_and_shape(infer(op.astype(tvar([N, 2]), f8)))[0] == f8
    assert _dtype_and_shape(infer(op.astype(tvar([2], f8), "float16")))[0] == "float16"
    assert _dtype_and_shape(infer(op.astype(tvar([2], "int32"), f8)))[0] == f8


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: op.quantize(tvar([2], "float8_e4m3fn"), _scale(), _zero(), out_dtype="float8_e5m2"),
         r"quantize: data must have a float dtype, got float8_e4m3fn \(float8 is a quantized type: "
         r"dequantize it or astype it to float32 first\)"),
        (lambda: op.quantize(tvar([2]), _scale((), "float8_e5m2"), _zero(), out_dtype="float8_e5m2"),
         r"quantize: scale must have a float dtype, got float8_e5m2 \(float8 is a quantized"),
        (lambda: op.dequantize(tvar([2], "float8_e5m2"), _scale(), _zero(), out_dtype="float8_e5m2"),
         r"dequantize: out_dtype must be one of float16, float32, got 'float8_e5m2'"),
        (lambda: op.dequantize(tvar([2], "bool"), _scale(), _zero()),
         r"dequantize: data must have an integer, float8 \(float8_e4m3fn, float8_e5m2\), "
         r"float16 or float32 dtype, got bool"),
        (lambda: op.quantize(tvar([2, 3]), _scale([2]), _zero([2]), out_dtype="float8_e4m3fn"),
         r"quantize: scale has 2 values but data has extent 3 along axis 1"),
        (lambda: op.quantize(tvar([2]), _scale(), _zero((), "float32"), out_dtype="float8_e4m3fn"),
         r"quantize: zero_point must have an integer or float16 dtype, got float32"),
    ],
)  # fmt: skip
def test_float8_qdq_errors(build: Any, message: str) -> None:
    with pytest.raises(OpError, match=rf"relax\.{message}"):
        infer(build())


def test_unknown_float8_spellings_are_refused_by_the_builders() -> None:
    with pytest.raises(OpError, match=r"relax.quantize: invalid dtype 'float8_e4m3'"):
        op.quantize(tvar([2]), _scale(), _zero(), out_dtype="float8_e4m3")
    with pytest.raises(OpError, match=r"relax.astype: invalid dtype 'float8'"):
        op.astype(tvar([2]), "float8")


def test_script_round_trips_float8_types() -> None:
    mod = from_source(
        """
from relaxvm.script import ir as I
from relaxvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 3), "float32"), s: R.Tensor((3,), "float32"), z: R.Tensor((3,), "int8")):
        q = R.quantize(x, s, z, axis=1, out_dtype="float8_e4m3fn")
        c = R.astype(x, "float8_e5m2")
        d = R.dequantize(q, s, z, axis=1)
        return (d, c)
"""
    )
    text = mod.script()
    assert 'R.quantize(x, s, z, axis=1, out_dtype="float8_e4m3fn")' in text
    assert 'R.astype(x, dtype="float8_e5m2")' in text or 'R.astype(x, "float8_e5m2")' in text
    assert 'R.Tensor((4, 3), dtype="float8_e4m3fn")' in text
    assert str(from_source(text)["main"].ret_struct_info) == str(mod["main"].ret_struct_info)
