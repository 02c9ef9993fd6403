"""Compiled mode: Python generated from the bytecode at load time, same behaviour."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import relaxvm
from relaxvm import ExecBuilder, VirtualMachine
from relaxvm.errors import BytecodeError, ExecutableFormatError, VMError, VMTypeError
from relaxvm.vm.compiled import generate_source
from relaxvm.vm.executable.executable import Executable


def loop_executable() -> Executable:
    """sum(0..n-1) with a backward Goto: not nested if/else."""
    relaxvm.register_func("test.backend.lt", lambda a, b: a < b, override=True)
    relaxvm.register_func("test.backend.plus", lambda a, b: a + b, override=True)
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(1))  # i
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(2))  # acc
        ib.emit_call("test.backend.lt", args=[ib.r(1), ib.r(0)], dst=ib.r(3))  # pc 2
        ib.emit_if(ib.r(3), 4)
        ib.emit_call("test.backend.plus", args=[ib.r(2), ib.r(1)], dst=ib.r(2))
        ib.emit_call("test.backend.plus", args=[ib.r(1), ib.imm(1)], dst=ib.r(1))
        ib.emit_goto(-4)
        ib.emit_ret(ib.r(2))
    return ib.get()


def branch_executable(name: str = "main") -> Executable:
    relaxvm.register_func("test.backend.neg", lambda a: -a, override=True)
    ib = ExecBuilder()
    with ib.function(name, num_inputs=2, param_names=["c", "x"]):
        ib.emit_if(ib.r(0), 3)
        ib.emit_call("test.backend.neg", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_goto(2)
        ib.emit_call("vm.builtin.copy", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    return ib.get()


def compiled(ex: Executable) -> Executable:
    ex.exec_mode = "compiled"
    return ex


def test_structured_functions_have_no_dispatch_loop():
    vm = VirtualMachine(compiled(branch_executable()), relaxvm.cpu())
    source, _, _, generated = generate_source(vm)
    assert generated == [0]
    assert "while" not in source and "if (r0 if type(r0) is bool" in source
    assert vm["main"](True, 5) == -5 and vm["main"](False, 5) == 5
    assert vm["main"](1, 5) == -5 and vm["main"](np.int64(0), 5) == 5
    with pytest.raises(VMTypeError, match="condition is a str"):
        vm["main"]("yes", 5)


def test_unstructured_bytecode_falls_back_to_the_loop():
    vm_b = VirtualMachine(loop_executable(), relaxvm.cpu())
    vm_c = VirtualMachine(compiled(loop_executable()), relaxvm.cpu())
    assert generate_source(vm_c)[3] == []
    for n in (0, 1, 10):
        assert vm_b["main"](n) == vm_c["main"](n) == sum(range(n))


def test_source_holds_no_text_from_the_file():
    hostile = "x'); import os; os.system('echo pwned'); ('"
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=[hostile]):
        ib.emit_call("vm.builtin.make_tuple", args=[ib.r(0), hostile, 2.5], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    vm = VirtualMachine(compiled(ib.get()), relaxvm.cpu())
    source = generate_source(vm)[0]
    assert hostile not in source and "make_tuple" not in source and "2.5" not in source
    assert vm["main"](1) == (1, hostile, 2.5)


def test_errors_keep_types_and_notes():
    messages = []
    for mode in ("bytecode", "compiled"):
        ex = branch_executable()
        ex.exec_mode = mode
        vm = VirtualMachine(ex, relaxvm.cpu())
        with pytest.raises(TypeError) as info:
            vm["main"](True, "text")  # -"text" fails inside the packed function
        messages.append((type(info.value), getattr(info.value, "__notes__", [])))
        with pytest.raises(VMError, match=r"expects 2 arguments \(c, x\), but 1"):
            vm["main"](True)
        assert vm["main"](True, 2) == -2
    assert messages[0] == messages[1]
    assert messages[0][1] == ["  in VM function 'main', instruction 1: call test.backend.neg"]


def test_instrument_sees_the_same_calls():
    seen = {}
    for mode in ("bytecode", "compiled"):
        ex = branch_executable()
        ex.exec_mode = mode
        vm = VirtualMachine(ex, relaxvm.cpu())
        calls: list[tuple[str, bool]] = []

        def instrument(func, symbol, before, ret, *args, calls=calls):
            calls.append((symbol, before))
            if before and symbol == "test.backend.neg":
                return relaxvm.VMInstrumentReturnKind.SKIP_RUN
            return None

        vm.set_instrument(instrument)
        assert vm["main"](True, 3) is None  # the skipped call's result
        assert vm["main"](False, 3) == 3
        vm.set_instrument(None)
        assert vm["main"](True, 3) == -3
        seen[mode] = calls
    assert seen["bytecode"] == seen["compiled"]


def test_calls_between_compiled_functions_check_arity():
    ib = ExecBuilder()
    with ib.function("callee", num_inputs=2, param_names=["a", "b"]):
        ib.emit_ret(ib.r(1))
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("callee", args=[ib.r(0), ib.imm(4)], dst=ib.r(1))
        ib.emit_call("callee", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    for mode in ("bytecode", "compiled"):
        ex = ib.get()
        ex.exec_mode = mode
        vm = VirtualMachine(ex, relaxvm.cpu())
        with pytest.raises(VMError, match="Invoking function callee expects 2 arguments"):
            vm["main"](1)
        assert vm["callee"](1, 2) == 2


def test_exec_mode_is_saved_and_bytecode_files_stay_version_1(tmp_path):
    plain = branch_executable()
    assert struct.unpack_from("<I", plain.save_to_bytes(), 8)[0] == 1
    fast = compiled(branch_executable())
    data = fast.save_to_bytes()
    assert struct.unpack_from("<I", data, 8)[0] == 2
    loaded = Executable.load_from_bytes(data)
    assert loaded.exec_mode == "compiled"
    vm = VirtualMachine(loaded, relaxvm.cpu())
    assert vm._functions["main"].compiled.__name__ == "f0"
    assert vm["main"](True, 4) == -4
    path = tmp_path / "fast.rvm"
    fast.export_library(path)
    assert relaxvm.load_module(path).exec_mode == "compiled"


def test_bad_exec_modes_are_refused():
    ex = branch_executable()
    with pytest.raises(BytecodeError, match="unknown exec_mode 'fast'"):
        Executable(ex.func_table, ex.constants, ex.instr_offset, ex.instr_data, exec_mode="fast")
    data = bytearray(compiled(branch_executable()).save_to_bytes())
    index = data.index(b"compiled")
    data[index : index + 8] = b"compiler"
    import zlib

    struct.pack_into("<I", data, 12, zlib.crc32(bytes(data[24:])))
    with pytest.raises(ExecutableFormatError, match="unknown exec_mode 'compiler'"):
        Executable.load_from_bytes(bytes(data))


def test_register_written_in_one_branch_reads_none_in_the_other():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["c"]):
        ib.emit_if(ib.r(0), 2)
        ib.emit_call("vm.builtin.copy", args=[ib.imm(5)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    for mode in ("bytecode", "compiled"):
        ex = ib.get()
        ex.exec_mode = mode
        vm = VirtualMachine(ex, relaxvm.cpu())
        assert vm["main"](True) == 5
        assert vm["main"](False) is None
