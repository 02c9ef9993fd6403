"""The builtins called from hand-written bytecode through the real VirtualMachine.

The programs mirror what the compiler emits: VMShapeLower's checks and shape heap, the memory
planner's alloc_storage / alloc_tensor / null_value, branches on tensors, closures and tuples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import DataType, ExecBuilder, Shape, VirtualMachine
from relaxvm.errors import VMError, VMTypeError, VMValueError
from relaxvm_builtins import MakeShapeCode, MatchShapeCode

STORE = MatchShapeCode.STORE_TO_HEAP
IMM = MatchShapeCode.ASSERT_EQUAL_TO_IMM
USE_IMM = MakeShapeCode.USE_IMM
LOAD = MakeShapeCode.LOAD_SHAPE
F32 = DataType("float32")
U8 = DataType("uint8")
X_CTX = 'ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 4), "float32")) '


def _transpose_into(x: relaxvm.Tensor, out: relaxvm.Tensor) -> None:
    out.host_array()[...] = x.host_array().T


def _scale_into(x: relaxvm.Tensor, out: relaxvm.Tensor, factor: int, bias: int) -> None:
    out.host_array()[...] = x.host_array() * factor + bias


@pytest.fixture(scope="module", autouse=True)
def kernels() -> Iterator[None]:
    """Python stand-ins for compiled kernels, registered for this module only."""
    functions: dict[str, Callable[..., Any]] = {
        "test.builtins.transpose": _transpose_into,
        "test.builtins.scale": _scale_into,
    }
    for name, func in functions.items():
        relaxvm.register_func(name, func, override=True)
    yield
    for name in functions:
        relaxvm.remove_global_func(name)


def build_vm(build: Callable[[ExecBuilder], None]) -> Any:
    ib = ExecBuilder()
    build(ib)
    return VirtualMachine(ib.get(), relaxvm.cpu())


def build_transpose(ib: ExecBuilder) -> None:
    """main(x: R.Tensor((n, 4), "float32")) -> R.Tensor((4, n)): the compiler's shape code."""
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.vm_state(), 1], dst=ib.r(1))
        ib.emit_call("vm.builtin.check_tensor_info", args=[ib.r(0), 2, F32, X_CTX])
        ib.emit_call("vm.builtin.match_shape", args=[ib.r(0), ib.r(1), 2, STORE, 0, IMM, 4, X_CTX])
        ib.emit_call("vm.builtin.make_shape", args=[ib.r(1), 2, USE_IMM, 4, LOAD, 0], dst=ib.r(2))
        ib.emit_call(
            "vm.builtin.alloc_storage",
            args=[ib.vm_state(), (4096,), 0, U8, "global"],
            dst=ib.r(3),
        )
        ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(3), 0, ib.r(2), F32], dst=ib.r(4))
        ib.emit_call("test.builtins.transpose", args=[ib.r(0), ib.r(4)])
        ib.emit_call("vm.builtin.null_value", dst=ib.r(3))  # kill the storage register
        ib.emit_ret(ib.r(4))


def test_shape_checks_heap_and_planned_memory() -> None:
    vm = build_vm(build_transpose)
    for n in (1, 3, 7):
        x = np.arange(4 * n, dtype="float32").reshape(n, 4)
        out = vm["main"](relaxvm.tensor(x))
        assert out.shape == (4, n)
        np.testing.assert_array_equal(out.numpy(), x.T)


def test_parameter_errors_carry_the_error_context_and_leave_the_vm_usable() -> None:
    vm = build_vm(build_transpose)
    with pytest.raises(VMError) as info:
        vm["main"](relaxvm.tensor(np.zeros((3, 5), "float32")))
    assert str(info.value).startswith(
        X_CTX + "match_cast error, shape[1] mismatch to specified constant"
    )
    with pytest.raises(
        VMValueError, match=r"^ErrorContext.*expect Tensor with dtype float32 but get int32"
    ):
        vm["main"](relaxvm.tensor(np.zeros((3, 4), "int32")))
    with pytest.raises(VMValueError, match=r"expect Tensor with ndim 2 but get 1"):
        vm["main"](relaxvm.tensor(np.zeros(4, "float32")))
    with pytest.raises(VMTypeError, match=r"expect a Tensor but get Shape"):
        vm["main"](Shape([3, 4]))
    x = np.ones((2, 4), "float32")
    np.testing.assert_array_equal(vm["main"](relaxvm.tensor(x)).numpy(), x.T)


def test_planned_storage_is_reused_through_the_pool() -> None:
    vm = build_vm(build_transpose)
    pool = vm.allocators[0]
    x = relaxvm.tensor(np.ones((2, 4), "float32"))
    vm["main"](x)  # the result keeps its storage alive, so warm up twice
    vm["main"](x)
    before = pool.stats.device_allocations
    for _ in range(5):
        vm["main"](x)
    assert pool.stats.device_allocations == before  # every block came back from the pool


def test_call_tir_dyn_passes_symbolic_values_after_tensors() -> None:
    def build(ib: ExecBuilder) -> None:
        with ib.function("main", num_inputs=2, param_names=["x", "factor"]):
            ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.vm_state(), 2], dst=ib.r(2))
            ib.emit_call("vm.builtin.match_shape", args=[ib.r(0), ib.r(2), 1, STORE, 0])
            ib.emit_call(
                "vm.builtin.match_prim_value", args=[ib.r(1), ib.r(2), STORE, 1, ib.void_arg()]
            )
            ib.emit_call("vm.builtin.make_shape", args=[ib.r(2), 1, LOAD, 0], dst=ib.r(3))
            ib.emit_call("vm.builtin.make_shape", args=[ib.r(2), 2, LOAD, 1, LOAD, 0], dst=ib.r(4))
            ib.emit_call(
                "vm.builtin.alloc_storage",
                args=[ib.vm_state(), (1024,), 0, U8, "global"],
                dst=ib.r(5),
            )
            ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(5), 0, ib.r(3), F32], dst=ib.r(6))
            ib.emit_call(
                "vm.builtin.call_tir_dyn",
                args=[ib.f("test.builtins.scale"), ib.r(0), ib.r(6), ib.r(4)],
            )
            ib.emit_ret(ib.r(6))

    vm = build_vm(build)
    x = np.arange(5, dtype="float32")
    out = vm["main"](relaxvm.tensor(x), 3)
    np.testing.assert_array_equal(out.numpy(), x * 3 + 5)  # extra ints: (factor, n)


def test_branch_on_a_scalar_tensor() -> None:
    def build(ib: ExecBuilder) -> None:
        with ib.function("main", num_inputs=3, param_names=["cond", "a", "b"]):
            ib.emit_call("vm.builtin.read_if_cond", args=[ib.r(0)], dst=ib.r(3))
            ib.emit_if(ib.r(3), 3)
            ib.emit_call("vm.builtin.copy", args=[ib.r(1)], dst=ib.r(4))
            ib.emit_goto(2)
            ib.emit_call("vm.builtin.copy", args=[ib.r(2)], dst=ib.r(4))
            ib.emit_ret(ib.r(4))

    vm = build_vm(build)
    for dtype in ("bool", "int8", "uint8", "int64"):
        assert vm["main"](relaxvm.tensor(np.array(1, dtype)), "a", "b") == "a"
        assert vm["main"](relaxvm.tensor(np.array(0, dtype)), "a", "b") == "b"
    with pytest.raises(VMTypeError, match=r"read_if_cond: the condition must be a 0-d"):
        vm["main"](relaxvm.tensor(np.array([1, 0], "bool")), "a", "b")


def test_closures_with_captured_values() -> None:
    def build(ib: ExecBuilder) -> None:
        with ib.function("lifted", num_inputs=2, param_names=["x", "captured"]):
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_ret(ib.r(2))
        with ib.function("main", num_inputs=2, param_names=["x", "c"]):
            ib.emit_call("vm.builtin.make_closure", args=[ib.f("lifted"), ib.r(1)], dst=ib.r(2))
            ib.emit_call("vm.builtin.check_func_info", args=[ib.r(2), "ErrorContext(closure) "])
            ib.emit_call(
                "vm.builtin.invoke_closure", args=[ib.vm_state(), ib.r(2), ib.r(0)], dst=ib.r(3)
            )
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(3), ib.r(2)], dst=ib.r(4))
            ib.emit_ret(ib.r(4))

    vm = build_vm(build)
    result, closure = vm["main"]("arg", "cap")
    assert result == ("arg", "cap")
    assert isinstance(closure, relaxvm.VMClosure) and closure.func_name == "lifted"
    assert vm.invoke_closure(closure, "again") == ("again", "cap")


def test_tuples_shapes_and_views() -> None:
    def build(ib: ExecBuilder) -> None:
        with ib.function("main", num_inputs=1, param_names=["t"]):
            ib.emit_call("vm.builtin.check_tuple_info", args=[ib.r(0), 2, "ErrorContext(t) "])
            ib.emit_call("vm.builtin.tuple_getitem", args=[ib.r(0), 0], dst=ib.r(1))
            ib.emit_call("vm.builtin.tuple_getitem", args=[ib.r(0), 1], dst=ib.r(2))
            ib.emit_call("vm.builtin.tensor_to_shape", args=[ib.r(2)], dst=ib.r(3))
            ib.emit_call("vm.builtin.check_shape_info", args=[ib.r(3), 2, "ErrorContext(s) "])
            ib.emit_call("vm.builtin.reshape", args=[ib.r(1), ib.r(3)], dst=ib.r(4))
            ib.emit_call("vm.builtin.shape_of", args=[ib.r(4)], dst=ib.r(5))
            ib.emit_call("vm.builtin.ensure_zero_offset", args=[ib.r(4)], dst=ib.r(6))
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(6), ib.r(5)], dst=ib.r(7))
            ib.emit_ret(ib.r(7))

    vm = build_vm(build)
    data = np.arange(12, dtype="float32")
    target = relaxvm.tensor(np.array([3, 4], "int64"))
    out, shape = vm["main"]((relaxvm.tensor(data), target))
    assert shape == (3, 4) and type(shape) is Shape
    np.testing.assert_array_equal(out.numpy(), data.reshape(3, 4))
    with pytest.raises(VMValueError, match=r"^ErrorContext\(t\) expect a Tuple with 2 elements"):
        vm["main"]((target,))


def test_to_device_and_memory_manager_clear() -> None:
    def build(ib: ExecBuilder) -> None:
        with ib.function("main", num_inputs=1, param_names=["x"]):
            ib.emit_call("vm.builtin.to_device", args=[ib.r(0), 1, 0], dst=ib.r(1))
            ib.emit_call("vm.builtin.memory_manager.clear")
            ib.emit_ret(ib.r(1))

    vm = build_vm(build)
    x = relaxvm.tensor(np.arange(3, dtype="int32"))
    out = vm["main"](x)
    assert out is not x
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2])
    assert vm.allocators[0].stats.bytes_pooled == 0
