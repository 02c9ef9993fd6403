"""ExecBuilder: write VM bytecode by hand, with TVM's API.

Example
-------
>>> ib = ExecBuilder()
>>> with ib.function("main", num_inputs=1):
...     ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))
...     ib.emit_ret(ib.r(1))
>>> ex = ib.get()
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import BytecodeError
from ..runtime import DataType, Shape, Tensor, tensor
from .bytecode import (
    BEGIN_SPECIAL_REG,
    VALUE_MAX,
    VALUE_MIN,
    VM_REGISTER,
    VOID_REGISTER,
    Arg,
    ArgKind,
    Instruction,
    Opcode,
)
from .executable.executable import DECLARED_ONLY, Executable, VMFuncInfo, VMFuncKind

__all__ = ["ExecBuilder", "SpecialReg"]


class SpecialReg:
    """The special register numbers (TVM's ``exec_builder.SpecialReg``)."""

    VOID_ARG = VOID_REGISTER
    VM_STATE = VM_REGISTER


class ExecBuilder:
    """Builds an :class:`~relaxvm.Executable` one instruction at a time.

    Registers may be numbered freely inside a function: :meth:`get` renumbers the
    non-parameter registers in order of first definition (TVM's ``Formalize``) and rejects
    programs that read a register before (in instruction order) any instruction writes it.
    """

    def __init__(self) -> None:
        self._table: list[VMFuncInfo] = []
        self._func_map: dict[str, int] = {}
        self._constants: list[Any] = []
        self._constant_keys: dict[Any, int] = {}
        # Instructions are kept decoded until get(); (opcode, reg, func_idx, args, offset).
        self._code: list[Instruction] = []
        self._current: VMFuncInfo | None = None

    # -- argument constructors -----------------------------------------------------------
    def r(self, index: int) -> Arg:
        """Register ``index`` (use :meth:`vm_state` / :meth:`void_arg` for special ones)."""
        if not isinstance(index, int) or not 0 <= index < BEGIN_SPECIAL_REG:
            if index in (VOID_REGISTER, VM_REGISTER):
                return Arg(ArgKind.REGISTER, index)
            raise BytecodeError(f"ExecBuilder.r: invalid register number {index!r}")
        return Arg(ArgKind.REGISTER, index)

    def imm(self, value: int) -> Arg:
        """An immediate integer (must fit in 56 signed bits)."""
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int) or not VALUE_MIN <= value <= VALUE_MAX:
            raise BytecodeError(
                f"ExecBuilder.imm: {value!r} is not an int in {VALUE_MIN}..{VALUE_MAX}; "
                "use convert_constant for other values"
            )
        return Arg(ArgKind.IMMEDIATE, value)

    def c(self, index: int) -> Arg:
        """Constant-pool entry ``index``."""
        if not isinstance(index, int) or index < 0:
            raise BytecodeError(f"ExecBuilder.c: invalid constant index {index!r}")
        return Arg(ArgKind.CONST_IDX, index)

    def f(self, name: str) -> Arg:
        """The function ``name`` as a value (declared as a packed function if unknown)."""
        return Arg(ArgKind.FUNC_IDX, self._declare(name, VMFuncKind.PACKED_FUNC, strict=False))

    def void_arg(self) -> Arg:
        """The ``%void`` register: reads give ``None``."""
        return Arg(ArgKind.REGISTER, VOID_REGISTER)

    def vm_state(self) -> Arg:
        """The ``%vm`` register: reads give the VM context."""
        return Arg(ArgKind.REGISTER, VM_REGISTER)

    # -- constants -----------------------------------------------------------------------
    def convert_constant(self, value: Any) -> Arg:
        """An argument for ``value``: an immediate for small ints, else a de-duplicated
        constant-pool entry (equal strings, shapes or tensors share one entry).

        Raises
        ------
        BytecodeError
            The value's type cannot live in the constant pool.
        """
        if isinstance(value, bool | np.bool_):
            value = int(value)
        if isinstance(value, int | np.integer) and VALUE_MIN <= int(value) <= VALUE_MAX:
            return self.imm(int(value))
        normalized, key = _constant_key(value)
        index = self._constant_keys.get(key)
        if index is None:
            index = self.add_constant(normalized)
            self._constant_keys[key] = index
        return self.c(index)

    def add_constant(self, value: Any) -> int:
        """Append ``value`` to the constant pool without de-duplication; return its index."""
        normalized, _ = _constant_key(value)
        self._constants.append(normalized)
        return len(self._constants) - 1

    # -- functions -----------------------------------------------------------------------
    def declare_function(self, name: str, kind: VMFuncKind | int = VMFuncKind.PACKED_FUNC) -> int:
        """Add ``name`` to the function table (idempotent); return its index.

        Raises
        ------
        BytecodeError
            ``name`` is already declared with another kind.
        """
        return self._declare(name, VMFuncKind(kind), strict=True)

    def _declare(self, name: str, kind: VMFuncKind, *, strict: bool) -> int:
        if not isinstance(name, str) or not name:
            raise BytecodeError(f"ExecBuilder: function name must be a non-empty str: {name!r}")
        index = self._func_map.get(name)
        if index is None:
            self._table.append(VMFuncInfo(kind, name))
            index = self._func_map[name] = len(self._table) - 1
        elif strict and self._table[index].kind is not kind:
            existing = self._table[index]
            # A name first used as a callee (declared packed) may later be defined as a VM
            # function: that is how mutual recursion is written.
            if not (existing.kind is VMFuncKind.PACKED_FUNC and existing.num_args == DECLARED_ONLY):
                raise BytecodeError(
                    f"function {name!r} is already declared as {existing.kind.name}, "
                    f"cannot redeclare it as {kind.name}"
                )
            existing.kind = kind
        return index

    @contextlib.contextmanager
    def function(
        self,
        name: str,
        num_inputs: int = 0,
        param_names: Sequence[str] | None = None,
    ) -> Iterator[None]:
        """Context manager: emit the body of VM function ``name``.

        Raises
        ------
        BytecodeError
            Nested definitions, a second definition of ``name``, or ``param_names`` of the
            wrong length.
        """
        if self._current is not None:
            raise BytecodeError(
                f"ExecBuilder.function({name!r}): already inside function "
                f"{self._current.name!r}; function scopes do not nest"
            )
        if not isinstance(num_inputs, int) or num_inputs < 0:
            raise BytecodeError(f"ExecBuilder.function: num_inputs must be >= 0: {num_inputs!r}")
        names = [f"arg{i}" for i in range(num_inputs)] if param_names is None else list(param_names)
        if len(names) != num_inputs:
            raise BytecodeError(
                f"ExecBuilder.function({name!r}): {len(names)} param_names for {num_inputs} inputs"
            )
        index = self._declare(name, VMFuncKind.VM_FUNC, strict=True)
        info = self._table[index]
        if info.num_args != DECLARED_ONLY:
            raise BytecodeError(f"Function {name} already defined")
        info.num_args = num_inputs
        info.param_names = names
        info.start_instr = len(self._code)
        self._current = info
        try:
            yield
        finally:
            self._current = None
        info.end_instr = len(self._code)

    # -- instructions --------------------------------------------------------------------
    def _emit(self, instruction: Instruction) -> None:
        if self._current is None:
            raise BytecodeError("emit should happen in a function scope")
        self._code.append(instruction)

    def _as_arg(self, value: Any) -> Arg:
        if isinstance(value, Arg):
            return value
        return self.convert_constant(value)

    def emit_call(
        self, name: str, args: Sequence[Any] | None = None, dst: Arg | None = None
    ) -> None:
        """Emit ``Call``: ``dst = name(*args)``.

        ``args`` items are :class:`Arg` values or Python values converted with
        :meth:`convert_constant` (a tuple becomes a :class:`Shape` constant). ``dst=None``
        discards the result.
        """
        if self._current is None:
            raise BytecodeError("emit should happen in a function scope")
        func_idx = self._declare(name, VMFuncKind.PACKED_FUNC, strict=False)
        encoded = tuple((a.kind.value, a.value) for a in map(self._as_arg, args or ()))
        reg = VOID_REGISTER if dst is None else self._register(dst, "emit_call dst")
        self._emit(Instruction(Opcode.CALL, reg, func_idx, encoded))

    def emit_ret(self, result: Arg) -> None:
        """Emit ``Ret``: return the register ``result``."""
        self._emit(Instruction(Opcode.RET, self._register(result, "emit_ret")))

    def emit_goto(self, pc_offset: int) -> None:
        """Emit ``Goto``: jump ``pc_offset`` instructions (never 0)."""
        if not isinstance(pc_offset, int) or pc_offset == 0:
            raise BytecodeError(f"emit_goto: the offset must be a non-zero int, got {pc_offset!r}")
        self._emit(Instruction(Opcode.GOTO, offset=pc_offset))

    def emit_if(self, cond: Arg, false_offset: int) -> None:
        """Emit ``If``: fall through when ``cond`` is nonzero, else jump ``false_offset`` (> 1)."""
        if not isinstance(false_offset, int) or false_offset <= 1:
            raise BytecodeError(f"emit_if: false_offset must be an int > 1, got {false_offset!r}")
        self._emit(Instruction(Opcode.IF, self._register(cond, "emit_if"), offset=false_offset))

    def _register(self, arg: Arg, where: str) -> int:
        if not isinstance(arg, Arg) or arg.kind is not ArgKind.REGISTER:
            raise BytecodeError(f"{where}: expected a register (ib.r(n)), got {arg!r}")
        return arg.value

    # -- finalisation --------------------------------------------------------------------
    def get(self) -> Executable:
        """Formalize registers, validate, and return the executable.

        Raises
        ------
        BytecodeError
            A function is still open or never defined, a register is read before any
            instruction (in order) writes it, an index is out of range, or a jump leaves its
            function.
        """
        if self._current is not None:
            raise BytecodeError(f"ExecBuilder.get: function {self._current.name!r} is still open")
        table = [VMFuncInfo(**vars(info)) for info in self._table]
        for info in table:
            info.param_names = list(info.param_names)
        code = list(self._code)
        for info in table:
            if info.kind is VMFuncKind.VM_FUNC:
                _formalize(info, code)
        offsets: list[int] = []
        data: list[int] = []
        for instruction in code:
            offsets.append(len(data))
            data.extend(int(w) for w in instruction.words())
        return Executable(table, list(self._constants), offsets, data)


def _formalize(info: VMFuncInfo, code: list[Instruction]) -> None:
    """Renumber a function's registers densely, in order of first definition, and check that
    every read comes after a write in instruction order.

    As TVM's ``ExecBuilder`` (its ``Formalize`` then ``CheckExecutable``), the check is in
    program order, not over the whole body: a register read by an instruction that comes
    before every instruction writing it (the instruction itself included, since a call reads
    its arguments before it writes its destination) is refused, even if a jump could reach
    the write first.
    """
    if info.num_args == DECLARED_ONLY:
        raise BytecodeError(
            f"function {info.name!r} is declared as a VM function but never defined"
        )
    num_args = info.num_args
    rename: dict[int, int] = {}

    def fix(reg: int, pc: int) -> int:
        if reg < num_args or reg >= BEGIN_SPECIAL_REG:
            return reg
        try:
            return rename[reg]
        except KeyError:
            raise BytecodeError(
                f'register r({reg}) in VM function "{info.name}" is used as input while it is '
                f"never defined as a destination before it (instruction {pc})"
            ) from None

    for pc in range(info.start_instr, info.end_instr):
        ins = code[pc]
        if ins.opcode is Opcode.CALL:
            args = tuple((k, fix(v, pc) if k == ArgKind.REGISTER else v) for k, v in ins.args)
            if num_args <= ins.reg < BEGIN_SPECIAL_REG:
                rename.setdefault(ins.reg, num_args + len(rename))
            code[pc] = ins._replace(reg=fix(ins.reg, pc), args=args)
        elif ins.opcode in (Opcode.RET, Opcode.IF):
            code[pc] = ins._replace(reg=fix(ins.reg, pc))
    info.register_file_size = num_args + len(rename)


def _constant_key(value: Any) -> tuple[Any, Any]:
    """Normalize a constant and compute its de-duplication key."""
    if isinstance(value, Tensor):
        array = value.numpy()
        return value, ("tensor", str(value.dtype), tuple(value.shape), array.tobytes())
    if isinstance(value, np.ndarray):
        converted = tensor(value)
        return converted, ("tensor", str(converted.dtype), value.shape, value.tobytes())
    if isinstance(value, DataType):
        return value, ("dtype", str(value))
    if isinstance(value, Shape | tuple | list):
        shape = Shape(value)
        return shape, ("shape", tuple(shape))
    if isinstance(value, str):
        return value, ("str", value)
    if isinstance(value, bool | np.bool_):
        return int(value), ("int", int(value))
    if isinstance(value, int | np.integer):
        if not -(1 << 63) <= int(value) < (1 << 63):
            raise BytecodeError(f"convert_constant: int {value} does not fit in 64 bits")
        return int(value), ("int", int(value))
    if isinstance(value, float | np.floating):
        # Keyed by bit pattern so 0.0 and -0.0 (and NaNs) stay distinct entries.
        return float(value), ("float", struct.pack("<d", float(value)))
    raise BytecodeError(
        f"convert_constant: a {type(value).__name__} cannot be a constant (the pool holds "
        "tensors, shapes, strings, ints, floats and data types)"
    )
