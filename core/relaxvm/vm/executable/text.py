"""Text renderings of an executable: :func:`as_text`, :func:`stats` and :func:`as_python`.

``as_text`` and ``stats`` reproduce TVM's ``VMExecutable::AsText`` / ``Stats`` output
character for character (so listings can be compared with TVM's), with two deliberate
differences in ``stats``: float constants are printed (TVM's ``Stats`` fails on them) and an
empty shape tuple prints as ``shapetuple[]`` (TVM's stream rewind garbles it).

``as_python`` goes further than TVM's: its output is runnable Python that rebuilds an
executable identical to the original, byte for byte once saved.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from ...errors import ExecutableFormatError, VMTypeError
from ...runtime import DataType, Shape, Tensor
from ..bytecode import (
    BEGIN_SPECIAL_REG,
    VALUE_MAX,
    VALUE_MIN,
    VM_REGISTER,
    VOID_REGISTER,
    ArgKind,
    Instruction,
    Opcode,
)
from .executable import DECLARED_ONLY, Executable, VMFuncInfo, VMFuncKind

__all__ = ["as_python", "as_text", "stats"]

#: Hex digits per line when a tensor's bytes are spelled out in ``as_python``.
_HEX_LINE = 96
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


# ---------------------------------------------------------------------------------------------
# as_text
# ---------------------------------------------------------------------------------------------
def _register_text(reg: int) -> str:
    if reg == VOID_REGISTER:
        return "%void"
    if reg == VM_REGISTER:
        return "%vm"
    return f"%{reg}"


def _arg_text(ex: Executable, kind: int, value: int) -> str:
    if kind == ArgKind.REGISTER:
        return _register_text(value)
    if kind == ArgKind.IMMEDIATE:
        return f"i{value}"
    if kind == ArgKind.CONST_IDX:
        return f"c[{value}]"
    return f"f[{ex.func_table[value].name}]"


def _instruction_text(ex: Executable, ins: Instruction) -> str:
    """One instruction as TVM prints it (without the two-space indent)."""
    if ins.opcode is Opcode.CALL:
        callee = ex.func_table[ins.func_idx].name
        args = ", ".join(_arg_text(ex, kind, value) for kind, value in ins.args)
        return f"call  {callee:<16} in: {args:<12} dst: {_register_text(ins.reg)}"
    if ins.opcode is Opcode.RET:
        return f"ret   {_register_text(ins.reg)}"
    if ins.opcode is Opcode.GOTO:
        return f"goto  {ins.offset}"
    return f"If    {_register_text(ins.reg)}, {ins.offset}"


def as_text(ex: Executable) -> str:
    """The bytecode listing in TVM's ``as_text`` format.

    Functions appear in function-table order: ``@name packed_func;`` for packed functions,
    ``@name num_inputs=N vm_tir_func;`` for compiled ones, and for VM functions ``@name:``
    followed by one indented line per instruction. Every entry ends with a blank line.

    Parameters
    ----------
    ex : Executable

    Returns
    -------
    str
    """
    parts: list[str] = []
    for info in ex.func_table:
        if info.kind is VMFuncKind.PACKED_FUNC:
            parts.append(f"@{info.name} packed_func;\n\n")
        elif info.kind is VMFuncKind.VM_TIR_FUNC:
            parts.append(f"@{info.name} num_inputs={info.num_args} vm_tir_func;\n\n")
        else:
            parts.append(f"@{info.name}:\n")
            for pc in range(info.start_instr, info.end_instr):
                parts.append(f"  {_instruction_text(ex, ex.instructions[pc])}\n")
            parts.append("\n")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# stats
# ---------------------------------------------------------------------------------------------
def _constant_summary(value: Any) -> str:
    if isinstance(value, Tensor):
        if not value.shape:
            return "scalar"
        return "[" + ", ".join(map(str, value.shape)) + "]"
    if isinstance(value, Shape):
        return "shapetuple[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float):
        return repr(value)
    return str(value)  # ints and data types


def stats(ex: Executable) -> str:
    """A summary of the constant pool and the function table, in TVM's ``stats`` format.

    Each constant is summarized: a 0-d tensor as ``scalar``, another tensor by its shape
    (``[2, 3]``), a shape as ``shapetuple[1, 2]``, a string in double quotes, an int or a
    float as its value (TVM cannot print floats; we do) and a data type by name.

    Parameters
    ----------
    ex : Executable

    Returns
    -------
    str
        Three newline-terminated lines.
    """
    constants = ", ".join(_constant_summary(value) for value in ex.constants)
    names = ", ".join(info.name for info in ex.func_table)
    return (
        "Relax VM executable statistics:\n"
        f"  Constant pool (# {len(ex.constants)}): [{constants}]\n"
        f"  Globals (#{len(ex.func_table)}): [{names}]\n"
    )


# ---------------------------------------------------------------------------------------------
# as_python
# ---------------------------------------------------------------------------------------------
_TENSOR_HELPER = '''

def tensor_from_hex(shape, dtype, data):
    """A tensor of ``shape`` and ``dtype`` holding exactly these little-endian bytes."""
    element = relaxvm.DataType(dtype).numpy_dtype()
    array = np.frombuffer(bytes.fromhex(data), dtype=element.newbyteorder("<")).astype(element)
    return relaxvm.tensor(array.reshape(shape)).view(shape, dtype)

'''


def as_python(ex: Executable) -> str:
    """Python source that rebuilds ``ex``; ``exec`` it and read the variable ``ex``.

    The rebuilt executable is identical to ``ex``: same function table, constants (tensors
    bit for bit, floats including ``-0.0`` and NaN payloads), memory scopes, code and
    ``exec_mode``, so
    ``save_to_bytes()`` and ``as_text()`` give the same results.

    Whenever :class:`~relaxvm.ExecBuilder` can express the executable, the source is the
    builder program TVM users know (``ib.declare_function``, ``ib.add_constant``,
    ``with ib.function(...)``, ``ib.emit_call`` ...), with registers printed already
    formalized. ExecBuilder cannot express everything a file may hold: compiled
    (``vm_tir_func``) functions, memory scopes, packed-function entries with non-default
    fields, register numbering other than ExecBuilder's, or the
    one immediate below ``VALUE_MIN``. For such executables the source builds the tables
    directly with ``relaxvm.Executable(...)``, opening with a comment that names the
    obstacle and annotating every instruction with its ``as_text`` line. Either way the
    round trip is exact.

    Parameters
    ----------
    ex : Executable

    Returns
    -------
    str

    Raises
    ------
    ExecutableFormatError
        A constant has no faithful spelling: a tensor whose dtype numpy cannot hold or that
        has vector lanes. Such constants cannot be saved either, so this never happens for
        an executable loaded from a file.
    """
    constants = [_constant_source(value, index) for index, value in enumerate(ex.constants)]
    obstacle = _builder_obstacle(ex)
    needs_struct = any(_is_nan(value) for value in ex.constants)
    needs_helper = any(isinstance(value, Tensor) for value in ex.constants)
    lines: list[str] = []
    if obstacle is None:
        lines.append(
            "# Rebuilds the executable with relaxvm.ExecBuilder: exec() this, then use `ex`."
        )
    else:
        lines.append(f"# ExecBuilder cannot rebuild this executable: {obstacle}.")
        lines.append("# So this builds its tables directly: exec() this, then use `ex`.")
    if needs_struct:
        lines.append("import struct")
        lines.append("")
    lines += ["import numpy as np", "", "import relaxvm"]
    if obstacle is not None:
        lines.append("from relaxvm import VMFuncInfo, VMFuncKind")
    source = "\n".join(lines) + "\n"
    if needs_helper:
        source += _TENSOR_HELPER
    body = _builder_source(ex, constants) if obstacle is None else _table_source(ex, constants)
    if ex.exec_mode != "bytecode":
        # Part of the executable (saved with it), so part of the round trip.
        body.append(f"ex.exec_mode = {ex.exec_mode!r}")
    return source + "\n" + "\n".join(body) + "\n"


def _builder_source(ex: Executable, constants: list[str]) -> list[str]:
    lines = ["ib = relaxvm.ExecBuilder()"]
    for info in ex.func_table:
        lines.append(f"ib.declare_function({info.name!r}, relaxvm.VMFuncKind.{info.kind.name})")
    for index, text in enumerate(constants):
        lines.append(f"ib.add_constant({text})  # c[{index}]")
    functions = sorted(
        (info for info in ex.func_table if info.kind is VMFuncKind.VM_FUNC),
        key=lambda info: info.start_instr,
    )
    for info in functions:
        lines.append(
            f"with ib.function({info.name!r}, num_inputs={info.num_args}, "
            f"param_names={info.param_names!r}):"
        )
        for pc in range(info.start_instr, info.end_instr):
            lines.append(f"    {_builder_call(ex, ex.instructions[pc])}")
    lines.append("ex = ib.get()")
    return lines


def _builder_register(reg: int) -> str:
    if reg == VOID_REGISTER:
        return "ib.void_arg()"
    if reg == VM_REGISTER:
        return "ib.vm_state()"
    return f"ib.r({reg})"


def _builder_arg(ex: Executable, kind: int, value: int) -> str:
    if kind == ArgKind.REGISTER:
        return _builder_register(value)
    if kind == ArgKind.IMMEDIATE:
        return f"ib.imm({value})"
    if kind == ArgKind.CONST_IDX:
        return f"ib.c({value})"
    return f"ib.f({ex.func_table[value].name!r})"


def _builder_call(ex: Executable, ins: Instruction) -> str:
    if ins.opcode is Opcode.CALL:
        callee = ex.func_table[ins.func_idx].name
        args = ", ".join(_builder_arg(ex, kind, value) for kind, value in ins.args)
        dst = "" if ins.reg == VOID_REGISTER else f", dst={_builder_register(ins.reg)}"
        return f"ib.emit_call({callee!r}, args=[{args}]{dst})"
    if ins.opcode is Opcode.RET:
        return f"ib.emit_ret({_builder_register(ins.reg)})"
    if ins.opcode is Opcode.GOTO:
        return f"ib.emit_goto({ins.offset})"
    return f"ib.emit_if({_builder_register(ins.reg)}, {ins.offset})"


def _table_source(ex: Executable, constants: list[str]) -> list[str]:
    lines = ["func_table = ["]
    for info in ex.func_table:
        lines.append(
            f"    VMFuncInfo(VMFuncKind.{info.kind.name}, {info.name!r}, "
            f"start_instr={info.start_instr}, end_instr={info.end_instr}, "
            f"num_args={info.num_args}, register_file_size={info.register_file_size}, "
            f"param_names={info.param_names!r}),"
        )
    lines.append("]")
    lines.append("constants = [")
    lines += [f"    {text},  # c[{index}]" for index, text in enumerate(constants)]
    lines.append("]")
    scopes = ", ".join(f"{index}: {scope!r}" for index, scope in ex.memory_scopes.items())
    lines.append(f"memory_scopes = {{{scopes}}}")
    lines.append(f"instr_offset = {ex.instr_offset!r}")
    lines.append("instr_data = [")
    starts = {
        info.start_instr: info.name for info in ex.func_table if info.kind is VMFuncKind.VM_FUNC
    }
    offsets = ex.instr_offset
    for pc, ins in enumerate(ex.instructions):
        if pc in starts:
            lines.append(f"    # @{_comment_safe(starts[pc])}:")
        end = offsets[pc + 1] if pc + 1 < len(offsets) else len(ex.instr_data)
        words = ", ".join(map(_word_source, ex.instr_data[offsets[pc] : end]))
        lines.append(f"    {words},  # {pc}: {_comment_safe(_instruction_text(ex, ins))}")
    lines.append("]")
    lines.append(
        "ex = relaxvm.Executable(func_table, constants, instr_offset, instr_data, memory_scopes)"
    )
    return lines


def _comment_safe(text: str) -> str:
    """``text`` with line breaks, NULs and other unprintables escaped.

    Names come from the file: a raw newline in a comment would turn the rest of the name into
    code that runs when the output is executed.
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _word_source(word: int) -> str:
    # Argument words and special registers keep their kind in the top bits: hex shows it.
    return f"{word:#018x}" if word >= 1 << 32 else str(word)


def _builder_obstacle(ex: Executable) -> str | None:
    """Why ExecBuilder cannot reproduce ``ex`` exactly, or ``None`` if it can."""
    if ex.memory_scopes:
        return "it has memory scopes, which ExecBuilder has no API to set"
    for index, value in enumerate(ex.constants):
        if isinstance(value, int) and not _I64_MIN <= value <= _I64_MAX:
            return f"constant c[{index}] is an int outside the 64 bits ExecBuilder accepts"
    for info in ex.func_table:
        if info.kind is VMFuncKind.VM_TIR_FUNC:
            return f"{info.name!r} is a compiled (vm_tir_func) function, which it cannot declare"
        if info.kind is VMFuncKind.PACKED_FUNC:
            fields = (info.start_instr, info.end_instr, info.num_args, info.register_file_size)
            if fields != (0, 0, DECLARED_ONLY, 0) or info.param_names:
                return (
                    f"packed function {info.name!r} has table fields other than the defaults "
                    "ExecBuilder writes"
                )
        else:
            problem = _vm_function_obstacle(ex, info)
            if problem is not None:
                return f"VM function {info.name!r} {problem}"
    return None


def _vm_function_obstacle(ex: Executable, info: VMFuncInfo) -> str | None:
    """Check ``info`` is what ExecBuilder's formalization and emit checks would produce."""
    num_args = info.num_args
    body = ex.instructions[info.start_instr : info.end_instr]
    defined: dict[int, int] = {}  # register -> number ExecBuilder would give it
    for ins in body:
        if ins.opcode is Opcode.CALL and num_args <= ins.reg < BEGIN_SPECIAL_REG:
            defined.setdefault(ins.reg, num_args + len(defined))
    renamed = [reg for reg, number in defined.items() if reg != number]
    if renamed:
        return f"numbers register %{renamed[0]} out of order of first definition"
    written: set[int] = set()  # ExecBuilder checks reads in instruction order
    for ins in body:
        reads = [value for kind, value in ins.args if kind == ArgKind.REGISTER]
        if ins.opcode in (Opcode.RET, Opcode.IF):
            reads.append(ins.reg)
        for reg in reads:
            if num_args <= reg < BEGIN_SPECIAL_REG and reg not in written:
                if reg not in defined:
                    return f"reads register %{reg}, which no instruction writes"
                return f"reads register %{reg} before the first instruction that writes it"
        if ins.opcode is Opcode.CALL:
            written.add(ins.reg)
        for kind, value in ins.args:
            if kind == ArgKind.IMMEDIATE and not VALUE_MIN <= value <= VALUE_MAX:
                return f"has the immediate {value}, outside ib.imm's range"
    if info.register_file_size != num_args + len(defined):
        return (
            f"has register_file_size {info.register_file_size}, not the "
            f"{num_args + len(defined)} ExecBuilder computes"
        )
    return None


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _constant_source(value: Any, index: int) -> str:
    """A Python expression that evaluates to ``value`` exactly."""
    converters: list[tuple[type, Callable[[Any], str]]] = [
        (Tensor, lambda v: _tensor_source(v, index)),
        (Shape, lambda v: f"relaxvm.Shape({list(v)!r})"),
        (DataType, lambda v: f"relaxvm.DataType({str(v)!r})"),
        (str, repr),
        (float, _float_source),
        (int, repr),
    ]
    for kind, convert in converters:
        if isinstance(value, kind):
            return convert(value)
    raise ExecutableFormatError(f"as_python: constant c[{index}] has type {type(value).__name__}")


def _float_source(value: float) -> str:
    if math.isnan(value):
        # NaN payloads and sign survive only through the raw bits.
        return f'struct.unpack("<d", bytes.fromhex("{struct.pack("<d", value).hex()}"))[0]'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(value)  # repr round-trips every finite float, -0.0 included


def _tensor_source(value: Tensor, index: int) -> str:
    dtype = value.dtype
    try:
        if dtype.lanes != 1:
            raise VMTypeError("vector lanes")
        element = dtype.numpy_dtype().newbyteorder("<")
    except VMTypeError:
        raise ExecutableFormatError(
            f"as_python: constant c[{index}] is a {dtype} tensor, which has no faithful "
            "spelling (numpy cannot hold it)"
        ) from None
    data = value.numpy_storage().astype(element, copy=False).tobytes().hex()
    shape = list(value.shape)
    if len(data) <= _HEX_LINE:
        return f"tensor_from_hex({shape!r}, {str(dtype)!r}, {data!r})"
    chunks = "".join(
        f'\n        "{data[i : i + _HEX_LINE]}"' for i in range(0, len(data), _HEX_LINE)
    )
    return f"tensor_from_hex(\n        {shape!r},\n        {str(dtype)!r},{chunks},\n    )"
