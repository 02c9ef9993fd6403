"""TE -> create_prim_func -> interpreter, differential against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Var, tir
from relaxvm.ir.tir import te

RNG = np.random.default_rng(1)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def test_broadcast_add_via_index_expressions() -> None:
    a = te.placeholder((3, 4), name="A")
    b = te.placeholder((1, 4), name="B")
    c = te.compute((3, 4), lambda i, j: a[i, j] + b[0, j], name="C")
    func = te.create_prim_func([a, b, c])
    assert [func.buffer_map[p].name for p in func.params] == ["A", "B", "C"]
    x, y, out = _rand(3, 4), _rand(1, 4), np.zeros((3, 4), "float32")
    tir.run_prim_func(func, x, y, out)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_matmul_via_sum_is_a_reduction_block() -> None:
    a = te.placeholder((4, 3), name="A")
    b = te.placeholder((3, 5), name="B")
    k = te.reduce_axis((0, 3), name="k")
    c = te.compute((4, 5), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    func = te.create_prim_func([a, b, c])
    # TVM's block form: "R" for the reduction axis, reads without the output, an init.
    assert func.script().splitlines()[5:] == [
        "    for i, j, k in T.grid(T.int64(4), T.int64(5), T.int64(3)):",
        '        with T.block("C"):',
        '            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])',
        "            T.reads(A[v_i, v_k], B[v_k, v_j])",
        "            T.writes(C[v_i, v_j])",
        "            with T.init():",
        "                C[v_i, v_j] = T.float32(0.0)",
        "            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]",
    ]
    # Lowered, the init comes before the reduction loop, as the schedules expect.
    assert tir.lower_blocks(func).script().splitlines()[5:] == [
        "    for i, j in T.grid(T.int64(4), T.int64(5)):",
        "        C[i, j] = T.float32(0.0)",
        "        for k in range(T.int64(3)):",
        "            C[i, j] = C[i, j] + A[i, k] * B[k, j]",
    ]
    x, y, out = _rand(4, 3), _rand(3, 5), np.zeros((4, 5), "float32")
    tir.run_prim_func(func, x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-6)


def test_row_max_and_min_reductions() -> None:
    a = te.placeholder((3, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    row_max = te.compute((3,), lambda i: te.max(a[i, k], axis=k), name="M")
    r = te.reduce_axis((0, 6), name="r")
    row_min = te.compute((3,), lambda i: te.min(a[i, r], axis=[r]), name="N")
    func = te.create_prim_func([a, row_max, row_min])
    assert 'M[v_i] = T.float32("-inf")' in func.script()
    x, big, small = _rand(3, 6), np.zeros(3, "float32"), np.zeros(3, "float32")
    tir.run_prim_func(func, x, big, small)
    np.testing.assert_array_equal(big, x.max(axis=1))
    np.testing.assert_array_equal(small, x.min(axis=1))


def test_integer_max_identity_and_where() -> None:
    a = te.placeholder((2, 5), "int32", name="A")
    k = te.reduce_axis((0, 5), name="k")
    # Max over the odd columns only.
    out = te.compute((2,), lambda i: te.max(a[i, k], axis=k, where=(k % 2).equal(1)), name="O")
    func = te.create_prim_func([a, out])
    data = RNG.integers(-50, 50, (2, 5)).astype("int32")
    result = np.zeros(2, "int32")
    tir.run_prim_func(func, data, result)
    np.testing.assert_array_equal(result, data[:, 1::2].max(axis=1))


def _softmax(rows: Var | int, cols: Var | int) -> tuple[te.Tensor, te.Tensor]:
    x = te.placeholder((rows, cols), name="X")
    k1 = te.reduce_axis((0, cols), name="k1")
    row_max = te.compute((rows,), lambda i: te.max(x[i, k1], axis=k1), name="row_max")
    shifted = te.compute((rows, cols), lambda i, j: tir.exp(x[i, j] - row_max[i]), name="e")
    k2 = te.reduce_axis((0, cols), name="k2")
    total = te.compute((rows,), lambda i: te.sum(shifted[i, k2], axis=k2), name="total")
    out = te.compute((rows, cols), lambda i, j: shifted[i, j] / total[i], name="Y")
    return x, out


def _np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_from_several_stages_allocates_intermediates() -> None:
    x, y = _softmax(3, 5)
    func = te.create_prim_func([x, y])
    text = func.script()
    for name in ("row_max", "e", "total"):
        assert f"{name} = T.alloc_buffer(" in text
    assert len(func.params) == 2
    data, out = _rand(3, 5), np.zeros((3, 5), "float32")
    tir.run_prim_func(func, data, out)
    np.testing.assert_allclose(out, _np_softmax(data), rtol=1e-5)


def test_softmax_symbolic_shape() -> None:
    n, m = Var("n"), Var("m")
    x, y = _softmax(n, m)
    func = te.create_prim_func([x, y])
    assert "n = T.int64()" in func.script() and "m = T.int64()" in func.script()
    for shape in [(2, 3), (4, 7)]:
        data, out = _rand(*shape), np.zeros(shape, "float32")
        tir.run_prim_func(func, data, out)
        np.testing.assert_allclose(out, _np_softmax(data), rtol=1e-5)


def test_symbolic_elementwise_and_intermediate_as_param() -> None:
    n = Var("n")
    a = te.placeholder((n, 4), name="A")
    b = te.compute((n, 4), lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute((n, 4), lambda i, j: tir.sigmoid(b[i, j]), name="C")
    # Passing the intermediate B makes it an extra output parameter instead of scratch.
    func = te.create_prim_func([a, b, c])
    assert "alloc_buffer" not in func.script()
    data = _rand(5, 4)
    mid, out = np.zeros_like(data), np.zeros_like(data)
    tir.run_prim_func(func, data, mid, out)
    np.testing.assert_allclose(mid, data * 2, rtol=1e-6)
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-data * 2)), rtol=1e-5)


def test_scalar_var_argument_and_index_arithmetic() -> None:
    n = Var("n")
    offset = Var("offset")
    a = te.placeholder((n,), "int64", name="A")
    b = te.compute((n,), lambda i: a[(i + offset) % n] * 10, name="B")
    func = te.create_prim_func([a, b, offset])
    data = np.arange(5, dtype="int64")
    out = np.zeros(5, "int64")
    tir.run_prim_func(func, data, out, 2)
    np.testing.assert_array_equal(out, np.roll(data, -2) * 10)


def test_axis_names_come_from_fcompute() -> None:
    a = te.placeholder((2, 3), name="A")
    b = te.compute((2, 3), lambda row, col: a[row, col], name="B")
    assert [iv.var.name for iv in b.op.axis] == ["row", "col"]
    c = te.compute((2, 3), lambda *idx: a[idx], name="C")
    assert [iv.var.name for iv in c.op.axis] == ["i0", "i1"]


def test_te_errors() -> None:
    n = Var("n")
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="B")
    with pytest.raises(VMValueError, match="placeholder 'A' is used but not passed"):
        te.create_prim_func([b])
    m = Var("m")
    # m appears only in the shape of an intermediate stage, so no parameter binds it.
    c = te.compute((m,), lambda i: a[i], name="C")
    d = te.compute((n,), lambda i: c[i], name="D")
    with pytest.raises(VMValueError, match="symbolic variable\\(s\\) 'm' are not bound"):
        te.create_prim_func([a, d])
    assert te.create_prim_func([a, d, m]).params[-1] is m  # passing m as a scalar fixes it
    with pytest.raises(VMTypeError, match="takes 1 index arguments but the shape has 2"):
        te.compute((2, 2), lambda i: a[i], name="D")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(VMTypeError, match="must be the whole body of te.compute"):
        te.compute((2,), lambda i: te.sum(a[k], axis=k) * 2.0, name="E")
    with pytest.raises(VMTypeError, match="axis must be te.reduce_axis"):
        te.sum(a[0], axis=[])
    loose = tir.Buffer("L", (4,), "float32")
    with pytest.raises(VMTypeError, match="reads buffer 'L', which is not a te tensor"):
        te.compute((4,), lambda i: loose[i], name="F")
    with pytest.raises(VMValueError, match="an argument is passed twice"):
        te.create_prim_func([a, a, b])
