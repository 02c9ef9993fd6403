"""sort, argsort, topk and einsum legalizations against numpy, run by the TIR interpreter.

The oracle of the sorting ops is numpy's stable sort; descending order keeps equal keys (and
NaNs, which come first) in their original order (``stable_argsort``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _ops_harness import legalize, prim_funcs, run

from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, op
from relaxvm.ir.tir import For, ForKind
from relaxvm.ir.tir.stmt_functor import post_order_visit
from relaxvm.testing.conformance.cases_sort import stable_argsort
from relaxvm_ops import LegalizationError
from relaxvm_ops.einsum import legalize_einsum
from relaxvm_ops.sort import legalize_sort

RNG = np.random.default_rng(7)


def ties(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return (RNG.integers(-3, 4, size=shape) * 0.5).astype(dtype)


# ---- sort / argsort -------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_a_stable_sort(axis: int, descending: bool) -> None:
    x = ties((3, 9, 2))
    params = [("x", (3, 9, 2), "float32")]
    order = stable_argsort(x, axis, descending)
    got = run(lambda t: op.sort(t, axis=axis, descending=descending), params, [x])
    np.testing.assert_array_equal(got, np.take_along_axis(x, order, axis))
    idx = run(lambda t: op.argsort(t, axis=axis, descending=descending), params, [x])
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(idx, order)


@pytest.mark.parametrize("length", [0, 1, 2, 3, 5, 8, 37])
@pytest.mark.parametrize("symbolic", [False, True])
def test_line_lengths(length: int, symbolic: bool) -> None:
    # Odd and even pass counts (the result ends in either scratch buffer); a symbolic length
    # runs the guarded passes; 37 is not a power of two (a short last run).
    x = ties((2, length))
    shape: tuple[Any, ...] = ("m", "n") if symbolic else (2, length)
    got = run(lambda t: op.argsort(t, dtype="int64"), [("x", shape, "float32")], [x])
    assert got.dtype == np.int64 and got.shape == (2, length)
    np.testing.assert_array_equal(got, stable_argsort(x, -1))


def test_nan_sorts_last_ascending_and_first_descending() -> None:
    x = np.array([[2.0, np.nan, -1.0, np.nan, 0.0, -np.inf, np.inf]], "float32")
    params = [("x", (1, 7), "float32")]
    up = run(lambda t: op.argsort(t), params, [x])
    np.testing.assert_array_equal(up, [[5, 2, 4, 0, 6, 1, 3]])
    down = run(lambda t: op.argsort(t, descending=True), params, [x])
    np.testing.assert_array_equal(down, [[1, 3, 6, 0, 4, 2, 5]])
    values = run(lambda t: op.sort(t, descending=True), params, [x])
    np.testing.assert_array_equal(values, [[np.nan, np.nan, np.inf, 2, 0, -1, -np.inf]])


def test_signed_zeros_are_equal_and_keep_their_order() -> None:
    x = np.array([0.0, -0.0, 0.0, -0.0], "float32")
    got = run(lambda t: op.sort(t, descending=True), [("x", (4,), "float32")], [x])
    np.testing.assert_array_equal(np.signbit(got), np.signbit(x))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_extremes(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.max, 0, info.min, 1, info.max, info.min], dtype)
    params = [("x", (6,), dtype)]
    np.testing.assert_array_equal(run(lambda t: op.sort(t), params, [x]), np.sort(x))
    got = run(lambda t: op.argsort(t, descending=True), params, [x])
    np.testing.assert_array_equal(got, stable_argsort(x, -1, True))


def test_bool_sorts_false_first() -> None:
    x = np.array([True, False, True, False, False])
    got = run(lambda t: op.argsort(t), [("x", (5,), "bool")], [x])
    np.testing.assert_array_equal(got, [1, 3, 4, 0, 2])
    down = run(lambda t: op.sort(t, descending=True), [("x", (5,), "bool")], [x])
    np.testing.assert_array_equal(down, [True, True, False, False, False])


# ---- topk -----------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("axis", [0, 1])
def test_topk_ties_take_the_lowest_index(largest: bool, axis: int) -> None:
    x = ties((6, 7))
    values, indices = run(
        lambda t: op.topk(t, k=3, axis=axis, largest=largest), [("x", (6, 7), "float32")], [x]
    )
    want = np.take(stable_argsort(x, axis, largest), np.arange(3), axis)
    np.testing.assert_array_equal(indices, want)
    np.testing.assert_array_equal(values, np.take_along_axis(x, want, axis))


def test_topk_ret_types_and_index_dtype() -> None:
    x = np.array([[1.0, 3.0, 3.0, np.nan, 2.0]], "float32")
    params = [("x", (1, 5), "float32")]
    values = run(lambda t: op.topk(t, k=2, ret_type="values"), params, [x])
    np.testing.assert_array_equal(values, [[np.nan, 3.0]])  # NaN counts as the largest
    indices = run(lambda t: op.topk(t, k=3, ret_type="indices", dtype="int64"), params, [x])
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices, [[3, 1, 2]])
    smallest = run(lambda t: op.topk(t, k=0, largest=False, ret_type="indices"), params, [x])
    np.testing.assert_array_equal(smallest, [[0, 4, 1, 2, 3]])  # k < 1: the whole axis


def test_topk_k_past_a_short_symbolic_line_fills_zeros() -> None:
    # The result's extent is k (TVM's rule for a symbolic axis); a line shorter than k leaves
    # the surplus as zeros.
    x = np.array([[1, 5], [7, 2]], "int32")
    values, indices = run(lambda t: op.topk(t, k=3), [("x", (2, "n"), "int32")], [x])
    np.testing.assert_array_equal(values, [[5, 1, 0], [7, 2, 0]])
    np.testing.assert_array_equal(indices, [[1, 0, 0], [0, 1, 0]])


# ---- kernel shape ---------------------------------------------------------------------------
def test_lines_run_in_one_parallel_loop() -> None:
    mod, _, _ = legalize(lambda t: op.sort(t, axis=1), [("x", (4, 5, 3), "float32")])
    (func,) = prim_funcs(mod).values()
    kinds: list[ForKind] = []
    post_order_visit(func.body, lambda s: kinds.append(s.kind) if isinstance(s, For) else None)
    assert kinds.count(ForKind.PARALLEL) == 1, kinds


def test_unknown_shape_is_a_legalization_error() -> None:
    x = Var("x", TensorStructInfo(None, "float32", ndim=2))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        call = bb.normalize(op.sort(x))
        with pytest.raises(
            LegalizationError,
            match=r"relax.sort: cannot legalize: argument data has unknown rank, shape or dtype",
        ):
            legalize_sort(bb, call)
        bb.emit_func_output(x)


# ---- einsum ---------------------------------------------------------------------------------
EINSUM: list[tuple[str, list[tuple[int, ...]]]] = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,jk->...ik", [(2, 3, 3, 4), (4, 2)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij,j->i", [(3, 4), (1,)]),
    ("ijk,ikl,l->jk", [(2, 3, 4), (2, 4, 3), (3,)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_einsum_matches_numpy(subscripts: str, shapes: list[tuple[int, ...]], dtype: str) -> None:
    # Small integers: float32 sums are exact, so every dtype compares exactly. bool is numpy's
    # logical einsum ("any" of "and"s).
    arrays = [RNG.integers(-3, 4, size=s).astype(dtype) for s in shapes]
    params = [(f"a{i}", s, dtype) for i, s in enumerate(shapes)]
    got = run(lambda *ts: op.einsum(list(ts), subscripts), params, arrays)
    want = np.einsum(subscripts, *arrays)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_einsum_symbolic_extents() -> None:
    a = RNG.standard_normal((5, 3)).astype("float32")
    b = RNG.standard_normal((5, 3)).astype("float32")
    params: list[Any] = [("a", ("n", 3), "float32"), ("b", ("n", 3), "float32")]
    got = run(lambda p, q: op.einsum([p, q], "ij,ij->j"), params, [a, b])
    np.testing.assert_allclose(got, np.einsum("ij,ij->j", a, b), rtol=1e-5)


def test_einsum_unknown_operand_shape_is_a_legalization_error() -> None:
    x = Var("x", TensorStructInfo(None, "float32", ndim=2))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        call = bb.normalize(op.einsum([x], "ij->ji"))
        with pytest.raises(
            LegalizationError,
            match=r"relax.einsum: cannot legalize: operand 0 has unknown rank, shape or dtype",
        ):
            legalize_einsum(bb, call)
        bb.emit_func_output(x)
