"""The injective schedule's vector accesses: 16 bytes per thread and buffer where the output
and an input are read and written at the same element, 128-bit loads and stores in the PTX,
and the same results as numpy in the reference interpreter (vector loops run element by
element there), including odd extents, broadcasts and symbolic shapes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from relaxvm.ir import Var
from relaxvm.ir.tir import (
    Buffer,
    BufferStore,
    For,
    ForKind,
    PrimFunc,
    post_order_visit,
    run_prim_func,
    te,
)
from relaxvm_cuda.codegen import compile_ptx
from relaxvm_cuda.ptxas import find_ptxas, ptxas_check
from relaxvm_cuda.schedule import schedule_kind, schedule_prim_func
from relaxvm_llvm.schedule import workloads

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not on PATH")
# LLVM spells untyped 32-bit global accesses .b32 (.f32 in older releases); inputs that are
# never written are read through the read-only cache (.nc).
VECTOR_LOAD = re.compile(r"ld\.global(?:\.nc)?\.v4\.[bf]32")
VECTOR_STORE = re.compile(r"st\.global\.v4\.[bf]32")


def _vector_lanes(func: PrimFunc) -> list[int]:
    found: list[int] = []

    def visit(node: object) -> None:
        if isinstance(node, For) and node.kind == ForKind.VECTORIZED:
            found.append(int(node.extent.value))  # type: ignore[attr-defined]

    post_order_visit(func.body, visit)
    return found


def _bias_add(rows: int | Var, cols: int, dtype: str = "float32") -> PrimFunc:
    a = te.placeholder((rows, cols), dtype, name="A")
    bias = te.placeholder((cols,), dtype, name="bias")
    out = te.compute((rows, cols), lambda i, j: a[i, j] + bias[j], name="C")
    return te.create_prim_func([a, bias, out], name="bias_add")


def _cast(n: int, src: str, dst: str) -> PrimFunc:
    a = te.placeholder((n,), src, name="A")
    out = te.compute((n,), lambda i: a[i].astype(dst), name="B")
    return te.create_prim_func([a, out], name="cast")


def _run(func: PrimFunc, arrays: list[np.ndarray]) -> np.ndarray:
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == "injective"
    got = [a.copy() for a in arrays]
    run_prim_func(scheduled, *got)
    return got[-1]


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_add_of_1024_by_1024_uses_128_bit_loads_and_stores(arch: str) -> None:
    func = schedule_prim_func(workloads.add((1024, 1024)))
    assert _vector_lanes(func) == [4]
    program = compile_ptx([("add", func)], arch)
    assert len(VECTOR_LOAD.findall(program.ptx)) == 2  # A and B
    assert len(VECTOR_STORE.findall(program.ptx)) == 1
    # Unaligned views fall back to element accesses, checked by each thread.
    assert re.search(r"st\.global\.[bf]32", program.ptx)
    assert program.kernels[0].launch[0] == 1024 * 1024 // 4 // 256
    ptxas_check(program.ptx, arch)


@needs_ptxas
def test_float16_moves_eight_elements_and_a_cast_widens_by_the_widest_type() -> None:
    half = schedule_prim_func(workloads.add((64, 64), dtype="float16"))
    widen = schedule_prim_func(_cast(256, "float16", "float32"))
    assert _vector_lanes(half) == [8] and _vector_lanes(widen) == [4]
    program = compile_ptx([("half", half), ("widen", widen)], "sm_80")
    assert re.search(r"st\.global\.v4\.b32", program.ptx)  # 8 halves, 4 floats: 16 bytes
    assert re.search(r"ld\.global(?:\.nc)?\.v2\.b32", program.ptx)  # 4 halves: 8 bytes
    ptxas_check(program.ptx, "sm_80")


@needs_ptxas
def test_a_broadcast_operand_is_loaded_element_by_element() -> None:
    func = schedule_prim_func(_bias_add(64, 32))
    assert _vector_lanes(func) == [4]
    ptx = compile_ptx([("bias_add", func)], "sm_80").ptx
    assert len(VECTOR_LOAD.findall(ptx)) == 1 and len(VECTOR_STORE.findall(ptx)) == 1
    ptxas_check(ptx, "sm_90")


def test_odd_static_extents_and_other_types_keep_one_element_per_thread() -> None:
    assert _vector_lanes(schedule_prim_func(workloads.add((5, 7)))) == []
    assert _vector_lanes(schedule_prim_func(workloads.add((64, 64), dtype="float64"))) == []
    assert _vector_lanes(schedule_prim_func(_cast(64, "int32", "bool"))) == []


@pytest.mark.parametrize("shape", [(64, 64), (5, 7), (3, 100), (1, 4), (2, 2)])
def test_static_shapes_match_numpy(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(shape).astype("float32") for _ in range(2))
    out = _run(workloads.add(shape), [a, b, np.zeros(shape, "float32")])
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("rows", [1, 3, 4, 9])
def test_symbolic_rows_run_whole_vectors_and_a_scalar_tail(rows: int) -> None:
    n = Var("n", "int64")
    func = _bias_add(n, 7)
    assert _vector_lanes(schedule_prim_func(func)) == [4]
    rng = np.random.default_rng(rows)
    a = rng.standard_normal((rows, 7)).astype("float32")
    bias = rng.standard_normal(7).astype("float32")
    out = _run(func, [a, bias, np.zeros((rows, 7), "float32")])
    np.testing.assert_array_equal(out, a + bias)


def test_float16_and_a_widening_cast_match_numpy() -> None:
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((8, 24)).astype("float16") for _ in range(2))
    out = _run(workloads.add((8, 24), dtype="float16"), [a, b, np.zeros((8, 24), "float16")])
    np.testing.assert_array_equal(out, a + b)
    x = rng.standard_normal(36).astype("float16")
    widened = _run(_cast(36, "float16", "float32"), [x, np.zeros(36, "float32")])
    np.testing.assert_array_equal(widened, x.astype("float32"))


@needs_ptxas
def test_a_vectorized_loop_of_another_form_runs_element_by_element() -> None:
    # The loop variable indexes the buffers directly (no row-major let bindings): not the
    # schedule's form, so no vector access is assumed.
    a, out = Buffer("A", (4,), "float32"), Buffer("B", (4,), "float32")
    v = Var("v", "int64")
    body = For(v, 0, 4, ForKind.VECTORIZED, BufferStore(out, a[v] * 2.0, [v]))
    tx = Var("tx", "int64")
    launch = For(tx, 0, 1, ForKind.THREAD_BINDING, body, thread_binding="threadIdx.x")
    func = PrimFunc([a, out], launch)
    ptx = compile_ptx([("twice", func)], "sm_80").ptx
    assert not VECTOR_LOAD.search(ptx) and not VECTOR_STORE.search(ptx)
    ptxas_check(ptx, "sm_80")
    x = np.arange(4, dtype="float32")
    got = np.zeros(4, "float32")
    run_prim_func(func, x, got)
    np.testing.assert_array_equal(got, 2 * x)


def test_a_store_with_permuted_operands_vectorizes_the_store_only() -> None:
    a = te.placeholder((8, 4), "float32", name="A")
    out = te.compute((8, 4), lambda i, j: a[i, 3 - j], name="B")
    func = te.create_prim_func([a, out], name="flip")
    assert _vector_lanes(schedule_prim_func(func)) == [4]
    x = np.random.default_rng(2).standard_normal((8, 4)).astype("float32")
    np.testing.assert_array_equal(_run(func, [x, np.zeros((8, 4), "float32")]), x[:, ::-1])
