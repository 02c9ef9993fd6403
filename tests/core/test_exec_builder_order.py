"""ExecBuilder checks register reads in instruction order, as TVM's ExecBuilder does: a read
that comes before every write of its register is refused, even when the register is written
later (or by the same instruction). ``as_python`` falls back to its raw form for such a
program, since the builder could not rebuild it."""

from __future__ import annotations

import pytest

import relaxvm
from relaxvm import ExecBuilder
from relaxvm.errors import BytecodeError
from relaxvm.vm.executable.executable import Executable


def test_a_call_cannot_read_the_register_it_writes() -> None:
    ib = ExecBuilder()
    with ib.function("func0", num_inputs=2):
        ib.emit_call("vm.builtin.copy", args=[ib.r(2)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with pytest.raises(
        BytecodeError,
        match=r'register r\(2\) in VM function "func0" is used as input while it is never '
        r"defined as a destination before it \(instruction 0\)",
    ):
        ib.get()


def test_a_read_before_a_later_write_is_refused() -> None:
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("vm.builtin.copy", args=[ib.r(5)], dst=ib.r(1))
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(5))
        ib.emit_ret(ib.r(1))
    with pytest.raises(BytecodeError, match=r"register r\(5\) .* \(instruction 0\)"):
        ib.get()


def test_if_and_ret_reads_are_checked_in_order_too() -> None:
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_if(ib.r(3), 2)
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    with pytest.raises(BytecodeError, match=r"register r\(3\) .* \(instruction 0\)"):
        ib.get()


def test_reads_after_the_first_write_run() -> None:
    # Both branches write r(2); the read after them follows the first write in order.
    ib = ExecBuilder()
    with ib.function("main", num_inputs=2):
        ib.emit_if(ib.r(0), 3)
        ib.emit_call("vm.builtin.copy", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_goto(2)
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    vm = relaxvm.VirtualMachine(ib.get(), relaxvm.cpu())
    assert int(vm["main"](1, 7)) == 7
    assert int(vm["main"](0, 7)) == 0


def test_as_python_falls_back_for_a_read_before_its_write() -> None:
    # A file may hold such a program (the loader checks only that some instruction writes the
    # register); as_python must then not emit builder code that ExecBuilder would refuse.
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    ex = ib.get()
    words = list(ex.instr_data)
    # Make the first call read %2, which only the second call writes.
    first_arg = ex.instr_offset[0] + 4
    words[first_arg] = words[ex.instr_offset[1] + 1] | (words[first_arg] & ~((1 << 56) - 1))
    tweaked = Executable(ex.func_table, ex.constants, ex.instr_offset, words, ex.memory_scopes)
    source = tweaked.as_python()
    assert "reads register %2 before the first instruction that writes it" in source
    namespace: dict[str, object] = {}
    exec(compile(source, "<as_python>", "exec"), namespace)
    rebuilt = namespace["ex"]
    assert isinstance(rebuilt, Executable)
    assert rebuilt.save_to_bytes() == tweaked.save_to_bytes()
