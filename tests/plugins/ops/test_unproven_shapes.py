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
    # As TVM, inference leaves the extent unknown and the kernel takes max(a, b): (1,) with
    # (4,) broadcasts either way round, (3,) with (4,) is refused at run time.
    np.testing.assert_array_equal(vm["main"](ones(1), ones(4)).numpy(), [0, 1, 2, 3])
    with pytest.raises(VMValueError, match=r"relax\.add: an operand of shape \[3\] does not "
                       r"broadcast to the result's shape \[4\]: its dimension 0 is 3, expected "
                       r"1 or 4"):  # fmt: skip
        vm["main"](ones(3), ones(4))


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


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_broadcast_of_a_symbolic_against_a_static_extent(exec_mode: str) -> None:
    # Inference gives rank 1 only (n may be 1 or 4); the kernel is 4 wide, as topi's.
    n = SymVar("n", "int64")
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((n,), "float32"))
    y = rx.Var("y", rx.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x, y]):
        z = bb.emit(op.add(x, y))
        bb.emit_func_output(z)
    assert z.struct_info == rx.TensorStructInfo(None, "float32", ndim=1)
    vm = _vm(bb.get(), exec_mode)
    four = relaxvm.tensor(np.arange(4, dtype="float32"))
    np.testing.assert_array_equal(vm["main"](four, four).numpy(), [0, 2, 4, 6])
    one = relaxvm.tensor(np.array([10], dtype="float32"))
    np.testing.assert_array_equal(vm["main"](one, four).numpy(), [10, 11, 12, 13])
    with pytest.raises(VMValueError, match=r"an operand of shape \[3\] does not broadcast"):
        vm["main"](relaxvm.tensor(np.zeros(3, "float32")), four)


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_matmul_with_two_symbolic_batch_extents(exec_mode: str) -> None:
    b1, b2 = SymVar("b1", "int64"), SymVar("b2", "int64")
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((b1, 2, 3), "float32"))
    y = rx.Var("y", rx.TensorStructInfo((b2, 3, 2), "float32"))
    with bb.function("main", [x, y]):
        z = bb.emit(op.matmul(x, y))
        bb.emit_func_output(z)
    assert z.struct_info == rx.TensorStructInfo(None, "float32", ndim=3)
    vm = _vm(bb.get(), exec_mode)
    a = np.arange(6, dtype="float32").reshape(1, 2, 3)
    b = np.arange(30, dtype="float32").reshape(5, 3, 2)
    got = vm["main"](relaxvm.tensor(a), relaxvm.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b)
    with pytest.raises(VMValueError, match=r"relax\.matmul: an operand of shape \[3, 2, 3\]"):
        vm["main"](relaxvm.tensor(np.zeros((3, 2, 3), "float32")), relaxvm.tensor(b))
