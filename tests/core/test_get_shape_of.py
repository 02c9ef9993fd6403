"""``relax.get_shape_of``: the shape of a normalized tensor expression, as TVM has it."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm import relax, tir


def _normalized(expr: relax.Expr) -> relax.Expr:
    relax.BlockBuilder().normalize(expr)
    return expr


def test_known_shape_is_the_struct_info_shape() -> None:
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([m, n], "float16"))
    y = relax.Var("y", relax.TensorStructInfo([n], "float16"))
    call = _normalized(relax.op.multiply(x, y))
    shape = relax.get_shape_of(call)
    assert isinstance(shape, relax.ShapeExpr)
    assert shape is call.struct_info.shape
    assert list(shape.values) == [m, n]
    # A variable's own shape, too.
    assert list(relax.get_shape_of(x).values) == [m, n]


def test_shape_given_by_a_shape_variable_is_that_variable() -> None:
    s = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    x = relax.Var("x", relax.TensorStructInfo(s, "float32"))
    assert relax.get_shape_of(x) is s


@pytest.mark.parametrize("ndim", [2, -1])
def test_unknown_shape_becomes_a_shape_of_call(ndim: int) -> None:
    x = relax.Var("x", relax.TensorStructInfo(ndim=ndim, dtype="float32"))
    call = _normalized(relax.op.negative(x))
    shape = relax.get_shape_of(call)
    assert isinstance(shape, relax.Call) and shape.op.name == "relax.shape_of"
    assert shape.args[0] is call
    assert isinstance(shape.struct_info, relax.ShapeStructInfo)
    assert shape.struct_info.ndim == ndim and shape.struct_info.values is None


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_run_time_shape_matches_numpy(exec_mode: str) -> None:
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.get_shape_of(x)))
    ex = relax.build(bb.get(), "llvm", exec_mode=exec_mode)
    vm = relax.VirtualMachine(ex, relaxvm.cpu())
    data = np.zeros((3, 5), "float32")
    assert tuple(int(v) for v in vm["main"](data)) == data.shape


def test_errors() -> None:
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    with pytest.raises(ValueError, match="get_shape_of: Call has no struct info; normalize"):
        relax.get_shape_of(relax.op.add(x, x))
    with pytest.raises(TypeError, match=r"get_shape_of: expected an expression with Tensor"):
        relax.get_shape_of(relax.Var("t", relax.TupleStructInfo([])))
    with pytest.raises(TypeError, match="get_shape_of: expected a Relax expression, got int"):
        relax.get_shape_of(3)  # type: ignore[arg-type]
