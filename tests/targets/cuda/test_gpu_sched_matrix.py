"""Every static-shape kernel of the op conformance matrix, scheduled for the GPU, computes what
the unscheduled kernel computes: both run in the reference interpreter (the scheduled one
with block/thread semantics) on the same random inputs.

Kernels left in one thread are the unscheduled kernel wrapped in a launch, so they are
skipped; tiled GEMM kernels are slow to interpret (256 threads per block), so a few of them
stand for the rest (test_gpu_sched_gemm checks that schedule at odd sizes), and the first
injective kernels stand for theirs.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import pytest

from relaxvm.errors import VMIndexError
from relaxvm.ir import IntImm
from relaxvm.ir.tir import PrimFunc, run_prim_func
from relaxvm_cuda.schedule import schedule_kind

#: How many GEMM kernels, and injective ones (the simplest schedule), are interpreted.
GEMM_SAMPLE = 2
INJECTIVE_SAMPLE = 120


@pytest.fixture(scope="module")
def kernels(matrix_kernels: dict[Any, list[Any]]) -> list[tuple[str, PrimFunc, PrimFunc]]:
    # The session's matrix build (conftest.matrix_kernels), static-shape groups only.
    return [k for group, found in matrix_kernels.items() if group[2] == "static" for k in found]


def _inputs(func: PrimFunc, rng: np.random.Generator) -> list[np.ndarray] | None:
    arrays = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None or not all(isinstance(e, IntImm) for e in buffer.shape):
            return None
        shape = [int(e.value) for e in buffer.shape]  # type: ignore[attr-defined]
        dtype = str(buffer.dtype)
        if dtype == "bool":
            arrays.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.startswith(("int", "uint")):
            arrays.append(rng.integers(0, 3, shape).astype(dtype))  # valid as indices too
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def _outcome(func: PrimFunc, arrays: list[np.ndarray]) -> str | None:
    try:
        run_prim_func(func, *arrays)
    except Exception as err:  # the same error must come from both kernels
        return type(err).__name__
    return None


def test_scheduled_matrix_kernels_match_the_unscheduled_ones(kernels: list[Any]) -> None:
    checked: collections.Counter[str] = collections.Counter()
    kinds = {name: schedule_kind(scheduled) for name, _, scheduled in kernels}
    # per-row scratch in shared memory, a scalar loss in one block, scans and sorts per line
    for name in ("attention", "median", "group_norm", "nll_loss", "cross_entropy_with_logits"):
        assert kinds[name] == "rows", name
    for name in ("cumsum", "argmax", "sort"):
        assert kinds[name] == "outer_parallel", name
    assert kinds["avg_pool2d"] == "small_reduction" and kinds["conv2d"] == "gemm"
    for name, plain, scheduled in kernels:
        kind = schedule_kind(scheduled)
        if kind == "single_thread" or (kind == "gemm" and checked[kind] >= GEMM_SAMPLE):
            continue
        if kind == "injective" and checked[kind] >= INJECTIVE_SAMPLE:
            continue
        inputs = _inputs(plain, np.random.default_rng(0))
        if inputs is None:
            continue
        ref, got = [a.copy() for a in inputs], [a.copy() for a in inputs]
        assert _outcome(plain, ref) == _outcome(scheduled, got), name
        for want, have in zip(ref, got, strict=True):
            np.testing.assert_allclose(
                have.astype("float64"), want.astype("float64"), rtol=1e-4, atol=1e-4,
                equal_nan=True, err_msg=f"{name} ({kind})",
            )  # fmt: skip
        checked[kind] += 1
    assert checked["injective"] == INJECTIVE_SAMPLE and checked["rows"] > 45
    assert checked["gemm"] == GEMM_SAMPLE and checked["outer_parallel"] >= 10
    assert checked["small_reduction"] >= 10


@pytest.mark.parametrize("name", ["take", "gather_elements"])
def test_a_gather_checks_each_index_where_it_loads(kernels: list[Any], name: str) -> None:
    plain, scheduled = next((p, s) for n, p, s in kernels if n == name)
    assert schedule_kind(scheduled) == "injective"  # the validation prologue is folded
    inputs = _inputs(plain, np.random.default_rng(1))
    assert inputs is not None
    index = next(k for k, a in enumerate(inputs) if a.dtype == np.int64)
    inputs[index].flat[-1] = 99  # one index out of range
    messages = []
    for func in (plain, scheduled):
        with pytest.raises(VMIndexError) as caught:
            run_prim_func(func, *[a.copy() for a in inputs])
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "index 99 is out of range" in messages[0]
