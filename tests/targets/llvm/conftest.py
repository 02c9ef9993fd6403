"""Shared helpers of the LLVM target tests: compile, run, compare with the interpreter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from relaxvm.ir.tir import PrimFunc, run_prim_func


def _run_both(
    func: PrimFunc, kernel: Callable[..., None], args: list[Any]
) -> tuple[list[Any], list[Any]]:
    """Run ``func`` with the reference interpreter and ``kernel`` natively on copies of
    ``args``; returns both argument lists after the call."""
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_prim_func(func, *ref)
    kernel(*out)
    return ref, out


def _assert_same(ref: list[Any], out: list[Any], rtol: float = 1e-6, atol: float = 1e-6) -> None:
    """Every array argument agrees (exactly for integers and bools)."""
    for position, (r, o) in enumerate(zip(ref, out, strict=True)):
        if not isinstance(r, np.ndarray):
            continue
        if r.dtype.kind in "iub":
            np.testing.assert_array_equal(o, r, err_msg=f"argument {position}")
        else:
            np.testing.assert_allclose(
                o.astype("float64"),
                r.astype("float64"),
                rtol=rtol,
                atol=atol,
                err_msg=f"argument {position}",
            )


@pytest.fixture
def parallel_always() -> Iterator[None]:
    """Force parallel loops onto the thread pool (cutoff 0, at least 2 threads, helpers woken
    even when the other cores are busy)."""
    from relaxvm_llvm import parallel

    with parallel.always_parallel():
        yield


@pytest.fixture
def run_both() -> Callable[..., tuple[list[Any], list[Any]]]:
    """``run_both(func, kernel, args)``: interpreter and native results on copies of args."""
    return _run_both


@pytest.fixture
def assert_same() -> Callable[..., None]:
    """``assert_same(ref, out, rtol, atol)``: compare argument lists after a run."""
    return _assert_same
