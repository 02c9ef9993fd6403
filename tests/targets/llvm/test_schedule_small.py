"""The small-row path of matmul-like kernels (``relaxvm_llvm.schedule.small``).

Few rows (a batch-1 layer) get unpacked one-row (or exact-row) tiles that are wide across the
columns, parallel over column tiles; a symbolic row count chooses between that path and the
packed register tiles at run time. Checked against the reference interpreter (same values
bit for bit) and, compiled, against numpy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from relaxvm.ir import Var
from relaxvm.ir.tir import For, ForKind, IfThenElse, PrimFunc, post_order_visit, run_prim_func
from relaxvm_llvm.schedule import CpuConfig, cpu_config, schedule_prim_func
from relaxvm_llvm.schedule import workloads as wl
from relaxvm_llvm.schedule.small import SMALL_ROWS, SMALL_VECTORS

AVX2 = CpuConfig(vector_bits=256, num_threads=2, parallel_cutoff=0)
SSE = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0)
ROWS = (1, 2, 5, 6, 7, 64)


def _rand(*shape: int, seed: int = 0, dtype: str = "float32") -> np.ndarray:
    rng = np.random.default_rng(seed + 7 * sum(shape))
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-6, 7, shape).astype(dtype)


def _interp_check(func: PrimFunc, arrays: list[np.ndarray], config: CpuConfig) -> PrimFunc:
    scheduled = schedule_prim_func(func, config)
    expected = [a.copy() for a in arrays]
    got = [a.copy() for a in arrays]
    run_prim_func(func, *expected)
    run_prim_func(scheduled, *got)
    np.testing.assert_array_equal(got[-1], expected[-1])
    return scheduled


def _top_branch(func: PrimFunc) -> IfThenElse | None:
    found: list[IfThenElse] = []
    post_order_visit(func.body, lambda s: found.append(s) if isinstance(s, IfThenElse) else None)
    # The run-time choice is the outermost branch (post order: visited last).
    return found[-1] if found else None


def _parallel_extents(stmt: object) -> list[object]:
    extents: list[object] = []

    def visit(node: object) -> None:
        if isinstance(node, For) and node.kind == ForKind.PARALLEL:
            extents.append(node.extent)

    post_order_visit(stmt, visit)  # type: ignore[arg-type]
    return extents


# ---- structure --------------------------------------------------------------------------------
def test_symbolic_rows_choose_at_run_time() -> None:
    n = Var("n")
    scheduled = schedule_prim_func(wl.matmul(n, 512, 512, bias=True, relu=True), AVX2)
    branch = _top_branch(scheduled)
    assert branch is not None
    text = scheduled.script()
    assert f"if n < T.int64({SMALL_ROWS}):" in text
    small = branch.then_case.script() if hasattr(branch.then_case, "script") else str(branch)
    # The small-row path: no packed copy, parallel over 512 / (8 lanes x 16) column tiles.
    assert "B_packed" not in small
    assert [getattr(e, "value", None) for e in _parallel_extents(branch.then_case)] == [
        512 // (8 * SMALL_VECTORS)
    ]
    # The many-row path keeps the packed register tiles.
    assert "B_packed" in text


def test_static_one_row_gets_only_the_small_path() -> None:
    scheduled = schedule_prim_func(wl.matmul(1, 512, 512, bias=True, relu=True), AVX2)
    text = scheduled.script()
    assert "B_packed" not in text and "if " not in text
    assert "T.min(" not in text  # no clamped rows: nothing is computed twice
    # No row axis left: one wide tile per thread (2 x 256 columns), W streamed in place.
    assert [e.value for e in _parallel_extents(scheduled.body)] == [2]  # type: ignore[attr-defined]
    assert "T.alloc_buffer((T.int64(1), T.int64(256))" in text


def test_static_few_rows_use_one_exact_tile() -> None:
    scheduled = schedule_prim_func(wl.matmul(3, 96, 40), AVX2)
    text = scheduled.script()
    # 3 rows x 4 vectors of 8 lanes: (16 registers - 4) // 3 vectors per row.
    assert "T.alloc_buffer((T.int64(3), T.int64(32))" in text
    assert "B_packed" not in text and "T.min(" not in text


def test_many_static_rows_keep_the_register_tiles() -> None:
    text = schedule_prim_func(wl.matmul(64, 512, 512), AVX2).script()
    assert "B_packed" in text and "T.int64(6), T.int64(16)" in text


def test_serial_when_the_work_is_small() -> None:
    config = replace(AVX2, parallel_cutoff=1 << 18)
    scheduled = schedule_prim_func(wl.matmul(1, 64, 64), config)
    assert _parallel_extents(scheduled.body) == []
    # A batch-1 layer of 512 x 512 (one row: 2**18 multiply-adds) stays on one core, static
    # or symbolic; from 4x the cutoff per row, its column tiles are parallel.
    n = Var("n")
    for rows in (1, n):
        small = schedule_prim_func(wl.matmul(rows, 512, 512), config)
        branch = _top_branch(small) if rows is n else None
        assert _parallel_extents(branch.then_case if branch else small.body) == []
    wide = _top_branch(schedule_prim_func(wl.matmul(n, 1024, 1024), config))
    assert wide is not None and len(_parallel_extents(wide.then_case)) == 1
    one_row = schedule_prim_func(wl.matmul(1, 1024, 1024), config)
    assert len(_parallel_extents(one_row.body)) == 1


# ---- interpreter: same values as the unscheduled function ----------------------------------
@pytest.mark.parametrize("rows", ROWS)
def test_interp_symbolic_rows_bias_relu(rows: int) -> None:
    n = Var("n")
    func = wl.matmul(n, 37, 19, bias=True, relu=True)
    arrays = [_rand(rows, 19), _rand(19, 37, seed=1), _rand(37, seed=2), _rand(rows, 37)]
    _interp_check(func, arrays, SSE)


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 6])
def test_interp_static_rows(rows: int) -> None:
    func = wl.matmul(rows, 70, 13, bias=True)
    arrays = [_rand(rows, 13), _rand(13, 70, seed=1), _rand(70, seed=2), _rand(rows, 70)]
    _interp_check(func, arrays, AVX2)


@pytest.mark.parametrize(("rows", "cols"), [(1, 45), (3, 7), (4, 1), (6, 33)])
def test_interp_symbolic_rows_and_columns(rows: int, cols: int) -> None:
    m, n = Var("m"), Var("n")
    func = wl.matmul(m, n, 11)
    _interp_check(func, [_rand(rows, 11), _rand(11, cols, seed=1), _rand(rows, cols)], SSE)


@pytest.mark.parametrize("rows", [1, 2, 5, 7])
def test_interp_batch_matmul_symbolic_rows(rows: int) -> None:
    n = Var("n")
    func = wl.matmul(n, 20, 9, batch=3)
    arrays = [_rand(3, rows, 9), _rand(3, 9, 20, seed=1), _rand(3, rows, 20)]
    _interp_check(func, arrays, SSE)


def test_interp_int32_one_row() -> None:
    func = wl.matmul(1, 40, 12, dtype="int32")
    arrays = [_rand(1, 12, dtype="int32"), _rand(12, 40, seed=1, dtype="int32")]
    _interp_check(func, [*arrays, np.zeros((1, 40), "int32")], AVX2)


# ---- compiled against numpy -------------------------------------------------------------------
@pytest.fixture
def _always_parallel() -> Iterator[None]:
    from relaxvm_llvm import parallel

    with parallel.always_parallel():
        yield


def _build(func: PrimFunc, config: CpuConfig):  # type: ignore[no-untyped-def]
    from relaxvm_llvm.target import build as llvm_build

    scheduled = schedule_prim_func(func, config)
    return llvm_build(scheduled)[scheduled.name]


@pytest.mark.usefixtures("_always_parallel")
def test_compiled_mlp_layer_every_row_count() -> None:
    host = replace(cpu_config(None), num_threads=2, parallel_cutoff=0)
    n = Var("n")
    kernel = _build(wl.matmul(n, 512, 256, bias=True, relu=True), host)
    w, bias = _rand(256, 512, seed=1), _rand(512, seed=2)
    for rows in ROWS:
        x = _rand(rows, 256)
        out = np.full((rows, 512), np.nan, "float32")
        kernel(x, w, bias, out)
        np.testing.assert_allclose(out, np.maximum(x @ w + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_always_parallel")
def test_compiled_odd_columns_batch_and_static() -> None:
    host = replace(cpu_config(None), num_threads=2, parallel_cutoff=0)
    m, n = Var("m"), Var("n")
    kernel = _build(wl.matmul(m, n, 33), host)
    for rows, cols in [(1, 200), (2, 7), (5, 131), (6, 1), (7, 64), (64, 45)]:
        a, b = _rand(rows, 33), _rand(33, cols, seed=1)
        out = np.full((rows, cols), np.nan, "float32")
        kernel(a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    n = Var("n")
    kernel = _build(wl.matmul(n, 150, 40, batch=2), host)
    for rows in ROWS:
        a, b = _rand(2, rows, 40), _rand(2, 40, 150, seed=1)
        out = np.full((2, rows, 150), np.nan, "float32")
        kernel(a, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    for rows in (1, 2, 5):
        kernel = _build(wl.matmul(rows, 300, 70, bias=True), host)
        a, b, bias = _rand(rows, 70), _rand(70, 300, seed=1), _rand(300, seed=2)
        out = np.full((rows, 300), np.nan, "float32")
        kernel(a, b, bias, out)
        np.testing.assert_allclose(out, a @ b + bias, rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("_always_parallel")
def test_compiled_dense_small_and_large_rows() -> None:
    """``x @ W.T`` stays consistent: dot products for few rows, packed tiles for many."""
    host = replace(cpu_config(None), num_threads=2, parallel_cutoff=0)
    n = Var("n")
    kernel = _build(wl.dense(n, 70, 45), host)
    w = _rand(70, 45, seed=1)
    for rows in ROWS:
        x = _rand(rows, 45)
        out = np.full((rows, 70), np.nan, "float32")
        kernel(x, w, out)
        np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


# ---- packing inside the parallel column blocks ------------------------------------------------
BLOCKED = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0, l2_bytes=4096)


@pytest.mark.parametrize(("rows", "cols"), [(25, 32), (30, 68), (6, 64)])
def test_interp_each_column_block_packs_its_own_tiles(rows: int, cols: int) -> None:
    # 4 blocks of 8 columns (even between 2 threads); 8 blocks + 4 columns left over.
    func = wl.matmul(rows, cols, 64, bias=True)
    arrays = [_rand(rows, 64), _rand(64, cols, seed=1), _rand(cols, seed=2), _rand(rows, cols)]
    scheduled = _interp_check(func, arrays, BLOCKED)
    text = scheduled.script()
    if rows > 6:
        assert "B_packed" in text
        # One parallel loop, over the column blocks, with no separate parallel copy.
        assert len(_parallel_extents(scheduled.body)) == 1
        assert "pack_tile" not in text and "pack_t" in text


def test_uneven_blocks_keep_the_shared_grid() -> None:
    # 3 blocks on 2 threads: the blocks times the row tiles form one grid.
    text = schedule_prim_func(wl.matmul(25, 24, 64), BLOCKED).script()
    assert "pack_tile" in text and "T.parallel(T.int64(15))" in text  # 3 x 5 row tiles


@pytest.mark.usefixtures("_always_parallel")
def test_compiled_block_packing_symbolic_rows() -> None:
    host = replace(cpu_config(None), num_threads=2, parallel_cutoff=0, l2_bytes=64 * 1024)
    n = Var("n")
    func = wl.matmul(n, 200, 96, bias=True, relu=True)
    assert "pack_t" in schedule_prim_func(func, host).script()
    kernel = _build(func, host)
    w, bias = _rand(96, 200, seed=1), _rand(200, seed=2)
    for rows in (*ROWS, 13, 100):
        x = _rand(rows, 96)
        out = np.full((rows, 200), np.nan, "float32")
        kernel(x, w, bias, out)
        np.testing.assert_allclose(out, np.maximum(x @ w + bias, 0), rtol=1e-4, atol=1e-4)


def test_dense_keeps_the_whole_operand_copy() -> None:
    # x @ W.T packs W by gathers: the copy stays one pass before the grid.
    func = wl.dense(30, 32, 64)
    arrays = [_rand(30, 64), _rand(32, 64, seed=1), _rand(30, 32)]
    text = _interp_check(func, arrays, BLOCKED).script()
    assert "W_packed" in text and "pack_tile" in text
