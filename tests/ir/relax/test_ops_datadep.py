"""Inference of unique and nonzero (data-dependent extents) and of quantize / dequantize:
TVM's ranks and dtypes, symbolic extents, unknown ranks, attributes and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.script import from_source

N = SymVar("n", "int64")


def tvar(
    shape: Sequence[Any] | None = None,
    dtype: str | None = "float32",
    ndim: int = -1,
    name: str = "x",
) -> Var:
    return Var(name, TensorStructInfo(shape, dtype, ndim=ndim))


def assert_rank(sinfo: StructInfo, ndim: int, dtype: str | None) -> None:
    assert isinstance(sinfo, TensorStructInfo), sinfo
    assert sinfo.shape_values is None and sinfo.ndim == ndim, sinfo
    assert (None if sinfo.dtype is None else str(sinfo.dtype)) == dtype, sinfo


# ---- unique ---------------------------------------------------------------------------------
def test_unique_is_rank_one_of_unknown_extent_by_default() -> None:
    assert_rank(infer(op.unique(tvar([N, 4]))), 1, "float32")
    assert_rank(infer(op.unique(tvar([3, 4, 5], "int8"))), 1, "int8")
    assert_rank(infer(op.unique(tvar(None, None))), 1, None)
    call = op.unique(tvar([3]))
    assert call.attrs == {
        "sorted": True,
        "return_index": False,
        "return_inverse": False,
        "return_counts": False,
        "axis": None,
    }


def test_unique_along_an_axis_keeps_the_rank() -> None:
    assert_rank(infer(op.unique(tvar([N, 4]), axis=1)), 2, "float32")
    assert_rank(infer(op.unique(tvar([2, 3, 4], "int32"), axis=-3)), 3, "int32")
    # Unknown rank: the axis cannot be checked and the rank stays unknown.
    assert_rank(infer(op.unique(tvar(None), axis=5)), -1, "float32")


@pytest.mark.parametrize(
    ("flags", "count"),
    [
        ({"return_index": True}, 1),
        ({"return_inverse": True, "return_counts": True}, 2),
        ({"return_index": True, "return_inverse": True, "return_counts": True}, 3),
    ],
)
def test_unique_extra_outputs_make_a_tuple_of_int64_vectors(
    flags: dict[str, bool], count: int
) -> None:
    sinfo = infer(op.unique(tvar([N, 4], "int16"), sorted=False, **flags))
    assert isinstance(sinfo, TupleStructInfo)
    assert len(sinfo.fields) == 1 + count
    assert_rank(sinfo.fields[0], 1, "int16")
    for field in sinfo.fields[1:]:
        assert_rank(field, 1, "int64")


def test_unique_errors() -> None:
    with pytest.raises(
        OpError, match=r"relax.unique: axis 2 is out of range for a tensor of rank 2"
    ):
        infer(op.unique(tvar([3, 4]), axis=2))
    with pytest.raises(OpError, match=r"relax.unique: sorted must be a bool, got 1"):
        op.unique(tvar([3]), sorted=1)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.unique: return_counts must be a bool, got 'yes'"):
        op.unique(tvar([3]), return_counts="yes")  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.unique: axis must be an int, got 1.5"):
        op.unique(tvar([3]), axis=1.5)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.unique: x must be a tensor"):
        infer(op.unique(Var("s", ShapeStructInfo([2, 3]))))


# ---- nonzero --------------------------------------------------------------------------------
def test_nonzero_is_an_int64_matrix_of_unknown_extents() -> None:
    for x in (tvar([N, 4]), tvar([3], "bool"), tvar(None, None), tvar([], "int32")):
        assert_rank(infer(op.nonzero(x)), 2, "int64")
    with pytest.raises(OpError, match=r"relax.nonzero: x must be a tensor"):
        infer(op.nonzero(Var("p", PrimStructInfo("int64"))))


# ---- quantize / dequantize ------------------------------------------------------------------
def _scale(shape: Sequence[Any] = (), dtype: str = "float32") -> Var:
    return tvar(list(shape), dtype, name="scale")


def _zero(shape: Sequence[Any] = (), dtype: str = "int8") -> Var:
    return tvar(list(shape), dtype, name="zp")


def test_quantize_keeps_shape_with_out_dtype() -> None:
    sinfo = infer(op.quantize(tvar([N, 4]), _scale([4]), _zero([4])))
    assert isinstance(sinfo, TensorStructInfo)
    assert str(sinfo.dtype) == "int8" and str(sinfo.shape) == str(
        TensorStructInfo([N, 4], "int8").shape
    )
    sinfo = infer(
        op.quantize(
            tvar([N, 4], "float16"), _scale([N]), _zero([N], "int32"), axis=0, out_dtype="uint16"
        )
    )
    assert isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == "uint16"
    assert_rank(infer(op.quantize(tvar(ndim=3), _scale(), _zero(), out_dtype="int16")), 3, "int16")
    call = op.quantize(tvar([2]), _scale(), _zero())
    assert call.attrs == {"axis": -1, "out_dtype": "int8"}


def test_dequantize_keeps_shape_with_out_dtype() -> None:
    sinfo = infer(op.dequantize(tvar([2, N], "int8"), _scale([2]), _zero([2]), axis=0))
    assert isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == "float32"
    half = infer(op.dequantize(tvar([3], "uint8"), _scale(), _zero(), out_dtype="float16"))
    assert isinstance(half, TensorStructInfo) and str(half.dtype) == "float16"
    assert half.shape_values is not None and len(half.shape_values) == 1


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: op.quantize(tvar([2], "int32"), _scale(), _zero()), "data must have a float dtype, got int32"),
        (lambda: op.dequantize(tvar([2], "float64"), _scale(), _zero()), "data must have an integer, float8 \\(float8_e4m3fn, float8_e5m2\\), float16 or float32 dtype, got float64"),
        (lambda: op.quantize(tvar([2]), _scale(), _zero(), out_dtype="float32"), "out_dtype must be one of int8, uint8, int16, uint16, int32, float8_e4m3fn, float8_e5m2, got 'float32'"),
        (lambda: op.dequantize(tvar([2], "int8"), _scale(), _zero(), out_dtype="int8"), "out_dtype must be one of float16, float32, got 'int8'"),
        (lambda: op.quantize(tvar([2]), _scale((), "int32"), _zero()), "scale must have a float dtype, got int32"),
        (lambda: op.quantize(tvar([2]), _scale(), _zero((), "float32")), "zero_point must have an integer or float16 dtype, got float32"),
        (lambda: op.quantize(tvar([2, 3]), _scale(), _zero(), axis=2), "axis 2 is out of range for a tensor of rank 2"),
        (lambda: op.quantize(tvar([2, 3]), _scale([2, 3]), _zero()), "scale must be a scalar or a 1-D tensor, got rank 2"),
        (lambda: op.quantize(tvar([2, 3]), _scale([2]), _zero([2])), "scale has 2 values but data has extent 3 along axis 1"),
        (lambda: op.dequantize(tvar([2, 3], "int8"), _scale([2]), _zero([3]), axis=0), "zero_point has 3 values but data has extent 2 along axis 0"),
        (lambda: op.quantize(tvar([]), _scale(), _zero(), axis=1), "axis must be -1 for a 0-d data tensor"),
    ],
)  # fmt: skip
def test_qdq_errors(build: Any, message: str) -> None:
    with pytest.raises(OpError, match=rf"relax\.(de)?quantize: {message}"):
        infer(build())


def test_qdq_builder_errors() -> None:
    with pytest.raises(OpError, match=r"relax.quantize: out_dtype must be given, got None"):
        op.quantize(tvar([2]), _scale(), _zero(), out_dtype=None)  # type: ignore[arg-type]
    with pytest.raises(OpError, match=r"relax.dequantize: invalid dtype 'floaty'"):
        op.dequantize(tvar([2], "int8"), _scale(), _zero(), out_dtype="floaty")
    with pytest.raises(OpError, match=r"relax.quantize: axis must be an int, got 'a'"):
        op.quantize(tvar([2]), _scale(), _zero(), axis="a")  # type: ignore[arg-type]


def test_symbolic_scale_extent_is_not_an_error() -> None:
    # n and m may be equal at run time: inference cannot refute it.
    m = SymVar("m", "int64")
    sinfo = infer(op.quantize(tvar([N, 4]), _scale([m]), _zero([m]), axis=0))
    assert isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == "int8"


# ---- script ---------------------------------------------------------------------------------
def test_script_spells_the_ops_as_tvm() -> None:
    mod = from_source(
        """
from relaxvm.script import ir as I
from relaxvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), s: R.Tensor((4,), "float32"), z: R.Tensor((4,), "int8")):
        u = R.unique(x, sorted=False, return_counts=True)
        nz = R.nonzero(x)
        q = R.quantize(x, s, z, axis=1, out_dtype="int8")
        d = R.dequantize(q, s, z, axis=1)
        return (u, nz, d)
"""
    )
    text = mod.script()
    assert "R.unique(x, sorted=False" in text and "return_counts=True" in text
    assert "R.nonzero(x)" in text
    assert 'R.quantize(x, s, z, axis=1, out_dtype="int8")' in text
    ret = mod["main"].ret_struct_info
    assert isinstance(ret, TupleStructInfo)
    unique, nonzero, deq = ret.fields
    assert isinstance(unique, TupleStructInfo) and len(unique.fields) == 2
    assert_rank(nonzero, 2, "int64")
    assert isinstance(deq, TensorStructInfo) and str(deq.dtype) == "float32"
