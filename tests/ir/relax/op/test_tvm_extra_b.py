"""Struct info inference of slice_scatter and index_tensor: static, symbolic and unknown
shapes, TVM's errors, and the script round trip."""

from __future__ import annotations

import re

import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import PrimValue, ShapeExpr, ShapeStructInfo, TensorStructInfo, Tuple, Var, op
from relaxvm.ir.relax.op import OpError, OpTypeError, infer
from relaxvm.script import from_source

from .conftest import assert_rank_only, assert_shape, tvar

N = SymVar("n")
M = SymVar("m")


# ---- slice_scatter --------------------------------------------------------------------------
def test_slice_scatter_keeps_the_input_shape() -> None:
    got = infer(op.slice_scatter(tvar((4, 6)), tvar((4, 2)), 1, 5, 2, axis=1))
    assert_shape(got, (4, 6))
    got = infer(op.slice_scatter(tvar((N, 6), "int32"), tvar((N, 3), "int32"), 0, 6, 2, axis=-1))
    assert_shape(got, (N, 6), "int32")


def test_slice_scatter_accepts_symbolic_bounds() -> None:
    got = infer(op.slice_scatter(tvar((2 * N, 3)), tvar((N, 3)), 0, 2 * N, 2, axis=0))
    assert_shape(got, (2 * N, 3))
    got = infer(op.slice_scatter(tvar((N, 3)), tvar((M, 3)), 0, M, 1, axis=0))
    assert_shape(got, (N, 3))


def test_slice_scatter_with_unknown_shapes() -> None:
    assert_rank_only(infer(op.slice_scatter(tvar(ndim=-1), tvar((2, 2)), 0, 2, 1)), -1)
    assert_rank_only(infer(op.slice_scatter(tvar(ndim=2), tvar(ndim=2), 0, 2, 1)), 2)
    assert_shape(infer(op.slice_scatter(tvar((3, 4)), tvar(ndim=-1), 0, 2, 1)), (3, 4))
    assert_shape(infer(op.slice_scatter(tvar((3, 4), None), tvar((1, 4)), 0, 1, 1)), (3, 4), None)


@pytest.mark.parametrize(
    ("build", "kind", "message"),
    [
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4, 2), "int32"), 1, 5, 2, axis=1),
         OpTypeError, "input_tensor and src must have the same dtype"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4, 2)), 1, 5, 2, axis=2),
         OpError, "axis 2 is out of range for a tensor of rank 2"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4,)), 1, 5, 2, axis=1),
         OpError, "same rank, got (4, 6) and (4,)"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4, 2)), 1, 5, 0, axis=1),
         OpError, "step must be at least 1, got 0"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4, 2)), 5, 1, 1, axis=1),
         OpError, "start (5) must not exceed end (1)"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((3, 2)), 1, 5, 2, axis=1),
         OpError, "differ on axis 0"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4, 3)), 1, 5, 2, axis=1),
         OpError, "src has extent 3 on axis 1 but the slice 1:5:2 has 2 elements"),
        (lambda: op.slice_scatter(tvar((4, 6)), tvar((4, 2)), PrimValue(1.0), 5, 2, axis=1),
         OpTypeError, "start must be an integer PrimValue, got dtype float"),
        (lambda: op.slice_scatter(tvar((4, 6)), Tuple([]), 1, 5, 2),
         OpTypeError, "src must be a tensor"),
    ],
)  # fmt: skip
def test_slice_scatter_errors(build: object, kind: type, message: str) -> None:
    with pytest.raises(kind, match=message.replace("(", r"\(").replace(")", r"\)")):
        infer(build())  # type: ignore[operator]


def test_slice_scatter_rejects_a_non_int_axis() -> None:
    with pytest.raises(OpTypeError, match="relax.slice_scatter: axis must be an int"):
        op.slice_scatter(tvar((4, 6)), tvar((4, 2)), 1, 5, 2, axis=1.5)  # type: ignore[arg-type]


# ---- index_tensor ---------------------------------------------------------------------------
def ivar(shape: object = None, dtype: str | None = "int64", ndim: int = -1) -> Var:
    return Var("i", TensorStructInfo(shape, dtype, ndim=ndim))  # type: ignore[arg-type]


def test_index_tensor_broadcasts_the_indices() -> None:
    assert_shape(infer(op.index_tensor(tvar((4, 3, 2)), [ivar((5,)), ivar((5,))])), (5, 2))
    assert_shape(infer(op.index_tensor(tvar((4, 3)), [ivar((2, 1)), ivar((3,))])), (2, 3))
    got = infer(op.index_tensor(tvar((N, 3), "int32"), [ivar((M, 1), "int32")]))
    assert_shape(got, (M, 1, 3), "int32")
    assert_shape(infer(op.index_tensor(tvar((N, 3)), Tuple([ivar((N,)), ivar((1,))]))), (N,))


def test_index_tensor_with_unknown_shapes() -> None:
    assert_rank_only(infer(op.index_tensor(tvar(ndim=-1), [ivar((2,))])), -1)
    assert_rank_only(infer(op.index_tensor(tvar(ndim=3), [ivar(ndim=2)])), 4)
    assert_rank_only(infer(op.index_tensor(tvar((4, 3)), [ivar(ndim=-1)])), -1)
    # Two symbolic extents that may differ: the broadcast is known only at run time.
    assert_rank_only(infer(op.index_tensor(tvar((4, 3)), [ivar((N,)), ivar((M,))])), 1)


@pytest.mark.parametrize(
    ("build", "kind", "message"),
    [
        (lambda: op.index_tensor(tvar((4, 3)), [ivar((2,), "float32")]),
         OpTypeError, "indices[0] must have a signed integer dtype, got float32"),
        (lambda: op.index_tensor(tvar((4, 3)), [ivar((2,)), ivar((2,), "uint8")]),
         OpTypeError, "indices[1] must have a signed integer dtype, got uint8"),
        (lambda: op.index_tensor(tvar((4, 3)), [ivar((2,))] * 3),
         OpError, "got 3 index tensors but data has rank 2"),
        (lambda: op.index_tensor(tvar((4, 3)), []),
         OpError, "indices must hold at least one index tensor"),
        (lambda: op.index_tensor(tvar((4, 3)), [ivar((2,)), ivar((3,))]),
         OpError, "cannot broadcast"),
        (lambda: op.index_tensor(tvar((4, 3)), ivar((2,))),
         OpTypeError, "indices must be a tuple of tensors"),
    ],
)  # fmt: skip
def test_index_tensor_errors(build: object, kind: type, message: str) -> None:
    with pytest.raises(kind, match=message.replace("[", r"\[").replace("]", r"\]")):
        infer(build())  # type: ignore[operator]


# ---- script ---------------------------------------------------------------------------------
SOURCE = """
from relaxvm.script import relax as R

@R.function
def main(x: R.Tensor(("n", 6), "float32"), s: R.Tensor(("n", 2), "float32"),
         i: R.Tensor((5,), "int64")):
    n = T.int64()
    with R.dataflow():
        a = R.slice_scatter(x, s, R.prim_value(1), R.prim_value(5), R.prim_value(2), axis=1)
        b = R.index_tensor(x, (i, i))
        R.output(a, b)
    return (a, b)
"""


def test_script_round_trip() -> None:
    func = from_source(SOURCE)
    text = func.script()
    assert (
        "R.slice_scatter(x, s, R.prim_value(1), R.prim_value(5), R.prim_value(2), axis=1)" in text
    )
    assert "R.index_tensor(x, (i, i))" in text
    assert 'R.Tensor((5,), dtype="float32")' in text
    assert from_source(text).script() == text


# ---- index_put ------------------------------------------------------------------------------
def test_index_put_keeps_the_data_shape() -> None:
    got = infer(op.index_put(tvar((4, 6)), [ivar((2, 1)), ivar((3,))], tvar((3,))))
    assert_shape(got, (4, 6))
    got = infer(
        op.index_put(tvar((N, 6), "int32"), [ivar((M,)), ivar((M,), "uint8")], tvar((1,), "int32"))
    )
    assert_shape(got, (N, 6), "int32")
    assert_rank_only(infer(op.index_put(tvar(ndim=-1), [ivar((2,))], tvar((2,)))), -1)
    assert_rank_only(infer(op.index_put(tvar(ndim=2), [ivar(ndim=1)] * 2, tvar(ndim=-1))), 2)


@pytest.mark.parametrize(
    ("build", "kind", "message"),
    [
        (lambda: op.index_put(tvar((4, 6)), [ivar((2,))], tvar((2,))),
         OpError, "one index tensor per axis of data: got 1 for data of rank 2"),
        (lambda: op.index_put(tvar((4, 6)), [ivar((2,)), ivar((2,), "float32")], tvar((2,))),
         OpTypeError, "indices[1] must have an integer dtype, got float32"),
        (lambda: op.index_put(tvar((4, 6)), [ivar(()), ivar((2,))], tvar((2,))),
         OpError, "indices[0] must have rank at least 1, got a scalar"),
        (lambda: op.index_put(tvar((4, 6)), [ivar((2,)), ivar((2,))], tvar((2,), "int32")),
         OpTypeError, "data and values must have the same dtype"),
        (lambda: op.index_put(tvar((4, 6)), [ivar((2,)), ivar((2,))], tvar((3,))),
         OpError, "cannot broadcast"),
        (lambda: op.index_put(tvar((4, 6)), [ivar((2,)), ivar((2,))], tvar((2, 2))),
         OpError, "values of shape (2, 2) cannot broadcast to the indexed shape (2,)"),
    ],
)  # fmt: skip
def test_index_put_errors(build: object, kind: type, message: str) -> None:
    with pytest.raises(kind, match=re.escape(message)):
        infer(build())  # type: ignore[operator]


def test_index_put_rejects_a_non_bool_accumulate() -> None:
    with pytest.raises(OpTypeError, match="relax.index_put: accumulate must be a bool"):
        op.index_put(tvar((4,)), [ivar((2,))], tvar((2,)), accumulate=1)  # type: ignore[arg-type]


def test_index_put_script_round_trip() -> None:
    source = """
from relaxvm.script import relax as R

@R.function
def main(x: R.Tensor((4, 6), "float32"), i: R.Tensor((3,), "int64"), v: R.Tensor((3,), "float32")):
    with R.dataflow():
        a = R.index_put(x, (i, i), v, accumulate=True)
        R.output(a)
    return a
"""
    text = from_source(source).script()
    assert "R.index_put(x, (i, i), v, accumulate=True)" in text
    assert from_source(text).script() == text


# ---- multinomial_from_uniform ---------------------------------------------------------------
def test_multinomial_from_uniform_gives_one_index_per_sample() -> None:
    got = infer(op.multinomial_from_uniform(tvar((N, 32)), tvar((M, 1)), ivar((M, 1))))
    assert_shape(got, (M, 1), "int64")
    got = infer(
        op.multinomial_from_uniform(
            tvar((2, 8), "float16"), tvar((3, 1)), ivar((3, 1), "int32"), "int32"
        )
    )
    assert_shape(got, (3, 1), "int32")
    assert_rank_only(
        infer(op.multinomial_from_uniform(tvar(ndim=-1), tvar((3, 1)), ivar((3, 1)))), -1, "int64"
    )
    assert_rank_only(
        infer(op.multinomial_from_uniform(tvar(ndim=2), tvar((3, 1)), ivar((3, 1)))), 2, "int64"
    )


@pytest.mark.parametrize(
    ("build", "kind", "message"),
    [
        (lambda: op.multinomial_from_uniform(tvar((2, 8), "int32"), tvar((3, 1)), ivar((3, 1))),
         OpTypeError, "prob must have a float dtype, got int32"),
        (lambda: op.multinomial_from_uniform(tvar((2, 8)), tvar((3, 1), "int64"), ivar((3, 1))),
         OpTypeError, "uniform_sample must have a float dtype, got int64"),
        (lambda: op.multinomial_from_uniform(tvar((2, 8)), tvar((3, 1)), ivar((3, 1), "uint32")),
         OpTypeError, "sample_indices must have a signed integer dtype, got uint32"),
        (lambda: op.multinomial_from_uniform(tvar((8,)), tvar((3, 1)), ivar((3, 1))),
         OpError, "prob must have rank 2, got (8,)"),
        (lambda: op.multinomial_from_uniform(tvar((2, 8)), tvar((3, 1)), ivar((4, 1))),
         OpError, "must have the same number of rows"),
        (lambda: op.multinomial_from_uniform(tvar((2, 8)), tvar((N, 1)), ivar((M, 1))),
         OpError, "must have the same number of rows"),
        (lambda: op.multinomial_from_uniform(tvar((2, 8)), tvar((3, 2)), ivar((3, 2))),
         OpError, "must have shape (n, 1)"),
    ],
)  # fmt: skip
def test_multinomial_from_uniform_errors(build: object, kind: type, message: str) -> None:
    with pytest.raises(kind, match=re.escape(message)):
        infer(build())  # type: ignore[operator]


def test_multinomial_from_uniform_rejects_a_float_result_dtype() -> None:
    with pytest.raises(OpTypeError, match="dtype must be an integer dtype, got 'float32'"):
        op.multinomial_from_uniform(tvar((2, 8)), tvar((3, 1)), ivar((3, 1)), "float32")


# ---- shape_to_tensor ------------------------------------------------------------------------
def test_shape_to_tensor_has_one_entry_per_extent() -> None:
    x = tvar((N, 4))
    assert_shape(infer(op.shape_to_tensor(ShapeExpr([N, 4, 2]))), (3,), "int64")
    shape = Var("s", ShapeStructInfo(ndim=2))
    assert_shape(infer(op.shape_to_tensor(shape)), (2,), "int64")
    assert_rank_only(infer(op.shape_to_tensor(Var("s", ShapeStructInfo(ndim=-1)))), 1, "int64")
    with pytest.raises(OpTypeError, match="relax.shape_to_tensor: the argument must be a shape"):
        infer(op.shape_to_tensor(x))


def test_shape_to_tensor_script_round_trip() -> None:
    source = """
from relaxvm.script import relax as R

@R.function
def main(x: R.Tensor(("n", 4), "float32")):
    n = T.int64()
    s = R.shape_of(x)
    t = R.shape_to_tensor(s)
    return t
"""
    text = from_source(source).script()
    assert "R.shape_to_tensor(s)" in text
    assert 'R.Tensor((2,), dtype="int64")' in text
    assert from_source(text).script() == text
