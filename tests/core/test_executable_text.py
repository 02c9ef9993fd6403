"""Text renderings: golden ``as_text`` / ``stats`` output in TVM's format, and ``as_python``
that rebuilds an identical executable."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import ExecutableFormatError
from relaxvm.vm.executable.executable import VMFuncInfo, VMFuncKind
from relaxvm.vm.executable.text import as_python, as_text, stats


def small_program() -> relaxvm.Executable:
    """``main(x, cond)``: an if/else over two calls, plus a helper VM function."""
    ib = relaxvm.ExecBuilder()
    ib.add_constant(relaxvm.tensor(np.float32(1.0)))
    ib.add_constant(np.zeros((2, 3), "float32"))
    ib.add_constant(relaxvm.Shape([1, 2]))
    ib.add_constant("str")
    ib.add_constant(5)
    ib.add_constant(relaxvm.DataType("float32"))
    with ib.function("main", num_inputs=2, param_names=["x", "cond"]):
        ib.emit_call("vm.builtin.read_if_cond", args=[ib.r(1)], dst=ib.r(7))
        ib.emit_if(ib.r(7), 3)
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(9))
        ib.emit_goto(2)
        ib.emit_call(
            "my.packed",
            args=[ib.vm_state(), ib.imm(-3), ib.c(0), ib.f("helper"), ib.void_arg()],
            dst=ib.r(9),
        )
        ib.emit_ret(ib.r(9))
    with ib.function("helper", num_inputs=1, param_names=["y"]):
        ib.emit_call("vm.builtin.null_value", args=[])
        ib.emit_ret(ib.r(0))
    return ib.get()


def run_python(source: str) -> relaxvm.Executable:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<as_python>", "exec"), namespace)
    return namespace["ex"]


# ---------------------------------------------------------------------------------------------
# as_text
# ---------------------------------------------------------------------------------------------
GOLDEN_TEXT = """\
@main:
  call  vm.builtin.read_if_cond in: %1           dst: %2
  If    %2, 3
  call  vm.builtin.copy  in: %0           dst: %3
  goto  2
  call  my.packed        in: %vm, i-3, c[0], f[helper], %void dst: %3
  ret   %3

@vm.builtin.read_if_cond packed_func;

@vm.builtin.copy packed_func;

@helper:
  call  vm.builtin.null_value in:              dst: %void
  ret   %0

@my.packed packed_func;

@vm.builtin.null_value packed_func;

"""


def test_as_text_golden() -> None:
    ex = small_program()
    assert as_text(ex) == GOLDEN_TEXT
    assert ex.as_text() == GOLDEN_TEXT
    assert ex["as_text"]() == GOLDEN_TEXT  # also a module function, like TVM's


def test_as_text_matches_tvm_lines() -> None:
    """Lines taken from TVM's own as_text output (reference/anchor_numbers.md)."""
    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=3):
        ib.emit_call("shape_func", args=[ib.r(2)])
        ib.emit_call(
            "vm.builtin.make_shape", args=[ib.r(2), ib.imm(1), ib.imm(1), ib.imm(1)], dst=ib.r(3)
        )
        ib.emit_call("vm.builtin.null_value", args=[], dst=ib.r(4))
        ib.emit_call("add", args=[ib.r(0), ib.r(0), ib.r(4)])
        ib.emit_ret(ib.r(4))
    lines = as_text(ib.get()).splitlines()
    assert lines[1:6] == [
        "  call  shape_func       in: %2           dst: %void",
        "  call  vm.builtin.make_shape in: %2, i1, i1, i1 dst: %3",
        "  call  vm.builtin.null_value in:              dst: %4",
        "  call  add              in: %0, %0, %4   dst: %void",
        "  ret   %4",
    ]


def test_as_text_vm_tir_and_formalized_registers() -> None:
    table = [
        VMFuncInfo(
            VMFuncKind.VM_TIR_FUNC, "main", num_args=2, register_file_size=3, param_names=["a", "b"]
        ),
    ]
    assert as_text(relaxvm.Executable(table, [], [], [])) == "@main num_inputs=2 vm_tir_func;\n\n"

    # Register numbers are formalized by the builder: r(100)/r(50) prints like r(1)/r(2).
    def build(first: int, second: int) -> str:
        ib = relaxvm.ExecBuilder()
        with ib.function("f", num_inputs=1):
            ib.emit_call("g", args=[ib.r(0)], dst=ib.r(first))
            ib.emit_call("g", args=[ib.r(first)], dst=ib.r(second))
            ib.emit_ret(ib.r(second))
        return as_text(ib.get())

    assert build(100, 50) == build(1, 2)
    assert "dst: %2" in build(100, 50)


# ---------------------------------------------------------------------------------------------
# stats
# ---------------------------------------------------------------------------------------------
def test_stats_golden() -> None:
    expected = (
        "Relax VM executable statistics:\n"
        '  Constant pool (# 6): [scalar, [2, 3], shapetuple[1, 2], "str", 5, float32]\n'
        "  Globals (#6): [main, vm.builtin.read_if_cond, vm.builtin.copy, helper, my.packed, "
        "vm.builtin.null_value]\n"
    )
    ex = small_program()
    assert stats(ex) == expected
    assert ex.stats() == expected


def test_stats_floats_and_empty_things() -> None:
    ex = relaxvm.Executable(
        [], [1.5, -0.0, float("nan"), float("-inf"), relaxvm.Shape([]), -(1 << 63)], [], []
    )
    assert stats(ex) == (
        "Relax VM executable statistics:\n"
        "  Constant pool (# 6): [1.5, -0.0, nan, -inf, shapetuple[], -9223372036854775808]\n"
        "  Globals (#0): []\n"
    )
    assert stats(relaxvm.Executable([], [], [], [])).splitlines()[1] == "  Constant pool (# 0): []"


# ---------------------------------------------------------------------------------------------
# as_python
# ---------------------------------------------------------------------------------------------
GOLDEN_PYTHON_BODY = """\
ib = relaxvm.ExecBuilder()
ib.declare_function('main', relaxvm.VMFuncKind.VM_FUNC)
ib.declare_function('vm.builtin.read_if_cond', relaxvm.VMFuncKind.PACKED_FUNC)
ib.declare_function('vm.builtin.copy', relaxvm.VMFuncKind.PACKED_FUNC)
ib.declare_function('helper', relaxvm.VMFuncKind.VM_FUNC)
ib.declare_function('my.packed', relaxvm.VMFuncKind.PACKED_FUNC)
ib.declare_function('vm.builtin.null_value', relaxvm.VMFuncKind.PACKED_FUNC)
ib.add_constant(tensor_from_hex([], 'float32', '0000803f'))  # c[0]
ib.add_constant(tensor_from_hex([2, 3], 'float32', '000000000000000000000000000000000000000000000000'))  # c[1]
ib.add_constant(relaxvm.Shape([1, 2]))  # c[2]
ib.add_constant('str')  # c[3]
ib.add_constant(5)  # c[4]
ib.add_constant(relaxvm.DataType('float32'))  # c[5]
with ib.function('main', num_inputs=2, param_names=['x', 'cond']):
    ib.emit_call('vm.builtin.read_if_cond', args=[ib.r(1)], dst=ib.r(2))
    ib.emit_if(ib.r(2), 3)
    ib.emit_call('vm.builtin.copy', args=[ib.r(0)], dst=ib.r(3))
    ib.emit_goto(2)
    ib.emit_call('my.packed', args=[ib.vm_state(), ib.imm(-3), ib.c(0), ib.f('helper'), ib.void_arg()], dst=ib.r(3))
    ib.emit_ret(ib.r(3))
with ib.function('helper', num_inputs=1, param_names=['y']):
    ib.emit_call('vm.builtin.null_value', args=[])
    ib.emit_ret(ib.r(0))
ex = ib.get()
"""


def test_as_python_golden_and_round_trip() -> None:
    ex = small_program()
    source = as_python(ex)
    assert source == ex.as_python()
    assert source.startswith("# Rebuilds the executable with relaxvm.ExecBuilder")
    assert "import numpy as np\n" in source and "import relaxvm\n" in source
    assert source.endswith(GOLDEN_PYTHON_BODY)
    rebuilt = run_python(source)
    assert rebuilt.save_to_bytes() == ex.save_to_bytes()
    assert rebuilt.as_text() == ex.as_text()
    # Printed registers are already formalized: rendering again is the identity.
    assert as_python(rebuilt) == source


def test_as_python_rebuilds_every_constant_exactly() -> None:
    ib = relaxvm.ExecBuilder()
    for value in [
        np.arange(100, dtype="float64").reshape(10, 10),  # long hex, split over lines
        np.array([np.nan, -0.0, np.inf], dtype="float16"),
        np.array([True, False]),
        np.array(-5, dtype="int8"),
        np.zeros((0, 4), "uint32"),
        "quote ' and \" and \\ and \n and ☃ \U0001f600",
        float.fromhex("0x1.fffffffffffffp+1023"),
        -0.0,
        float("inf"),
        float("-inf"),
        -(1 << 63),
        relaxvm.DataType("uint1"),
        relaxvm.DataType("handle"),
        relaxvm.DataType("boolx4"),
        relaxvm.Shape([]),
    ]:
        ib.add_constant(value)
    # NaNs with a sign and a payload survive only through their bits.
    ib.add_constant(np.frombuffer(bytes.fromhex("0100000000f0ffff"), "<f8")[0].item())
    with ib.function("main", num_inputs=0):
        ib.emit_call("f", args=[], dst=ib.r(0))
        ib.emit_ret(ib.r(0))
    ex = ib.get()
    rebuilt = run_python(as_python(ex))
    assert rebuilt.save_to_bytes() == ex.save_to_bytes()


def test_as_python_uint1_tensor() -> None:
    bits = relaxvm.tensor(np.array([True, False])).view((2,), "uint1")
    ex = relaxvm.Executable([], [bits], [], [])
    rebuilt = run_python(as_python(ex))
    assert rebuilt.constants[0].dtype == relaxvm.DataType("uint1")
    assert rebuilt.save_to_bytes() == ex.save_to_bytes()


def _vm_tir_executable() -> relaxvm.Executable:
    table = [
        VMFuncInfo(
            VMFuncKind.VM_TIR_FUNC, "main", num_args=1, register_file_size=2, param_names=["x"]
        ),
        VMFuncInfo(VMFuncKind.PACKED_FUNC, "__vmtir__main"),
    ]
    return relaxvm.Executable(table, [relaxvm.tensor(np.ones(2, "float32"))], [], [])


def test_as_python_vm_tir_uses_the_table_form() -> None:
    ex = _vm_tir_executable()
    source = as_python(ex)
    assert source.startswith(
        "# ExecBuilder cannot rebuild this executable: 'main' is a compiled (vm_tir_func) "
        "function, which it cannot declare."
    )
    assert "relaxvm.Executable(func_table, constants" in source
    assert "ExecBuilder()" not in source
    assert run_python(source).save_to_bytes() == ex.save_to_bytes()


def _ret_program(
    words: list[int], offsets: list[int], num_args: int = 1, registers: int = 2
) -> relaxvm.Executable:
    table = [
        VMFuncInfo(VMFuncKind.VM_FUNC, "f", 0, len(offsets), num_args, registers, ["a"] * num_args),
        VMFuncInfo(VMFuncKind.PACKED_FUNC, "g"),
    ]
    return relaxvm.Executable(table, [], offsets, words)


IMM_MIN = (1 << 56) | (1 << 55)  # immediate -(2**55): decodable, but below ib.imm's range


@pytest.mark.parametrize(
    "ex, obstacle",
    [
        (_vm_tir_executable(), "compiled (vm_tir_func) function"),
        (
            relaxvm.Executable([], ["s"], [], [], {0: "global.texture"}),
            "it has memory scopes",
        ),
        (
            relaxvm.Executable([VMFuncInfo(VMFuncKind.PACKED_FUNC, "g", num_args=3)], [], [], []),
            "packed function 'g' has table fields other than the defaults",
        ),
        # %2 is defined first but numbered after %1: ExecBuilder would renumber it.
        (
            _ret_program([1, 2, 1, 0, 1, 1, 1, 0, 2, 1], [0, 4, 8], registers=3),
            "numbers register %2 out of order",
        ),
        (_ret_program([2, 0], [0], registers=4), "register_file_size 4, not the 1"),
        (_ret_program([1, 1, 1, 0, 2, 1], [0, 4], registers=2), None),  # control: clean
        (_ret_program([1, 1, 1, 1, IMM_MIN, 2, 1], [0, 5]), "outside ib.imm's range"),
    ],
)
def test_as_python_falls_back_exactly(ex: relaxvm.Executable, obstacle: str | None) -> None:
    source = as_python(ex)
    if obstacle is None:
        assert source.startswith("# Rebuilds the executable with relaxvm.ExecBuilder")
    else:
        assert obstacle in source.splitlines()[0]
    rebuilt = run_python(source)
    assert rebuilt.save_to_bytes() == ex.save_to_bytes()
    assert rebuilt.as_text() == ex.as_text()


def test_as_python_reads_undefined_register() -> None:
    # ``ret %1`` where nothing writes %1: valid for the executable, impossible for ExecBuilder.
    ex = _ret_program([2, 1], [0])
    source = as_python(ex)
    assert "reads register %1, which no instruction writes" in source.splitlines()[0]
    assert run_python(source).save_to_bytes() == ex.save_to_bytes()


def test_as_python_refuses_constants_without_a_spelling() -> None:
    ex = relaxvm.Executable([], [relaxvm.empty((2,), "bfloat16")], [], [])
    with pytest.raises(ExecutableFormatError, match=r"c\[0\] is a bfloat16 tensor"):
        as_python(ex)


def test_as_python_names_cannot_inject_code() -> None:
    """Names come from files: line breaks in them must not turn into executable lines."""
    evil = "f\nINJECTED = 1\r#\x00"
    table = [
        VMFuncInfo(VMFuncKind.VM_FUNC, evil, 0, 2, 0, 1, []),
        VMFuncInfo(VMFuncKind.PACKED_FUNC, "g\nINJECTED = 2"),
        VMFuncInfo(VMFuncKind.VM_TIR_FUNC, "h\u2028INJECTED = 3", num_args=0, register_file_size=1),
    ]
    ex = relaxvm.Executable(table, ["\nINJECTED = 4"], [0, 4], [1, 0, 1, 0, 2, 0])
    source = as_python(ex)
    namespace: dict[str, Any] = {}
    exec(compile(source, "<as_python>", "exec"), namespace)
    assert "INJECTED" not in namespace
    assert namespace["ex"].save_to_bytes() == ex.save_to_bytes()
    assert [info.name for info in namespace["ex"].func_table] == [info.name for info in table]
