"""TVM's te forms: arithmetic on te tensors (``x + 1``, ``1 - x``, ``x * y``, ``-x``,
``x.astype``), each an elementwise compute stage through the topi broadcast operators as in
TVM (checked against numpy through the TIR interpreter), and ``create_prim_func``'s
``index_dtype_override``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import tir
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
from relaxvm.ir.tir import te

RNG = np.random.default_rng(7)


def _run(inputs: list[te.Tensor], out: te.Tensor, *arrays: np.ndarray) -> np.ndarray:
    func = te.create_prim_func([*inputs, out])
    result = np.zeros(tuple(int(d) for d in out.shape), str(out.dtype))
    tir.run_prim_func(func, *arrays, result)
    return result


CASES: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("x + 1", lambda x, y: x + 1),
    ("1 + x", lambda x, y: 1 + x),
    ("x - 2.5", lambda x, y: x - 2.5),
    ("3 - x", lambda x, y: 3 - x),
    ("x * 2", lambda x, y: x * 2),
    ("2 * x", lambda x, y: 2 * x),
    ("x / 4", lambda x, y: x / 4),
    ("1 / x", lambda x, y: 1 / x),
    ("-x", lambda x, y: -x),
    ("x + y (broadcast)", lambda x, y: x + y),
    ("x * y - x / y", lambda x, y: x * y - x / y),
]


@pytest.mark.parametrize(("label", "fn"), CASES, ids=[c[0] for c in CASES])
def test_tensor_arithmetic_matches_numpy(label: str, fn: Callable[[Any, Any], Any]) -> None:
    x = te.placeholder((3, 4), "float32", name="x")
    y = te.placeholder((1, 4), "float32", name="y")
    out = fn(x, y)
    assert isinstance(out, te.Tensor) and str(out.dtype) == "float32"
    xv = RNG.uniform(0.5, 2.0, (3, 4)).astype("float32")
    yv = RNG.uniform(0.5, 2.0, (1, 4)).astype("float32")
    inputs = [x, y] if "y" in label else [x]
    arrays = (xv, yv) if "y" in label else (xv,)
    np.testing.assert_allclose(_run(inputs, out, *arrays), fn(xv, yv), rtol=1e-6)


def test_stage_names_follow_topi() -> None:
    x = te.placeholder((2,), "float32", name="x")
    assert [(x + 1).name, (x - 1).name, (x * 2).name, (x / 2).name, (-x).name] == [
        "T_add",
        "T_subtract",
        "T_multiply",
        "T_divide",
        "T_multiply",
    ]


def test_python_numbers_take_the_tensor_dtype() -> None:
    x = te.placeholder((4,), "int32", name="x")
    out = 10 - x * 3
    assert str(out.dtype) == "int32"
    xv = np.array([-2, 0, 1, 5], "int32")
    np.testing.assert_array_equal(_run([x], out, xv), 10 - xv * 3)


def test_astype_makes_a_cast_stage() -> None:
    x = te.placeholder((4,), "float32", name="x")
    out = (x * 2).astype("int32")
    assert out.name == "T_cast" and str(out.dtype) == "int32"
    xv = np.array([0.2, 1.6, -1.6, 3.0], "float32")
    np.testing.assert_array_equal(_run([x], out, xv), (xv * 2).astype("int32"))


def test_arithmetic_inside_a_compute_body_reads_a_temporary() -> None:
    x = te.placeholder((3,), "float32", name="x")
    out = te.compute((3,), lambda i: (x + 1)[i] * 2.0, name="out")
    xv = np.array([1.0, -2.0, 0.5], "float32")
    np.testing.assert_allclose(_run([x], out, xv), (xv + 1) * 2)


def test_other_operand_kinds_are_refused() -> None:
    x = te.placeholder((2,), "float32", name="x")
    with pytest.raises(VMTypeError, match=r"te.Tensor add: the other operand must be .* got str"):
        x + "1"
    with pytest.raises(VMTypeError, match=r"te.Tensor multiply: .* got list"):
        [1, 2] * x
    with pytest.raises(TypeError):  # no floor division on tensors, as in TVM
        x // 2


def test_emit_te_with_a_lambda_using_tensor_arithmetic() -> None:
    bb = BlockBuilder()
    v = Var("v", TensorStructInfo((8, 8), "float32"))
    with bb.function("main", [v]):
        out = bb.emit_te(lambda t: t + 1, v, primfunc_name_hint="plus_one")
        bb.emit_func_output(out)
    mod = bb.get()
    assert "plus_one" in [gv.name_hint for gv in mod.functions]
    sinfo = out.struct_info
    assert isinstance(sinfo, TensorStructInfo) and str(sinfo.dtype) == "float32"
    assert [int(d) for d in sinfo.shape_values or []] == [8, 8]


# ---- create_prim_func(args, index_dtype_override) -------------------------------------------
def test_index_dtype_override_int64_is_accepted() -> None:
    x = te.placeholder((2, 3), "float32", name="x")
    out = x * 2
    func = te.create_prim_func([x, out], index_dtype_override="int64")
    assert func.attrs["global_symbol"] == "main"
    # The second positional parameter stays relaxvm's name (keyword-only override).
    assert te.create_prim_func([x, out], "double").attrs["global_symbol"] == "double"
    assert (
        te.create_prim_func([x, out], index_dtype_override=None, name="f").attrs["global_symbol"]
        == "f"
    )
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(_run([x], out, xv), xv * 2)


def test_index_dtype_override_other_than_int64_is_refused() -> None:
    x = te.placeholder((2,), "float32", name="x")
    with pytest.raises(
        VMValueError, match=r"index_dtype_override must be None or 'int64'.*'int32'"
    ):
        te.create_prim_func([x, x + 1], index_dtype_override="int32")


def test_index_dtype_override_int64_checks_the_extents() -> None:
    n = SymVar("n", "int32")
    x = te.placeholder((n,), "float32", name="x")
    with pytest.raises(VMValueError, match=r"tensor 'x' has the int32 extent n"):
        te.create_prim_func([x, x + 1, n], index_dtype_override="int64")
    te.create_prim_func([x, x + 1, n])  # without the override, int32 extents are kept
