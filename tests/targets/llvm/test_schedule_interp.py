"""Default CPU schedules: each scheduled PrimFunc computes what the unscheduled one does.

The oracle is the TIR reference interpreter on tiny shapes (odd sizes, so every edge/tail path
runs), with a 128-bit vector config (4 float32 lanes) so small tensors still exercise full
tiles, plus structural checks that the expected loop kinds appear.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from relaxvm.ir import Var
from relaxvm.ir.tir import For, ForKind, PrimFunc, post_order_visit, run_prim_func
from relaxvm_llvm.schedule import (
    SCHEDULED_ATTR,
    CpuConfig,
    ScheduleError,
    cpu_config,
    schedule_conv2d,
    schedule_injective,
    schedule_matmul,
    schedule_pool,
    schedule_prim_func,
    schedule_reduction,
    schedule_row_kernel,
)
from relaxvm_llvm.schedule import workloads as wl

SMALL = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0)
WIDE = CpuConfig(vector_bits=512, num_threads=2, parallel_cutoff=0)
SERIAL = CpuConfig(vector_bits=256, num_threads=1)


def _arrays(func: PrimFunc, shapes: list[tuple[int, ...]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for param, shape in zip(func.params, shapes, strict=True):
        dtype = str(func.buffer_map[param].dtype)
        if dtype.startswith("float"):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == "bool":
            arrays.append(rng.integers(0, 2, shape).astype(bool))
        else:
            arrays.append(rng.integers(-5, 6, shape).astype(dtype))
    return arrays


def check(
    func: PrimFunc, shapes: list[tuple[int, ...]], config: CpuConfig = SMALL, exact: bool = True
) -> PrimFunc:
    """Schedule ``func``, run both versions on the same inputs, compare the last argument."""
    scheduled = schedule_prim_func(func, config)
    assert scheduled.attrs[SCHEDULED_ATTR] is True
    args = _arrays(func, shapes)
    expected = [a.copy() for a in args]
    got = [a.copy() for a in args]
    run_prim_func(func, *expected)
    run_prim_func(scheduled, *got)
    if exact:
        np.testing.assert_array_equal(got[-1], expected[-1])
    else:
        np.testing.assert_allclose(got[-1], expected[-1], rtol=1e-5, atol=1e-5)
    return scheduled


def kinds(func: PrimFunc) -> list[ForKind]:
    found: list[ForKind] = []
    post_order_visit(func.body, lambda s: found.append(s.kind) if isinstance(s, For) else None)
    return found


def vector_extents(func: PrimFunc) -> set[int]:
    found: set[int] = set()

    def visit(stmt: object) -> None:
        if isinstance(stmt, For) and stmt.kind == ForKind.VECTORIZED:
            found.add(stmt.extent.value)  # type: ignore[attr-defined]

    post_order_visit(func.body, visit)
    return found


# ---- injective ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 13), (37,), (2, 3, 9), (4, 16), (3, 2)])
def test_elementwise_add_static(shape: tuple[int, ...]) -> None:
    scheduled = check(wl.add(shape), [shape, shape, shape])
    assert ForKind.VECTORIZED in kinds(scheduled)
    assert ForKind.PARALLEL in kinds(scheduled)


def test_elementwise_symbolic_tail() -> None:
    n, m = Var("n"), Var("m")
    func = wl.add((n, m))
    for shape in [(3, 11), (1, 1), (2, 8), (4, 0)]:
        check(func, [shape, shape, shape])
    scheduled = schedule_prim_func(func, SMALL)
    assert vector_extents(scheduled) == {8}  # two 4-lane vectors per chunk


def test_broadcast_add_keeps_bias_invariant() -> None:
    scheduled = check(wl.add((6, 10), bshape=(10,)), [(6, 10), (10,), (6, 10)])
    assert ForKind.VECTORIZED in kinds(scheduled)


def test_transpose_is_not_vectorized() -> None:
    from relaxvm.ir.tir import te

    a = te.placeholder((5, 7), "float32", name="A")
    b = te.compute((7, 5), lambda i, j: a[j, i], name="B")
    func = te.create_prim_func([a, b])
    scheduled = check(func, [(5, 7), (7, 5)])
    assert ForKind.VECTORIZED not in kinds(scheduled)


def test_int8_and_bool_kernels() -> None:
    from relaxvm.ir.tir import te

    a = te.placeholder((3, 21), "int8", name="A")
    b = te.compute((3, 21), lambda i, j: (a[i, j] * 3).astype("int8"), name="B")
    scheduled = check(te.create_prim_func([a, b]), [(3, 21), (3, 21)], WIDE)
    assert vector_extents(scheduled) == {21}  # 21 < 64 lanes: one short vector
    c = te.compute((3, 21), lambda i, j: a[i, j] > 0, name="C")
    scheduled = check(te.create_prim_func([a, c]), [(3, 21), (3, 21)])
    assert ForKind.VECTORIZED not in kinds(scheduled)


def test_small_work_stays_serial_by_default() -> None:
    scheduled = schedule_prim_func(wl.add((4, 4)), CpuConfig(vector_bits=256, num_threads=2))
    assert ForKind.PARALLEL not in kinds(scheduled)
    scheduled = schedule_prim_func(wl.add((1024, 1024)), CpuConfig(vector_bits=256))
    assert ForKind.PARALLEL in kinds(scheduled)
    assert ForKind.PARALLEL not in kinds(schedule_prim_func(wl.add((4096, 1024)), SERIAL))


# ---- reductions --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("shape", [(3, 19), (2, 8), (4, 3)])
def test_last_axis_reduction(op: str, shape: tuple[int, int]) -> None:
    func = wl.reduce_sum(shape, axis=1, op=op)
    check(func, [shape, shape[:1]], exact=op != "sum")


def test_last_axis_sum_symbolic_and_mean() -> None:
    n, m = Var("n"), Var("m")
    func = wl.reduce_sum((n, m), axis=1)
    for shape in [(3, 19), (2, 5), (1, 8)]:
        check(func, [shape, shape[:1]], exact=False)
    scheduled = check(wl.reduce_sum((3, 17), axis=1, mean=True), [(3, 17), (3,)], exact=False)
    assert "T_red[" not in scheduled.script()  # the divide is inlined after the reduction


def test_int_sum_is_exact_with_lanes() -> None:
    func = wl.reduce_sum((3, 29), axis=1, dtype="int32")
    scheduled = check(func, [(3, 29), (3,)])
    assert ForKind.VECTORIZED in kinds(scheduled)


@pytest.mark.parametrize("shape", [(7, 10), (4, 3, 9)])
def test_outer_axis_reduction_vectorizes_the_output(shape: tuple[int, ...]) -> None:
    func = wl.reduce_sum(shape, axis=0)
    scheduled = check(func, [shape, shape[1:]])
    assert ForKind.VECTORIZED in kinds(scheduled)


def test_full_reduction_to_scalar() -> None:
    from relaxvm.ir.tir import te

    a = te.placeholder((21,), "float32", name="A")
    k = te.reduce_axis((0, 21), name="k")
    s = te.compute((), lambda: te.sum(a[k], axis=k), name="S")
    check(te.create_prim_func([a, s]), [(21,), ()], exact=False)


# ---- matmul --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("m", "n", "k"), [(13, 20, 11), (8, 8, 8), (1, 9, 5), (3, 2, 4), (16, 13, 3)]
)
def test_matmul_static(m: int, n: int, k: int) -> None:
    scheduled = check(wl.matmul(m, n, k), [(m, k), (k, n), (m, n)])
    assert ForKind.VECTORIZED in kinds(scheduled)


def test_matmul_symbolic_rows_and_cols() -> None:
    m, n = Var("m"), Var("n")
    func = wl.matmul(m, n, 6)
    for mm, nn in [(11, 13), (4, 8), (1, 1), (9, 3)]:
        check(func, [(mm, 6), (6, nn), (mm, nn)])


def test_matmul_bias_relu_epilogue_is_inlined() -> None:
    n = Var("n")
    func = wl.matmul(n, 12, 7, bias=True, relu=True)
    for rows in (9, 4, 1):
        scheduled = check(func, [(rows, 7), (7, 12), (12,), (rows, 12)])
    text = scheduled.script()
    assert "T_add" not in text and "T_matmul[" not in text  # no scratch round trip
    assert ForKind.PARALLEL in kinds(scheduled)


def test_batch_matmul_and_int32() -> None:
    check(wl.matmul(5, 6, 4, batch=3), [(3, 5, 4), (3, 4, 6), (3, 5, 6)])
    check(wl.matmul(9, 10, 5, dtype="int32"), [(9, 5), (5, 10), (9, 10)])


def test_dense_transposed_weight() -> None:
    scheduled = check(wl.dense(5, 6, 19), [(5, 19), (6, 19), (5, 6)], exact=False)
    assert ForKind.VECTORIZED in kinds(scheduled)


def test_wide_vectors_tile_shape() -> None:
    scheduled = check(wl.matmul(17, 40, 3), [(17, 3), (3, 40), (17, 40)], WIDE)
    assert vector_extents(scheduled) == {16, 8}  # 2 x 16 lanes, then an 8-column edge


# ---- convolution, pooling, row kernels -------------------------------------------------------
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_bias_relu(stride: int) -> None:
    func = wl.conv2d_nchw(1, 3, 7, 6, 5, stride=stride, bias=True, relu=True)
    oh, ow = (7 + 2 - 3) // stride + 1, (6 + 2 - 3) // stride + 1
    check(func, [(1, 3, 7, 6), (5, 3, 3, 3), (5,), (1, 5, oh, ow)])


def test_conv2d_batch2() -> None:
    func = wl.conv2d_nchw(2, 2, 5, 5, 3)
    check(func, [(2, 2, 5, 5), (3, 2, 3, 3), (2, 3, 5, 5)])


@pytest.mark.parametrize("stride", [1, 2])
def test_max_pool(stride: int) -> None:
    func = wl.max_pool2d(1, 2, 9, 10, stride=stride)
    oh, ow = (9 - 3) // stride + 1, (10 - 3) // stride + 1
    check(func, [(1, 2, 9, 10), (1, 2, oh, ow)])


def test_softmax_and_layer_norm() -> None:
    n = Var("n")
    check(wl.softmax(n, 13), [(3, 13), (3, 13)], exact=False)
    check(wl.softmax(4, 40), [(4, 40), (4, 40)], WIDE, exact=False)
    check(wl.layer_norm(3, 21), [(3, 21), (21,), (21,), (3, 21)], exact=False)


# ---- entry points and errors -----------------------------------------------------------------
def test_per_pattern_entry_points() -> None:
    assert schedule_injective(wl.add((4, 5)), SMALL).attrs[SCHEDULED_ATTR]
    assert schedule_matmul(wl.matmul(4, 5, 6), SMALL).attrs[SCHEDULED_ATTR]
    assert schedule_reduction(wl.reduce_sum((4, 5), 1), SMALL).attrs[SCHEDULED_ATTR]
    assert schedule_row_kernel(wl.softmax(4, 5), SMALL).attrs[SCHEDULED_ATTR]
    assert schedule_conv2d(wl.conv2d_nchw(1, 2, 4, 4, 2), SMALL).attrs[SCHEDULED_ATTR]
    assert schedule_pool(wl.max_pool2d(1, 1, 4, 4), SMALL).attrs[SCHEDULED_ATTR]


def test_wrong_pattern_raises() -> None:
    with pytest.raises(ScheduleError, match=r"schedule_matmul: 'add' has no stage"):
        schedule_matmul(wl.add((4, 5)), SMALL)
    with pytest.raises(ScheduleError, match="expected a PrimFunc, got int"):
        schedule_prim_func(3, SMALL)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        schedule_injective(wl.matmul(4, 4, 4), SMALL)


def test_opaque_and_already_scheduled_are_unchanged() -> None:
    func = wl.add((4, 5)).with_attr("op_pattern", 8)
    assert schedule_prim_func(func, SMALL) is func
    once = schedule_prim_func(wl.add((64, 64)), SMALL)
    assert schedule_prim_func(once, SMALL) is once


def test_cpu_config_from_target_attrs() -> None:
    assert cpu_config({"mcpu": "haswell"}).vector_bits == 256
    assert cpu_config({"mcpu": "x86-64", "mattr": "+avx512f"}).vector_bits == 512
    assert cpu_config({"mcpu": "generic"}).vector_bits == 128
    assert cpu_config({"mcpu": "znver5", "num-threads": 3}).num_threads == 3
    assert cpu_config(SMALL) is SMALL
    assert CpuConfig(vector_bits=512).lanes("float32") == 16
    assert CpuConfig(vector_bits=256).lanes("int8") == 32
    assert cpu_config(None).vector_bits in (128, 256, 512)


# ---- packing, column blocks, edge tiles, padding -------------------------------------------------
BLOCKED = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0, l2_bytes=4096)


def test_matmul_packing_and_column_blocks() -> None:
    func = wl.matmul(25, 20, 64, bias=True)
    scheduled = check(func, [(25, 64), (64, 20), (20,), (25, 20)], BLOCKED)
    text = scheduled.script()
    assert "B_packed" in text  # the right-hand operand is copied tile by tile
    # 3 column blocks (2 full, 1 left over) x 5 row tiles (4 full, 1 edge) in one grid.
    assert "T.parallel(T.int64(15))" in text and "// T.int64(5) < T.int64(2)" in text
    unpacked = schedule_prim_func(wl.matmul(25, 20, 64), replace(BLOCKED, pack=False))
    assert "B_packed" not in unpacked.script()
    # Too few rows to pay for the copy: no packing.
    assert "B_packed" not in schedule_prim_func(wl.matmul(12, 20, 64), BLOCKED).script()


def test_matmul_packing_symbolic() -> None:
    m, n = Var("m"), Var("n")
    func = wl.matmul(m, n, 64)
    scheduled = schedule_prim_func(func, BLOCKED)
    assert "B_packed" in scheduled.script()
    for rows, cols in [(26, 19), (3, 8), (7, 2)]:
        check(func, [(rows, 64), (64, cols), (rows, cols)], BLOCKED)


def test_row_edge_tile_joins_the_parallel_grid() -> None:
    scheduled = check(wl.matmul(14, 9, 3), [(14, 3), (3, 9), (14, 9)])
    parallel_loops = [k for k in kinds(scheduled) if k == ForKind.PARALLEL]
    assert len(parallel_loops) == 1 and "T.parallel(T.int64(3))" in scheduled.script()


def test_padding_is_partitioned_and_vectorized() -> None:
    func = wl.conv2d_nchw(1, 2, 9, 10, 3)
    scheduled = check(func, [(1, 2, 9, 10), (3, 2, 3, 3), (1, 3, 9, 10)])
    pad_stage = scheduled.script().split("conv2d_nchw_acc")[0]
    assert "T.vectorized" in pad_stage  # the interior of each padded row is a vector copy


def test_other_guards_become_selects_of_clamped_loads() -> None:
    from relaxvm.ir.tir import if_then_else, te

    a = te.placeholder((4, 9), "float32", name="A")
    b = te.compute((4, 9), lambda i, j: if_then_else(j * j < 20, a[i, j + 1], tir_zero()), name="B")
    scheduled = check(te.create_prim_func([a, b]), [(4, 9), (4, 9)])
    text = scheduled.script()
    assert "T.if_then_else" not in text and "T.Select" in text
    assert ForKind.VECTORIZED in kinds(scheduled)


def tir_zero() -> object:
    from relaxvm.ir import const

    return const(0.0, "float32")


def test_schedule_module_maps_every_prim_func() -> None:
    from relaxvm.ir.relax.module import IRModule
    from relaxvm_llvm.schedule import schedule_module

    mod = IRModule({"add": wl.add((8, 8)), "mm": wl.matmul(4, 4, 4)})
    scheduled = schedule_module(mod, SMALL)
    assert all(f.attrs.get(SCHEDULED_ATTR) for _, f in scheduled.items())
    assert not any(f.attrs.get(SCHEDULED_ATTR) for _, f in mod.items())  # a copy
    as_dict = schedule_module({"add": wl.add((8, 8)), "other": 3}, SMALL)
    assert as_dict["add"].attrs[SCHEDULED_ATTR] and as_dict["other"] == 3
    with pytest.raises(ScheduleError, match="schedule_module: expected an IRModule"):
        schedule_module([1, 2], SMALL)


def test_dense_packs_the_transposed_weight() -> None:
    scheduled = check(wl.dense(18, 13, 9), [(18, 9), (13, 9), (18, 13)])
    assert "W_packed" in scheduled.script()
    few_rows = schedule_prim_func(wl.dense(5, 13, 9), SMALL)
    assert "W_packed" not in few_rows.script()
    n = Var("n")
    func = wl.dense(n, 11, 6)
    text = schedule_prim_func(func, SMALL).script()
    assert "if n >= T.int64(16)" in text and "W_packed" in text  # chosen at run time
    for rows in (17, 3):
        check(func, [(rows, 6), (11, 6), (rows, 11)], exact=False)


def test_cpu_config_from_llvm_target() -> None:
    from relaxvm.target import Target

    assert cpu_config(Target("llvm -mcpu=skylake-avx512")).vector_bits == 512
    assert cpu_config(Target("llvm -mcpu=x86-64 -mattr=+avx2,+fma")).vector_bits == 256
    assert cpu_config(Target("llvm")).vector_bits == cpu_config(None).vector_bits


def test_epilogue_is_not_inlined_when_the_result_is_read_elsewhere() -> None:
    from relaxvm.ir.tir import te

    a = te.placeholder((7, 4), "float32", name="A")
    b = te.placeholder((4, 9), "float32", name="B")
    k = te.reduce_axis((0, 4), name="k")
    c = te.compute((7, 9), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    d = te.compute((7, 9), lambda i, j: c[i, j] * 2.0, name="D")
    e = te.compute((7, 9), lambda i, j: d[i, j] + c[i, 0], name="E")  # reads C at column 0
    scheduled = check(te.create_prim_func([a, b, e]), [(7, 4), (4, 9), (7, 9)])
    assert "C = T.alloc_buffer" in scheduled.script()  # C is still materialized
    shifted = te.compute((7, 9), lambda i, j: c[i, (j + 1) % 9] + 1.0, name="S")
    scheduled = check(te.create_prim_func([a, b, shifted]), [(7, 4), (4, 9), (7, 9)])
    assert "C = T.alloc_buffer" in scheduled.script()
