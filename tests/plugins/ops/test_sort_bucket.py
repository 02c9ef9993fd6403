"""The bucket sort of ``sort`` on float lines (``relaxvm_ops.sort_bucket``) against numpy's
stable sort, bit for bit (signed zeros included), on the llvm target and the interpreter.

The bucket path is taken only for static float lines of at least ``BUCKET_MIN_LENGTH`` whose
numbers spread evenly enough; :func:`takes_bucket_path` mirrors that choice in numpy, so each
test can assert which path its lines take (both must give the stable sort).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _ops_harness import run
from test_sort_kernels import check_sorted, llvm

from relaxvm.ir.relax import op as _op
from relaxvm_ops.sort_bucket import BUCKET_MIN_LENGTH, ROUNDS, bucket_count

op: Any = _op
RNG = np.random.default_rng(23)


def takes_bucket_path(line: np.ndarray) -> bool:
    """Whether the kernel sorts ``line`` by buckets (the same float64 arithmetic)."""
    n = line.shape[-1]
    if n < BUCKET_MIN_LENGTH:
        return False
    buckets = bucket_count(n)
    numbers = line[~np.isnan(line)].astype(np.float64)
    if numbers.size < 2:
        return False
    lo, hi = numbers.min(), numbers.max()
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        width = hi - lo
        scale = np.float64(buckets) / width
    if not (width < np.inf and scale < np.inf):
        return False
    of = np.minimum(((numbers - lo) * scale).astype(np.int64), buckets - 1)
    return bool(np.bincount(of, minlength=buckets).max() <= ROUNDS)


def paths(x: np.ndarray) -> list[bool]:
    return [takes_bucket_path(line) for line in x.reshape(-1, x.shape[-1])]


def normal(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("n", [BUCKET_MIN_LENGTH - 1, BUCKET_MIN_LENGTH, 257, 301, 4096, 4097])
@pytest.mark.parametrize("descending", [False, True])
def test_lengths_around_the_threshold(n: int, descending: bool) -> None:
    x = normal((4, n))
    assert all(paths(x)) == (n >= BUCKET_MIN_LENGTH)
    check_sorted(x, -1, descending, llvm("sort", x, descending=descending))


@pytest.mark.parametrize("descending", [False, True])
def test_nan_signed_zeros_and_duplicates_keep_their_order(descending: bool) -> None:
    n = 2000
    x = normal((6, n))
    for row in range(6):
        spots = RNG.choice(n, size=60, replace=False)
        x[row, spots[:20]] = np.nan
        x[row, spots[20:30]] = 0.0
        x[row, spots[30:40]] = -0.0
        x[row, spots[40:]] = x[row, spots[0] - 1 if spots[0] else 1]  # duplicates
    x[5, ::3] = np.nan  # many NaNs, still numbers enough
    x[4, 1] = np.float32(np.nextafter(np.float32(0), np.float32(1)))  # a denormal near 0
    assert all(paths(x))
    check_sorted(x, -1, descending, llvm("sort", x, descending=descending))


@pytest.mark.parametrize("descending", [False, True])
def test_lines_that_fall_back_to_the_merge_sort(descending: bool) -> None:
    n = 600
    x = normal((7, n))
    x[0, 5] = np.inf  # an infinite range
    x[1, 7] = -np.inf
    x[2] = 1.5  # an empty range
    x[3] = RNG.integers(-3, 4, size=n) * 0.25  # few distinct values: big buckets
    x[4] = np.exp(RNG.standard_normal(n) * 8)  # skewed: most in the first buckets
    x[5] = np.nan  # no numbers
    x[6, 1:] = np.nan  # one number
    assert not any(paths(x))
    check_sorted(x, -1, descending, llvm("sort", x, descending=descending))


def test_denormal_and_huge_spans() -> None:
    tiny = np.float32(np.nextafter(np.float32(0), np.float32(1)))
    x = np.stack(
        [
            RNG.permutation(np.arange(3000)).astype(np.float32) * tiny,  # denormals only
            RNG.uniform(-3e38, 3e38, 3000).astype(np.float32),  # width near float32's max
            RNG.uniform(-1.0, 1.0, 3000).astype(np.float32) + np.float32(1e7),  # ulp-sized
            normal((3000,)) * np.float32(1e-30),
        ]
    )
    assert paths(x)[0] and paths(x)[1] and paths(x)[3]
    for descending in (False, True):
        check_sorted(x, -1, descending, llvm("sort", x, descending=descending))


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_other_float_dtypes(dtype: str) -> None:
    x = normal((3, 1500), dtype)
    x[0, ::50] = np.nan
    if dtype == "float64":
        x[1, :2] = [-1e308, 1e308]  # width overflows: the merge sort
        x[2, :] = RNG.permutation(3 * 1500)[:1500] * 5e-324  # subnormal: 1 / width overflows
        assert paths(x) == [True, False, False]
    for descending in (False, True):
        check_sorted(x, -1, descending, llvm("sort", x, descending=descending))


def test_uniform_rows_and_an_empty_batch() -> None:
    x = RNG.uniform(-5, 5, (3, 5, 512)).astype(np.float32)
    assert all(paths(x))
    check_sorted(x, -1, False, llvm("sort", x))
    empty = np.zeros((0, 300), np.float32)
    assert llvm("sort", empty).shape == (0, 300)


def test_argsort_and_int_sort_are_unaffected() -> None:
    # Only float sort without indices takes the bucket path; the rest is the merge sort.
    x = normal((3, 700))
    np.testing.assert_array_equal(llvm("argsort", x, dtype="int64"), np.argsort(x, kind="stable"))
    ints = RNG.integers(-(2**31), 2**31, size=(3, 700), dtype=np.int64).astype(np.int32)
    check_sorted(ints, -1, True, llvm("sort", ints, descending=True))


def test_interpreter_runs_the_bucket_sort() -> None:
    # The harness runs the legalized kernel on the TIR interpreter.
    n = BUCKET_MIN_LENGTH + 3
    x = normal((2, n))
    x[0, ::9] = np.nan
    x[1, ::31] = -0.0
    x[1, 5::31] = 0.0
    assert all(paths(x))
    for descending in (False, True):
        got = run(lambda t, d=descending: op.sort(t, descending=d), [("x", (2, n), "float32")], [x])
        check_sorted(x, -1, descending, got)
