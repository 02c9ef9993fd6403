# ruff: noqa: F821
# (script bodies are parsed, never run by Python: `cls`, unused bindings)
"""Parsing @T.prim_func scripts: every construct, checked by running the reference
interpreter against numpy, and against the same PrimFunc built by hand or with TE."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import te, tir
from relaxvm.ir import relax as rx
from relaxvm.ir.tir import ForKind
from relaxvm.script import from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.random(shape, dtype=np.float32)


def loops(func: tir.PrimFunc) -> list[tir.For]:
    """The loops in source (pre-)order."""
    found: list[tir.For] = []

    def walk(stmt: object) -> None:
        if isinstance(stmt, tir.For):
            found.append(stmt)
            walk(stmt.body)
        elif isinstance(stmt, tir.SeqStmt):
            for item in stmt.seq:
                walk(item)
        elif isinstance(stmt, (tir.LetStmt, tir.Allocate)):
            walk(stmt.body)
        elif isinstance(stmt, tir.IfThenElse):
            walk(stmt.then_case)
            if stmt.else_case is not None:
                walk(stmt.else_case)

    walk(func.body)
    return found


@T.prim_func
def add_one(A: T.Buffer(("n", 4), "float32"), B: T.Buffer(("n", 4), "float32")):
    n = T.int64()
    for i, j in T.grid(n, 4):
        B[i, j] = A[i, j] + T.float32(1)


def test_grid_with_symbolic_shape_runs() -> None:
    a, b = rand(5, 4), np.zeros((5, 4), "float32")
    tir.run_prim_func(add_one, a, b)
    np.testing.assert_allclose(b, a + 1)
    assert add_one.attrs["global_symbol"] == "add_one"
    assert [loop.kind for loop in loops(add_one)] == [ForKind.SERIAL, ForKind.SERIAL]


def test_equals_te_built_kernel() -> None:
    n = tir.Var("n")
    A = te.placeholder((n, 4), "float32", name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + tir.const(1.0, "float32"), name="B")
    expected = te.create_prim_func([A, B])
    parsed = from_source(
        """
@T.prim_func
def main(A: T.Buffer((n, 4), "float32"), B: T.Buffer((n, 4), "float32")):
    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})
    n = T.int64()
    for i, j in T.grid(n, 4):
        with T.block("B"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            T.reads(A[v_i, v_j])
            T.writes(B[v_i, v_j])
            B[v_i, v_j] = A[v_i, v_j] + T.float32(1.0)
"""
    )
    # te makes TVM's block form, which the parser reads back to the same function.
    assert tir.structural_equal(parsed, expected)
    assert parsed.attrs["tir.noalias"] is True


@T.prim_func
def loop_kinds(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32")):
    for i in T.parallel(8):
        for j in T.vectorized(4):
            B[i, j] = A[i, j] * T.float32(3)
    for k in T.unroll(2, 4):
        B[k, 0] = T.float32(0)
    for t in T.serial(0, 2, annotations={"pragma": 1}):
        B[t, 1] = T.float32(-1)
    for bx in T.thread_binding(0, 2, thread="blockIdx.x"):
        for tx in T.thread_binding(4, thread="threadIdx.x"):
            B[bx + 6, tx] = A[bx + 6, tx]


def test_loop_kinds() -> None:
    kinds = [(loop.loop_var.name, loop.kind) for loop in loops(loop_kinds)]
    assert kinds == [
        ("i", ForKind.PARALLEL),
        ("j", ForKind.VECTORIZED),
        ("k", ForKind.UNROLLED),
        ("t", ForKind.SERIAL),
        ("bx", ForKind.THREAD_BINDING),
        ("tx", ForKind.THREAD_BINDING),
    ]
    by_name = {loop.loop_var.name: loop for loop in loops(loop_kinds)}
    assert (by_name["k"].min.value, by_name["k"].extent.value) == (2, 2)
    assert by_name["t"].annotations == {"pragma": 1}
    assert by_name["tx"].thread_binding == "threadIdx.x"
    a, b = rand(8, 4), np.zeros((8, 4), "float32")
    tir.run_prim_func(loop_kinds, a, b)
    expected = a * 3
    expected[2:4, 0] = 0
    expected[0:2, 1] = -1
    expected[6:8] = a[6:8]
    np.testing.assert_allclose(b, expected, rtol=1e-6)


@T.prim_func
def row_softmax(var_a: T.handle, var_b: T.handle, m: T.int64):
    n = T.int64()
    A = T.match_buffer(var_a, (n, m), "float32")
    B = T.match_buffer(var_b, (n, m), "float32")
    for i in range(n):
        mx = T.alloc_buffer((1,), "float32", scope="local")
        total = T.alloc_buffer((1,), "float32", scope="shared")
        mx[0] = T.float32(-1e30)
        for j in range(m):
            mx[0] = T.max(mx[0], A[i, j])
        total[0] = T.float32(0)
        for j in range(m):
            e: T.float32 = T.exp(A[i, j] - mx[0])
            B[i, j] = e
            total[0] += e
        for j in range(m):
            B[i, j] = B[i, j] / total[0]


def test_match_buffer_alloc_let_and_intrinsics() -> None:
    a, b = rand(3, 5), np.zeros((3, 5), "float32")
    tir.run_prim_func(row_softmax, a, b, 5)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(b, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert [str(p.dtype) for p in row_softmax.params] == ["handle", "handle", "int64"]
    scopes: list[str] = []
    lets: list[str] = []

    def visit(node: object) -> None:
        if isinstance(node, tir.Allocate):
            scopes.append(node.buffer.scope)
        if isinstance(node, tir.LetStmt):
            lets.append(f"{node.var.name}:{node.var.dtype}")

    tir.post_order_visit(row_softmax.body, visit)
    assert sorted(scopes) == ["local", "shared"]
    assert lets == ["e:float32"]


@T.prim_func
def branches(
    A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32"), C: T.Buffer((6,), "int32")
):
    for i in range(6):
        if i < 2:
            B[i] = T.sqrt(A[i])
        elif i < 4:
            B[i] = T.if_then_else(A[i] > T.float32(0.5), A[i], T.float32(0))
        else:
            B[i] = T.Select(i == 4, T.min(A[i], T.float32(0.25)), T.Cast("float32", i))
        half = i // 2
        C[i] = T.Cast("int32", half) + T.int32(i % 2) * 10
    T.evaluate(0)


def test_if_elif_else_select_cast() -> None:
    a = rand(6)
    b, c = np.zeros(6, "float32"), np.zeros(6, "int32")
    tir.run_prim_func(branches, a, b, c)
    expected = np.array(
        [
            np.sqrt(a[0]),
            np.sqrt(a[1]),
            a[2] if a[2] > 0.5 else 0,
            a[3] if a[3] > 0.5 else 0,
            min(a[4], 0.25),
            5.0,
        ],
        "float32",
    )
    np.testing.assert_allclose(b, expected, rtol=1e-6)
    np.testing.assert_array_equal(c, [0, 10, 1, 11, 2, 12])
    assert isinstance(branches.body.seq[-1], tir.Evaluate)


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("exp", np.exp),
        ("log", np.log),
        ("tanh", np.tanh),
        ("fabs", np.abs),
        ("abs", np.abs),
        ("floor", np.floor),
        ("ceil", np.ceil),
        ("rsqrt", lambda x: 1 / np.sqrt(x)),
        ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ],
)
def test_math_intrinsics(name: str, fn) -> None:
    func = from_source(
        f"""
@T.prim_func
def k(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = T.{name}(A[i])
"""
    )
    a = rand(4) + 0.1
    b = np.zeros(4, "float32")
    tir.run_prim_func(func, a, b)
    np.testing.assert_allclose(b, fn(a), rtol=1e-5)


def test_scalar_params_and_private() -> None:
    func = from_source(
        """
@T.prim_func(private=True)
def scale(A: T.Buffer((4,), "float32"), k: T.int32):
    for i in range(4):
        A[i] = A[i] * T.Cast("float32", k)
"""
    )
    assert "global_symbol" not in func.attrs
    a = np.arange(4, dtype="float32")
    tir.run_prim_func(func, a, 3)
    np.testing.assert_array_equal(a, np.arange(4) * 3)


@I.ir_module
class WithKernel:
    @T.prim_func
    def relu(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = T.max(A[i], T.float32(0))

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        return R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((4,), "float32"))


def test_prim_func_in_module_runs() -> None:
    kernel = WithKernel["relu"]
    assert isinstance(kernel, tir.PrimFunc)
    a, b = rand(4) - 0.5, np.zeros(4, "float32")
    tir.run_prim_func(kernel, a, b)
    np.testing.assert_allclose(b, np.maximum(a, 0))
    rx.well_formed(WithKernel)


@T.prim_func
def scoped_let_and_alloc(A: T.Buffer((4,), "float32")):
    with T.LetStmt(A[0]) as x:
        A[1] = x
    with T.alloc_buffer((4,), "float32", scope="local") as tmp:
        tmp[0] = T.float32(2)
        A[3] = tmp[0]
    with T.LetStmt(5, T.int32) as k:
        A[2] = T.Cast("float32", k)


def test_with_let_and_alloc_scope_only_their_block() -> None:
    body = scoped_let_and_alloc.body
    assert [type(s).__name__ for s in body.seq] == ["LetStmt", "Allocate", "LetStmt"]
    assert str(body.seq[2].var.dtype) == "int32"
    a = np.array([7, 0, 0, 0], "float32")
    tir.run_prim_func(scoped_let_and_alloc, a)
    np.testing.assert_array_equal(a, [7, 7, 5, 2])


def test_with_needs_a_let_or_buffer(script_error) -> None:
    text = '@T.prim_func\ndef k(A: T.Buffer((4,), "float32")):\n    with T.serial(4) as i:\n        pass\n'
    script_error(text, 3, 5, "expected `with T.LetStmt(value) as x:`")
