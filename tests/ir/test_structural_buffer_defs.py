"""Structural equality defines a TIR buffer where it first appears (TVM compares buffers by
content, with the data pointer and shape as definitions), wherever that is."""

from __future__ import annotations

import pytest

from relaxvm import te
from relaxvm.ir import (
    StructuralEqualError,
    Var,
    assert_structural_equal,
    structural_equal,
    structural_hash,
    tir,
)
from relaxvm.ir import relax as rx
from relaxvm.ir.arith import Analyzer

N = Var("n")


def _copy(src: tir.Buffer, dst: tir.Buffer) -> tir.Stmt:
    i = Var("i")
    return tir.For(i, 0, N, tir.ForKind.SERIAL, tir.BufferStore(dst, src[i] * 2.0, [i]))


def _buffers(*names: str, dtype: str = "float32") -> list[tir.Buffer]:
    return [tir.Buffer(name, (N,), dtype) for name in names]


@pytest.mark.parametrize("map_free_vars", [False, True])
def test_bodies_over_fresh_buffers_are_equal(map_free_vars: bool) -> None:
    a, b = _buffers("A", "B")
    x, y = _buffers("X", "Y")
    assert structural_equal(_copy(a, b), _copy(x, y), map_free_vars)
    assert structural_hash(_copy(a, b), map_free_vars) == structural_hash(
        _copy(x, y), map_free_vars
    )
    # In a statement the first use defines it; a bare expression is the exception below.
    left, right = tir.Evaluate(a[N - 1] + 1.0), tir.Evaluate(x[N - 1] + 1.0)
    assert structural_equal(left, right, map_free_vars)
    assert structural_hash(left, map_free_vars) == structural_hash(right, map_free_vars)


def test_bare_expression_keeps_buffers_by_identity() -> None:
    # As TVM's ExprDeepEqual: the arithmetic analyzer must never equate A[i] and X[i].
    a, x = _buffers("A", "X")
    i = Var("i")
    assert not structural_equal(a[i] + 1.0, x[i] + 1.0)
    assert structural_equal(a[i] + 1.0, a[i] + 1.0)
    assert structural_equal(a[i] + 1.0, x[i] + 1.0, map_free_vars=True)
    assert not Analyzer().can_prove_equal(a[i], x[i])


def test_later_uses_must_follow_the_first_pairing() -> None:
    (a,) = _buffers("A")
    x, y = _buffers("X", "Y")
    # In-place on the left (A -> A), two buffers on the right (X -> Y).
    assert not structural_equal(_copy(a, a), _copy(x, y))
    # The store defines A and Y; the load then reuses A on the left but first uses X.
    with pytest.raises(
        StructuralEqualError, match="a defined variable against a definition"
    ) as err:
        assert_structural_equal(_copy(a, a), _copy(x, y))
    assert isinstance(err.value, ValueError)
    assert err.value.path == "<root>.body.value.a.buffer"
    assert not structural_equal(_copy(x, y), _copy(a, a))


def test_buffer_contents_still_compared() -> None:
    a, b = _buffers("A", "B")
    x, y = _buffers("X", "Y", dtype="float16")
    with pytest.raises(StructuralEqualError, match="different dtype") as err:
        assert_structural_equal(_copy(a, b), _copy(x, y))
    assert err.value.path.endswith(".buffer")
    wide = tir.Buffer("W", (N + 1,), "float32")
    assert not structural_equal(_copy(a, b), _copy(a, wide))


def test_a_free_scalar_variable_still_needs_mapping() -> None:
    a, x = _buffers("A", "X")
    k, j = Var("k"), Var("j")
    assert not structural_equal(tir.Evaluate(a[k]), tir.Evaluate(x[j]))
    assert structural_equal(tir.Evaluate(a[k]), tir.Evaluate(x[j]), map_free_vars=True)


def test_emit_te_kernel_body_matches_create_prim_func_body() -> None:
    n, m = Var("n"), Var("m")

    def kernel(p: te.Tensor, q: te.Tensor) -> te.Tensor:
        s = te.compute((8, 8), lambda i, j: p[i, j] + q[i, j])
        return te.compute((8, 8), lambda i, j: s[i, j] * 2.0)

    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo([n, m], "float32"))
    y = rx.Var("y", rx.TensorStructInfo([n, m], "float32"))
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit_te(kernel, x, y))
    emitted = bb.get()["kernel"]
    p = te.placeholder((n, m), "float32", "p")
    q = te.placeholder((n, m), "float32", "q")
    direct = te.create_prim_func([p, q, kernel(p, q)], index_dtype_override="int64")
    # The bodies alone read parameter buffers defined nowhere in them.
    assert_structural_equal(emitted.body, direct.body)
    assert structural_hash(emitted.body) == structural_hash(direct.body)
