"""The VirtualMachine on hand-assembled bytecode: calls, control flow, closures, recursion,
constants, tuples, instrument, stateful API, errors that leave the VM usable."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import relaxvm
from relaxvm import ExecBuilder, VirtualMachine, VMInstrumentReturnKind
from relaxvm.errors import DeviceError, FunctionNotFoundError, VMError, VMTypeError, VMValueError


@pytest.fixture(scope="module", autouse=True)
def test_functions():
    """Python 'kernels' the programs below call (registered for this module only)."""
    functions = {
        "test.vm.add": lambda a, b: a + b,
        "test.vm.mul": lambda a, b: a * b,
        "test.vm.le1": lambda n: n <= 1,
        "test.vm.sub1": lambda n: n - 1,
        "test.vm.tensor_add": lambda a, b: relaxvm.tensor(a.numpy() + b.numpy()),
        "test.vm.fail": _fail,
        "test.vm.echo": lambda *args: args,
    }
    for name, func in functions.items():
        relaxvm.register_func(name, func, override=True)
    yield
    for name in functions:
        relaxvm.remove_global_func(name)


def _fail(x):
    raise ValueError(f"kernel failed on {x}")


def build_fact(ib: ExecBuilder) -> None:
    """fact(n) = 1 if n <= 1 else n * fact(n - 1)."""
    with ib.function("fact", num_inputs=1, param_names=["n"]):
        ib.emit_call("test.vm.le1", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_if(ib.r(1), 3)
        ib.emit_call("vm.builtin.copy", args=[1], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
        ib.emit_call("test.vm.sub1", args=[ib.r(0)], dst=ib.r(3))
        ib.emit_call("fact", args=[ib.r(3)], dst=ib.r(4))
        ib.emit_call("test.vm.mul", args=[ib.r(0), ib.r(4)], dst=ib.r(5))
        ib.emit_ret(ib.r(5))


def make_vm(build, **kwargs) -> VirtualMachine:
    ib = ExecBuilder()
    build(ib)
    return VirtualMachine(ib.get(), relaxvm.cpu(), **kwargs)


def test_single_call_with_tensors():
    def build(ib):
        with ib.function("main", num_inputs=2, param_names=["x", "y"]):
            ib.emit_call("test.vm.tensor_add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_ret(ib.r(2))

    vm = make_vm(build)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    out = vm["main"](relaxvm.tensor(x), relaxvm.tensor(2 * x))
    np.testing.assert_allclose(out.numpy(), 3 * x)
    out = vm["main"](x, x)  # numpy arrays are converted on direct calls
    np.testing.assert_allclose(out.numpy(), 2 * x)


def test_immediates_constants_and_special_registers():
    def build(ib):
        with ib.function("main", num_inputs=0):
            ib.emit_call(
                "test.vm.echo",
                args=[
                    7,
                    -3,
                    1 << 60,
                    2.5,
                    "text",
                    (2, 3),
                    relaxvm.DataType("int8"),
                    ib.void_arg(),
                    ib.vm_state(),
                    ib.f("test.vm.add"),
                ],
                dst=ib.r(0),
            )
            ib.emit_ret(ib.r(0))

    vm = make_vm(build)
    result = vm["main"]()
    assert result[:7] == (
        7,
        -3,
        1 << 60,
        2.5,
        "text",
        relaxvm.Shape([2, 3]),
        relaxvm.DataType("int8"),
    )
    assert isinstance(result[5], relaxvm.Shape)
    assert result[7] is None
    assert result[8] is vm
    assert result[9](2, 3) == 5


def test_tensor_constant_is_on_device():
    data = np.arange(4, dtype="int32")

    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("test.vm.tensor_add", args=[ib.r(0), data], dst=ib.r(1))
            ib.emit_ret(ib.r(1))

    vm = make_vm(build)
    np.testing.assert_array_equal(vm["main"](relaxvm.tensor(data)).numpy(), 2 * data)


def test_recursion_and_multiple_functions():
    def build(ib):
        with ib.function("main", num_inputs=2):
            ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_call("fact", args=[ib.r(2)], dst=ib.r(3))
            ib.emit_ret(ib.r(3))
        build_fact(ib)

    vm = make_vm(build)
    assert vm["main"](2, 3) == 120
    assert vm["fact"](10) == 3628800
    assert vm["fact"](1) == 1


def test_if_goto_both_branches_merge_into_one_register():
    def build(ib):
        with ib.function("main", num_inputs=3, param_names=["c", "a", "b"]):
            ib.emit_if(ib.r(0), 3)
            ib.emit_call("vm.builtin.copy", args=[ib.r(1)], dst=ib.r(3))
            ib.emit_goto(2)
            ib.emit_call("vm.builtin.copy", args=[ib.r(2)], dst=ib.r(3))
            ib.emit_ret(ib.r(3))

    vm = make_vm(build)
    assert vm["main"](True, "then", "else") == "then"
    assert vm["main"](False, "then", "else") == "else"
    assert vm["main"](np.int64(2), "then", "else") == "then"
    assert vm["main"](0, "then", "else") == "else"
    with pytest.raises(VMTypeError, match="the condition is a Tensor, expected bool or int"):
        vm["main"](relaxvm.tensor(np.array(True)), "then", "else")


def test_backward_goto_loop():
    # i = n; acc = 1; loop: if i <= 1: return acc; acc *= i; i -= 1; goto loop  -> n!
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))  # i
            ib.emit_call("vm.builtin.copy", args=[1], dst=ib.r(2))  # acc
            ib.emit_call("test.vm.le1", args=[ib.r(1)], dst=ib.r(3))  # pc 2
            ib.emit_if(ib.r(3), 2)
            ib.emit_ret(ib.r(2))
            ib.emit_call("test.vm.mul", args=[ib.r(2), ib.r(1)], dst=ib.r(2))
            ib.emit_call("test.vm.sub1", args=[ib.r(1)], dst=ib.r(1))
            ib.emit_goto(-5)

    vm = make_vm(build)
    assert vm["main"](5) == 120


def test_tuples_and_nested_tuples():
    def build(ib):
        with ib.function("main", num_inputs=2):
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(2), ib.r(0)], dst=ib.r(3))
            ib.emit_call("vm.builtin.tuple_getitem", args=[ib.r(3), 0], dst=ib.r(4))
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(3), ib.r(4)], dst=ib.r(5))
            ib.emit_ret(ib.r(5))

    vm = make_vm(build)
    assert vm["main"]("a", "b") == ((("a", "b"), "a"), ("a", "b"))


def test_closures_bind_trailing_arguments():
    def build(ib):
        with ib.function("adder", num_inputs=2, param_names=["x", "captured"]):
            ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_ret(ib.r(2))
        with ib.function("make", num_inputs=1):
            ib.emit_call("vm.builtin.make_closure", args=[ib.f("adder"), ib.r(0)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
        with ib.function("apply", num_inputs=2):
            ib.emit_call(
                "vm.builtin.invoke_closure", args=[ib.vm_state(), ib.r(0), ib.r(1)], dst=ib.r(2)
            )
            ib.emit_ret(ib.r(2))

    vm = make_vm(build)
    closure = vm["make"](100)
    assert isinstance(closure, relaxvm.VMClosure) and closure.func_name == "adder"
    assert vm.invoke_closure(closure, 5) == 105
    assert vm["apply"](closure, 7) == 107
    assert vm["apply"](lambda x: x * 3, 7) == 21  # a Python callable as R.Callable
    with pytest.raises(VMTypeError, match="expected a VMClosure or a function, got int"):
        vm.invoke_closure(3)


def test_wrong_arity_names_parameters():
    vm = make_vm(build_fact)
    with pytest.raises(
        VMError,
        match=r"Invoking function fact expects 1 arguments \(n\), but 2 arguments were provided.",
    ):
        vm["fact"](1, 2)
    assert isinstance(VMError("x"), RuntimeError)


def test_exception_unwinds_and_vm_stays_usable():
    def build(ib):
        with ib.function("inner", num_inputs=1):
            ib.emit_call("test.vm.fail", args=[ib.r(0)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
        with ib.function("main", num_inputs=1):
            ib.emit_call("inner", args=[ib.r(0)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
        build_fact(ib)

    vm = make_vm(build)
    with pytest.raises(ValueError, match="kernel failed on 3") as info:
        vm["main"](3)
    notes = info.value.__notes__
    assert notes == [
        "  in VM function 'inner', instruction 0: call test.vm.fail",
        "  in VM function 'main', instruction 2: call inner",
    ]
    assert vm["fact"](5) == 120


def test_runaway_recursion_is_a_clear_error():
    def build(ib):
        with ib.function("forever", num_inputs=1):
            ib.emit_call("forever", args=[ib.r(0)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
        build_fact(ib)

    vm = make_vm(build)
    with pytest.raises(
        VMError, match="maximum call depth exceeded while running VM function 'forever'"
    ) as info:
        vm["forever"](1)
    assert info.value.__notes__[-1] == "  in VM function ... (outer frames elided)"
    assert vm["fact"](4) == 24


@pytest.mark.parametrize("mode", ["bytecode", "compiled"])
def test_max_call_depth_is_exact_and_per_vm(mode):
    ib = ExecBuilder()
    build_fact(ib)
    ex = ib.get()
    ex = relaxvm.Executable(
        ex.func_table, ex.constants, ex.instr_offset, ex.instr_data, ex.memory_scopes, mode
    )
    vm = VirtualMachine(ex, relaxvm.cpu())
    # The default leaves Python's own recursion limit out of reach.
    assert 16 <= vm.max_call_depth < sys.getrecursionlimit() // 3
    vm.max_call_depth = 6
    assert vm["fact"](6) == 720  # six nested frames: fact(6) .. fact(1)
    with pytest.raises(VMError, match=r"'fact': more than 6 nested VM calls"):
        vm["fact"](7)
    # The count unwound with the error: the same depth runs again, on this thread and others.
    assert vm["fact"](6) == 720
    results = []
    worker = threading.Thread(target=lambda: results.append(vm["fact"](6)))
    worker.start()
    worker.join()
    assert results == [720]


def test_missing_function_at_construction_suggests_names():
    def build(ib):
        with ib.function("main", num_inputs=1):
            ib.emit_call("vm.builtin.copyy", args=[ib.r(0)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))

    with pytest.raises(
        FunctionNotFoundError,
        match=r"Cannot find PackedFunc vm.builtin.copyy in either.*did you mean 'vm.builtin.copy'",
    ):
        make_vm(build)


def test_executable_imports_shadow_the_registry():
    def build(ib):
        with ib.function("main", num_inputs=2):
            ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_ret(ib.r(2))

    ib = ExecBuilder()
    build(ib)
    ex = ib.get()
    ex.import_module(relaxvm.Module({"test.vm.add": lambda a, b: f"kernel({a},{b})"}, name="lib"))
    assert VirtualMachine(ex, relaxvm.cpu())["main"](1, 2) == "kernel(1,2)"


def test_unknown_function_lookup():
    vm = make_vm(build_fact)
    with pytest.raises(
        FunctionNotFoundError, match="VirtualMachine has no function 'main'; its functions are fact"
    ):
        vm["main"]
    assert "fact" in vm and "main" not in vm


def test_constructor_argument_errors():
    ib = ExecBuilder()
    build_fact(ib)
    ex = ib.get()
    with pytest.raises(VMTypeError, match="expected an Executable"):
        VirtualMachine("nope", relaxvm.cpu())
    with pytest.raises(VMTypeError, match="device must be a Device or a non-empty list"):
        VirtualMachine(ex, "cpu")
    with pytest.raises(VMValueError, match="unknown allocator 'fancy'"):
        VirtualMachine(ex, relaxvm.cpu(), memory_cfg="fancy")
    with pytest.raises(VMTypeError, match="memory_cfg must be None, a str or a dict"):
        VirtualMachine(ex, relaxvm.cpu(), memory_cfg=3)
    if (
        not relaxvm.cuda().exist
        and relaxvm.get_global_func("device_api.cuda", allow_missing=True) is None
    ):
        with pytest.raises(DeviceError, match=r"no device API is installed for cuda\(0\)"):
            VirtualMachine(ex, relaxvm.cuda())


def test_devices_and_memory_cfg():
    ib = ExecBuilder()
    build_fact(ib)
    ex = ib.get()
    vm = VirtualMachine(ex, [relaxvm.cpu()], memory_cfg="naive")
    assert vm.devices == [relaxvm.cpu()]
    assert vm.allocators[0].type == VirtualMachine.NAIVE_ALLOCATOR
    vm = VirtualMachine(ex, relaxvm.cpu(), memory_cfg={relaxvm.cpu(): "pooled"})
    assert vm.allocators[0].type == VirtualMachine.POOLED_ALLOCATOR


def test_instrument_sees_every_call_and_can_skip():
    def build(ib):
        with ib.function("main", num_inputs=2):
            ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_call("test.vm.mul", args=[ib.r(2), relaxvm.DataType("float32")], dst=ib.r(3))
            ib.emit_ret(ib.r(3))

    vm = make_vm(build)
    events = []

    def instrument(func, symbol, before_run, ret_value, *args):
        events.append((symbol, before_run, ret_value, args))
        if symbol == "test.vm.mul":
            return VMInstrumentReturnKind.SKIP_RUN
        return VMInstrumentReturnKind.NO_OP

    vm.set_instrument(instrument)
    assert vm["main"](2, 3) is None  # the skipped call's destination gets None
    assert events == [
        ("test.vm.add", True, None, (2, 3)),
        ("test.vm.add", False, 5, (2, 3)),
        ("test.vm.mul", True, None, (5, "float32")),  # DataType shown as str
    ]
    vm.set_instrument(None)
    with pytest.raises(TypeError, match="can't multiply|unsupported operand"):
        vm["main"](2, 3)
    with pytest.raises(VMTypeError, match="expected a callable or None"):
        vm.set_instrument(42)


def test_stateful_api_positional_keyword_and_nested_outputs():
    def build(ib):
        with ib.function("main", num_inputs=2, param_names=["x", "y"]):
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_call("vm.builtin.make_tuple", args=[ib.r(2), ib.r(1)], dst=ib.r(3))
            ib.emit_ret(ib.r(3))

    vm = make_vm(build)
    vm.set_input("main", np.ones(2, "float32"), y=3)
    vm.invoke_stateful("main")
    (x, y), y2 = vm.get_outputs("main")
    np.testing.assert_array_equal(x.numpy(), np.ones(2))
    assert y.dtype == "int32" and y.shape == () and int(y.numpy()) == 3
    assert y2 is y
    vm.set_input("main", y=2.5, x=[1, "s"])
    vm.invoke_stateful("main")
    (x, y), _ = vm.get_outputs("main")
    assert y.dtype == "float32" and float(y.numpy()) == 2.5
    assert int(x[0].numpy()) == 1 and x[1] == "s"


def test_stateful_api_errors():
    vm = make_vm(build_fact)
    with pytest.raises(VMValueError, match="Unknown function: main"):
        vm.set_input("main", 1)
    with pytest.raises(
        VMValueError, match="No inputs set for stateful call of fact; use `set_input` first."
    ):
        vm.invoke_stateful("fact")
    with pytest.raises(VMValueError, match='No output saved for call of "fact"'):
        vm.get_outputs("fact")
    with pytest.raises(
        VMValueError,
        match=r"doesn't match the number of arguments for fact: it takes 1 \(n\), got 2",
    ):
        vm.set_input("fact", 1, 2)
    with pytest.raises(
        VMValueError, match=r"fact has no parameter named 'm'; its parameters are \(n\)"
    ):
        vm.set_input("fact", m=1)
    with pytest.raises(VMTypeError, match=r"fact\(n\): cannot convert a dict"):
        vm.set_input("fact", {})
    assert vm.get_function_arity("fact") == 1
    assert vm.get_function_param_name("fact", 0) == "n"
    with pytest.raises(VMValueError, match=r"Invalid index for fact \(1 out of 1\)"):
        vm.get_function_param_name("fact", 1)


def test_save_function_and_time_evaluator():
    def build(ib):
        with ib.function("main", num_inputs=2, param_names=["x", "y"]):
            ib.emit_call("test.vm.tensor_add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
            ib.emit_ret(ib.r(2))

    vm = make_vm(build)
    x = np.arange(3, dtype="float32")
    vm.save_function("main", "main_saved", x, y=x)
    np.testing.assert_array_equal(vm["main_saved"]().numpy(), 2 * x)
    assert "main_saved" in vm
    vm.save_function("main", "no_return", x, x, include_return=False)
    assert vm["no_return"]() is None

    result = vm.time_evaluator("main_saved", relaxvm.cpu(), number=3, repeat=4)()
    assert len(result.results) == 4 and result.min <= result.median <= result.max
    assert result.min > 0 and result.std >= 0 and "BenchmarkResult" in repr(result)
    vm.set_input("main", x, x)
    result = vm.time_evaluator("invoke_stateful", relaxvm.cpu(), number=2)("main")
    assert len(result.results) == 1
    result = vm.time_evaluator("main", relaxvm.cpu(), min_repeat_ms=5)(
        relaxvm.tensor(x), relaxvm.tensor(x)
    )
    assert result.mean > 0
    with pytest.raises(VMValueError, match="number and repeat must be >= 1"):
        vm.time_evaluator("main", number=0)


def test_export_library_and_load_module_give_identical_results(tmp_path):
    ib = ExecBuilder()
    with ib.function("main", num_inputs=2):
        ib.emit_call("test.vm.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_call("fact", args=[ib.r(2)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    build_fact(ib)
    ex = ib.get()
    path = tmp_path / "model.rvm"
    ex.export_library(path)
    loaded = relaxvm.load_module(path)
    assert loaded.as_text() == ex.as_text()
    vm, vm2 = VirtualMachine(ex, relaxvm.cpu()), VirtualMachine(loaded, relaxvm.cpu())
    assert vm["main"](1, 3) == vm2["main"](1, 3) == 24


def test_export_library_refuses_unserializable_imports(tmp_path):
    ib = ExecBuilder()
    build_fact(ib)
    ex = ib.get()
    ex.import_module(relaxvm.Module({"k": lambda: 0}, name="pylib"))
    with pytest.raises(
        relaxvm.errors.ExecutableFormatError,
        match="imports 'pylib'.*can serialize those modules yet",
    ):
        ex.export_library(tmp_path / "x.rvm")
    assert not (tmp_path / "x.rvm").exists()
