"""The four-opcode bytecode: opcodes, argument words and decoded instructions.

An instruction is a run of 64-bit words in the executable's ``instr_data``:

======  =============================================  =======================================
Call    ``[1, dst, func_idx, num_args, arg_0 ...]``    call ``func_idx``; result to ``dst``
Ret     ``[2, result_reg]``                            return the register's value
Goto    ``[3, pc_offset]``                             ``pc += pc_offset`` (never 0)
If      ``[4, cond_reg, false_offset]``                nonzero: ``pc += 1``; zero: ``pc += false_offset``
======  =============================================  =======================================

Argument words carry an 8-bit :class:`ArgKind` above a 56-bit sign-extended value. Offsets
count instructions, not words, and are relative to the current instruction.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from ..errors import BytecodeError

__all__ = [
    "BEGIN_SPECIAL_REG",
    "VALUE_MAX",
    "VALUE_MIN",
    "VM_REGISTER",
    "VOID_REGISTER",
    "Arg",
    "ArgKind",
    "Instruction",
    "Opcode",
    "decode_arg",
    "encode_arg",
]


class Opcode(IntEnum):
    """The four opcodes."""

    CALL = 1
    RET = 2
    GOTO = 3
    IF = 4


class ArgKind(IntEnum):
    """What an argument word's value means."""

    REGISTER = 0
    IMMEDIATE = 1
    CONST_IDX = 2
    FUNC_IDX = 3


KIND_BITS = 8
VALUE_BITS = 56
_VALUE_MASK = (1 << VALUE_BITS) - 1
_SIGN_BIT = 1 << (VALUE_BITS - 1)
#: Largest value an argument word can carry (TVM's ``kValueMaxLimit``).
VALUE_MAX = (1 << (VALUE_BITS - 1)) - 1
#: Smallest value an argument word can carry (TVM's ``kValueMinLimit``).
VALUE_MIN = -VALUE_MAX
#: Registers at or above this number are special.
BEGIN_SPECIAL_REG = 1 << 54
#: "No value": reads give ``None``, writes are discarded. Printed ``%void``.
VOID_REGISTER = BEGIN_SPECIAL_REG
#: Reads give the VM context (what context-taking builtins receive). Printed ``%vm``.
VM_REGISTER = BEGIN_SPECIAL_REG + 1


def encode_arg(kind: ArgKind | int, value: int) -> int:
    """Pack ``kind`` and ``value`` into one argument word.

    Raises
    ------
    BytecodeError
        The kind is unknown or the value does not fit in 56 signed bits.
    """
    if kind not in _KINDS:
        raise BytecodeError(f"encode_arg: unknown argument kind {kind!r}")
    if not isinstance(value, int) or not VALUE_MIN <= value <= VALUE_MAX:
        raise BytecodeError(
            f"encode_arg: value {value!r} does not fit in a 56-bit argument word "
            f"(range {VALUE_MIN}..{VALUE_MAX})"
        )
    return (int(kind) << VALUE_BITS) | (value & _VALUE_MASK)


def decode_arg(word: int) -> tuple[int, int]:
    """Unpack an argument word into ``(kind, value)``; the kind is not validated."""
    value = word & _VALUE_MASK
    if value & _SIGN_BIT:
        value -= 1 << VALUE_BITS
    return (word >> VALUE_BITS) & 0xFF, value


_KINDS = frozenset(int(k) for k in ArgKind)


class Arg:
    """One instruction argument, as returned by ``ExecBuilder.r/imm/c/f``.

    Attributes
    ----------
    kind : ArgKind
    value : int
        Register number, immediate value, constant index or function index.
    """

    __slots__ = ("kind", "value")

    def __init__(self, kind: ArgKind | int, value: int) -> None:
        encode_arg(kind, value)  # validates
        self.kind = ArgKind(kind)
        self.value = value

    @property
    def word(self) -> int:
        """The encoded 64-bit word."""
        return encode_arg(self.kind, self.value)

    @classmethod
    def from_word(cls, word: int) -> Arg:
        """Decode a word (raises :class:`BytecodeError` for an unknown kind)."""
        kind, value = decode_arg(word)
        if kind not in _KINDS:
            raise BytecodeError(f"argument word {word:#x} has unknown kind {kind}")
        return cls(kind, value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Arg) and (self.kind, self.value) == (other.kind, other.value)

    def __hash__(self) -> int:
        return hash((self.kind, self.value))

    def __repr__(self) -> str:
        if self.kind is ArgKind.REGISTER:
            if self.value == VOID_REGISTER:
                return "Arg(%void)"
            if self.value == VM_REGISTER:
                return "Arg(%vm)"
            return f"Arg(%{self.value})"
        return f"Arg({self.kind.name.lower()} {self.value})"


class Instruction(NamedTuple):
    """A decoded instruction. Fields that an opcode does not use are ``0`` / ``()``.

    ``args`` holds ``(kind, value)`` pairs; ``reg`` is ``dst`` for Call, the result register for
    Ret and the condition register for If; ``offset`` is the jump for Goto and If.
    """

    opcode: Opcode
    reg: int = 0
    func_idx: int = 0
    args: tuple[tuple[int, int], ...] = ()
    offset: int = 0

    def words(self) -> list[int]:
        """Encode back to instruction words."""
        if self.opcode is Opcode.CALL:
            return [
                Opcode.CALL,
                self.reg,
                self.func_idx,
                len(self.args),
                *(encode_arg(k, v) for k, v in self.args),
            ]
        if self.opcode is Opcode.RET:
            return [Opcode.RET, self.reg]
        if self.opcode is Opcode.GOTO:
            return [Opcode.GOTO, self.offset]
        return [Opcode.IF, self.reg, self.offset]
