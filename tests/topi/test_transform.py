"""topi shape operators against numpy, including take's safe index modes."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMIndexError, VMTypeError, VMValueError
from relaxvm.ir import Var
from relaxvm.ir.tir import te

X = np.arange(24, dtype="float32").reshape(2, 3, 4)


def test_reshape(interp) -> None:
    np.testing.assert_array_equal(interp(lambda x: topi.reshape(x, (4, 6)), X), X.reshape(4, 6))
    np.testing.assert_array_equal(interp(lambda x: topi.reshape(x, (-1, 2)), X), X.reshape(-1, 2))


def test_transpose(interp) -> None:
    np.testing.assert_array_equal(interp(topi.transpose, X), X.transpose())
    np.testing.assert_array_equal(
        interp(lambda x: topi.transpose(x, (1, -1, 0)), X), X.transpose(1, 2, 0)
    )


def test_expand_dims_and_squeeze(interp) -> None:
    out = interp(lambda x: topi.expand_dims(x, 1, 2), X)
    assert out.shape == (2, 1, 1, 3, 4)
    np.testing.assert_array_equal(interp(lambda x: topi.expand_dims(x, -1), X), X[..., None])
    y = X.reshape(1, 2, 1, 12)
    np.testing.assert_array_equal(interp(topi.squeeze, y), y.squeeze())
    np.testing.assert_array_equal(interp(lambda v: topi.squeeze(v, 2), y), y.squeeze(2))


def test_concatenate_and_stack(interp) -> None:
    other = -np.arange(8, dtype="float32").reshape(2, 1, 4)
    got = interp(lambda a, b: topi.concatenate([a, b, a], axis=1), X, other)
    np.testing.assert_array_equal(got, np.concatenate([X, other, X], axis=1))
    stacked = interp(lambda a, b: topi.stack([a, b], axis=-1), X, X + 1)
    np.testing.assert_array_equal(stacked, np.stack([X, X + 1], axis=-1))


def test_split_sections_and_indices(interp) -> None:
    parts = interp(lambda x: topi.split(x, 2, axis=2), X)
    for got, want in zip(parts, np.split(X, 2, axis=2), strict=True):
        np.testing.assert_array_equal(got, want)
    parts = interp(lambda x: topi.split(x, [1, 3], axis=-1), X)
    for got, want in zip(parts, np.split(X, [1, 3], axis=-1), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("begin", "end", "strides", "axes", "index"),
    [
        ([0, 1], [2, 3], None, None, np.s_[0:2, 1:3]),
        ([-1], [-5], [-1], [2], np.s_[:, :, -1:-5:-1]),
        ([1], [100], [2], [2], np.s_[:, :, 1:100:2]),
        ([-100, 0], [100, 2], [1, 1], [1, 0], np.s_[0:2, -100:100]),
        ([3], [0], [-2], [1], np.s_[:, 3:0:-2]),
    ],
)
def test_strided_slice_clamps_like_numpy(interp, begin, end, strides, axes, index) -> None:
    got = interp(lambda x: topi.strided_slice(x, begin, end, strides, axes), X)
    np.testing.assert_array_equal(got, X[index])


def test_strided_slice_size_mode(interp) -> None:
    got = interp(lambda x: topi.strided_slice(x, [1, 0], [2, -1], slice_mode="size"), X)
    np.testing.assert_array_equal(got, X[1:3, 0:])


def test_take_modes_never_read_outside(interp) -> None:
    idx = np.array([[0, 3], [-1, 7]], "int64")
    np.testing.assert_array_equal(
        interp(lambda x, i: topi.take(x, i, axis=1), X, idx), np.take(X, idx, axis=1, mode="clip")
    )
    np.testing.assert_array_equal(
        interp(lambda x, i: topi.take(x, i, axis=1, mode="wrap"), X, idx),
        np.take(X, idx, axis=1, mode="wrap"),
    )
    flat = np.array([0, 23, -1], "int32")
    np.testing.assert_array_equal(
        interp(lambda x, i: topi.take(x, i, mode="fast"), X, flat), np.take(X, flat)
    )
    with pytest.raises(VMIndexError, match="index 24 is out of range"):
        interp(lambda x, i: topi.take(x, i, mode="fast"), X, np.array([24], "int32"))
    np.testing.assert_array_equal(interp(lambda x: topi.take(x, 2, axis=2), X), X[:, :, 2])


def test_flip_tile_repeat(interp) -> None:
    np.testing.assert_array_equal(interp(lambda x: topi.flip(x, -1), X), np.flip(X, -1))
    np.testing.assert_array_equal(
        interp(lambda x: topi.tile(x, (2, 1, 1, 2)), X), np.tile(X, (2, 1, 1, 2))
    )
    np.testing.assert_array_equal(interp(lambda x: topi.repeat(x, 3, 1), X), np.repeat(X, 3, 1))


def test_symbolic_reshape_concat_and_slice_shapes() -> None:
    n = Var("n")
    x = te.placeholder((n, 4), name="x")
    assert [str(s) for s in topi.reshape(x, (-1, 2)).shape] == ["n * 4 // 2", "2"]
    assert [str(s) for s in topi.concatenate([x, x]).shape] == ["n + n", "4"]
    sliced = topi.strided_slice(x, [1], [3], axes=[1])
    assert [str(s) for s in sliced.shape] == ["n", "2"]


def test_shape_errors() -> None:
    x = te.placeholder((2, 3), name="x")
    with pytest.raises(
        VMValueError,
        match=r"topi.reshape: cannot reshape \['2', '3'\] \(6 elements\) to \['4', '2'\] \(8 elements\)",
    ):
        topi.reshape(x, (4, 2))
    with pytest.raises(VMValueError, match="topi.reshape: at most one -1"):
        topi.reshape(x, (-1, -1))
    with pytest.raises(VMValueError, match=r"topi.transpose: axes \[0, 0\] is not a permutation"):
        topi.transpose(x, (0, 0))
    with pytest.raises(VMValueError, match="topi.squeeze: axis 1 has extent 3"):
        topi.squeeze(x, 1)
    with pytest.raises(VMValueError, match="topi.concatenate: tensor 1 has shape"):
        topi.concatenate([x, te.placeholder((2, 4), name="y")], axis=0)
    with pytest.raises(VMTypeError, match="topi.concatenate: tensor 1 has dtype int32"):
        topi.concatenate([x, te.placeholder((2, 3), "int32", name="y")])
    with pytest.raises(VMValueError, match="topi.split: 2 sections do not divide extent 3"):
        topi.split(x, 2, axis=1)
    with pytest.raises(VMValueError, match="topi.strided_slice: stride on axis 0 is 0"):
        topi.strided_slice(x, [0], [1], [0])
    with pytest.raises(VMValueError, match="topi.take: mode must be 'clip', 'wrap' or 'fast'"):
        topi.take(x, 0, axis=0, mode="nan")
    with pytest.raises(VMTypeError, match="topi.take: indices must be integers, got float32"):
        topi.take(x, te.placeholder((2,), "float32", name="i"), axis=0)
    with pytest.raises(VMValueError, match="topi.flip: axis 2 is out of range"):
        topi.flip(x, 2)
    with pytest.raises(VMValueError, match="topi.repeat: repeats must be an int >= 1, got 0"):
        topi.repeat(x, 0, 0)
    with pytest.raises(VMValueError, match="topi.expand_dims: axis 4 is out of range"):
        topi.expand_dims(x, 4)
