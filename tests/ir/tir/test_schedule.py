"""Loop schedule primitives, each checked with the reference interpreter against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Var, tir
from relaxvm.ir.tir import ForKind, te

RNG = np.random.default_rng(2)


def _matmul(n: int | Var = 6) -> tuple[tir.PrimFunc, te.IterVar]:
    a = te.placeholder((n, 5), name="A")
    b = te.placeholder((5, 7), name="B")
    k = te.reduce_axis((0, 5), name="k")
    c = te.compute((n, 7), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_loop_func([a, b, c]), k  # tir.Schedule works on loop nests


def _check_matmul(func: tir.PrimFunc, rows: int = 6) -> None:
    x = RNG.standard_normal((rows, 5)).astype("float32")
    y = RNG.standard_normal((5, 7)).astype("float32")
    out = np.full((rows, 7), np.nan, "float32")
    tir.run_prim_func(func, x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-5)


def _kinds(func: tir.PrimFunc) -> dict[str, ForKind]:
    found: dict[str, ForKind] = {}
    tir.post_order_visit(
        func.body,
        lambda s: found.__setitem__(s.loop_var.name, s.kind) if isinstance(s, tir.For) else None,
    )
    return found


def test_get_loops() -> None:
    func, _ = _matmul()
    sch = tir.Schedule(func)
    i, j = sch.get_loops("C")
    assert (i.name, j.name) == ("i", "j")
    assert [v.name for v in sch.get_loops()] == ["i", "j", "k"]
    with pytest.raises(VMValueError, match="no store into a buffer named 'D'"):
        sch.get_loops("D")


def test_split_divisible_has_no_guard() -> None:
    func, _ = _matmul()
    sch = tir.Schedule(func)
    i, _ = sch.get_loops("C")
    outer, inner = sch.split(i, [None, 3])
    assert "if " not in sch.func.script()
    assert "for i_0, i_1, j in T.grid(T.int64(2), T.int64(3), T.int64(7)):" in sch.func.script()
    assert [outer.name, inner.name] == ["i_0", "i_1"]
    _check_matmul(sch.func)
    _check_matmul(func)  # the original is untouched


def test_split_non_divisible_and_symbolic_is_guarded() -> None:
    func, k = _matmul(Var("n"))
    sch = tir.Schedule(func)
    i, _ = sch.get_loops("C")
    sch.split(i, [None, 4])
    sch.split(k, [2, 3])  # 2 * 3 covers 5 with one guarded step
    text = sch.func.script()
    assert "if i_0 * T.int64(4) + i_1 < n:" in text
    assert "if k_0 * T.int64(3) + k_1 < T.int64(5):" in text
    for rows in (3, 8):
        _check_matmul(sch.func, rows)


def test_reorder_and_fuse_and_kinds() -> None:
    func, k = _matmul()
    sch = tir.Schedule(func)
    i, j = sch.get_loops("C")
    io, ii = sch.split(i, [None, 3])
    sch.reorder(j, ii, io)
    assert [v.name for v in sch.get_loops("C")] == ["j", "i_1", "i_0"]
    fused = sch.fuse(j, ii)
    assert fused.name == "j_i_1_fused"
    sch.parallel(fused)
    sch.unroll(io)
    _, ki = sch.split(k, [None, 2])
    sch.vectorize(ki)
    kinds = _kinds(sch.func)
    assert kinds[fused.name] is ForKind.PARALLEL
    assert kinds["i_0"] is ForKind.UNROLLED and kinds["k_1"] is ForKind.VECTORIZED
    assert "for j_i_1_fused in T.parallel(T.int64(21)):" in sch.func.script()
    _check_matmul(sch.func)


def test_bind_threads() -> None:
    func, _ = _matmul()
    sch = tir.Schedule(func)
    i, j = sch.get_loops("C")
    sch.bind(sch.fuse(i, j), "threadIdx.x")
    assert 'T.thread_binding(T.int64(42), thread="threadIdx.x")' in sch.func.script()
    _check_matmul(sch.func)
    with pytest.raises(VMValueError, match="needs thread_binding in"):
        sch.bind(sch.get_loops("C")[0], "warp.x")


def test_fuse_symbolic_extents() -> None:
    n = Var("n")
    a = te.placeholder((n, 3), name="A")
    b = te.compute((n, 3), lambda i, j: a[i, j] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([a, b]))
    sch.fuse(*sch.get_loops("B"))
    x = RNG.standard_normal((4, 3)).astype("float32")
    out = np.zeros_like(x)
    sch.func(x, out)
    np.testing.assert_allclose(out, x + 1)


def test_schedule_errors() -> None:
    func, k = _matmul()
    sch = tir.Schedule(func)
    i, j = sch.get_loops("C")
    with pytest.raises(VMValueError, match="loops 'j' and 'k' are not perfectly nested"):
        sch.fuse(j, k)
    with pytest.raises(VMValueError, match="loop 'j' does not enclose loop 'i'"):
        sch.fuse(j, i)
    with pytest.raises(VMValueError, match="at most one factor may be None"):
        sch.split(i, [None, None])
    with pytest.raises(VMValueError, match="factors must be positive"):
        sch.split(i, [0, None])
    outer, _ = sch.split(i, [2, 3])
    with pytest.raises(VMValueError, match="must be directly nested, outermost first"):
        sch.fuse(outer, j)  # skips i_1
    with pytest.raises(VMValueError, match="'i' is not a loop of 'main'"):
        sch.parallel(i)
    with pytest.raises(VMTypeError, match="expected a loop variable"):
        sch.parallel("i")  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match="expected a PrimFunc"):
        tir.Schedule(func.body)  # type: ignore[arg-type]


def test_reduce_axis_itervars_name_loops() -> None:
    func, k = _matmul()
    sch = tir.Schedule(func)
    i, j = sch.get_loops("C")
    sch.unroll(k)
    assert _kinds(sch.func)["k"] is ForKind.UNROLLED
    sch.reorder(j, i)
    assert [v.name for v in sch.get_loops("C")] == ["j", "i"]
    with pytest.raises(VMValueError, match="a loop is named twice"):
        sch.reorder(i, i)
    _check_matmul(sch.func)


def test_cache_reduction_in_local_then_parallelize() -> None:
    func, k = _matmul()
    sch = tir.Schedule(func)
    _, ki = sch.split(k, [None, 2])
    acc = sch.cache_reduction("C")
    assert acc.scope == "local" and acc.shape == (1,) and acc.name == "C_local"
    text = sch.func.script()
    assert 'C_local = T.alloc_buffer((T.int64(1),), "float32", scope="local")' in text
    assert (
        "C_local[T.int64(0)] = C_local[T.int64(0)] + A[i, k_0 * T.int64(2) + k_1] * B[k_0 * T.int64(2) + k_1, j]"
        in text
    )
    assert "C[i, j] = C_local[T.int64(0)]" in text
    i, j = sch.get_loops("C")
    sch.parallel(sch.fuse(i, j))
    sch.unroll(ki)
    _check_matmul(sch.func)


def test_cache_reduction_errors() -> None:
    func, _ = _matmul()
    with pytest.raises(VMValueError, match="no reduction into 'A'"):
        tir.Schedule(func).cache_reduction("A")
    # An update that reads another element of the accumulator cannot be cached.
    c = tir.Buffer("C", (4,), "float32")
    i, k = Var("i"), Var("k")
    update = tir.For(k, 0, 3, ForKind.SERIAL, c.vstore([i], c[i] + c[0]))
    body = tir.For(i, 0, 4, ForKind.SERIAL, tir.seq(c.vstore([i], 0.0), update))
    with pytest.raises(VMValueError, match=r"the update reads C\[0\] but the reduction"):
        tir.Schedule(tir.PrimFunc([c], body)).cache_reduction("C")


def test_simplifier_terminates_on_loads_inside_selects():
    # A gather index (take's negative-index wrap) used to send the polynomial simplifier into
    # endless recursion: each pass rebuilt the BufferLoad as a new, equal object.
    from relaxvm.ir import Analyzer, IntImm, Var, select
    from relaxvm.ir.tir import Buffer

    index_buffer = Buffer("idx", (IntImm(2, "int64"),), "int64")
    j = Var("j", "int64")
    load = index_buffer[j]
    wrapped = select(load < IntImm(0, "int64"), load + IntImm(4, "int64"), load)
    step = Analyzer().simplify(wrapped - wrapped)
    assert isinstance(step, IntImm) and step.value == 0
