"""ExecBuilder: argument encoding, constants, function scopes, formalization, validation."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm import ExecBuilder, VMFuncKind
from relaxvm.errors import BytecodeError
from relaxvm.vm.bytecode import (
    VALUE_MAX,
    VALUE_MIN,
    VM_REGISTER,
    VOID_REGISTER,
    Arg,
    ArgKind,
    Instruction,
    Opcode,
    decode_arg,
    encode_arg,
)
from relaxvm.vm.executable.executable import Executable, VMFuncInfo


@pytest.mark.parametrize("kind", list(ArgKind))
@pytest.mark.parametrize(
    "value", [0, 1, -1, 12345, VALUE_MAX, VALUE_MIN, VOID_REGISTER, VM_REGISTER]
)
def test_arg_words_round_trip(kind, value):
    word = encode_arg(kind, value)
    assert 0 <= word < 1 << 64
    assert decode_arg(word) == (kind, value)
    assert Arg.from_word(word) == Arg(kind, value)


def test_arg_word_layout_matches_tvm():
    assert encode_arg(ArgKind.IMMEDIATE, 5) == (1 << 56) | 5
    assert encode_arg(ArgKind.IMMEDIATE, -1) == (1 << 56) | ((1 << 56) - 1)
    assert VOID_REGISTER == 1 << 54 and VM_REGISTER == (1 << 54) + 1


def test_arg_word_errors():
    with pytest.raises(BytecodeError, match="does not fit in a 56-bit argument word"):
        encode_arg(ArgKind.IMMEDIATE, VALUE_MAX + 1)
    with pytest.raises(BytecodeError, match="unknown argument kind 7"):
        encode_arg(7, 0)
    with pytest.raises(BytecodeError, match="unknown kind 9"):
        Arg.from_word(9 << 56)


def test_convert_constant_immediates_and_dedup():
    ib = ExecBuilder()
    assert ib.convert_constant(7) == ib.imm(7)
    assert ib.convert_constant(True) == ib.imm(1)
    big = ib.convert_constant(1 << 60)
    assert big.kind is ArgKind.CONST_IDX
    assert ib.convert_constant("s") == ib.convert_constant("s")
    assert ib.convert_constant((2, 3)) == ib.convert_constant(relaxvm.Shape([2, 3]))
    a = ib.convert_constant(np.arange(4, dtype="float32"))
    b = ib.convert_constant(relaxvm.tensor(np.arange(4, dtype="float32")))
    c = ib.convert_constant(np.arange(4, dtype="int32"))
    assert a == b and a != c
    assert ib.convert_constant(0.0) != ib.convert_constant(-0.0)
    assert ib.convert_constant(relaxvm.DataType("int8")).kind is ArgKind.CONST_IDX
    assert len(ib._constants) == 8
    assert ib.add_constant("s") == 8  # add_constant never de-duplicates
    with pytest.raises(BytecodeError, match="a dict cannot be a constant"):
        ib.convert_constant({})
    with pytest.raises(BytecodeError, match="does not fit in 64 bits"):
        ib.convert_constant(1 << 70)


def test_formalize_renumbers_registers_in_order_of_definition():
    def build(regs):
        ib = ExecBuilder()
        with ib.function("main", num_inputs=1):
            ib.emit_call("f", args=[ib.r(0)], dst=ib.r(regs[0]))
            ib.emit_call("f", args=[ib.r(regs[0])], dst=ib.r(regs[1]))
            ib.emit_ret(ib.r(regs[1]))
        return ib.get()

    a, b = build([100, 50]), build([1, 2])
    assert a.instr_data == b.instr_data
    assert a.func_table[0].register_file_size == 3
    assert a.instructions[1] == Instruction(Opcode.CALL, 2, 1, ((0, 1),))


def test_register_read_but_never_written():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("f", args=[ib.r(7)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with pytest.raises(
        BytecodeError,
        match=r'register r\(7\) in VM function "main" is used as input while it is never defined',
    ):
        ib.get()


def test_emit_outside_function():
    ib = ExecBuilder()
    with pytest.raises(BytecodeError, match="emit should happen in a function scope"):
        ib.emit_call("f")
    with pytest.raises(BytecodeError, match="emit should happen in a function scope"):
        ib.emit_ret(ib.r(0))


def test_function_scope_errors():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=0):
        with (
            pytest.raises(BytecodeError, match="function scopes do not nest"),
            ib.function("inner"),
        ):
            pass
        ib.emit_call("g", dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    with pytest.raises(BytecodeError, match="Function main already defined"), ib.function("main"):
        pass
    with (
        pytest.raises(BytecodeError, match="1 param_names for 2 inputs"),
        ib.function("h", 2, ["a"]),
    ):
        pass


def test_declare_function_kind_conflicts():
    ib = ExecBuilder()
    with ib.function("main"):
        ib.emit_call("helper", dst=ib.r(0))  # declares helper as packed
        ib.emit_ret(ib.r(0))
    # ... which may still be defined later as a VM function (mutual recursion).
    with ib.function("helper"):
        ib.emit_call("main", dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    assert ib.get().func_table[ib._func_map["helper"]].kind is VMFuncKind.VM_FUNC
    with pytest.raises(BytecodeError, match="already declared as VM_FUNC"):
        ib.declare_function("helper", VMFuncKind.PACKED_FUNC)


def test_declared_vm_function_never_defined():
    ib = ExecBuilder()
    ib.declare_function("ghost", VMFuncKind.VM_FUNC)
    with pytest.raises(
        BytecodeError, match="'ghost' is declared as a VM function but never defined"
    ):
        ib.get()


def test_jump_validation():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        with pytest.raises(BytecodeError, match="non-zero int"):
            ib.emit_goto(0)
        with pytest.raises(BytecodeError, match="false_offset must be an int > 1"):
            ib.emit_if(ib.r(0), 1)
        ib.emit_if(ib.r(0), 5)
        ib.emit_ret(ib.r(0))
    with pytest.raises(BytecodeError, match="jump offset 5 is invalid"):
        ib.get()


def test_function_must_end_with_ret_or_goto():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("f", args=[ib.r(0)], dst=ib.r(1))
    with pytest.raises(BytecodeError, match="can run past its end"):
        ib.get()
    ib = ExecBuilder()
    with ib.function("empty"):
        pass
    with pytest.raises(BytecodeError, match="must end with Ret"):
        ib.get()


def test_get_with_open_function():
    ib = ExecBuilder()
    with ib.function("main"):
        with pytest.raises(BytecodeError, match="'main' is still open"):
            ib.get()
        ib.emit_ret(ib.void_arg())


def test_register_argument_checks():
    ib = ExecBuilder()
    with pytest.raises(BytecodeError, match="invalid register number -1"):
        ib.r(-1)
    with pytest.raises(BytecodeError, match="not an int in"):
        ib.imm(1.5)
    with ib.function("main"):
        with pytest.raises(BytecodeError, match="expected a register"):
            ib.emit_ret(ib.imm(0))
        ib.emit_ret(ib.void_arg())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.__setitem__(1, 99), "destination register 99 is out of range"),
        (lambda d: d.__setitem__(2, 42), "function index 42 is out of range"),
        (lambda d: d.__setitem__(3, 5), "Call says 5 arguments but carries 1"),
        (
            lambda d: d.__setitem__(4, encode_arg(ArgKind.CONST_IDX, 3)),
            r"constant index c\[3\] is out of range",
        ),
        (
            lambda d: d.__setitem__(4, encode_arg(ArgKind.FUNC_IDX, 3)),
            r"function index f\[3\] is out of range",
        ),
        (lambda d: d.__setitem__(4, 5 << 56), "unknown kind 5"),
        (lambda d: d.__setitem__(0, 9), "unknown opcode 9"),
        (lambda d: d.__setitem__(6, 77), "result register 77 is out of range"),
    ],
)
def test_executable_validator(mutate, message):
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("f", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    ex = ib.get()
    data = list(ex.instr_data)
    mutate(data)
    with pytest.raises(BytecodeError, match=message):
        Executable(ex.func_table, ex.constants, ex.instr_offset, data)


def test_executable_validator_table_errors():
    good = VMFuncInfo(VMFuncKind.VM_FUNC, "main", 0, 1, 0, 0, [])
    ret = [2, 1 << 54]
    with pytest.raises(BytecodeError, match="appears twice"):
        Executable([good, good], [], [0], ret)
    with pytest.raises(BytecodeError, match="unknown kind 7"):
        Executable([VMFuncInfo(7, "x")], [], [], [])
    with pytest.raises(BytecodeError, match="belongs to no VM function"):
        Executable([], [], [0], ret)
    with pytest.raises(BytecodeError, match="unsupported type list"):
        Executable([good], [[1]], [0], ret)
    with pytest.raises(BytecodeError, match=r"memory scope given for constant c\[3\]"):
        Executable([good], [], [0], ret, {3: "global"})
    with pytest.raises(BytecodeError, match="needs register_file_size >= num_args \\+ 1"):
        Executable(
            [
                VMFuncInfo(
                    VMFuncKind.VM_TIR_FUNC, "t", num_args=1, register_file_size=1, param_names=["a"]
                )
            ],
            [],
            [],
            [],
        )


def test_validator_rejects_backward_if():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1):
        ib.emit_call("f", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_if(ib.r(1), 2)
        ib.emit_ret(ib.r(1))
        ib.emit_ret(ib.r(0))
    ex = ib.get()
    data = list(ex.instr_data)
    data[ex.instr_offset[1] + 2] = -1
    with pytest.raises(BytecodeError, match="jump offset -1 is invalid.*an If offset must be > 1"):
        Executable(ex.func_table, ex.constants, ex.instr_offset, data)
