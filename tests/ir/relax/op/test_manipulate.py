"""Shape manipulation ops against numpy, with symbolic extents, unknown ranks and errors."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir import IntImm
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import (
    PrimStructInfo,
    PrimValue,
    ShapeStructInfo,
    TensorStructInfo,
    Tuple,
    TupleStructInfo,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, infer

from .conftest import assert_rank_only, assert_shape, tvar


# ---- reshape ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "new"),
    [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)), ((6,), (1, 6, 1))],
)
def test_reshape_matches_numpy(shape: tuple, new: tuple) -> None:
    expected = np.zeros(shape).reshape(new).shape
    assert_shape(infer(op.reshape(tvar(shape), new)), expected)


def test_reshape_symbolic_equal_by_analyzer() -> None:
    n = SymVar("n")
    assert_shape(infer(op.reshape(tvar((n, 4)), (n * 2, 2))), (n * 2, 2))
    assert_shape(infer(op.reshape(tvar((n, 4)), (-1, 2))), (n * 2, 2))
    assert_shape(infer(op.reshape(tvar((n, 4)), (n, 2, -1))), (n, 2, 2))


def test_reshape_unknown_symbolic_product_is_kept() -> None:
    n, m = SymVar("n"), SymVar("m")
    assert_shape(infer(op.reshape(tvar((n, 4)), (m, 4))), (m, 4))


def test_reshape_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.reshape: cannot reshape x of shape \(2, 3\) \(6 elements\) to \(4, 2\) "
        r"\(8 elements\)",
    ):
        infer(op.reshape(tvar((2, 3)), (4, 2)))
    with pytest.raises(OpError, match=r"relax.reshape: .* 6 is not a multiple of 4"):
        infer(op.reshape(tvar((2, 3)), (4, -1)))
    with pytest.raises(OpError, match=r"relax.reshape: new shape \(-1, -1\) has more than one -1"):
        infer(op.reshape(tvar((2, 3)), (-1, -1)))
    with pytest.raises(OpError, match=r"relax.reshape: new shape \(2, -3\) has a negative"):
        infer(op.reshape(tvar((2, 3)), (2, -3)))
    with pytest.raises(
        OpError,
        match=r"relax.reshape: shape must be a tuple/list of extents or a shape value, got str 'ab'",
    ):
        op.reshape(tvar((2, 3)), "ab")
    n = SymVar("n")
    with pytest.raises(OpError, match=r"\(n \* 4 elements\) to \(n \* 4 \+ 1,\)"):
        infer(op.reshape(tvar((n, 4)), (n * 4 + 1,)))


def test_reshape_unknown_input_and_shape_var() -> None:
    assert_shape(infer(op.reshape(tvar(None, ndim=-1), (3, 2))), (3, 2))
    with pytest.raises(OpError, match=r"cannot infer the -1 in new shape \(3, -1\)"):
        infer(op.reshape(tvar(None, ndim=2), (3, -1)))  # as TVM: x's element count is unknown
    s = Var("s", ShapeStructInfo(ndim=3))
    result = infer(op.reshape(tvar((2, 3)), s))
    assert isinstance(result, TensorStructInfo)
    assert result.shape is s and result.ndim == 3
    with pytest.raises(OpError, match="relax.reshape: argument 1 must be a shape"):
        infer(op.reshape(tvar((2, 3)), tvar((2,))))


# ---- permute_dims / expand_dims / squeeze / flatten -------------------------------------------
@pytest.mark.parametrize("axes", [None, (0, 2, 1), (2, 0, 1), (-1, 0, 1)])
def test_permute_dims(axes: tuple | None) -> None:
    n = SymVar("n")
    expected = np.transpose(np.zeros((2, 3, 4)), axes).shape
    assert_shape(infer(op.permute_dims(tvar((2, 3, 4)), axes)), expected)
    assert_shape(infer(op.permute_dims(tvar((n, 3)))), (3, n))


def test_permute_dims_errors_and_unknown() -> None:
    with pytest.raises(OpError, match=r"relax.permute_dims: axes \[0\] must list each of the 2"):
        infer(op.permute_dims(tvar((2, 3)), [0]))
    with pytest.raises(OpError, match=r"relax.permute_dims: axes \[0, 0\] repeat an axis"):
        infer(op.permute_dims(tvar((2, 3)), [0, 0]))
    assert_rank_only(infer(op.permute_dims(tvar(None, ndim=-1))), -1)
    assert_rank_only(infer(op.permute_dims(tvar(None, ndim=-1), [1, 0])), 2)


@pytest.mark.parametrize("axis", [0, 2, -1, [0, 3], (1, -1)])
def test_expand_dims(axis: object) -> None:
    np_axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    expected = np.expand_dims(np.zeros((2, 3)), np_axis).shape
    assert_shape(infer(op.expand_dims(tvar((2, 3)), axis)), expected)


def test_expand_dims_symbolic_errors_unknown() -> None:
    n = SymVar("n")
    assert_shape(infer(op.expand_dims(tvar((n,)), 0)), (1, n))
    with pytest.raises(OpError, match="relax.expand_dims: axis 3 is out of range .* rank 3"):
        infer(op.expand_dims(tvar((2, 3)), 3))
    assert_rank_only(infer(op.expand_dims(tvar(None, ndim=2), 0)), 3)
    assert_rank_only(infer(op.expand_dims(tvar(None, ndim=-1), 0)), -1)


def test_squeeze() -> None:
    n = SymVar("n")
    assert_shape(infer(op.squeeze(tvar((1, 3, 1)))), (3,))
    assert_shape(infer(op.squeeze(tvar((1, 3, 1)), axis=[-1])), (1, 3))
    assert_shape(infer(op.squeeze(tvar((n, 1)), axis=1)), (n,))
    # n may be 1 at run time: the rank is unknown.
    assert_rank_only(infer(op.squeeze(tvar((n, 1)))), -1)
    assert_rank_only(infer(op.squeeze(tvar(None, ndim=3), axis=0)), 2)
    with pytest.raises(OpError, match=r"relax.squeeze: cannot squeeze axis 1 of x with shape "):
        infer(op.squeeze(tvar((1, 3)), axis=1))


def test_flatten() -> None:
    n = SymVar("n")
    assert_shape(infer(op.flatten(tvar((2, 3, 4)))), (24,))
    assert_shape(infer(op.flatten(tvar(()))), (1,))
    assert_shape(infer(op.flatten(tvar((n, 4)))), (n * 4,))
    assert_rank_only(infer(op.flatten(tvar(None, ndim=-1))), 1)


# ---- concat / split ---------------------------------------------------------------------------
def test_concat() -> None:
    n, m = SymVar("n"), SymVar("m")
    assert_shape(infer(op.concat([tvar((2, 3)), tvar((4, 3))])), (6, 3))
    assert_shape(infer(op.concat([tvar((n, 3)), tvar((m, 3))], axis=0)), (n + m, 3))
    assert_shape(infer(op.concat([tvar((2, n)), tvar((2, 1))], axis=-1)), (2, n + 1))
    assert_rank_only(infer(op.concat([tvar(None, ndim=-1), tvar((2, 3))])), 2)
    assert_rank_only(infer(op.concat([tvar(None, ndim=-1)])), -1)


def test_concat_errors() -> None:
    with pytest.raises(
        OpError,
        match=r"relax.concat: tensors with shapes \(2, 3\) and \(2, 4\) differ in dimension 1",
    ):
        infer(op.concat([tvar((2, 3)), tvar((2, 4))]))
    with pytest.raises(OpError, match="relax.concat: tensors must have the same rank"):
        infer(op.concat([tvar((2, 3)), tvar((2,))]))
    with pytest.raises(OpError, match="relax.concat: tensors must have the same dtype"):
        infer(op.concat([tvar((2,)), tvar((2,), "int32")]))
    with pytest.raises(OpError, match="relax.concat: axis 2 is out of range"):
        infer(op.concat([tvar((2, 3))], axis=2))
    with pytest.raises(OpError, match="relax.concat: the argument must be a tuple"):
        infer(op.concat(tvar((2,))))
    with pytest.raises(OpError, match="relax.concat: needs at least one tensor"):
        infer(op.concat(Tuple([])))


def test_split_sections_and_indices() -> None:
    n = SymVar("n")
    sinfo = infer(op.split(tvar((6, 4)), 3))
    assert isinstance(sinfo, TupleStructInfo) and len(sinfo.fields) == 3
    for field in sinfo.fields:
        assert_shape(field, (2, 4))
    pieces = np.split(np.zeros((10, 2)), [3, 7], axis=0)
    sinfo = infer(op.split(tvar((10, 2)), [3, 7]))
    for field, piece in zip(sinfo.fields, pieces, strict=True):  # type: ignore[attr-defined]
        assert_shape(field, piece.shape)
    sinfo = infer(op.split(tvar((2, n * 2)), 2, axis=1))
    assert_shape(sinfo.fields[0], (2, n))  # type: ignore[attr-defined]
    sinfo = infer(op.split(tvar((n,)), [2]))
    assert len(sinfo.fields) == 2  # type: ignore[attr-defined]


def test_split_errors_and_unknown() -> None:
    with pytest.raises(OpError, match=r"relax.split: cannot split axis 0 .* into 4 equal"):
        infer(op.split(tvar((6,)), 4))
    with pytest.raises(OpError, match="relax.split: the number of sections must be >= 1"):
        op.split(tvar((6,)), 0)
    with pytest.raises(OpError, match=r"relax.split: split indices must be ascending"):
        op.split(tvar((6,)), [4, 2])
    with pytest.raises(OpError, match="relax.split: axis 1 is out of range"):
        infer(op.split(tvar((6,)), 2, axis=1))
    sinfo = infer(op.split(tvar(None, ndim=-1), 2))
    assert len(sinfo.fields) == 2  # type: ignore[attr-defined]
    assert_rank_only(sinfo.fields[0], -1)  # type: ignore[attr-defined]


# ---- strided_slice / take / broadcast_to ------------------------------------------------------
@pytest.mark.parametrize(
    ("begin", "end", "stride"),
    [(0, 5, 1), (1, 100, 2), (-3, -1, 1), (5, 0, -1), (-1, -100, -2), (2, 2, 1)],
)
def test_strided_slice_matches_python(begin: int, end: int, stride: int) -> None:
    expected = np.zeros((8, 3))[begin:end:stride].shape
    sinfo = infer(op.strided_slice(tvar((8, 3)), [0], [begin], [end], [stride]))
    assert_shape(sinfo, expected)


def test_strided_slice_symbolic() -> None:
    n = SymVar("n")
    from relaxvm.ir import Analyzer, ConstIntBound

    analyzer = Analyzer()
    analyzer.update(n, ConstIntBound(10, 1000))
    sinfo = op.infer_struct_info(op.strided_slice(tvar((n, 3)), [0], [1], [5]), analyzer)
    assert_shape(sinfo, (4, 3))
    sinfo = op.infer_struct_info(op.strided_slice(tvar((n, 3)), [0], [2], [1 << 40]), analyzer)
    assert_shape(sinfo, (n - 2, 3))
    sinfo = op.infer_struct_info(op.strided_slice(tvar((n, 3)), [0], [-4], [-1]), analyzer)
    assert_shape(sinfo, (3, 3))


def test_strided_slice_errors_and_unknown() -> None:
    with pytest.raises(OpError, match="relax.strided_slice: axes, begin, end and strides must"):
        infer(op.strided_slice(tvar((4,)), [0], [0, 1], [2]))
    with pytest.raises(OpError, match="relax.strided_slice: strides must be non-zero"):
        infer(op.strided_slice(tvar((4,)), [0], [0], [2], [0]))
    with pytest.raises(OpError, match="relax.strided_slice: axis 1 is out of range"):
        infer(op.strided_slice(tvar((4,)), [1], [0], [2]))
    assert_rank_only(infer(op.strided_slice(tvar(None, ndim=2), [0], [0], [1])), 2)


def test_take() -> None:
    n = SymVar("n")
    data = np.zeros((5, 6, 7))
    idx = np.zeros((2, 3), "int64")
    for axis in (0, 1, -1):
        expected = np.take(data, idx, axis=axis).shape
        assert_shape(infer(op.take(tvar((5, 6, 7)), tvar((2, 3), "int64"), axis=axis)), expected)
    assert_shape(infer(op.take(tvar((5, 6)), tvar((n,), "int32"))), (n,))
    assert_rank_only(infer(op.take(tvar(None, ndim=2), tvar((4,), "int64"), axis=0)), 2)
    assert_rank_only(infer(op.take(tvar(None, ndim=-1), tvar((4,), "int64"), axis=0)), -1)
    with pytest.raises(OpError, match="relax.take: indices must have an integer dtype"):
        infer(op.take(tvar((5,)), tvar((2,))))
    with pytest.raises(OpError, match="relax.take: axis 2 is out of range"):
        infer(op.take(tvar((5, 6)), tvar((2,), "int64"), axis=2))


def test_broadcast_to() -> None:
    n = SymVar("n")
    assert_shape(infer(op.broadcast_to(tvar((3, 1)), (2, 3, 4))), (2, 3, 4))
    assert_shape(infer(op.broadcast_to(tvar((n, 1)), (n, 5))), (n, 5))
    assert_shape(infer(op.broadcast_to(tvar(None, ndim=-1), (n, 5))), (n, 5))
    with pytest.raises(
        OpError,
        match=r"relax.broadcast_to: cannot broadcast x of shape \(3, 2\) to \(3, 4\): "
        r"dimension 1 of x is 2",
    ):
        infer(op.broadcast_to(tvar((3, 2)), (3, 4)))
    with pytest.raises(OpError, match="relax.broadcast_to: cannot broadcast x of shape .* lower"):
        infer(op.broadcast_to(tvar((3, 2)), (2,)))


def test_take_scalar_index_removes_the_axis() -> None:
    scalar = Var("i", PrimStructInfo("int64"))
    data = np.zeros((4, 10))
    for axis in (0, 1, -1):
        expected = np.take(data, 3, axis=axis).shape
        assert_shape(infer(op.take(tvar((4, 10)), scalar, axis=axis)), expected)
        literal = PrimValue(IntImm("int32", 3))
        assert_shape(infer(op.take(tvar((4, 10)), literal, axis=axis)), expected)
    assert_shape(infer(op.take(tvar((4, 10)), scalar)), ())  # flattened: one element
    with pytest.raises(OpError, match="relax.take: indices must have an integer dtype"):
        infer(op.take(tvar((4,)), Var("f", PrimStructInfo("float32")), axis=0))


def test_reshape_minus_one_needs_a_known_input_shape() -> None:
    s4 = Var("s", ShapeStructInfo(ndim=4))
    inputs = [
        tvar(None, ndim=4),
        tvar(None, ndim=-1),
        Var("x", TensorStructInfo(s4, "float32")),
        Var("x", TensorStructInfo(Var("s", ShapeStructInfo()), "float32")),
    ]
    for x in inputs:
        with pytest.raises(
            OpError,
            match=r"relax.reshape: cannot infer the -1 in new shape \(2, 3, -1\): x .* unknown "
            r"number of elements, which cannot be proved equal to the new shape's 6 \* \(the -1\)",
        ):
            infer(op.reshape(x, (2, 3, -1)))
    # Extents known through the shape variable's struct info resolve the -1.
    known = Var("x", TensorStructInfo(Var("s", ShapeStructInfo([2, 3, 4])), "float32"))
    assert_shape(infer(op.reshape(known, (2, -1))), (2, 12))
    # Without a -1 nothing needs x's element count.
    assert_shape(infer(op.reshape(tvar(None, ndim=4), (2, 3))), (2, 3))
