"""Turning a validated VM function into what the dispatch loop runs.

Every VM function becomes a *frame template*: a list laid out as

``[registers 0..N-1 | %void | discard | %vm | constants, immediates and callees it uses]``

so that every instruction operand, whatever its kind, is one list index, and every ``Call``
becomes a small closure over its callee and those indices. The closures come from the fixed
factories below, parameterised only by validated indices: nothing from a file runs as code.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .bytecode import VM_REGISTER, VOID_REGISTER, ArgKind, Instruction, Opcode
from .closure import VMClosure
from .errors import VMError
from .executable import VMFuncInfo
from .runtime import DataType

if TYPE_CHECKING:
    from .vm import VirtualMachine

__all__ = ["PreparedFunction", "VMInstrumentReturnKind", "not_ready", "prepare"]


class VMInstrumentReturnKind(IntEnum):
    """What an instrument callback asks for before a call."""

    NO_OP = 0
    SKIP_RUN = 1


class PreparedFunction:
    """A VM function prepared for the dispatch loop (built by :func:`prepare`)."""

    __slots__ = (
        "closure",
        "code",
        "info",
        "invoke",
        "name",
        "num_args",
        "operands",
        "param_names",
        "template",
    )

    def __init__(self, info: VMFuncInfo) -> None:
        self.info = info
        self.name = info.name
        self.num_args = info.num_args
        self.param_names = list(info.param_names)
        self.template: list[Any] = []
        # Per instruction: (opcode, a, b) for the dispatch loop.
        self.code: list[tuple[int, Any, Any]] = []
        # Per Call instruction (by pc): (callee, symbol, operand slots), for instrumented runs.
        self.operands: dict[int, tuple[Any, str, tuple[int, ...]]] = {}
        self.invoke: Callable[..., Any] = not_ready
        self.closure: VMClosure | None = None


def not_ready(*args: Any) -> Any:  # pragma: no cover - replaced during construction
    raise VMError("VM function used before the VM finished loading")


def prepare(
    fn: PreparedFunction, vm: VirtualMachine, instrument: Callable[..., Any] | None
) -> None:
    """Build ``fn.template`` and ``fn.code`` from the validated instructions."""
    ex, pool, constants = vm.executable, vm._pool, vm._constants
    info = fn.info
    size = info.register_file_size
    void_slot, discard_slot, vm_slot = size, size + 1, size + 2
    template: list[Any] = [None] * size + [None, None, vm]
    extra: dict[tuple[int, int], int] = {}

    def slot(kind: int, value: int) -> int:
        if kind == ArgKind.REGISTER:
            if value == VOID_REGISTER:
                return void_slot
            if value == VM_REGISTER:
                return vm_slot
            return value
        key = (kind, value)
        index = extra.get(key)
        if index is None:
            if kind == ArgKind.IMMEDIATE:
                item: Any = value
            elif kind == ArgKind.CONST_IDX:
                item = constants[value]
            else:
                item = pool[value]
            index = extra[key] = len(template)
            template.append(item)
        return index

    code: list[tuple[int, Any, Any]] = []
    fn.operands = {}
    for pc in range(info.start_instr, info.end_instr):
        ins: Instruction = ex.instructions[pc]
        if ins.opcode is Opcode.CALL:
            callee_info = ex.func_table[ins.func_idx]
            entry = pool[ins.func_idx]
            callee = vm._direct[ins.func_idx]
            slots = tuple(slot(k, v) for k, v in ins.args)
            dst = discard_slot if ins.reg == VOID_REGISTER else ins.reg
            local_pc = pc - info.start_instr
            fn.operands[local_pc] = (entry, callee_info.name, slots)
            if instrument is None:
                bound = _bind_call(callee, slots, template, size)
            else:
                bound = _bind_instrumented(callee, entry, callee_info.name, slots, instrument)
            code.append((1, dst, bound))
        elif ins.opcode is Opcode.RET:
            code.append((2, void_slot if ins.reg == VOID_REGISTER else ins.reg, None))
        elif ins.opcode is Opcode.GOTO:
            code.append((3, ins.offset, None))
        else:
            code.append((4, ins.reg, ins.offset))
    fn.template = template
    fn.code = code


def _bind_call(
    f: Callable[..., Any], slots: tuple[int, ...], template: list[Any], size: int
) -> Callable[[list[Any]], Any]:
    """A closure calling ``f`` with the register-file entries at ``slots``.

    Slots at or above ``size`` hold values fixed for the VM's lifetime (``%vm``, ``%void``,
    immediates, constants, callees). Short calls read every slot from the frame; long calls
    (``match_shape``, ``make_shape``: a few registers and a tail of immediates) bind their
    fixed values once, as tuples spliced around the register reads.
    """
    n = len(slots)
    if n == 0:
        return lambda regs: f()
    if n == 1:
        (a,) = slots
        return lambda regs: f(regs[a])
    if n == 2:
        a, b = slots
        return lambda regs: f(regs[a], regs[b])
    if n == 3:
        a, b, c = slots
        return lambda regs: f(regs[a], regs[b], regs[c])
    if n == 4:
        a, b, c, d = slots
        return lambda regs: f(regs[a], regs[b], regs[c], regs[d])
    registers = [i for i, s in enumerate(slots) if s < size]
    # Split the argument list at each register: fixed runs become tuples bound now.
    runs: list[tuple[Any, ...]] = []
    start = 0
    for position in registers:
        runs.append(tuple(template[s] for s in slots[start:position]))
        start = position + 1
    runs.append(tuple(template[s] for s in slots[start:]))
    reg = [slots[i] for i in registers]
    if len(reg) == 0:
        (t0,) = runs
        return lambda regs: f(*t0)
    if len(reg) == 1:
        (r0,), (t0, t1) = reg, runs
        return lambda regs: f(*t0, regs[r0], *t1)
    if len(reg) == 2:
        (r0, r1), (t0, t1, t2) = reg, runs
        return lambda regs: f(*t0, regs[r0], *t1, regs[r1], *t2)
    if len(reg) == 3:
        (r0, r1, r2), (t0, t1, t2, t3) = reg, runs
        return lambda regs: f(*t0, regs[r0], *t1, regs[r1], *t2, regs[r2], *t3)
    get = itemgetter(*slots)
    return lambda regs: f(*get(regs))


def _bind_instrumented(
    f: Callable[..., Any],
    func_value: Any,
    symbol: str,
    slots: tuple[int, ...],
    instrument: Callable[..., Any],
) -> Callable[[list[Any]], Any]:
    skip = int(VMInstrumentReturnKind.SKIP_RUN)

    def call(regs: list[Any]) -> Any:
        args = [regs[i] for i in slots]
        shown = [str(a) if isinstance(a, DataType) else a for a in args]
        decision = instrument(func_value, symbol, True, None, *shown)
        if decision is not None and decision == skip:
            return None
        result = f(*args)
        instrument(func_value, symbol, False, result, *shown)
        return result

    return call
