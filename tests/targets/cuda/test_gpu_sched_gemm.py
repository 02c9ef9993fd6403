"""The tiled GEMM schedule (matmul, batch matmul, dense, implicit-GEMM convolution) and warp
shuffles, checked on the CPU by the reference interpreter (GPU semantics) and by ptxas."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Var
from relaxvm.ir.tir import (
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    PrimFunc,
    post_order_visit,
    run_prim_func,
)
from relaxvm.ir.tir.intrin_gpu import ShflDown, shfl_down, storage_sync
from relaxvm_cuda.codegen import compile_ptx
from relaxvm_cuda.ptxas import find_ptxas
from relaxvm_cuda.schedule import matmul as matmul_schedule
from relaxvm_cuda.schedule import schedule_kind, schedule_prim_func
from relaxvm_cuda.schedule.matmul import FILL_BLOCKS, SMALL_TILE, GemmPlan, plan_gemm
from relaxvm_llvm.schedule import workloads


def _arrays(func: PrimFunc, n: int | None = None, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for param in func.params:
        shape = [
            int(n or 0) if isinstance(e, Var) else int(e.value)  # type: ignore[attr-defined]
            for e in func.buffer_map[param].shape
        ]
        out.append(rng.standard_normal(shape).astype("float32"))
    return out


def _run_scheduled(func: PrimFunc, kind: str, n: int | None = None) -> list[np.ndarray]:
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == kind
    arrays = _arrays(func, n)
    run_prim_func(scheduled, *arrays)
    return arrays


def test_matmul_at_odd_sizes_with_bias_and_relu() -> None:
    a, b, bias, out = _run_scheduled(workloads.matmul(37, 19, 45, bias=True, relu=True), "gemm")
    np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_batch_matmul_guards_every_tile_edge() -> None:
    a, b, out = _run_scheduled(workloads.matmul(9, 7, 20, batch=3), "gemm")
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_dense_reads_the_weight_transposed() -> None:
    x, w, out = _run_scheduled(workloads.dense(5, 6, 33), "gemm")
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


def test_matmul_with_a_symbolic_row_count() -> None:
    n = Var("n", "int64")
    a, b, out = _run_scheduled(workloads.matmul(n, 5, 18), "gemm", n=3)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def _plan(func: PrimFunc) -> GemmPlan:
    from relaxvm.ir.tir.stages import parse_stages

    scratch, stages = parse_stages(func)
    plan = plan_gemm(stages, scratch)
    assert plan is not None
    return plan


def _tiles(func: PrimFunc) -> tuple[int, int]:
    plan = _plan(func)
    return plan.bm, plan.bn


def test_a_symbolic_side_facing_a_narrow_one_takes_64_wide_tiles() -> None:
    n = Var("n", "int64")
    assert _tiles(workloads.matmul(n, 4096, 64)) == (128, 128)  # both sides large
    assert _tiles(workloads.matmul(n, 35, 19)) == (64, 64)  # skinny: twice the blocks
    assert _tiles(workloads.matmul(n, 9, 19)) == (64, 16)
    assert _tiles(workloads.matmul(20000, 35, 19)) == (128, 64)  # static: by the sizes
    # Two row tiles of 64 with a ragged second one.
    a, b, out = _run_scheduled(workloads.matmul(n, 9, 5), "gemm", n=70)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_a_static_product_of_few_large_tiles_takes_the_small_tiling() -> None:
    # 300 x 35 in 128 x 64 tiles is 3 blocks: most multiprocessors would idle.
    plan = _plan(workloads.matmul(300, 35, 19))
    assert (plan.bm, plan.bn, plan.bk, plan.small) == (*SMALL_TILE, None)
    big = _plan(workloads.matmul(2048, 1024, 19))
    assert (big.bm, big.bn, big.bk, big.small) == (128, 128, 16, None)
    small = _plan(workloads.matmul(70, 35, 9))  # the same rule, small enough to interpret
    assert (small.bm, small.bn, small.bk) == SMALL_TILE
    a, b, out = _run_scheduled(workloads.matmul(70, 35, 9), "gemm")
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fill", [FILL_BLOCKS, 1], ids=["small-launch", "large-launch"])
def test_a_symbolic_side_picks_its_tiling_at_each_launch(
    fill: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One kernel, two tilings: the launch extents decide (with fill 1 the 64 x 64 tiling
    # always launches enough blocks, so the large branch runs).
    monkeypatch.setattr(matmul_schedule, "FILL_BLOCKS", fill)
    n = Var("n", "int64")
    func = workloads.matmul(n, 35, 9, bias=True, relu=True)
    plan = _plan(func)
    assert (plan.bm, plan.bn, plan.small) == (64, 64, SMALL_TILE)
    for rows in (5, 40):
        a, b, bias, out = _run_scheduled(func, "gemm", n=rows)
        np.testing.assert_allclose(out, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_strided_padded_conv2d_is_an_implicit_gemm() -> None:
    func = workloads.conv2d_nchw(2, 3, 6, 5, 4, stride=2, bias=True, relu=True)
    ref = _arrays(func)
    got = [x.copy() for x in ref]
    run_prim_func(func, *ref)
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == "gemm"
    run_prim_func(scheduled, *got)
    np.testing.assert_allclose(got[-1], ref[-1], rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_gemm_tile_stays_in_registers(arch: str) -> None:
    # A symbolic M takes the largest tile: 128 x 128, an 8 x 8 micro-tile per thread.
    n = Var("n", "int64")
    kernel = schedule_prim_func(workloads.matmul(n, 4096, 4096))
    program = compile_ptx([("mm", kernel)], arch)
    exe = shutil.which("ptxas") or "ptxas"
    done = subprocess.run(
        [exe, "-v", f"-arch={arch}", "-o", "/dev/null", "-"],
        input=program.ptx,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores" in done.stderr
    registers = int(re.search(r"Used (\d+) registers", done.stderr).group(1))  # type: ignore[union-attr]
    assert registers <= 255  # 256 threads per block must fit the 64K register file
    assert "bar.sync" in program.ptx


def test_max_pool_with_a_symbolic_batch_runs_a_thread_per_output() -> None:
    n = Var("n", "int64")
    func = workloads.max_pool2d(n, 2, 7, 6, k=3, stride=2)
    ref = _arrays(func, n=2)
    got = [x.copy() for x in ref]
    run_prim_func(func, *ref)
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == "small_reduction"
    run_prim_func(scheduled, *got)
    np.testing.assert_array_equal(got[-1], ref[-1])
    assert "bar.sync" not in compile_ptx([("pool", scheduled)], "sm_80").ptx


# ---- warp shuffles -------------------------------------------------------------------------
def _shuffle_kernel(threads: int, delta: int) -> PrimFunc:
    """out[t] = in[t + delta] within the warp (own value past its end)."""
    a = Buffer("A", (threads,), "float32")
    out = Buffer("B", (threads,), "float32")
    tx = Var("tx", "int64")
    body = For(
        tx,
        0,
        threads,
        ForKind.THREAD_BINDING,
        BufferStore(out, shfl_down(a[tx], delta), [tx]),
        "threadIdx.x",
    )
    pa, pb = Var("A_handle", "handle"), Var("B_handle", "handle")
    return PrimFunc([pa, pb], body, buffer_map={pa: a, pb: out})


def test_shfl_down_reads_the_lane_delta_above_within_its_warp() -> None:
    x = np.arange(64, dtype="float32")
    out = np.zeros_like(x)
    run_prim_func(_shuffle_kernel(64, 5), x, out)
    expected = x.copy()
    for t in range(64):
        if t % 32 + 5 < 32:
            expected[t] = x[t + 5]
    np.testing.assert_array_equal(out, expected)


def test_row_sum_uses_shuffles_and_two_barriers() -> None:
    scheduled = schedule_prim_func(workloads.reduce_sum((3, 300), 1))
    assert schedule_kind(scheduled) == "rows"
    found: dict[str, int] = {"shfl": 0, "sync": 0}

    def visit(node: object) -> None:
        if isinstance(node, BufferStore) and isinstance(node.value, object):
            found["shfl"] += "shfl_down" in str(node.value)
        if isinstance(node, Evaluate):
            found["sync"] += 1

    post_order_visit(scheduled.body, visit)
    assert found["shfl"] == 5 + 3  # 32 lanes, then 8 warps' results
    assert found["sync"] == 2
    program = compile_ptx([("row_sum", scheduled)], "sm_80")
    assert "shfl.sync.down.b32" in program.ptx


def test_shfl_down_rejects_other_types() -> None:
    with pytest.raises(VMTypeError, match="tir.shfl_down: the value must be one of"):
        ShflDown("float64", "tir.shfl_down", [Var("x", "float64"), Var("d", "int32")])
    with pytest.raises(VMTypeError, match="delta must be int32"):
        ShflDown("float32", "tir.shfl_down", [Var("x", "float32"), Var("d", "int64")])


def test_shfl_down_outside_a_store_is_an_error() -> None:
    a = Buffer("A", (32,), "float32")
    tx = Var("tx", "int64")
    body = For(tx, 0, 32, ForKind.THREAD_BINDING, Evaluate(shfl_down(a[tx], 1)), "threadIdx.x")
    pa = Var("A_handle", "handle")
    func = PrimFunc([pa], body, buffer_map={pa: a})
    with pytest.raises(VMValueError, match="must be the value of a BufferStore"):
        run_prim_func(func, np.zeros(32, "float32"))


def test_barrier_is_still_rejected_as_a_value() -> None:
    assert storage_sync().dtype == "int32"
