"""GPU schedules checked on the CPU: the reference interpreter runs the thread-bound kernels
with block/thread semantics (shared memory per block, barriers phase by phase) and must agree
with the unscheduled kernel and numpy."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMValueError
from relaxvm.ir import Var
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    Stmt,
    post_order_visit,
    run_prim_func,
    seq,
    te,
)
from relaxvm.ir.tir.intrin_gpu import storage_sync
from relaxvm_cuda.schedule import schedule_kind, schedule_prim_func
from relaxvm_llvm.schedule import workloads


def _inputs(func: PrimFunc, rng: np.random.Generator, n: int | None = None) -> list[np.ndarray]:
    arrays = []
    env: dict[Var, int] = {}
    for param in func.params:
        buffer = func.buffer_map[param]
        shape: list[int] = []
        for extent in buffer.shape:
            if isinstance(extent, Var):
                env.setdefault(extent, int(n or 0))
                shape.append(env[extent])
            else:
                shape.append(int(extent.value))  # type: ignore[attr-defined]
        arrays.append(rng.standard_normal(shape).astype(str(buffer.dtype)))
    return arrays


def _check(func: PrimFunc, kind: str, n: int | None = None, expected=None) -> None:  # type: ignore[no-untyped-def]
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == kind
    rng = np.random.default_rng(0)
    ref = _inputs(func, rng, n)
    got = [a.copy() for a in ref]
    run_prim_func(func, *ref)
    run_prim_func(scheduled, *got)
    np.testing.assert_allclose(got[-1], ref[-1], rtol=1e-5, atol=1e-5)
    if expected is not None:
        np.testing.assert_allclose(got[-1], expected(*got[:-1]), rtol=1e-4, atol=1e-5)


def test_injective_broadcast_add_with_a_ragged_last_block() -> None:
    _check(workloads.add((3, 100), bshape=(100,)), "injective", expected=lambda a, b: a + b)


def test_injective_with_a_symbolic_extent() -> None:
    n = Var("n", "int64")
    _check(workloads.add((n, 5)), "injective", n=61, expected=lambda a, b: a + b)


@pytest.mark.parametrize(
    ("shape", "axis", "op", "ref"),
    [
        ((4, 300), 1, "sum", lambda a: a.sum(1)),
        ((5, 9), 0, "sum", lambda a: a.sum(0)),
        ((3, 70), 1, "max", lambda a: a.max(1)),
        ((3, 33), 1, "min", lambda a: a.min(1)),
    ],
)
def test_row_reductions(shape, axis, op, ref) -> None:  # type: ignore[no-untyped-def]
    _check(workloads.reduce_sum(shape, axis, op=op), "rows", expected=ref)


def test_mean_is_a_reduction_with_an_epilogue() -> None:
    _check(workloads.reduce_sum((3, 40), 1, mean=True), "rows", expected=lambda a: a.mean(1))


def test_softmax_rows() -> None:
    def softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    _check(workloads.softmax(4, 129), "rows", expected=softmax)


def test_layer_norm_rows() -> None:
    def layer_norm(x, g, b):  # type: ignore[no-untyped-def]
        mean = x.mean(1, keepdims=True)
        var = ((x - mean) ** 2).mean(1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * g + b

    _check(workloads.layer_norm(3, 50), "rows", expected=layer_norm)


# ---- row kernels: unrolled steps, the row cache, kept sources, hoisted divisors -----------
def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _layer_norm(x, g, b):  # type: ignore[no-untyped-def]
    mean = x.mean(1, keepdims=True)
    var = ((x - mean) ** 2).mean(1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def _locals(func: PrimFunc) -> dict[str, int]:
    """Local buffers of ``func`` (name -> elements)."""
    found: dict[str, int] = {}

    def visit(node: object) -> None:
        if isinstance(node, Allocate) and node.buffer.scope == "local":
            found[node.buffer.name] = int(node.buffer.shape[0].value)  # type: ignore[attr-defined]

    post_order_visit(func.body, visit)
    return found


def _loop_kinds(func: PrimFunc) -> list[ForKind]:
    kinds: list[ForKind] = []
    post_order_visit(func.body, lambda n: kinds.append(n.kind) if isinstance(n, For) else None)
    return kinds


def _guards(func: PrimFunc) -> int:
    count = [0]
    post_order_visit(
        func.body, lambda n: count.__setitem__(0, count[0] + isinstance(n, IfThenElse))
    )
    return count[0]


@pytest.mark.parametrize(("n", "m"), [(2, 1000), (2, 512), (3, 129), (2, 7)])
def test_softmax_row_cache(n: int, m: int) -> None:
    func = workloads.softmax(n, m)
    _check(func, "rows", expected=_softmax)
    scheduled = schedule_prim_func(func)
    locals_ = _locals(scheduled)
    steps = -(-m // 256) if m > 256 else 1
    # x is loaded once into registers and exp(x - max) is kept for the last stage
    assert locals_.get("X_row") == steps and locals_.get("T_sum_kept") == steps
    assert ForKind.UNROLLED in _loop_kinds(scheduled)
    assert ForKind.SERIAL not in _loop_kinds(scheduled)


def test_whole_rows_drop_the_bound_checks() -> None:
    exact = schedule_prim_func(workloads.softmax(2, 512))
    ragged = schedule_prim_func(workloads.softmax(2, 500))
    # a bound check per stage (max, sum, divide) and the preload, in the ragged row only
    assert _guards(ragged) - _guards(exact) == 4


def test_layer_norm_row_cache_with_a_ragged_row() -> None:
    func = workloads.layer_norm(2, 1000)
    _check(func, "rows", expected=_layer_norm)
    assert _locals(schedule_prim_func(func)).get("X_row") == 4


def test_a_long_row_is_neither_cached_nor_unrolled() -> None:
    func = workloads.softmax(1, 256 * 33)
    scheduled = schedule_prim_func(func)
    assert "X_row" not in _locals(scheduled)
    assert ForKind.UNROLLED not in _loop_kinds(scheduled)
    _check(func, "rows", expected=_softmax)


def test_a_buffer_written_by_a_stage_is_not_cached() -> None:
    # Y is written by the first stage and read by the later ones: only X (never written)
    # may be read from the thread's copy.
    x = te.placeholder((3, 300), "float32", name="X")
    y = te.compute((3, 300), lambda i, j: x[i, j] + 1.0, name="Y")
    k = te.reduce_axis((0, 300), name="k")
    s = te.compute((3,), lambda i: te.sum(y[i, k] * x[i, k], axis=k), name="S")
    out = te.compute((3, 300), lambda i, j: x[i, j] / s[i] + y[i, j], name="O")
    func = te.create_prim_func([x, y, out], name="f")
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == "rows"
    assert set(_locals(scheduled)) >= {"X_row"} and "Y_row" not in _locals(scheduled)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 300)).astype("float32")
    got_y, got = np.zeros_like(a), np.zeros_like(a)
    run_prim_func(scheduled, a, got_y, got)
    ya = a + 1
    np.testing.assert_allclose(got_y, ya, rtol=1e-6)
    np.testing.assert_allclose(got, a / (ya * a).sum(1, keepdims=True) + ya, rtol=1e-5, atol=1e-5)


def test_matmul_with_bias_and_relu() -> None:
    _check(
        workloads.matmul(6, 5, 40, bias=True, relu=True),
        "gemm",
        expected=lambda a, b, bias: np.maximum(a @ b + bias, 0),
    )


def test_conv2d_runs_as_an_implicit_gemm() -> None:
    func = workloads.conv2d_nchw(1, 2, 5, 5, 3)
    scheduled = schedule_prim_func(func)
    assert schedule_kind(scheduled) == "gemm"  # an implicit GEMM
    rng = np.random.default_rng(1)
    ref = _inputs(func, rng)
    got = [a.copy() for a in ref]
    run_prim_func(func, *ref)
    run_prim_func(scheduled, *got)
    np.testing.assert_allclose(got[-1], ref[-1], rtol=1e-5, atol=1e-5)


# ---- barrier semantics of the interpreter ------------------------------------------------------
def _neighbour_kernel(with_barrier: bool, threads: int = 8) -> PrimFunc:
    """out[b, t] = in[b, (t + 1) % T] through shared memory: write, (barrier), read."""
    a = Buffer("A", (2, threads), "float32")
    out = Buffer("B", (2, threads), "float32")
    tile = Buffer("tile", (threads,), "float32", scope="shared")
    bx, tx = Var("bx", "int64"), Var("tx", "int64")
    parts: list[Stmt] = [BufferStore(tile, a[bx, tx], [tx])]
    if with_barrier:
        parts.append(Evaluate(storage_sync()))
    parts.append(BufferStore(out, tile[(tx + 1) % threads], [bx, tx]))
    body = For(
        bx,
        0,
        2,
        ForKind.THREAD_BINDING,
        For(tx, 0, threads, ForKind.THREAD_BINDING, Allocate(tile, seq(*parts)), "threadIdx.x"),
        "blockIdx.x",
    )
    pa, pb = Var("A_handle", "handle"), Var("B_handle", "handle")
    return PrimFunc([pa, pb], body, buffer_map={pa: a, pb: out})


def test_barrier_makes_neighbours_writes_visible() -> None:
    x = np.arange(16, dtype="float32").reshape(2, 8)
    out = np.zeros_like(x)
    run_prim_func(_neighbour_kernel(True), x, out)
    np.testing.assert_array_equal(out, np.roll(x, -1, axis=1))


def test_without_the_barrier_threads_read_unwritten_shared_memory() -> None:
    x = np.arange(16, dtype="float32").reshape(2, 8)
    out = np.zeros_like(x)
    run_prim_func(_neighbour_kernel(False), x, out)
    # threads run one after another: all but the last read a slot not yet written (NaN)
    assert np.isnan(out[:, :-1]).all()
    assert not np.array_equal(out, np.roll(x, -1, axis=1))


def test_shared_memory_is_per_block() -> None:
    x = np.arange(16, dtype="float32").reshape(2, 8)
    out = np.zeros_like(x)
    run_prim_func(_neighbour_kernel(True), x, out)
    assert out[1, 0] == x[1, 1]  # block 1 sees its own tile, not block 0's


def test_divergent_barrier_is_an_error() -> None:
    a = Buffer("A", (4,), "float32")
    tx = Var("tx", "int64")
    body = For(
        tx,
        0,
        4,
        ForKind.THREAD_BINDING,
        seq(
            IfThenElse(tx < 2, Evaluate(storage_sync())),
            BufferStore(a, 1.0, [tx]),
        ),
        "threadIdx.x",
    )
    pa = Var("A_handle", "handle")
    func = PrimFunc([pa], body, buffer_map={pa: a})
    with pytest.raises(VMValueError, match="barrier divergence in block"):
        run_prim_func(func, np.zeros(4, "float32"))
