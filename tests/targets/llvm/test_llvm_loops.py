"""Statements, loop kinds and schedules: native results agree with the interpreter and numpy."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import relaxvm_llvm
from relaxvm.ir import GE, GT, LT, Cast, FloatImm, IntImm, Var
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Schedule,
    if_then_else,
    run_prim_func,
    seq,
    te,
)
from relaxvm_llvm import parallel
from relaxvm_llvm.codegen import generate_kernel_ir
from relaxvm_llvm.errors import KernelRuntimeError


def _for(extent: Any, body_of: Any, kind: ForKind = ForKind.SERIAL, name: str = "i") -> For:
    var = Var(name, "int64")
    return For(var, 0, extent, kind, body_of(var))


def statements_func() -> PrimFunc:
    """Every statement kind in one kernel."""
    n = Var("n", "int64")
    a = Buffer("A", (n,), "float32")
    out = Buffer("out", (4, n), "float32")
    local = Buffer("tmp", (4,), "float32", scope="local")
    scratch = Buffer("scratch", (n,), "float32")  # symbolic size: heap memory

    def row(i: Var) -> Any:
        x = Var("x", "float32")
        let = LetStmt(
            x,
            a[i] * 2.0,
            IfThenElse(
                GT(x, FloatImm("float32", 1.0)),
                BufferStore(out, x, [0, i]),
                BufferStore(out, -x, [0, i]),
            ),
        )
        fill = _for(
            4, lambda j: BufferStore(local, a[i] + Cast("float32", j), [j]), ForKind.UNROLLED, "j"
        )
        use = BufferStore(out, local[0] + local[3], [1, i])
        # Short-circuit: A[i - 1] must not be read when i == 0.
        guarded = IfThenElse(
            GE(i, IntImm("int64", 1)) & GT(a[i - 1], FloatImm("float32", 0.5)),
            BufferStore(out, FloatImm("float32", 1.0), [2, i]),
            BufferStore(out, FloatImm("float32", 0.0), [2, i]),
        )
        return seq(let, Allocate(local, seq(fill, use)), guarded, Evaluate(0))

    first = _for(n, row)
    heap = Allocate(
        scratch,
        seq(
            _for(n, lambda i: BufferStore(scratch, a[i] + 1.0, [i]), name="p"),
            _for(n, lambda i: BufferStore(out, scratch[n - 1 - i], [3, i]), name="q"),
        ),
    )
    return PrimFunc([a, out], seq(first, heap), attrs={"global_symbol": "statements"})


def test_every_statement_kind(run_both: Any, assert_same: Any) -> None:
    func = statements_func()
    module = relaxvm_llvm.build(func)
    x = np.array([0.1, 0.9, 0.3, 2.0, -1.0, 0.7], "float32")
    ref, out = run_both(func, module["statements"], [x, np.zeros((4, 6), "float32")])
    assert_same(ref, out)
    np.testing.assert_allclose(out[1][3], (x + 1.0)[::-1])


def test_zero_size_arguments() -> None:
    func = statements_func()
    module = relaxvm_llvm.build(func)
    module["statements"](np.zeros(0, "float32"), np.zeros((4, 0), "float32"))


# ---- te + schedules ----------------------------------------------------------------------
def matmul(n: Any = 64, m: Any = 48, k: int = 32) -> PrimFunc:
    a = te.placeholder((n, k), "float32", name="A")
    b = te.placeholder((k, m), "float32", name="B")
    r = te.reduce_axis((0, k), "r")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return te.create_prim_func([a, b, c], name="mm")


def _schedules() -> dict[str, PrimFunc]:
    funcs = {"plain": matmul()}
    sch = Schedule(matmul())
    i, j, _ = sch.get_loops()
    _, ji = sch.split(j, [None, 16])
    sch.vectorize(ji)
    sch.parallel(i)
    funcs["vec_par"] = sch.func
    sch = Schedule(matmul())
    i, j, _ = sch.get_loops()
    sch.cache_reduction("C")
    _, ji = sch.split(j, [None, 8])
    sch.unroll(ji)
    funcs["unrolled"] = sch.func
    sch = Schedule(matmul())
    i, j, _ = sch.get_loops()
    sch.parallel(sch.fuse(i, j))
    funcs["fused"] = sch.func
    sch = Schedule(matmul(Var("n"), 40))
    i, j, _ = sch.get_loops()
    _, ji = sch.split(j, [None, 16])  # 40 is no multiple of 16: guarded tail, serial fallback
    sch.vectorize(ji)
    sch.parallel(i)
    funcs["tail"] = sch.func
    return {f"mm_{k}": f.with_attr("global_symbol", f"mm_{k}") for k, f in funcs.items()}


@pytest.fixture(scope="module")
def schedules() -> Any:
    funcs = _schedules()
    return funcs, relaxvm_llvm.build(funcs)


@pytest.mark.parametrize("name", ["plain", "vec_par", "unrolled", "fused", "tail"])
def test_scheduled_matmul(schedules: Any, name: str, parallel_always: None) -> None:
    _, module = schedules
    rng = np.random.default_rng(4)
    rows = 29 if name == "tail" else 64
    cols = 40 if name == "tail" else 48
    a = rng.standard_normal((rows, 32)).astype("float32")
    b = rng.standard_normal((32, cols)).astype("float32")
    c = np.full((rows, cols), np.nan, "float32")
    module[f"mm_{name}"](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_constant_vectorized_loop_becomes_vector_code(schedules: Any) -> None:
    funcs, _ = schedules
    text, _ = generate_kernel_ir(funcs["mm_vec_par"], "mm", "__rvm_mm", ("contract",))
    assert "<16 x float>" in text
    # A split's tail guard: vector code when all lanes pass, the scalar loop otherwise.
    tail, _ = generate_kernel_ir(funcs["mm_tail"], "mm", "__rvm_mm", ("contract",))
    assert "<16 x float>" in tail
    assert "llvm.vector.reduce.and.v16i1" in tail


def _transpose_func(vector_dim: str) -> PrimFunc:
    a = te.placeholder((16, 24), "float32", name="A")
    t = te.compute((24, 16), lambda i, j: a[j, i] * 2.0, name="T")
    sch = Schedule(te.create_prim_func([a, t], name="transpose"))
    i, j = sch.get_loops()
    sch.vectorize(j if vector_dim == "inner" else i)
    return sch.func


@pytest.mark.parametrize("vector_dim", ["inner", "outer"])
def test_vectorized_gather_and_scatter(vector_dim: str, run_both: Any, assert_same: Any) -> None:
    func = _transpose_func(vector_dim)
    module = relaxvm_llvm.build(func)
    a = np.arange(16 * 24, dtype="float32").reshape(16, 24)
    ref, out = run_both(func, module["transpose"], [a, np.zeros((24, 16), "float32")])
    assert_same(ref, out)
    np.testing.assert_array_equal(out[1], a.T * 2)


def test_vectorized_select_and_padding(run_both: Any, assert_same: Any) -> None:
    a = Buffer("A", (32,), "float32")
    out = Buffer("out", (2, 32), "float32")

    def body(i: Var) -> Any:
        relu = if_then_else(LT(a[i], FloatImm("float32", 0.0)), FloatImm("float32", 0.0), a[i])
        pad = if_then_else(GE(i, IntImm("int64", 1)), a[i - 1], FloatImm("float32", 0.0))
        return seq(BufferStore(out, relu, [0, i]), BufferStore(out, pad, [1, i]))

    relu_only = _for(32, lambda i: body(i).seq[0], ForKind.VECTORIZED)
    padded = _for(32, lambda i: body(i).seq[1], ForKind.VECTORIZED, "k")
    func = PrimFunc([a, out], seq(relu_only, padded), attrs={"global_symbol": "vsel"})
    module = relaxvm_llvm.build(func)
    x = np.linspace(-2, 2, 32, dtype="float32")
    ref, got = run_both(func, module["vsel"], [x, np.zeros((2, 32), "float32")])
    assert_same(ref, got)
    text, _ = generate_kernel_ir(func, "vsel", "__rvm_vsel", ())
    assert "<32 x float>" in text  # the load-free select is vectorized, the padded one is not


def _strided_func(stride: Any, name: str) -> PrimFunc:
    n = Var("n", "int64")
    scale = Var("scale", "int32")
    a = Buffer("A", (n, 3), "int32", strides=(stride, 1))
    out = Buffer("out", (n, 3), "int32")
    body = _for(n, lambda i: _for(3, lambda j: BufferStore(out, a[i, j] * scale, [i, j]), name="j"))
    return PrimFunc([a, scale, out], body, attrs={"global_symbol": name})


def test_strided_buffer_and_scalar_parameter(run_both: Any, assert_same: Any) -> None:
    symbolic = _strided_func(Var("s0", "int64"), "strided")  # the stride binds from the array
    fixed = _strided_func(8, "strided8")
    module = relaxvm_llvm.build({"a": symbolic, "b": fixed})
    base = np.arange(40, dtype="int32").reshape(5, 8)
    view = base[:, 2:5]  # rows 8 elements apart
    out_arr = np.zeros((5, 3), "int32")
    module["strided"](view, 7, out_arr)
    np.testing.assert_array_equal(out_arr, view * 7)
    wider = np.arange(60, dtype="int32").reshape(5, 12)[:, 1:4]
    module["strided"](wider, 2, out_arr)
    np.testing.assert_array_equal(out_arr, wider * 2)
    ref_out, got_out = np.zeros((5, 3), "int32"), np.zeros((5, 3), "int32")
    run_prim_func(fixed, view, -3, ref_out)  # (copies would lose the strides)
    module["strided8"](view, -3, got_out)
    np.testing.assert_array_equal(got_out, ref_out)
    with pytest.raises(ValueError, match=r"'strided8': parameter 'A' stride 0 must be `8` = 8"):
        module["strided8"](wider, 2, out_arr)


# ---- the parallel runtime ----------------------------------------------------------------------
def _parallel_funcs() -> dict[str, PrimFunc]:
    n = Var("n", "int64")
    a = Buffer("A", (n, 8), "float32")
    out = Buffer("out", (n, 8), "float32")
    tmp = Buffer("tmp", (8,), "float32", scope="local")

    def row(i: Var) -> Any:
        y = Var("y", "float32")
        fill = _for(8, lambda j: BufferStore(tmp, a[i, j] * 2.0, [j]), name="j")
        # A nested parallel loop runs serially inside the outlined body.
        inner = _for(
            8,
            lambda j: LetStmt(y, tmp[j], BufferStore(out, y + 1.0, [i, j])),
            ForKind.PARALLEL,
            "k",
        )
        return Allocate(tmp, seq(fill, inner))

    funcs = {
        "prow": PrimFunc([a, out], _for(n, row, ForKind.PARALLEL), attrs={"global_symbol": "prow"})
    }
    # A parallel loop inside a serial one, capturing the outer loop variable.
    b = Buffer("B", (4, n), "int64")
    body = _for(
        4,
        lambda t: _for(n, lambda i: BufferStore(b, t * 1000 + i, [t, i]), ForKind.PARALLEL, "i"),
        name="t",
    )
    funcs["pnest"] = PrimFunc([b], body, attrs={"global_symbol": "pnest"})
    return funcs


@pytest.fixture(scope="module")
def parallel_module() -> Any:
    funcs = _parallel_funcs()
    return funcs, relaxvm_llvm.build(funcs)


@pytest.mark.parametrize("rows", [0, 1, 3, 257])
def test_parallel_loops(
    parallel_module: Any, rows: int, parallel_always: None, run_both: Any, assert_same: Any
) -> None:
    funcs, module = parallel_module
    a = np.random.default_rng(5).standard_normal((rows, 8)).astype("float32")
    ref, out = run_both(funcs["prow"], module["prow"], [a, np.zeros((rows, 8), "float32")])
    assert_same(ref, out)
    b = np.zeros((4, rows), "int64")
    module["pnest"](b)
    np.testing.assert_array_equal(b, np.arange(4)[:, None] * 1000 + np.arange(rows)[None, :])


def test_parallel_serial_cutoff_gives_same_results(parallel_module: Any) -> None:
    _, module = parallel_module
    a = np.ones((100, 8), "float32")
    out = np.zeros((100, 8), "float32")
    module["prow"](a, out)  # default cutoff: small work runs serially
    np.testing.assert_array_equal(out, np.full((100, 8), 3.0, "float32"))


def test_parallel_calls_from_many_threads(parallel_module: Any, parallel_always: None) -> None:
    _, module = parallel_module
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            a = np.full((300, 8), seed, "float32")
            out = np.zeros((300, 8), "float32")
            for _ in range(20):
                module["prow"](a, out)
                np.testing.assert_array_equal(out, a * 2 + 1)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_parallel_failure_propagates(
    parallel_module: Any, parallel_always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, module = parallel_module

    def broken(self: Any, fn: Any, closure: int, extent: int) -> None:
        raise MemoryError("pool exploded")

    monkeypatch.setattr(parallel._Pool, "run", broken)
    # The Python pool is the one that can fail (the native pool has no failure path).
    backend = parallel.get_parallel_backend()
    parallel.set_parallel_backend("python")
    try:
        a = np.ones((50, 8), "float32")
        with pytest.raises(KernelRuntimeError, match=r"'prow' failed.*pool exploded"):
            module["prow"](a, np.zeros((50, 8), "float32"))
        monkeypatch.undo()
        out = np.zeros((50, 8), "float32")
        module["prow"](a, out)  # the process and the pool are fine afterwards
        np.testing.assert_array_equal(out, np.full((50, 8), 3.0, "float32"))
    finally:
        parallel.set_parallel_backend(backend)


def test_thread_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="positive int"):
        parallel.set_num_threads(0)
    with pytest.raises(ValueError, match=">= 0"):
        parallel.set_parallel_cutoff(-1)
    assert parallel.get_num_threads() >= 1


@pytest.fixture(scope="module")
def split_add() -> Any:
    n = Var("n")
    a = te.placeholder((n,), "float32", name="A")
    b = te.placeholder((n,), "int32", name="B")
    c = te.compute((n,), lambda i: a[i] * 2.0 + Cast("float32", b[i]), name="C")
    sch = Schedule(te.create_prim_func([a, b, c], name="split_add"))
    (i,) = sch.get_loops()
    outer, inner = sch.split(i, [None, 8])
    sch.vectorize(inner)
    sch.parallel(outer)
    return relaxvm_llvm.build(sch.func)


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 33, 1000])
def test_vectorized_tail_guard(split_add: Any, size: int, parallel_always: None) -> None:
    a = np.linspace(-1, 1, size).astype("float32")
    b = np.arange(size, dtype="int32")
    out = np.full(size, np.nan, "float32")
    split_add["split_add"](a, b, out)
    np.testing.assert_allclose(out, a * 2 + b, rtol=1e-6)


def test_symbolic_vectorized_loop_gets_the_vectorizer_hint() -> None:
    n = Var("n")
    a = te.placeholder((n,), "float32", name="A")
    b = te.compute((n,), lambda i: a[i] * 3.0, name="B")
    sch = Schedule(te.create_prim_func([a, b], name="v"))
    (i,) = sch.get_loops()
    sch.vectorize(i)
    text, _ = generate_kernel_ir(sch.func, "v", "__rvm_v", ())
    assert '!"llvm.loop.vectorize.enable", i1 1' in text
    assert "distinct !{!1, !0 }" in text  # a proper self-referencing loop ID
    x = np.arange(10, dtype="float32")
    out = np.zeros(10, "float32")
    relaxvm_llvm.build(sch.func)["v"](x, out)
    np.testing.assert_array_equal(out, x * 3)


def test_parallel_loop_reads_outer_scratch(
    parallel_always: None, run_both: Any, assert_same: Any
) -> None:
    n = Var("n")
    a = te.placeholder((n, 16), "float32", name="A")
    t = te.compute((n, 16), lambda i, j: a[i, j] + 1.0, name="T")  # an Allocate'd stage
    b = te.compute((n, 16), lambda i, j: t[i, 15 - j] * 2.0, name="B")
    sch = Schedule(te.create_prim_func([a, b], name="two_stage"))
    loops = sch.get_loops()
    sch.parallel(loops[0])
    sch.parallel(loops[2])
    module = relaxvm_llvm.build(sch.func)
    x = np.random.default_rng(6).standard_normal((70, 16)).astype("float32")
    ref, out = run_both(sch.func, module["two_stage"], [x, np.zeros((70, 16), "float32")])
    assert_same(ref, out)
    np.testing.assert_allclose(out[1], (x[:, ::-1] + 1) * 2, rtol=1e-6)
