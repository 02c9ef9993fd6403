"""Buffer, BufferLoad and intrinsic Call: construction, printing, equality, substitution."""

from __future__ import annotations

import math
import pickle

import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Analyzer, FloatImm, IntImm, Var, evaluate, free_vars, substitute, tir
from relaxvm.ir import structural_equal as expr_structural_equal


def test_buffer_fields_and_symbolic_shape() -> None:
    n = Var("n")
    buf = tir.decl_buffer((n, 4), "float32", name="A")
    assert buf.name == "A" and buf.ndim == 2
    assert buf.shape[0] is n and buf.shape[1] == IntImm("int64", 4)
    assert str(buf.data.dtype) == "handle" and buf.data.name == "A"
    assert buf.scope == "global" and buf.strides == () and buf.elem_offset == 0
    assert "Buffer(A, (n, 4)" in repr(buf)


def test_buffers_compare_by_identity() -> None:
    a, b = tir.Buffer("A", (4,), "float32"), tir.Buffer("A", (4,), "float32")
    assert a != b and a == a
    i = Var("i")
    assert a[i] != b[i]
    assert a[i] == a[i]
    assert hash(a[i]) == hash(a[i])


def test_buffer_load_indices_and_dtype() -> None:
    buf = tir.Buffer("B", (3, 5), "int32")
    i = Var("i")
    load = buf[i, i + 1]
    assert isinstance(load, tir.BufferLoad)
    assert str(load.dtype) == "int32"
    assert load.indices[0] is i
    assert str(load) == "B[i, i + 1]"
    assert buf.vload((0, 1)) == buf[0, 1]


def test_buffer_errors() -> None:
    buf = tir.Buffer("A", (3, 4), "float32")
    with pytest.raises(VMValueError, match=r"Buffer 'A': 1 indices given for a 2-d buffer"):
        _ = buf[0]
    with pytest.raises(VMTypeError, match="slices are not supported"):
        _ = buf[0:2, 0]
    with pytest.raises(VMTypeError, match=r"Buffer 'A' index: entry 1 .* integer type"):
        _ = buf[0, FloatImm("float32", 1.0)]
    with pytest.raises(VMValueError, match="scope must be one of"):
        tir.Buffer("S", (4,), "float32", scope="texture")
    with pytest.raises(VMValueError, match="2 strides given for 1 dimensions"):
        tir.Buffer("S", (4,), "float32", strides=(1, 1))
    with pytest.raises(VMTypeError, match="shape: entry 0 must be an int"):
        tir.Buffer("S", ("n",), "float32")


def test_buffer_is_immutable() -> None:
    buf = tir.Buffer("A", (3,), "float32")
    with pytest.raises(AttributeError, match="immutable"):
        buf.name = "B"  # type: ignore[misc]


def test_load_operands_substitute_and_free_vars() -> None:
    buf = tir.Buffer("A", (8,), "float32")
    i, j = Var("i"), Var("j")
    load = buf[i * 2]
    assert free_vars(load) == [buf.data, i]
    replaced = substitute(load, {i: j})
    assert isinstance(replaced, tir.BufferLoad) and replaced.buffer is buf
    assert str(replaced) == "A[j * 2]"
    assert substitute(load, {j: i}) is load
    with pytest.raises(VMTypeError, match="handle variable cannot be replaced"):
        load.with_operands(Var("other", "handle"), i)


def test_simplifier_keeps_loads() -> None:
    buf = tir.Buffer("A", (8,), "int64")
    i = Var("i")
    simplified = Analyzer().simplify(buf[i + 1 - 1] + 0)
    assert simplified == buf[i]


def test_evaluate_refuses_loads() -> None:
    buf = tir.Buffer("A", (8,), "float32")
    with pytest.raises(VMValueError, match="cannot read buffer 'A'"):
        evaluate(buf[0])


def test_map_free_vars_structural_equality_pairs_handles() -> None:
    a, b = tir.Buffer("A", (4,), "float32"), tir.Buffer("B", (4,), "float32")
    i, j = Var("i"), Var("j")
    assert expr_structural_equal(a[i], b[j], map_free_vars=True)
    assert not expr_structural_equal(a[i], b[j])


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("exp", 0.5, math.exp(0.5)),
        ("exp2", 3.0, 8.0),
        ("log", 2.0, math.log(2.0)),
        ("log2", 8.0, 3.0),
        ("sqrt", 9.0, 3.0),
        ("rsqrt", 4.0, 0.5),
        ("tanh", 0.3, math.tanh(0.3)),
        ("sigmoid", 0.0, 0.5),
        ("erf", 0.7, math.erf(0.7)),
        ("fabs", -2.5, 2.5),
        ("floor", -1.5, -2.0),
        ("ceil", -1.5, -1.0),
        ("round", 2.5, 2.0),
    ],
)
def test_unary_intrinsics_print_and_evaluate(name: str, value: float, expected: float) -> None:
    x = Var("x", "float32")
    call = getattr(tir, name)(x)
    assert isinstance(call, tir.Call)
    assert call.op == f"tir.{name}"
    assert str(call) == f"T.{name}(x)"
    assert str(call.dtype) == "float32"
    assert evaluate(call, {x: value}) == pytest.approx(expected)


def test_pow_and_generic_call_constructor() -> None:
    x = Var("x", "float64")
    call = tir.pow(x, 2.0)
    assert str(call) == "T.pow(x, T.float64(2.0))"
    assert evaluate(call, {x: 3.0}) == pytest.approx(9.0)
    same = tir.Call("float64", "tir.pow", [x, FloatImm("float64", 2.0)])
    assert same == call and hash(same) == hash(call)
    assert type(tir.Call("float64", "exp", [x])) is type(tir.exp(x))


def test_calls_with_different_ops_differ() -> None:
    x = Var("x", "float32")
    assert tir.exp(x) != tir.log(x)
    assert tir.exp(x) + 1.0 != tir.log(x) + 1.0
    assert tir.exp(x) == tir.exp(x)


def test_if_then_else_evaluates_only_the_chosen_branch() -> None:
    i = Var("i")
    guarded = tir.if_then_else(i > 0, 10 // i, IntImm("int64", -1))
    assert str(guarded) == "T.if_then_else(i > 0, 10 // i, -1)"
    assert evaluate(guarded, {i: 0}) == -1
    assert evaluate(guarded, {i: 5}) == 2


def test_constant_intrinsics_fold_in_simplifier() -> None:
    folded = Analyzer().simplify(tir.exp(FloatImm("float32", 0.0)))
    assert isinstance(folded, FloatImm) and folded.value == 1.0


def test_intrinsic_errors() -> None:
    i = Var("i")
    with pytest.raises(VMTypeError, match=r"T.exp: needs a float argument, got `i`"):
        tir.exp(i)
    with pytest.raises(VMValueError, match="unknown intrinsic 'tir.no_such_op'"):
        tir.Call("float32", "tir.no_such_op", [FloatImm("float32", 1.0)])
    with pytest.raises(VMTypeError, match="expected 1 arguments, got 2"):
        tir.Call("float32", "exp", [1.0, 2.0])
    with pytest.raises(VMTypeError, match="condition must be bool"):
        tir.if_then_else(i, 1, 2)
    x = Var("x", "float32")
    with pytest.raises(VMTypeError, match="argument 0 `x` has type float32, expected float64"):
        tir.Call("float64", "exp", [x])


def test_calls_pickle_round_trip() -> None:
    x = FloatImm("float32", 0.5)
    call = tir.sigmoid(x)
    again = pickle.loads(pickle.dumps(call))
    assert again == call
