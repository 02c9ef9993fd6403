"""The executable: function table, constant pool and instruction stream, plus its imports.

An :class:`Executable` is always well-formed: the constructor decodes and validates every
instruction (register, constant, function and jump ranges), so the VM never meets a malformed
program, whether it came from :class:`~relaxvm.ExecBuilder` or from a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from ...errors import BytecodeError, ExecutableFormatError, VMValueError
from ...runtime import DataType, Module, Shape, Tensor
from ..bytecode import (
    _KINDS,
    VM_REGISTER,
    VOID_REGISTER,
    ArgKind,
    Instruction,
    Opcode,
    decode_arg,
)

__all__ = ["Executable", "VMFuncInfo", "VMFuncKind"]

#: The ways a VM can run an executable's functions (TVM's ``exec_mode``).
EXEC_MODES = ("bytecode", "compiled")

#: Python types a constant-pool entry may have.
CONSTANT_TYPES = (Tensor, Shape, str, int, float, DataType)


class VMFuncKind(IntEnum):
    """Function table entry kinds (TVM's ``VMFuncInfo::FuncKind``)."""

    PACKED_FUNC = 0
    VM_FUNC = 1
    VM_TIR_FUNC = 2


#: ``num_args`` of a function that is declared but not defined (packed functions keep it).
DECLARED_ONLY = -2

#: Registers a VM function may have beyond its parameters and one per instruction (what it
#: can write). Dense numbering (ExecBuilder's) never needs them; hand-written bytecode may
#: number registers sparsely. Bounded, so a frame stays proportional to the code.
REGISTER_SLACK = 256

#: Registers a compiled (``vm_tir_func``) function may have beyond its arguments and result.
#: Its code is an import, not bytecode, so nothing in the file bounds them: a fixed ceiling
#: (512 KiB of frame at most) keeps a damaged table from asking for gigabytes per call.
MAX_TIR_TEMPORARIES = 1 << 16


@dataclass
class VMFuncInfo:
    """One function table entry.

    Attributes
    ----------
    kind : VMFuncKind
    name : str
    start_instr, end_instr : int
        The function's instructions are ``[start_instr, end_instr)`` (VM functions only).
    num_args : int
        Parameter count (``-2`` for packed functions: declared, defined elsewhere).
    register_file_size : int
        Registers a frame needs (parameters included).
    param_names : list of str
    """

    kind: VMFuncKind
    name: str
    start_instr: int = 0
    end_instr: int = 0
    num_args: int = DECLARED_ONLY
    register_file_size: int = 0
    param_names: list[str] = field(default_factory=list)


class Executable(Module):
    """A VM program: what :class:`~relaxvm.VirtualMachine` runs and what files hold.

    Parameters
    ----------
    func_table : sequence of VMFuncInfo
    constants : sequence
        Tensors, shapes, strings, ints, floats and data types.
    instr_offset : sequence of int
        Word index where each instruction starts.
    instr_data : sequence of int
        The instruction words.
    memory_scopes : dict of int to str, optional
        Memory scope of tensor constants, by constant index.

    Raises
    ------
    BytecodeError
        Anything about the program is malformed; the message names the function and
        instruction.
    """

    type_key = "relax.VMExecutable"

    def __init__(
        self,
        func_table: Sequence[VMFuncInfo],
        constants: Sequence[Any],
        instr_offset: Sequence[int],
        instr_data: Sequence[int],
        memory_scopes: dict[int, str] | None = None,
        exec_mode: str = "bytecode",
    ) -> None:
        super().__init__(name="relax.VMExecutable")
        if exec_mode not in EXEC_MODES:
            raise BytecodeError(
                f"Executable: unknown exec_mode {exec_mode!r}; expected one of {EXEC_MODES}"
            )
        #: How a VM runs the functions: the dispatch loop ("bytecode") or Python generated
        #: from the bytecode when the VM loads ("compiled"). Saved with the executable.
        self.exec_mode: str = exec_mode
        #: Kernel libraries among ``imports``: (target kind name, target string, module), for
        #: ``export_library`` to serialize through the target kind.
        self.kernel_libs: list[tuple[str, str, Module]] = []
        self.func_table: list[VMFuncInfo] = list(func_table)
        self.constants: list[Any] = list(constants)
        self.instr_offset: list[int] = list(instr_offset)
        self.instr_data: list[int] = list(instr_data)
        self.memory_scopes: dict[int, str] = dict(memory_scopes or {})
        self.func_map: dict[str, int] = {}
        self.instructions: list[Instruction] = _validate(self)
        for key, method in (
            ("stats", self.stats),
            ("as_text", self.as_text),
            ("as_python", self.as_python),
            ("has_function", self.has_function),
        ):
            self._functions[key] = method

    # -- queries ----------------------------------------------------------------------------
    def has_function(self, name: str) -> bool:
        """Whether ``name`` is a Relax (VM or compiled) function of this executable."""
        index = self.func_map.get(name)
        return index is not None and self.func_table[index].kind is not VMFuncKind.PACKED_FUNC

    def function_names(self) -> list[str]:
        """Names of the Relax functions (not the packed functions they call)."""
        return [f.name for f in self.func_table if f.kind is not VMFuncKind.PACKED_FUNC]

    # -- renderings (executable_text.py) ----------------------------------------------------
    def as_text(self) -> str:
        """The bytecode listing, in TVM's ``as_text`` format."""
        from .text import as_text

        return as_text(self)

    def as_python(self) -> str:
        """Runnable Python that rebuilds this exact executable with :class:`ExecBuilder`."""
        from .text import as_python

        return as_python(self)

    def stats(self) -> str:
        """Constant pool and function table summary, in TVM's ``stats`` format."""
        from .text import stats

        return stats(self)

    # -- serialization (executable_format.py) -----------------------------------------------
    def save_to_bytes(self) -> bytes:
        """Serialize to the documented binary format (see ``docs/file_format.md``)."""
        from .format import save_to_bytes

        return save_to_bytes(self)

    @classmethod
    def load_from_bytes(cls, data: bytes) -> Executable:
        """Parse bytes written by :meth:`save_to_bytes`.

        Raises
        ------
        ExecutableFormatError
            The bytes are corrupt, truncated, foreign or of another format version; the
            message gives the byte offset.
        """
        from .format import load_from_bytes

        return load_from_bytes(data)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`save_to_bytes` to ``path``."""
        from .format import save_file

        save_file(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Executable:
        """Read an executable written by :meth:`save`."""
        from .format import load_file

        return load_file(path)

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write everything needed to run this executable into one file, for
        :func:`relaxvm.load_module`.

        The file holds the program and, for each kernel library the executable imports (from
        ``relaxvm.compile``), the target kind, the target and the bytes that kind's
        ``serialize`` made; loading reloads them through the kind's ``load``. Nothing in the
        file is executed as Python.

        A path ending in ``.so`` asks the kernels' target kind (its ``export_shared``) for a
        native ELF shared library that embeds the same bytes in a ``relaxvm_exec`` section;
        ``relaxvm.load_module`` reads it back as data (for ``llvm`` this needs a system
        linker). Any other path (``.rvm`` by convention) gets the plain single-file format.

        Raises
        ------
        ExecutableFormatError
            The executable imports a module that no installed target can serialize.
        """
        from .format import save_file_with

        libs: list[tuple[str, str, bytes]] = []
        known = {id(module): (kind, target) for kind, target, module in self.kernel_libs}
        for module in self.imports:
            entry = known.get(id(module))
            if entry is None:
                raise ExecutableFormatError(
                    f"export_library: this executable imports {module.name!r}, which no "
                    "target built, and no installed target can serialize those modules yet; "
                    "save() writes the program alone (its callees must then be registered "
                    "before the VM is built)"
                )
            kind_name, target = entry
            from ...registry.extensions import get_target_kind

            kind = get_target_kind(kind_name)
            if kind.serialize is None:
                raise ExecutableFormatError(
                    f"export_library: the kernels were built for target kind {kind_name!r}, "
                    "which cannot serialize them"
                )
            libs.append((kind_name, target, kind.serialize(module)))
        if os.fspath(path).endswith(".so"):
            from .elf_payload import export_shared_library

            export_shared_library(self, path, libs)
            return
        save_file_with(self, path, libs)

    def jit(
        self,
        *,
        fcompile: Any = None,
        addons: Sequence[str] | None = None,
        force_recompile: bool = False,
    ) -> Executable:
        """The runnable module for :class:`~relaxvm.VirtualMachine` (TVM's ``Executable.jit``).

        TVM's ``jit()`` compiles and links kernels left as source or object files. relaxvm's
        targets compile every kernel to native code in memory when the executable is built or
        loaded, so nothing is left to link: this returns ``self``, which
        ``VirtualMachine(ex.jit(), relaxvm.cpu())`` accepts as TVM code expects.

        Parameters
        ----------
        fcompile : None
            TVM's external compiler hook; there is no external compile step here.
        addons : None or empty
            TVM's extra object files to link.
        force_recompile : bool
            Accepted for TVM code; the kernels are already compiled, so it changes nothing.

        Raises
        ------
        VMValueError
            ``fcompile`` or ``addons`` is given.
        """
        if fcompile is not None or addons:
            given = "fcompile is" if fcompile is not None else f"addons {list(addons or ())!r} are"
            raise VMValueError(
                f"Executable.jit: {given} not supported; the kernels were compiled to native "
                "code in memory when the executable was built or loaded"
            )
        del force_recompile  # nothing to recompile: see above
        return self

    def __repr__(self) -> str:
        return (
            f"<Executable: {len(self.function_names())} functions, "
            f"{len(self.constants)} constants, {len(self.instructions)} instructions>"
        )


def _validate(ex: Executable) -> list[Instruction]:
    """Check the whole program and decode it; also fills ``ex.func_map``."""
    table = ex.func_table
    num_funcs = len(table)
    num_consts = len(ex.constants)
    offsets = ex.instr_offset
    data = ex.instr_data
    num_instr = len(offsets)

    for index, info in enumerate(table):
        where = f"function table entry {index}"
        if not isinstance(info, VMFuncInfo):
            raise BytecodeError(f"{where} is a {type(info).__name__}, not a VMFuncInfo")
        if info.kind not in (0, 1, 2):
            raise BytecodeError(f"{where} ({info.name!r}) has unknown kind {info.kind!r}")
        info.kind = VMFuncKind(info.kind)
        if not isinstance(info.name, str) or not info.name:
            raise BytecodeError(f"{where} has an empty or non-string name {info.name!r}")
        if info.name in ex.func_map:
            raise BytecodeError(f"function {info.name!r} appears twice in the function table")
        ex.func_map[info.name] = index
        _check_func_info(info, num_instr)

    for index, value in enumerate(ex.constants):
        if isinstance(value, bool) or not isinstance(value, CONSTANT_TYPES):
            raise BytecodeError(
                f"constant c[{index}] has unsupported type {type(value).__name__}; the pool "
                "holds tensors, shapes, strings, ints, floats and data types"
            )
    for index in ex.memory_scopes:
        if not 0 <= index < num_consts:
            raise BytecodeError(f"memory scope given for constant c[{index}], which is absent")

    if num_instr and offsets[0] != 0:
        raise BytecodeError(f"instruction 0 starts at word {offsets[0]}, not 0")
    for i in range(1, num_instr):
        if offsets[i] <= offsets[i - 1]:
            raise BytecodeError(f"instruction offsets are not increasing at instruction {i}")
    if num_instr and offsets[-1] >= len(data):
        raise BytecodeError(f"instruction {num_instr - 1} starts past the end of the code")
    if not num_instr and data:
        raise BytecodeError("code words present but no instruction offsets")

    owner: list[VMFuncInfo | None] = [None] * num_instr
    for info in table:
        if info.kind is VMFuncKind.VM_FUNC:
            for pc in range(info.start_instr, info.end_instr):
                if owner[pc] is not None:
                    raise BytecodeError(
                        f"functions {owner[pc].name!r} and {info.name!r} share instruction {pc}"  # type: ignore[union-attr]
                    )
                owner[pc] = info

    decoded: list[Instruction] = []
    for pc in range(num_instr):
        begin = offsets[pc]
        end = offsets[pc + 1] if pc + 1 < num_instr else len(data)
        function = owner[pc]
        if function is None:
            raise BytecodeError(f"instruction {pc} belongs to no VM function")
        decoded.append(_decode_one(data[begin:end], pc, function, num_funcs, num_consts))
    for info in table:
        if info.kind is VMFuncKind.VM_FUNC:
            last = decoded[info.end_instr - 1]
            if last.opcode not in (Opcode.RET, Opcode.GOTO):
                raise BytecodeError(
                    f"VM function {info.name!r} can run past its end: its last instruction "
                    f"({info.end_instr - 1}) is {last.opcode.name}, not Ret or Goto"
                )
    return decoded


def max_register_file_size(kind: int, num_args: int, num_instr: int) -> int:
    """The largest register file a function may declare (see :data:`REGISTER_SLACK`).

    Parameters
    ----------
    kind : int
        A :class:`VMFuncKind` value (packed functions have no frame: 0).
    num_args : int
    num_instr : int
        Instructions of the function (VM functions).
    """
    if kind == VMFuncKind.VM_FUNC:
        return num_args + num_instr + REGISTER_SLACK
    if kind == VMFuncKind.VM_TIR_FUNC:
        return num_args + 1 + MAX_TIR_TEMPORARIES
    return 0


def _check_func_info(info: VMFuncInfo, num_instr: int) -> None:
    name = info.name
    if not isinstance(info.param_names, list) or not all(
        isinstance(p, str) for p in info.param_names
    ):
        raise BytecodeError(f"function {name!r}: param_names must be a list of str")
    if info.kind is VMFuncKind.PACKED_FUNC:
        return
    if not isinstance(info.num_args, int) or info.num_args < 0:
        raise BytecodeError(f"function {name!r} is declared but never defined")
    if len(info.param_names) != info.num_args:
        raise BytecodeError(
            f"function {name!r} has {info.num_args} parameters but "
            f"{len(info.param_names)} parameter names"
        )
    if info.kind is VMFuncKind.VM_TIR_FUNC:
        if info.register_file_size < info.num_args + 1:
            raise BytecodeError(
                f"compiled function {name!r} needs register_file_size >= num_args + 1 "
                f"({info.num_args + 1}), has {info.register_file_size}"
            )
        limit = max_register_file_size(info.kind, info.num_args, 0)
        if info.register_file_size > limit:
            raise BytecodeError(
                f"compiled function {name!r} has register_file_size {info.register_file_size}, "
                f"more than the {limit} allowed (num_args + 1 + {MAX_TIR_TEMPORARIES} "
                "temporaries)"
            )
        return
    if not 0 <= info.start_instr < info.end_instr <= num_instr:
        raise BytecodeError(
            f"VM function {name!r} has instruction range [{info.start_instr}, "
            f"{info.end_instr}) outside the {num_instr} instructions (or empty: a function "
            "must end with Ret)"
        )
    # Every register past the parameters is written by a Call of the function (anything else
    # would only ever hold None), so the register file a frame needs is bounded by what the
    # code can address, not by what the table claims: this is what keeps a 2**54 claim in a
    # tiny file from allocating gigabytes. ExecBuilder numbers registers densely, so what it
    # builds always meets the bound; the slack admits hand-numbered bytecode.
    count = info.end_instr - info.start_instr
    limit = max_register_file_size(info.kind, info.num_args, count)
    if not info.num_args <= info.register_file_size <= limit:
        raise BytecodeError(
            f"VM function {name!r} has register_file_size {info.register_file_size}: it must "
            f"be >= its {info.num_args} parameters and <= {limit} (the parameters, one "
            f"register per instruction of its {count}, and {REGISTER_SLACK} spare)"
        )


def _decode_one(
    words: Sequence[int],
    pc: int,
    info: VMFuncInfo,
    num_funcs: int,
    num_consts: int,
) -> Instruction:
    where = f"VM function {info.name!r}, instruction {pc}"
    size = info.register_file_size

    def register(reg: int, what: str, *, allow_vm: bool, allow_void: bool) -> int:
        if 0 <= reg < size or (allow_void and reg == VOID_REGISTER):
            return reg
        if allow_vm and reg == VM_REGISTER:
            return reg
        raise BytecodeError(
            f"{where}: {what} register {reg} is out of range (register file size {size})"
        )

    def jump(offset: int, forward_only: bool) -> int:
        # Goto may jump either way (never 0); If's false branch is always ahead (> 1), as in TVM.
        target = pc + offset
        bad_offset = offset <= 1 if forward_only else offset == 0
        if bad_offset or not info.start_instr <= target < info.end_instr:
            rule = "an If offset must be > 1" if forward_only else "a Goto offset must not be 0"
            raise BytecodeError(
                f"{where}: jump offset {offset} is invalid (target {target} must be inside "
                f"[{info.start_instr}, {info.end_instr}); {rule})"
            )
        return offset

    if not words:
        raise BytecodeError(f"{where}: empty instruction")
    op = words[0]
    expected = {Opcode.RET: 2, Opcode.GOTO: 2, Opcode.IF: 3}
    if op == Opcode.CALL:
        if len(words) < 4:
            raise BytecodeError(f"{where}: Call needs at least 4 words, has {len(words)}")
        _, dst, func_idx, num_args = words[:4]
        if num_args != len(words) - 4:
            raise BytecodeError(
                f"{where}: Call says {num_args} arguments but carries {len(words) - 4}"
            )
        if not 0 <= func_idx < num_funcs:
            raise BytecodeError(
                f"{where}: function index {func_idx} is out of range ({num_funcs} functions)"
            )
        register(dst, "destination", allow_vm=False, allow_void=True)
        args = []
        for word in words[4:]:
            kind, value = decode_arg(word)
            if kind not in _KINDS:
                raise BytecodeError(f"{where}: argument word {word:#x} has unknown kind {kind}")
            if kind == ArgKind.REGISTER:
                register(value, "argument", allow_vm=True, allow_void=True)
            elif kind == ArgKind.CONST_IDX and not 0 <= value < num_consts:
                raise BytecodeError(
                    f"{where}: constant index c[{value}] is out of range ({num_consts} constants)"
                )
            elif kind == ArgKind.FUNC_IDX and not 0 <= value < num_funcs:
                raise BytecodeError(
                    f"{where}: function index f[{value}] is out of range ({num_funcs} functions)"
                )
            args.append((kind, value))
        return Instruction(Opcode.CALL, dst, func_idx, tuple(args))
    if op not in expected:
        raise BytecodeError(f"{where}: unknown opcode {op}")
    opcode = Opcode(op)
    if len(words) != expected[opcode]:
        raise BytecodeError(
            f"{where}: {opcode.name} takes {expected[opcode]} words, has {len(words)}"
        )
    if opcode is Opcode.RET:
        return Instruction(opcode, register(words[1], "result", allow_vm=False, allow_void=True))
    if opcode is Opcode.GOTO:
        return Instruction(opcode, offset=jump(words[1], forward_only=False))
    cond = register(words[1], "condition", allow_vm=False, allow_void=False)
    return Instruction(opcode, cond, offset=jump(words[2], forward_only=True))
