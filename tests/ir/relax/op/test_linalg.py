"""matmul (1-d, 2-d, batched with broadcasting) and linear (x @ w.T + b)."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op import OpError, infer

from .conftest import assert_rank_only, assert_shape, tvar

MATMUL_CASES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 1, 3, 4), (7, 4, 5)),
    ((6, 3, 4), (1, 4, 5)),
]


@pytest.mark.parametrize(("lhs", "rhs"), MATMUL_CASES)
def test_matmul_matches_numpy(lhs: tuple, rhs: tuple) -> None:
    expected = np.matmul(np.zeros(lhs), np.zeros(rhs)).shape
    assert_shape(infer(op.matmul(tvar(lhs), tvar(rhs))), expected)


def test_matmul_symbolic() -> None:
    n, k, m = SymVar("n"), SymVar("k"), SymVar("m")
    assert_shape(infer(op.matmul(tvar((n, k)), tvar((k, m)))), (n, m))
    b = SymVar("b")
    assert_shape(infer(op.matmul(tvar((b, n, 2 * k)), tvar((k * 2, 8)))), (b, n, 8))


def test_matmul_k_mismatch_names_both_shapes() -> None:
    n = SymVar("n")
    with pytest.raises(
        OpError,
        match=r"relax.matmul: operands with shapes \(n, 4\) and \(5, 3\) do not match: "
        r"the reduction dimension is 4 vs 5",
    ):
        infer(op.matmul(tvar((n, 4)), tvar((5, 3))))


def test_matmul_batch_mismatch() -> None:
    with pytest.raises(OpError, match=r"relax.matmul: .* batch dimensions .*: 2 vs 3"):
        infer(op.matmul(tvar((2, 3, 4)), tvar((3, 4, 5))))


def test_matmul_rank0_and_dtype_errors() -> None:
    with pytest.raises(OpError, match=r"relax.matmul: operands must have rank >= 1"):
        infer(op.matmul(tvar(()), tvar((2,))))
    with pytest.raises(OpError, match=r"relax.matmul: operands must have the same dtype"):
        infer(op.matmul(tvar((2, 2)), tvar((2, 2), "float16")))


def test_matmul_out_dtype() -> None:
    sinfo = infer(op.matmul(tvar((2, 3), "int8"), tvar((3, 4), "int8"), out_dtype="int32"))
    assert_shape(sinfo, (2, 4), "int32")


def test_matmul_unknown_rank_and_shape() -> None:
    assert_rank_only(infer(op.matmul(tvar(None, ndim=-1), tvar((2, 3)))), -1)
    assert_rank_only(infer(op.matmul(tvar(None, ndim=3), tvar(None, ndim=2))), 3)
    assert_rank_only(infer(op.matmul(tvar(None, ndim=1), tvar(None, ndim=2))), 1)


@pytest.mark.parametrize(
    ("x", "w", "b"),
    [
        ((2, 3), (5, 3), None),
        ((2, 3), (5, 3), (5,)),
        ((4, 2, 3), (5, 3), (1, 5)),
        ((3,), (5, 3), None),
    ],
)
def test_linear_matches_numpy(x: tuple, w: tuple, b: tuple | None) -> None:
    out = np.zeros(x) @ np.zeros(w).T
    if b is not None:
        out = out + np.zeros(b)
    bias = None if b is None else tvar(b)
    assert_shape(infer(op.linear(tvar(x), tvar(w), bias)), out.shape)


def test_linear_symbolic_and_errors() -> None:
    n = SymVar("n")
    assert_shape(infer(op.linear(tvar((n, 16)), tvar((8, 16)), tvar((8,)))), (n, 8))
    with pytest.raises(
        OpError,
        match=r"relax.linear: operands with shapes \(n, 16\) and \(8, 15\) \(transposed\) do "
        r"not match: the reduction dimension is 16 vs 15",
    ):
        infer(op.linear(tvar((n, 16)), tvar((8, 15))))
    with pytest.raises(OpError, match=r"relax.linear: weight must have rank 1 or 2"):
        infer(op.linear(tvar((2, 3)), tvar((1, 5, 3))))
    with pytest.raises(OpError, match=r"relax.linear: operands with shapes \(2, 5\) and \(4,\)"):
        infer(op.linear(tvar((2, 3)), tvar((5, 3)), tvar((4,))))


def test_linear_unknown_rank() -> None:
    assert_rank_only(infer(op.linear(tvar(None, ndim=-1), tvar((5, 3)))), -1)
    assert_rank_only(infer(op.linear(tvar(None, ndim=3), tvar((5, 3)), tvar((5,)))), 3)
