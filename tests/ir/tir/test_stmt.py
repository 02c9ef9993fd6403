"""Statements and PrimFunc: construction, checks, printing, visitors, structural equality."""

from __future__ import annotations

import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import FloatImm, IntImm, Var, tir
from relaxvm.ir.tir import ForKind


def _add_one(n: Var | int = 4, loop_name: str = "i") -> tir.PrimFunc:
    """B[i] = A[i] + 1 over a (possibly symbolic) length."""
    a = tir.Buffer("A", (n,), "float32")
    b = tir.Buffer("B", (n,), "float32")
    i = Var(loop_name)
    body = tir.For(i, 0, n, ForKind.SERIAL, tir.BufferStore(b, a[i] + 1.0, [i]))
    return tir.PrimFunc([a, b], body, attrs={"global_symbol": "add_one"})


def test_for_fields_and_defaults() -> None:
    i = Var("i")
    buf = tir.Buffer("A", (8,), "int64")
    loop = tir.For(i, 0, 8, ForKind.PARALLEL, buf.vstore([i], i))
    assert loop.kind is ForKind.PARALLEL and loop.thread_binding is None
    assert loop.min == 0 and loop.extent == 8 and loop.annotations == {}
    assert isinstance(loop.body, tir.BufferStore)
    with pytest.raises(AttributeError, match="immutable"):
        loop.min = 1  # type: ignore[misc]


def test_loop_bounds_take_the_loop_var_type() -> None:
    i = Var("i", "int32")
    buf = tir.Buffer("A", (8,), "int32")
    loop = tir.For(i, 0, 8, ForKind.SERIAL, buf.vstore([i], i))
    assert str(loop.extent.dtype) == "int32"


def test_for_errors() -> None:
    i = Var("i")
    store = tir.Evaluate(0)
    with pytest.raises(VMTypeError, match="loop_var must be an integer Var"):
        tir.For(Var("x", "float32"), 0, 4, ForKind.SERIAL, store)
    with pytest.raises(VMValueError, match="THREAD_BINDING loop needs thread_binding"):
        tir.For(i, 0, 4, ForKind.THREAD_BINDING, store)
    with pytest.raises(VMValueError, match="thread_binding='threadIdx.x' given for a SERIAL"):
        tir.For(i, 0, 4, ForKind.SERIAL, store, thread_binding="threadIdx.x")
    with pytest.raises(VMValueError, match="unknown loop kind 9"):
        tir.For(i, 0, 4, 9, store)
    with pytest.raises(VMTypeError, match="For i body: expected a Stmt"):
        tir.For(i, 0, 4, ForKind.SERIAL, "body")  # type: ignore[arg-type]


def test_store_let_if_allocate_errors() -> None:
    buf = tir.Buffer("A", (4,), "float32")
    with pytest.raises(VMTypeError, match=r"BufferStore into 'A': value `1` has type int64"):
        tir.BufferStore(buf, IntImm("int64", 1), [0])
    with pytest.raises(VMTypeError, match="LetStmt x: value `1.0` has type float32"):
        tir.LetStmt(Var("x"), FloatImm("float32", 1.0), tir.Evaluate(0))
    with pytest.raises(VMTypeError, match="condition `1` must be bool"):
        tir.IfThenElse(IntImm("int64", 1), tir.Evaluate(0))
    strided = tir.Buffer("S", (4,), "float32", strides=[2])
    with pytest.raises(VMValueError, match="Allocate 'S': an allocated buffer is compact"):
        tir.Allocate(strided, tir.Evaluate(0))
    with pytest.raises(VMTypeError, match="SeqStmt item 1: expected a Stmt"):
        tir.SeqStmt([tir.Evaluate(0), 3])  # type: ignore[list-item]


def test_store_of_python_number_takes_buffer_type() -> None:
    buf = tir.Buffer("A", (4,), "float32")
    store = tir.BufferStore(buf, 0, [1])
    assert str(store.value.dtype) == "float32"
    assert str(store) == "A[T.int64(1)] = T.float32(0.0)"


def test_seq_flattens() -> None:
    a, b, c = tir.Evaluate(1), tir.Evaluate(2), tir.Evaluate(3)
    flat = tir.seq(a, tir.SeqStmt([b, c]))
    assert isinstance(flat, tir.SeqStmt) and flat.seq == (a, b, c)
    assert tir.seq(a) is a


def test_prim_func_params_and_errors() -> None:
    func = _add_one()
    assert func.name == "add_one" and len(func.params) == 2
    assert [func.buffer_map[p].name for p in func.params] == ["A", "B"]
    handle = Var("h", "handle")
    # An opaque handle (no buffer) is a valid PrimFunc, as in TVM; running it is the error.
    opaque = tir.PrimFunc([handle], tir.Evaluate(0), attrs={"global_symbol": "f"})
    with pytest.raises(VMTypeError, match="parameter 'h' is an opaque T.handle"):
        tir.lower_blocks(opaque)
    with pytest.raises(VMTypeError, match="scalar parameter 'x' must be an integer"):
        tir.PrimFunc([Var("x", "float32")], tir.Evaluate(0))
    with pytest.raises(VMTypeError, match="parameter 0 must be a Var or a Buffer"):
        tir.PrimFunc(["A"], tir.Evaluate(0))  # type: ignore[list-item]
    assert func.with_attr("global_symbol", "other").name == "other"


def test_prim_func_script_is_readable_and_deterministic() -> None:
    n = Var("n")
    func = _add_one(n)
    expected = """# from relaxvm.script import tir as T

@T.prim_func
def add_one(A_handle: T.handle, B_handle: T.handle):
    n = T.int64()
    A = T.match_buffer(A_handle, (n,), "float32")
    B = T.match_buffer(B_handle, (n,), "float32")
    for i in range(n):
        B[i] = A[i] + T.float32(1.0)"""
    assert func.script() == expected
    assert str(func) == expected


def test_statement_printing_covers_every_kind() -> None:
    n = Var("n")
    out = tir.Buffer("O", (n,), "float32")
    scratch = tir.Buffer("tmp", (4,), "float32", scope="local")
    i, j, x = Var("i"), Var("j"), Var("x")
    body = tir.For(
        i,
        0,
        n,
        ForKind.THREAD_BINDING,
        tir.Allocate(
            scratch,
            tir.seq(
                tir.For(j, 1, 3, ForKind.UNROLLED, scratch.vstore([j], tir.exp(out[i]))),
                tir.LetStmt(
                    x, i * 2, tir.IfThenElse(x < n, out.vstore([i], scratch[1]), tir.Evaluate(0))
                ),
            ),
        ),
        thread_binding="threadIdx.x",
    )
    assert str(body) == "\n".join(
        [
            'for i in T.thread_binding(n, thread="threadIdx.x"):',
            '    tmp = T.alloc_buffer((T.int64(4),), "float32", scope="local")',
            "    for j in T.unroll(T.int64(1), T.int64(4)):",
            "        tmp[j] = T.exp(O[i])",
            "    x: T.int64 = i * T.int64(2)",
            "    if x < n:",
            "        O[i] = tmp[T.int64(1)]",
            "    else:",
            "        T.evaluate(T.int64(0))",
        ]
    )


def test_visitor_and_mutator() -> None:
    func = _add_one()
    kinds: list[str] = []
    tir.post_order_visit(func.body, lambda s: kinds.append(type(s).__name__))
    assert kinds == ["BufferStore", "For"]

    assert tir.StmtMutator().visit_stmt(func.body) is func.body  # nothing changed: no rebuild

    class Rename(tir.StmtMutator):
        def visit_buffer_store_(self, stmt):  # type: ignore[no-untyped-def]
            return stmt.replace(value=stmt.value + 1.0)

    changed = Rename().visit_stmt(func.body)
    assert changed is not func.body
    assert str(changed).endswith("B[i] = A[i] + T.float32(1.0) + T.float32(1.0)")


def test_substitute_statement() -> None:
    n = Var("n")
    func = _add_one(n)
    replaced = tir.substitute(func.body, {n: IntImm("int64", 8)})
    assert str(replaced).startswith("for i in range(T.int64(8)):")
    i = func.body.loop_var
    k = Var("k")
    renamed = tir.substitute(func.body, {i: k})
    assert renamed.loop_var is k and "B[k] = A[k] + T.float32(1.0)" in str(renamed)


def test_structural_equality_maps_definitions() -> None:
    first, second = _add_one(4, "i"), _add_one(4, "j")
    assert tir.structural_equal(first, second)
    assert tir.structural_hash(first) == tir.structural_hash(second)
    # The bodies alone: each buffer is defined where first used (TVM compares buffers by
    # content), so they pair without map_free_vars.
    assert tir.structural_equal(first.body, second.body)
    assert tir.structural_hash(first.body) == tir.structural_hash(second.body)
    assert tir.structural_equal(first.body, second.body, map_free_vars=True)
    assert tir.structural_hash(first.body, True) == tir.structural_hash(second.body, True)


def test_structural_equality_symbolic_shapes_and_differences() -> None:
    first, second = _add_one(Var("n")), _add_one(Var("m"))
    assert tir.structural_equal(first, second)
    assert tir.structural_hash(first) == tir.structural_hash(second)
    assert not tir.structural_equal(first, _add_one(4))
    other_attrs = first.with_attr("global_symbol", "x")
    assert not tir.structural_equal(first, other_attrs)
    parallel = first.with_body(first.body.replace(kind=ForKind.PARALLEL))
    assert not tir.structural_equal(first, parallel)
    assert tir.structural_hash(first) != tir.structural_hash(parallel)
    assert not tir.structural_equal(first, first.body)


def test_undefined_vars() -> None:
    m = Var("m")
    func = _add_one(4)
    assert tir.undefined_vars(func) == []
    i = Var("i")
    buf = func.buffer_map[func.params[1]]
    bad = func.with_body(tir.For(i, 0, m, ForKind.SERIAL, buf.vstore([i], 0.0)))
    assert tir.undefined_vars(bad) == [m]


def test_structural_hash_with_unhashable_annotations() -> None:
    func = _add_one()
    annotated = func.with_body(func.body.replace(annotations={"pragma": {"depth": [1, 2]}}))
    assert tir.structural_hash(annotated) != tir.structural_hash(func)
    assert tir.structural_equal(annotated, annotated)
    assert 'annotations={"pragma": ' in annotated.script()
