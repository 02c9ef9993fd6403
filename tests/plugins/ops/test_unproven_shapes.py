"""Extents the compiler cannot prove compatible are checked when the program runs.

Broadcasting ``(a,)`` with ``(b,)``, ``broadcast_to`` a shape read from a tensor and a
reshape to such a shape compile (as in TVM), but the kernels behind them index the operand as
inference assumed; a mismatch must raise a clear error, never read outside the operand or
return a wrong shape. Valid inputs still run.
"""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op

EXEC_MODES = ["bytecode", "compiled"]


def _vm(mod: rx.IRModule, exec_mode: str) -> relaxvm.VirtualMachine:
    return relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm", exec_mode=exec_mode), relaxvm.cpu())


def _runtime_shape_module(build) -> rx.IRModule:
    """``main(x, s)``: ``build(x, shape)`` with ``shape = (a, b)`` read from int64 tensor s."""
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((4, 6), "float32"))
    s = rx.Var("s", rx.TensorStructInfo((2,), "int64"))
    with bb.function("main", [x, s]):
        shape = bb.emit(op.tensor_to_shape(s))
        a, b = SymVar("a", "int64"), SymVar("b", "int64")
        shape = bb.match_cast(shape, rx.ShapeStructInfo([a, b]))
        y = bb.emit(build(x, shape))
        z = bb.emit(op.add(y, y))
        bb.emit_func_output(z)
    return bb.get()


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_broadcast_of_two_symbolic_extents(exec_mode: str) -> None:
    a, b = SymVar("a", "int64"), SymVar("b", "int64")
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((a,), "float32"))
    y = rx.Var("y", rx.TensorStructInfo((b,), "float32"))
    with bb.function("main", [x, y]):
        z = bb.emit(op.add(x, y))
        bb.emit_func_output(z)
    vm = _vm(bb.get(), exec_mode)
    ones = lambda n: relaxvm.tensor(np.arange(n, dtype="float32"))  # noqa: E731
    np.testing.assert_array_equal(vm["main"](ones(3), ones(3)).numpy(), [0, 2, 4])
    np.testing.assert_array_equal(vm["main"](ones(3), ones(1)).numpy(), [0, 1, 2])
    with pytest.raises(VMValueError, match=r"relax\.add: an operand of shape \[4\] does not "
                       r"broadcast to the result's shape \[3\]: its dimension 0 is 4, expected "
                       r"1 or 3"):  # fmt: skip
        vm["main"](ones(3), ones(4))
    # Inference took the left extent; (1,) + (4,) would need the right one: refused, not (1,).
    with pytest.raises(VMValueError, match=r"shape \[1\]: its dimension 0 is 4, expected 1 \("):
        vm["main"](ones(1), ones(4))


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_broadcast_to_a_runtime_shape(exec_mode: str) -> None:
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((3, 2), "float32"))
    s = rx.Var("s", rx.TensorStructInfo((2,), "int64"))
    with bb.function("main", [x, s]):
        shape = bb.emit(op.tensor_to_shape(s))
        a, b = SymVar("a", "int64"), SymVar("b", "int64")
        shape = bb.match_cast(shape, rx.ShapeStructInfo([a, b]))
        bb.emit_func_output(bb.emit(op.broadcast_to(x, shape)))
    vm = _vm(bb.get(), exec_mode)
    data = np.arange(6, dtype="float32").reshape(3, 2)
    got = vm["main"](relaxvm.tensor(data), relaxvm.tensor(np.array([3, 2]))).numpy()
    np.testing.assert_array_equal(got, data)
    with pytest.raises(VMValueError, match=r"relax\.broadcast_to: an operand of shape \[3, 2\] "
                       r"does not broadcast to the result's shape \[4, 2\]"):  # fmt: skip
        vm["main"](relaxvm.tensor(data), relaxvm.tensor(np.array([4, 2])))


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_reshape_to_a_runtime_shape(exec_mode: str) -> None:
    vm = _vm(_runtime_shape_module(lambda x, shape: op.reshape(x, shape)), exec_mode)
    data = np.arange(24, dtype="float32").reshape(4, 6)
    got = vm["main"](relaxvm.tensor(data), relaxvm.tensor(np.array([3, 8]))).numpy()
    np.testing.assert_array_equal(got, 2 * data.reshape(3, 8))
    with pytest.raises(VMValueError, match=r"cannot reshape a tensor of shape \[4, 6\] "
                       r"\(24 elements\) to shape \[5, 5\]"):  # fmt: skip
        vm["main"](relaxvm.tensor(data), relaxvm.tensor(np.array([5, 5])))
