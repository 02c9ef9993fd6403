"""The reference interpreter on hand-written PrimFuncs, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import IntImm, Var, cast, floordiv, floormod, tir, truncdiv, truncmod
from relaxvm.ir.tir import ForKind

RNG = np.random.default_rng(0)


def _elementwise(n: Var | int, m: Var | int, kind: ForKind = ForKind.SERIAL) -> tir.PrimFunc:
    a = tir.Buffer("A", (n, m), "float32")
    b = tir.Buffer("B", (n, m), "float32")
    i, j = Var("i"), Var("j")
    store = b.vstore([i, j], tir.exp(a[i, j]) * 2.0 + tir.sqrt(tir.fabs(a[i, j])))
    body = tir.For(i, 0, n, kind, tir.For(j, 0, m, ForKind.VECTORIZED, store))
    return tir.PrimFunc([a, b], body)


@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED])
def test_elementwise_static(kind: ForKind) -> None:
    a = RNG.standard_normal((3, 5)).astype("float32")
    b = np.zeros_like(a)
    tir.run_prim_func(_elementwise(3, 5, kind), a, b)
    np.testing.assert_allclose(b, np.exp(a) * 2 + np.sqrt(np.abs(a)), rtol=1e-6)


def test_elementwise_symbolic_shape_binds_from_arrays() -> None:
    n, m = Var("n"), Var("m")
    func = _elementwise(n, m)
    for shape in [(2, 3), (4, 1)]:
        a = RNG.standard_normal(shape).astype("float32")
        b = np.zeros_like(a)
        func(a, b)  # PrimFunc.__call__ runs the interpreter
        np.testing.assert_allclose(b, np.exp(a) * 2 + np.sqrt(np.abs(a)), rtol=1e-6)


def test_float32_arithmetic_rounds_like_float32() -> None:
    a = tir.Buffer("A", (1,), "float32")
    out = tir.Buffer("O", (1,), "float32")
    big = np.array([16777216.0], dtype="float32")  # 2**24: adding 1.0 is lost in float32
    body = out.vstore([0], a[0] + 1.0 - a[0])
    result = np.zeros(1, "float32")
    tir.run_prim_func(tir.PrimFunc([a, out], body), big, result)
    assert result[0] == np.float32(16777216.0) + np.float32(1.0) - np.float32(16777216.0)


def test_if_else_and_let_and_scalar_param() -> None:
    n = Var("n")
    limit = Var("limit")
    a = tir.Buffer("A", (n,), "int32")
    out = tir.Buffer("O", (n,), "int32")
    i, doubled = Var("i"), Var("doubled", "int32")
    body = tir.For(
        i,
        0,
        n,
        ForKind.SERIAL,
        tir.LetStmt(
            doubled,
            a[i] * 2,
            tir.IfThenElse(
                i < limit,
                out.vstore([i], doubled),
                out.vstore([i], cast(-(i), "int32")),
            ),
        ),
    )
    func = tir.PrimFunc([a, out, limit], body)
    data = np.arange(6, dtype="int32") - 2
    result = np.zeros(6, "int32")
    tir.run_prim_func(func, data, result, 4)
    np.testing.assert_array_equal(result, np.where(np.arange(6) < 4, data * 2, -np.arange(6)))


def test_local_scratch_buffer_row_sum() -> None:
    n = Var("n")
    a = tir.Buffer("A", (n, 4), "float64")
    out = tir.Buffer("O", (n,), "float64")
    acc = tir.Buffer("acc", (1,), "float64", scope="local")
    i, k = Var("i"), Var("k")
    body = tir.For(
        i,
        0,
        n,
        ForKind.SERIAL,
        tir.Allocate(
            acc,
            tir.seq(
                acc.vstore([0], 0.0),
                tir.For(k, 0, 4, ForKind.SERIAL, acc.vstore([0], acc[0] + a[i, k])),
                out.vstore([i], acc[0]),
            ),
        ),
    )
    data = RNG.standard_normal((3, 4))
    result = np.zeros(3)
    tir.run_prim_func(tir.PrimFunc([a, out], body), data, result)
    np.testing.assert_allclose(result, data.sum(axis=1))


def test_scratch_starts_as_nan_so_reads_before_writes_show() -> None:
    out = tir.Buffer("O", (2,), "float32")
    scratch = tir.Buffer("s", (2,), "float32", scope="shared")
    body = tir.Allocate(scratch, out.vstore([0], scratch[1]))
    result = np.zeros(2, "float32")
    tir.run_prim_func(tir.PrimFunc([out], body), result)
    assert np.isnan(result[0])


def test_integer_division_semantics_match_evaluate() -> None:
    a = tir.Buffer("A", (4,), "int64")
    out = tir.Buffer("O", (4, 4), "int64")
    i = Var("i")
    ops = [floordiv(a[i], 3), floormod(a[i], 3), truncdiv(a[i], 3), truncmod(a[i], 3)]
    body = tir.For(
        i, 0, 4, ForKind.SERIAL, tir.seq(*(out.vstore([i, c], op) for c, op in enumerate(ops)))
    )
    data = np.array([-7, -1, 5, 8], dtype="int64")
    result = np.zeros((4, 4), "int64")
    tir.run_prim_func(tir.PrimFunc([a, out], body), data, result)
    np.testing.assert_array_equal(result[:, 0], data // 3)
    np.testing.assert_array_equal(result[:, 1], data % 3)
    np.testing.assert_array_equal(result[:, 2], np.trunc(data / 3).astype("int64"))
    np.testing.assert_array_equal(result[:, 3], np.fmod(data, 3))


def test_if_then_else_guards_out_of_bounds_padding() -> None:
    a = tir.Buffer("A", (4,), "float32")
    out = tir.Buffer("O", (6,), "float32")
    i = Var("i")
    padded = tir.if_then_else((i >= 1) & (i < 5), a[i - 1], tir.const(0.0, "float32"))
    body = tir.For(i, 0, 6, ForKind.SERIAL, out.vstore([i], padded))
    data = RNG.standard_normal(4).astype("float32")
    result = np.full(6, 9.0, "float32")
    tir.run_prim_func(tir.PrimFunc([a, out], body), data, result)
    np.testing.assert_array_equal(result, np.pad(data, 1))


def test_strided_buffer_accepts_matching_array() -> None:
    a = tir.Buffer("A", (3, 2), "float32", strides=(4, 2))
    out = tir.Buffer("O", (3, 2), "float32")
    i, j = Var("i"), Var("j")
    body = tir.For(
        i, 0, 3, ForKind.SERIAL, tir.For(j, 0, 2, ForKind.SERIAL, out.vstore([i, j], a[i, j]))
    )
    base = RNG.standard_normal((3, 4)).astype("float32")
    view = base[:, ::2]
    result = np.zeros((3, 2), "float32")
    tir.run_prim_func(tir.PrimFunc([a, out], body), view, result)
    np.testing.assert_array_equal(result, view)
    with pytest.raises(VMValueError, match="buffer 'A' stride 0 must be 4 elements"):
        tir.run_prim_func(tir.PrimFunc([a, out], body), np.zeros((3, 2), "float32"), result)


def test_evaluate_statement_runs_checks() -> None:
    a = tir.Buffer("A", (2,), "float32")
    body = tir.Evaluate(a[5])
    with pytest.raises(VMValueError, match="index 5 is out of bounds for dim 0 of buffer 'A'"):
        tir.run_prim_func(tir.PrimFunc([a], body), np.zeros(2, "float32"))


# ---- error paths -----------------------------------------------------------------------------
def test_out_of_bounds_load_names_buffer_and_index() -> None:
    func = _elementwise(3, 5)
    a = tir.Buffer("A", (3,), "float32")
    i = Var("i")
    body = tir.For(i, 0, 4, ForKind.SERIAL, a.vstore([i], 1.0))
    with pytest.raises(
        VMValueError,
        match=r"run_prim_func\(main\): index 3 is out of bounds for dim 0 of buffer 'A' "
        r"\(shape \(3,\)\) in `A\[i\] = \.\.\.` at index \(3,\)",
    ):
        tir.run_prim_func(tir.PrimFunc([a], body), np.zeros(3, "float32"))
    assert func is not None
    j = Var("j")
    out = tir.Buffer("O", (3,), "float32")
    negative = tir.For(j, 0, 3, ForKind.SERIAL, out.vstore([j], a[j - 1]))
    with pytest.raises(VMValueError, match=r"index -1 is out of bounds .* buffer 'A'"):
        tir.run_prim_func(
            tir.PrimFunc([a, out], negative), np.zeros(3, "float32"), np.zeros(3, "float32")
        )


def test_shape_var_bound_to_two_values() -> None:
    n = Var("n")
    func = _elementwise(n, 4)
    with pytest.raises(
        VMValueError,
        match=r"buffer 'B' dim 0: shape variable 'n' is 2 \(from buffer 'A' dim 0\) but the "
        r"array has 3",
    ):
        tir.run_prim_func(func, np.zeros((2, 4), "float32"), np.zeros((3, 4), "float32"))


def test_static_and_compound_shape_mismatch() -> None:
    with pytest.raises(
        VMValueError, match=r"buffer 'A' dim 1 must be `5` = 5, but the array has 4"
    ):
        tir.run_prim_func(
            _elementwise(3, 5), np.zeros((3, 4), "float32"), np.zeros((3, 5), "float32")
        )
    n = Var("n")
    a = tir.Buffer("A", (n,), "float32")
    b = tir.Buffer("B", (n * 2,), "float32")
    func = tir.PrimFunc([a, b], tir.Evaluate(0))
    with pytest.raises(VMValueError, match=r"buffer 'B' dim 0 must be `n \* 2` = 6"):
        tir.run_prim_func(func, np.zeros(3, "float32"), np.zeros(5, "float32"))


def test_argument_kind_dtype_and_count_errors() -> None:
    func = _elementwise(3, 5)
    good = np.zeros((3, 5), "float32")
    with pytest.raises(VMTypeError, match=r"expected 2 arguments \(A_handle, B_handle\), got 1"):
        tir.run_prim_func(func, good)
    with pytest.raises(VMTypeError, match="buffer 'A' holds float32 but the array is float64"):
        tir.run_prim_func(func, np.zeros((3, 5)), good)
    with pytest.raises(VMValueError, match=r"buffer 'B' is 2-d but the array has shape \(15,\)"):
        tir.run_prim_func(func, good, np.zeros(15, "float32"))
    with pytest.raises(VMTypeError, match="buffer 'A' needs a numpy array, got list"):
        tir.run_prim_func(func, [[0.0]], good)
    with pytest.raises(VMValueError, match="buffer 'A' is compact .* not C-contiguous"):
        tir.run_prim_func(func, np.zeros((5, 3), "float32").T, good)
    scalar = Var("k")
    with pytest.raises(VMTypeError, match="scalar parameter 'k' needs an int, got float"):
        tir.run_prim_func(tir.PrimFunc([scalar], tir.Evaluate(scalar)), 1.5)


def test_undefined_variable_and_division_by_zero() -> None:
    out = tir.Buffer("O", (1,), "int64")
    free = Var("free")
    with pytest.raises(VMValueError, match="variable 'free' is used but not defined"):
        tir.run_prim_func(tir.PrimFunc([out], out.vstore([0], free)), np.zeros(1, "int64"))
    d = Var("d")
    body = out.vstore([0], floordiv(IntImm("int64", 7), d))
    result = np.ones(1, "int64")
    # An integer zero divisor gives 0, as numpy and the compiled targets do (docs/ops.md).
    tir.run_prim_func(tir.PrimFunc([out, d], body), result, 0)
    assert result[0] == 0


def test_buffer_not_allocated() -> None:
    out = tir.Buffer("O", (1,), "float32")
    stray = tir.Buffer("stray", (1,), "float32")
    func = tir.PrimFunc([out], out.vstore([0], stray[0]))
    with pytest.raises(VMValueError, match="buffer 'stray' is used but is neither a parameter"):
        tir.run_prim_func(func, np.zeros(1, "float32"))


def test_elem_offset_must_be_zero() -> None:
    a = tir.Buffer("A", (2,), "float32", elem_offset=3)
    with pytest.raises(VMValueError, match="buffer 'A' has elem_offset 3"):
        tir.run_prim_func(tir.PrimFunc([a], tir.Evaluate(0)), np.zeros(2, "float32"))


def test_integer_store_wraps_to_element_type() -> None:
    a = tir.Buffer("A", (2,), "int8")
    i = Var("i")
    body = tir.For(i, 0, 2, ForKind.SERIAL, a.vstore([i], a[i] * 2))
    data = np.array([100, -3], dtype="int8")
    tir.run_prim_func(tir.PrimFunc([a], body), data)
    np.testing.assert_array_equal(data, np.array([100 * 2 - 256, -6], dtype="int8"))
