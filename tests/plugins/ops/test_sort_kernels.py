"""The sorting kernels (``relaxvm_ops.sort_kernels``, ``relaxvm_ops.topk_select``) against
numpy's stable sort, compiled for the llvm target and on the TIR interpreter.

The merge sort has boundaries the short lines of ``test_sort_ops`` never reach: runs of
``RUN`` elements sorted in registers (a short last run in memory), full run pairs merged two
at a time (and an odd one alone), a short last pair, passes in pairs (an odd pass count ends
in a copy), and the NaN split. A symbolic line length compiles
one kernel for every length. ``topk`` with ``k <= SELECT_MAX_K`` scans the line once instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest
from _ops_harness import make_params, run

import relaxvm
from relaxvm.ir.relax import BlockBuilder
from relaxvm.ir.relax import op as _op
from relaxvm.testing import interpreter_target, registered_target
from relaxvm.testing.conformance.cases_sort import stable_argsort
from relaxvm_ops.sort_kernels import RUN
from relaxvm_ops.topk_select import SELECT_MAX_K

op: Any = _op
RNG = np.random.default_rng(11)
#: Around every boundary of the run network and of the pairing of runs and passes.
SYMBOLIC = ("m", "n")
LENGTHS = [1, 2, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 128, 129, 255, 256, 257, 1000, 1024]


@cache
def _compiled(key: tuple[Any, ...]) -> Any:
    kind, shape, dtype, kwargs = key
    builders: dict[str, Callable[..., Any]] = {
        "sort": op.sort,
        "argsort": op.argsort,
        "topk": op.topk,
    }
    params = make_params([("x", shape, dtype)])
    bb = BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(builders[kind](params[0], **dict(kwargs)))
        bb.emit_func_output(out)
    return relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())["main"]


def llvm(kind: str, x: np.ndarray, shape: tuple[Any, ...] | None = None, **kwargs: Any) -> Any:
    """``kind(x, **kwargs)`` compiled for llvm (cached per shape, so a symbolic ``shape``
    compiles once for every length)."""
    fn = _compiled((kind, shape or x.shape, str(x.dtype), tuple(sorted(kwargs.items()))))
    result = fn(x)
    if isinstance(result, relaxvm.Tensor):
        return result.numpy()
    return tuple(t.numpy() for t in result)


def ties(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    """Few distinct values: equal keys everywhere, so instability shows."""
    return (RNG.integers(-4, 5, size=shape) * 0.5).astype(dtype)


def check_sorted(x: np.ndarray, axis: int, descending: bool, got: np.ndarray) -> None:
    """``got`` is the stable sort of ``x``, bit for bit (NaN payloads aside)."""
    want = np.take_along_axis(x, stable_argsort(x, axis, descending), axis)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 vs 0.0


# ---- sort / argsort: every length boundary -------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
def test_symbolic_lengths_sort_and_argsort(descending: bool) -> None:
    for n in LENGTHS:
        x = ties((3, n))
        got = llvm("sort", x, SYMBOLIC, descending=descending)
        check_sorted(x, -1, descending, got)
        idx = llvm("argsort", x, SYMBOLIC, descending=descending, dtype="int64")
        np.testing.assert_array_equal(idx, stable_argsort(x, -1, descending), err_msg=f"n={n}")


@pytest.mark.parametrize("n", [1, RUN - 1, RUN + 1, 1000, 4099])
def test_static_lengths_sort_and_argsort(n: int) -> None:
    # A static length fixes the pass count (odd or even) and the short-run-only kernel.
    x = ties((4, n))
    check_sorted(x, -1, False, llvm("sort", x))
    np.testing.assert_array_equal(llvm("argsort", x, descending=True), stable_argsort(x, -1, True))


def test_random_floats_with_nan_inf_and_signed_zeros() -> None:
    x = RNG.standard_normal((5, 777)).astype("float32")
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], "float32")
    mask = RNG.random(x.shape) < 0.3
    x[mask] = RNG.choice(special, size=int(mask.sum()))
    x[4] = np.nan  # a line of NaNs only: nothing left to sort
    x[3, :700] = np.nan  # a few numbers behind many NaNs
    for descending in (False, True):
        check_sorted(x, -1, descending, llvm("sort", x, SYMBOLIC, descending=descending))
        idx = llvm("argsort", x, SYMBOLIC, descending=descending, dtype="int64")
        np.testing.assert_array_equal(idx, stable_argsort(x, -1, descending))


def test_sorted_reversed_and_constant_lines() -> None:
    n = 300
    x = np.stack(
        [np.arange(n), np.arange(n)[::-1], np.zeros(n), np.arange(n) % 2, -(np.arange(n) % 3)]
    ).astype("float32")
    for descending in (False, True):
        check_sorted(x, -1, descending, llvm("sort", x, SYMBOLIC, descending=descending))
        idx = llvm("argsort", x, SYMBOLIC, descending=descending, dtype="int64")
        np.testing.assert_array_equal(idx, stable_argsort(x, -1, descending))


@pytest.mark.parametrize(
    ("dtype", "descending"),
    [("int8", False), ("uint8", True), ("int32", False), ("int64", True), ("bool", False)],
)
def test_integer_lines_with_extreme_values(dtype: str, descending: bool) -> None:
    n = 3 * RUN + 5
    if dtype == "bool":
        x = RNG.integers(0, 2, size=(4, n)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = RNG.choice(np.array([info.min, info.max, 0, 1], dtype), size=(4, n))
    check_sorted(x, -1, descending, llvm("sort", x, SYMBOLIC, descending=descending))
    idx = llvm("argsort", x, descending=descending)
    np.testing.assert_array_equal(idx, stable_argsort(x, -1, descending))


@pytest.mark.parametrize("axis", [0, 1])
def test_long_lines_along_any_axis(axis: int) -> None:
    x = ties((600, 7)) if axis == 0 else ties((7, 600))
    check_sorted(x, axis, True, llvm("sort", x, axis=axis, descending=True))
    idx = llvm("argsort", x, axis=axis)
    np.testing.assert_array_equal(idx, stable_argsort(x, axis))


def test_one_long_line() -> None:
    x = RNG.standard_normal(100_003).astype("float32")
    np.testing.assert_array_equal(llvm("sort", x), np.sort(x))
    np.testing.assert_array_equal(llvm("argsort", x, dtype="int64"), np.argsort(x, kind="stable"))


# ---- topk ---------------------------------------------------------------------------------
def want_topk(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    order = np.take(stable_argsort(x, axis, largest), np.arange(min(k, x.shape[axis])), axis)
    return np.take_along_axis(x, order, axis), order


@pytest.mark.parametrize(
    ("k", "largest"),
    [
        (1, True),
        (2, False),
        (16, True),
        (SELECT_MAX_K, False),
        (SELECT_MAX_K + 1, True),
        (100, False),
    ],
)
def test_topk_selection_and_sort_paths(k: int, largest: bool) -> None:
    x = ties((6, 300))
    x[1, ::7] = np.nan
    x[2] = np.nan
    x[3] = np.arange(300)  # every element enters the selection (largest)
    x[4] = -np.arange(300)
    values, indices = llvm("topk", x, k=k, largest=largest, dtype="int64")
    want_values, want_indices = want_topk(x, k, 1, largest)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values, want_values)


@pytest.mark.parametrize("n", [1, 5, 17, 40])
def test_topk_k_at_and_past_a_static_length(n: int) -> None:
    # k >= the line length keeps the whole line (the extent is n), sorted.
    x = ties((3, n))
    for k in (n, n + 3):
        values, indices = llvm("topk", x, k=k, dtype="int64")
        want_values, want_indices = want_topk(x, k, 1, True)
        assert values.shape == (3, n)
        np.testing.assert_array_equal(indices, want_indices)
        np.testing.assert_array_equal(values, want_values)


@pytest.mark.parametrize("k", [3, 40])
def test_topk_symbolic_lengths_fill_zeros_past_the_line(k: int) -> None:
    for n in [1, 2, 3, 17, 50, 300]:
        x = ties((2, n))
        values, indices = llvm("topk", x, ("m", "n"), k=k, axis=1, largest=False)
        want_values, want_indices = want_topk(x, k, 1, False)
        assert values.shape == (2, k)
        got = min(n, k)
        np.testing.assert_array_equal(indices[:, :got], want_indices, err_msg=f"n={n}")
        np.testing.assert_array_equal(values[:, :got], want_values)
        assert not values[:, got:].any() and not indices[:, got:].any()


@pytest.mark.parametrize(("dtype", "k"), [("int8", 4), ("int64", 50), ("float64", 4)])
def test_topk_dtypes_and_axis0(dtype: str, k: int) -> None:
    x = RNG.integers(-100, 100, size=(200, 3)).astype(dtype)
    values, indices = llvm("topk", x, k=k, axis=0, dtype="int64")
    want_values, want_indices = want_topk(x, k, 0, True)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values, want_values)


# ---- the TIR interpreter (and the same kernels' IR) ----------------------------------------
@pytest.fixture
def interp() -> Iterator[None]:
    with registered_target(interpreter_target()):
        yield


@pytest.mark.parametrize("n", [2 * RUN + 3, 4 * RUN + 1])
def test_interpreter_runs_the_merge_passes(n: int) -> None:
    # Longer than test_sort_ops' lines: full pairs, an odd pair, a short pair, NaNs.
    x = ties((2, n))
    x[1, ::5] = np.nan
    for descending in (False, True):
        got = run(lambda t, d=descending: op.sort(t, descending=d), [("x", (2, n), "float32")], [x])
        check_sorted(x, -1, descending, got)
        idx = run(
            lambda t, d=descending: op.argsort(t, descending=d, dtype="int64"),
            [("x", ("m", "n"), "float32")],
            [x],
        )
        np.testing.assert_array_equal(idx, stable_argsort(x, -1, descending))
    values, indices = run(lambda t: op.topk(t, k=5), [("x", (2, n), "float32")], [x])
    want_values, want_indices = want_topk(x, 5, 1, True)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_array_equal(values, want_values)
