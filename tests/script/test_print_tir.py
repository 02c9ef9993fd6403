"""Golden text of the TIR script printer (``PrimFunc.script()``, ``str(stmt)``), and the
round trips of the constructs only hand-built TIR has."""

from __future__ import annotations

import pytest

from relaxvm import tir
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.op import logical_and, logical_not
from relaxvm.ir.printer import expr_to_str
from relaxvm.ir.tir.script import stmt_to_str
from relaxvm.script import from_source

F32 = "float32"


def _lines(func: tir.PrimFunc) -> list[str]:
    return func.script().splitlines()


def test_standalone_prim_func_has_the_import_comment_and_inline_buffers() -> None:
    a = tir.Buffer("A", (3, 4), F32)
    b = tir.Buffer("B", (3, 4), "int32")
    i, j = SymVar("i"), SymVar("j")
    body = tir.For(
        i,
        0,
        3,
        tir.ForKind.SERIAL,
        tir.For(j, 0, 4, tir.ForKind.SERIAL, b.vstore([i, j], tir.Cast("int32", a[i, j]))),
    )
    func = tir.PrimFunc([a, b], body, attrs={"global_symbol": "to_int", "tir.noalias": True})
    assert func.script() == "\n".join(
        [
            "# from relaxvm.script import tir as T",
            "",
            "@T.prim_func",
            'def to_int(A: T.Buffer((T.int64(3), T.int64(4)), "float32"), '
            'B: T.Buffer((T.int64(3), T.int64(4)), "int32")):',
            '    T.func_attr({"tir.noalias": True})',
            "    for i, j in T.grid(T.int64(3), T.int64(4)):",
            '        B[i, j] = T.Cast("int32", A[i, j])',
        ]
    )
    assert str(func) == func.script()
    private = tir.PrimFunc([a, b], body)
    assert _lines(private)[2:4] == [
        "@T.prim_func(private=True)",
        'def main(A: T.Buffer((T.int64(3), T.int64(4)), "float32"), '
        'B: T.Buffer((T.int64(3), T.int64(4)), "int32")):',
    ]
    other = tir.PrimFunc([a, b], body, attrs={"global_symbol": "x"})
    assert "T.func_attr" not in other.script()


def test_symbolic_and_non_default_buffers_are_matched_from_handles() -> None:
    n = SymVar("n")
    a = tir.Buffer("A", (n, 4), F32)
    s = tir.Buffer("S", (4,), "float16", strides=[2], elem_offset=1)
    sh = tir.Buffer("Sh", (8,), F32, scope="shared")
    i = SymVar("i")
    func = tir.PrimFunc([a, s, sh], tir.For(i, 0, n, tir.ForKind.SERIAL, a.vstore([i, 0], 1.0)))
    assert _lines(func)[3:] == [
        "def main(A_handle: T.handle, S_handle: T.handle, Sh_handle: T.handle):",
        "    n = T.int64()",
        '    A = T.match_buffer(A_handle, (n, T.int64(4)), "float32")',
        '    S = T.match_buffer(S_handle, (T.int64(4),), "float16", strides=(T.int64(2),), '
        "elem_offset=T.int64(1))",
        '    Sh = T.match_buffer(Sh_handle, (T.int64(8),), "float32", scope="shared")',
        "    for i in range(n):",
        "        A[i, T.int64(0)] = T.float32(1.0)",
    ]


def test_a_scalar_parameter_declared_first_lets_the_buffer_stay_inline() -> None:
    n = SymVar("n")
    a = tir.Buffer("A", (n,), F32)
    func = tir.PrimFunc([n, a], tir.Evaluate(0), attrs={"global_symbol": "f"})
    assert _lines(func)[3:] == [
        'def f(n: T.int64, A: T.Buffer((n,), "float32")):',
        "    T.evaluate(T.int64(0))",
    ]


def test_loop_kinds_ranges_and_grids() -> None:
    a = tir.Buffer("A", (8, 8), F32)
    i, j, k, t = SymVar("i"), SymVar("j"), SymVar("k"), SymVar("t")
    store = a.vstore([i, j], 0.0)
    triangular = tir.For(
        i, 0, 8, tir.ForKind.SERIAL, tir.For(j, 0, i + 1, tir.ForKind.SERIAL, store)
    )
    assert str(triangular).splitlines()[:2] == [
        "for i in range(T.int64(8)):",
        "    for j in range(i + T.int64(1)):",
    ]
    kinds = tir.For(
        i,
        2,
        6,
        tir.ForKind.PARALLEL,
        tir.For(
            j,
            0,
            8,
            tir.ForKind.VECTORIZED,
            tir.For(
                k,
                0,
                2,
                tir.ForKind.UNROLLED,
                tir.For(t, 0, 1, tir.ForKind.SERIAL, store, annotations={"pragma": "x"}),
            ),
        ),
    )
    assert str(kinds).splitlines()[:4] == [
        "for i in T.parallel(T.int64(2), T.int64(8)):",
        "    for j in T.vectorized(T.int64(8)):",
        "        for k in T.unroll(T.int64(2)):",
        '            for t in T.serial(T.int64(1), annotations={"pragma": "x"}):',
    ]
    q = SymVar("q", "int32")
    bound = tir.For(
        q, 0, 32, tir.ForKind.THREAD_BINDING, tir.Evaluate(q), thread_binding="blockIdx.x"
    )
    assert str(bound) == (
        'for q in T.thread_binding(T.int32(32), thread="blockIdx.x"):\n    T.evaluate(q)'
    )


def test_let_and_allocate_print_concisely_at_the_end_of_a_block() -> None:
    a = tir.Buffer("A", (4,), F32)
    tmp = tir.Buffer("tmp", (4,), F32, scope="local")
    x = SymVar("x", "float32")
    i = SymVar("i")
    tail = tir.Allocate(
        tmp, tir.seq(tmp.vstore([0], 1.0), tir.LetStmt(x, tmp[0], a.vstore([0], x)))
    )
    assert str(tail).splitlines() == [
        'tmp = T.alloc_buffer((T.int64(4),), "float32", scope="local")',
        "tmp[T.int64(0)] = T.float32(1.0)",
        "x: T.float32 = tmp[T.int64(0)]",
        "A[T.int64(0)] = x",
    ]
    not_tail = tir.seq(
        tir.LetStmt(x, a[0], a.vstore([1], x)),
        tir.Allocate(tmp, tmp.vstore([0], 2.0)),
        tir.For(i, 0, 4, tir.ForKind.SERIAL, a.vstore([i], 0.0)),
    )
    assert str(not_tail).splitlines() == [
        "with T.LetStmt(A[T.int64(0)]) as x:",
        "    A[T.int64(1)] = x",
        'with T.alloc_buffer((T.int64(4),), "float32", scope="local") as tmp:',
        "    tmp[T.int64(0)] = T.float32(2.0)",
        "for i in range(T.int64(4)):",
        "    A[i] = T.float32(0.0)",
    ]


def test_expressions_literals_and_zero_dim_buffers() -> None:
    a = tir.Buffer("A", (), F32)
    b = tir.Buffer("B", (4,), "int32")
    i = SymVar("i", "int32")
    x = SymVar("x", "float32")
    store = a.vstore((), tir.Select(i > 2, tir.exp(a[()]), tir.pow(x, 2.0)))
    assert str(store) == (
        "A[()] = T.Select(i > T.int32(2), T.exp(A[()]), T.pow(x, T.float32(2.0)))"
    )
    assert str(b.vstore([i], tir.truncdiv(i, 2) + tir.floormod(i, 3))) == (
        "B[i] = T.truncdiv(i, T.int32(2)) + i % T.int32(3)"
    )
    cond = tir.IfThenElse(logical_and(i < 2, logical_not(i.equal(0))), tir.Evaluate(0))
    assert str(cond).splitlines()[0] == "if i < T.int32(2) and not i == T.int32(0):"


def test_names_are_unique_and_valid_identifiers() -> None:
    a = tir.Buffer("A", (4, 4), F32)
    i1, i2, i3 = SymVar("i"), SymVar("i"), SymVar("i")
    keyword_var = SymVar("lambda")
    reserved = SymVar("T")
    siblings = tir.seq(
        tir.For(
            i1,
            0,
            4,
            tir.ForKind.SERIAL,
            tir.For(i2, 0, 4, tir.ForKind.PARALLEL, a.vstore([i1, i2], 0.0)),
        ),
        tir.For(i3, 0, 4, tir.ForKind.SERIAL, a.vstore([i3, 0], 1.0)),
        tir.For(
            keyword_var,
            0,
            4,
            tir.ForKind.SERIAL,
            tir.For(reserved, 0, 4, tir.ForKind.PARALLEL, a.vstore([keyword_var, reserved], 2.0)),
        ),
    )
    assert str(siblings).splitlines() == [
        "for i in range(T.int64(4)):",
        "    for i_1 in T.parallel(T.int64(4)):",
        "        A[i, i_1] = T.float32(0.0)",
        "for i in range(T.int64(4)):",
        "    A[i, T.int64(0)] = T.float32(1.0)",
        "for lambda_ in range(T.int64(4)):",
        "    for T_1 in T.parallel(T.int64(4)):",
        "        A[lambda_, T_1] = T.float32(2.0)",
    ]


def _module(func: tir.PrimFunc) -> rx.IRModule:
    return rx.IRModule({"f": func.with_attr("global_symbol", "f")})


def test_sibling_loops_with_one_name_roundtrip() -> None:
    a = tir.Buffer("A", (4, 4), F32)
    i1, i2, i3 = SymVar("i"), SymVar("i"), SymVar("i")
    body = tir.seq(
        tir.For(
            i1,
            0,
            4,
            tir.ForKind.SERIAL,
            tir.For(i2, 0, 4, tir.ForKind.PARALLEL, a.vstore([i1, i2], 0.0)),
        ),
        tir.For(i3, 0, 4, tir.ForKind.SERIAL, a.vstore([i3, 0], 1.0)),
    )
    mod = _module(tir.PrimFunc([a], body))
    parsed = from_source(mod.script())
    rx.assert_structural_equal(parsed, mod)


def test_non_tail_let_and_allocate_roundtrip() -> None:
    a = tir.Buffer("A", (4,), F32)
    tmp = tir.Buffer("tmp", (4,), F32, scope="local")
    x = SymVar("x", "float32")
    body = tir.seq(
        tir.LetStmt(x, a[0], a.vstore([1], x)),
        tir.Allocate(tmp, tmp.vstore([0], 2.0)),
        a.vstore([2], 3.0),
    )
    mod = _module(tir.PrimFunc([a], body))
    rx.assert_structural_equal(from_source(mod.script()), mod)


def test_zero_dim_buffer_and_int32_loop_roundtrip() -> None:
    a = tir.Buffer("A", (), F32)
    b = tir.Buffer("B", (8,), "int32")
    q = SymVar("q", "int32")
    body = tir.seq(
        a.vstore((), tir.exp(a[()])),
        tir.For(
            q, 0, 8, tir.ForKind.SERIAL, b.vstore([q], tir.Select(q > 2, q, tir.truncmod(q, 3)))
        ),
    )
    mod = _module(tir.PrimFunc([a, b], body))
    rx.assert_structural_equal(from_source(mod.script()), mod)


def test_printer_errors_name_the_problem() -> None:
    with pytest.raises(VMValueError, match=r"expr_to_str: literals must be one of .*got 'python'"):
        expr_to_str(SymVar("n"), literals="python")

    class Unknown(tir.Stmt):
        __slots__ = ()

    with pytest.raises(VMTypeError, match="script: cannot print a Unknown"):
        stmt_to_str(Unknown())
    assert expr_to_str(SymVar("n") + 1, literals="tir") == "n + T.int64(1)"
    assert expr_to_str(SymVar("n") + 1, literals="relax") == "n + 1"
