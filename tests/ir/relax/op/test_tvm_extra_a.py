"""Struct info inference of log_add_exp, outer, ewise_fma, nn.relu6 and nn.batch_flatten (TVM's
rules: static, symbolic and unknown shapes, and the errors), and their script round trip."""

from __future__ import annotations

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir import const
from relaxvm.ir.relax import (
    BlockBuilder,
    PrimStructInfo,
    PrimValue,
    ShapeStructInfo,
    TensorStructInfo,
    Tuple,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, infer
from relaxvm.ir.relax.op.registry import OpTypeError
from relaxvm.ir.relax.structural import assert_structural_equal
from relaxvm.script import from_source

from .conftest import assert_rank_only, assert_shape, tvar


# ---- log_add_exp --------------------------------------------------------------------------------
def test_log_add_exp_broadcasts() -> None:
    n = SymVar("n")
    assert_shape(infer(op.log_add_exp(tvar((n, 4)), tvar((4,)))), (n, 4))
    assert_shape(infer(op.log_add_exp(tvar((2, 1, 3)), tvar((5, 1)))), (2, 5, 3))
    # Integers are accepted at inference, as TVM's broadcasting arithmetic.
    assert_shape(infer(op.log_add_exp(tvar((3,), "int32"), tvar((3,), "int32"))), (3,), "int32")


def test_log_add_exp_unknown_ranks_and_scalars() -> None:
    assert_rank_only(infer(op.log_add_exp(tvar(None, ndim=2), tvar((4,)))), 2)
    assert_rank_only(infer(op.log_add_exp(tvar(None), tvar((4,)))), -1)
    assert_rank_only(infer(op.log_add_exp(tvar(None, None, ndim=1), tvar((4,)))), 1, None)
    a = Var("a", PrimStructInfo("float32"))
    b = Var("b", PrimStructInfo("float32"))
    result = infer(op.log_add_exp(a, b))
    assert isinstance(result, PrimStructInfo) and str(result.dtype) == "float32"


def test_log_add_exp_errors() -> None:
    with pytest.raises(OpTypeError, match=r"relax.log_add_exp: operands must have the same dtype"):
        infer(op.log_add_exp(tvar((3,)), tvar((3,), "float16")))
    with pytest.raises(OpError, match=r"relax.log_add_exp: .*3.*4"):
        infer(op.log_add_exp(tvar((2, 3)), tvar((2, 4))))
    with pytest.raises(OpTypeError, match=r"relax.log_add_exp: operand 1 must be a tensor"):
        infer(op.log_add_exp(tvar((3,)), Var("s", ShapeStructInfo([3]))))


# ---- outer --------------------------------------------------------------------------------------
def test_outer_shapes() -> None:
    n, m = SymVar("n"), SymVar("m")
    assert_shape(infer(op.outer(tvar((3,)), tvar((5,)))), (3, 5))
    assert_shape(infer(op.outer(tvar((n,), "int32"), tvar((m,), "int32"))), (n, m), "int32")
    assert_rank_only(infer(op.outer(tvar(None, ndim=1), tvar((5,)))), 2)
    # As TVM, the result takes x1's dtype (unknown here, known there).
    assert_shape(infer(op.outer(tvar((3,), None), tvar((5,)))), (3, 5), None)
    assert_shape(infer(op.outer(tvar((3,)), tvar((5,), None))), (3, 5), "float32")


def test_outer_errors() -> None:
    with pytest.raises(OpError, match=r"relax.outer: x1 must be a 1-d tensor, got shape \(2, 3\)"):
        infer(op.outer(tvar((2, 3)), tvar((3,))))
    with pytest.raises(OpError, match=r"relax.outer: x2 must be a 1-d tensor, got shape \(\)"):
        infer(op.outer(tvar((3,)), tvar(())))
    # As TVM: an unknown rank is not known to be 1.
    with pytest.raises(OpError, match=r"relax.outer: x1 must be a 1-d tensor, got unknown rank"):
        infer(op.outer(tvar(None), tvar((3,))))
    with pytest.raises(OpTypeError, match=r"relax.outer: x1 and x2 must have the same dtype"):
        infer(op.outer(tvar((3,)), tvar((3,), "int32")))


# ---- ewise_fma ----------------------------------------------------------------------------------
def test_ewise_fma_shapes() -> None:
    n = SymVar("n")
    assert_shape(infer(op.ewise_fma(tvar((n, 4)), tvar((n, 4)), tvar((n, 4)))), (n, 4))
    x = tvar((2, 3), "int32")
    assert_shape(infer(op.ewise_fma(x, x, x)), (2, 3), "int32")
    # One unknown shape: the rank comes from the others.
    assert_rank_only(infer(op.ewise_fma(tvar(None), tvar((2, 3)), tvar(None, ndim=2))), 2)
    assert_rank_only(infer(op.ewise_fma(tvar(None), tvar(None), tvar(None))), -1)
    mixed = infer(op.ewise_fma(tvar((2,), None), tvar((2,)), tvar((2,))))
    assert isinstance(mixed, TensorStructInfo) and mixed.dtype is None


def test_ewise_fma_errors() -> None:
    with pytest.raises(OpError, match=r"relax.ewise_fma: x1, x2 and x3 must have the same rank"):
        infer(op.ewise_fma(tvar((2, 3)), tvar((3,)), tvar((2, 3))))
    # No broadcasting, even of a 1.
    with pytest.raises(
        OpError, match=r"relax.ewise_fma: x1, x2 and x3 must have the same shape .*axis 0 differs"
    ):
        infer(op.ewise_fma(tvar((2, 3)), tvar((1, 3)), tvar((2, 3))))
    n, m = SymVar("n"), SymVar("m")
    with pytest.raises(OpError, match=r"must have the same shape"):
        infer(op.ewise_fma(tvar((n,)), tvar((m,)), tvar((n,))))
    with pytest.raises(
        OpTypeError, match=r"relax.ewise_fma: x1, x2 and x3 must have the same dtype"
    ):
        infer(op.ewise_fma(tvar((2,)), tvar((2,)), tvar((2,), "float16")))


# ---- bucketize ---------------------------------------------------------------------------------
def test_bucketize_shapes_and_dtypes() -> None:
    n = SymVar("n")
    assert_shape(infer(op.bucketize(tvar((n, 4)), tvar((5,)))), (n, 4), "int64")
    call = op.bucketize(tvar((3,), "int32"), tvar((n,), "int32"), out_int32=True, right=True)
    assert_shape(infer(call), (3,), "int32")
    assert call.attrs["right"] is True and call.attrs["out_int32"] is True
    assert_rank_only(infer(op.bucketize(tvar(None, ndim=3), tvar(None))), 3, "int64")
    assert_rank_only(infer(op.bucketize(tvar(None), tvar((5,)))), -1, "int64")
    # A 0-d input gives a 0-d result.
    assert_shape(infer(op.bucketize(tvar(()), tvar((5,)))), (), "int64")


def test_bucketize_errors() -> None:
    with pytest.raises(
        OpError, match=r"relax.bucketize: boundaries must be a 1-d tensor, got shape \(2, 3\)"
    ):
        infer(op.bucketize(tvar((4,)), tvar((2, 3))))
    with pytest.raises(OpTypeError, match=r"relax.bucketize: input_tensor must be a tensor"):
        infer(op.bucketize(Var("s", PrimStructInfo("float32")), tvar((3,))))
    with pytest.raises(OpError, match=r"relax.bucketize: right must be a bool, got 1"):
        op.bucketize(tvar((4,)), tvar((3,)), right=1)  # type: ignore[arg-type]


# ---- hamming_window -----------------------------------------------------------------------------
def test_hamming_window_shapes() -> None:
    n = SymVar("n")
    assert_shape(infer(op.hamming_window(8, True, 0.54, 0.46, "float32")), (8,))
    assert_shape(infer(op.hamming_window(n + 1, False, 0.5, 0.5, "float16")), (n + 1,), "float16")
    call = op.hamming_window(PrimValue(const(4, "int64")), 1, 0.54, 0.46, "float32")
    assert_shape(infer(call), (4,))
    # A run-time size: only the rank is known.
    size = Var("s", PrimStructInfo("int64"))
    assert_rank_only(infer(op.hamming_window(size, True, 0.54, 0.46, "float32")), 1)


def test_hamming_window_errors() -> None:
    with pytest.raises(
        OpTypeError, match=r"relax.hamming_window: dtype must be a float dtype, got int32"
    ):
        infer(op.hamming_window(8, True, 0.54, 0.46, "int32"))
    with pytest.raises(
        OpError, match=r"relax.hamming_window: window_size must be at least 1, got 0"
    ):
        infer(op.hamming_window(0, True, 0.54, 0.46, "float32"))
    with pytest.raises(OpTypeError, match=r"relax.hamming_window: alpha must be a scalar"):
        infer(op.hamming_window(8, True, tvar((1,)), 0.46, "float32"))


# ---- wrap_param ---------------------------------------------------------------------------------
def test_wrap_param_keeps_the_shape_and_takes_the_dtype() -> None:
    n = SymVar("n")
    call = op.wrap_param(tvar((n, 4), "float16"))
    assert call.attrs["dtype"] == "float32"
    assert_shape(infer(call), (n, 4), "float32")
    assert_shape(infer(op.wrap_param(tvar((3,)), "int8")), (3,), "int8")
    assert_rank_only(infer(op.wrap_param(tvar(None, ndim=2), "float16")), 2, "float16")
    assert_rank_only(infer(op.wrap_param(tvar(None, None))), -1, "float32")


def test_wrap_param_errors() -> None:
    with pytest.raises(OpError, match=r"relax.wrap_param: invalid dtype 'flaot32'"):
        op.wrap_param(tvar((3,)), "flaot32")
    with pytest.raises(OpError, match=r"relax.wrap_param: dtype must be a known dtype"):
        op.wrap_param(tvar((3,)), "")
    with pytest.raises(OpTypeError, match=r"relax.wrap_param: data must be a tensor"):
        infer(op.wrap_param(Var("s", PrimStructInfo("float32"))))


# ---- masked_fill --------------------------------------------------------------------------------
def test_masked_fill_is_where_of_full_like() -> None:
    bb = BlockBuilder()
    x = tvar((3, 4))
    mask = Var("m", TensorStructInfo([4], "bool"))
    call = bb.normalize(op.masked_fill(x, mask, PrimValue(const(1.5, "float32"))))
    assert call.op.name == "relax.where"
    assert call.args[1].op.name == "relax.full_like"
    assert str(call.args[1].attrs["dtype"]) == "float32"
    assert_shape(call.struct_info, (3, 4))
    # A Python number takes x's dtype.
    mask2 = Var("m2", TensorStructInfo([2], "bool"))
    filled = bb.normalize(op.masked_fill(tvar((2,), "int32"), mask2, 3))
    assert_shape(filled.struct_info, (2,), "int32")


def test_masked_fill_errors() -> None:
    bb = BlockBuilder()
    mask = Var("m", TensorStructInfo([4], "bool"))
    # The value's dtype is the filler's (as TVM), so it must be x's.
    with pytest.raises(OpTypeError, match=r"relax.where: x1 and x2 must have the same dtype"):
        bb.normalize(op.masked_fill(tvar((3, 4)), mask, PrimValue(const(1, "int32"))))
    with pytest.raises(OpTypeError, match=r"relax.where: condition must be bool"):
        bb.normalize(op.masked_fill(tvar((3, 4)), tvar((4,)), 0.0))


# ---- nn.relu6 / nn.batch_flatten ----------------------------------------------------------------
def test_relu6_keeps_shape_and_dtype() -> None:
    n = SymVar("n")
    assert_shape(infer(op.nn.relu6(tvar((n, 4)))), (n, 4))
    assert_shape(infer(op.nn.relu6(tvar((3,), "int32"))), (3,), "int32")
    assert_rank_only(infer(op.nn.relu6(tvar(None))), -1)
    with pytest.raises(OpTypeError, match=r"relax.nn.relu6: data must be a tensor"):
        infer(op.nn.relu6(Var("s", PrimStructInfo("float32"))))


def test_batch_flatten_shapes() -> None:
    n, c = SymVar("n"), SymVar("c")
    assert_shape(infer(op.nn.batch_flatten(tvar((2, 3, 4, 5)))), (2, 60))
    assert_shape(infer(op.nn.batch_flatten(tvar((n, c, 4), "int32"))), (n, c * 4), "int32")
    assert_shape(infer(op.nn.batch_flatten(tvar((n, 7)))), (n, 7))
    assert_rank_only(infer(op.nn.batch_flatten(tvar(None))), 2)
    assert_rank_only(infer(op.nn.batch_flatten(tvar(None, ndim=4))), 2)


def test_batch_flatten_errors() -> None:
    with pytest.raises(OpError, match=r"relax.nn.batch_flatten: data must have rank >= 2 .*rank 1"):
        infer(op.nn.batch_flatten(tvar((3,))))
    with pytest.raises(OpError, match=r"rank >= 2 .*got rank 0"):
        infer(op.nn.batch_flatten(tvar(())))


# ---- script round trip --------------------------------------------------------------------------
def test_script_round_trip() -> None:
    bb = BlockBuilder()
    n = SymVar("n")
    a = Var("a", TensorStructInfo([n], "float32"))
    b = Var("b", TensorStructInfo([4], "float32"))
    grid = Var("g", TensorStructInfo([n, 2, 3], "float32"))
    with bb.function("main", [a, b, grid]):
        with bb.dataflow():
            o = bb.emit(op.outer(a, b))
            e = bb.emit(op.log_add_exp(o, b))
            f = bb.emit(op.ewise_fma(e, o, o))
            r = bb.emit(op.nn.relu6(f))
            idx = bb.emit(op.bucketize(a, b, out_int32=True, right=True))
            cat = bb.emit(op.concat([r, op.nn.batch_flatten(grid)], axis=1))
            win = bb.emit(op.hamming_window(n, True, 0.54, 0.46, "float32"))
            half = bb.emit(op.wrap_param(win, "float16"))
            out = bb.emit_output(Tuple([cat, idx, half]))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    for spelling in (
        "R.outer(",
        "R.log_add_exp(",
        "R.ewise_fma(",
        "R.nn.relu6(",
        "R.nn.batch_flatten(",
    ):
        assert spelling in text, text
    assert_structural_equal(from_source(text), mod)
