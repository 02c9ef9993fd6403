"""Turning a validated VM function into what the dispatch loop runs.

Every VM function becomes a *frame template*: a list laid out as

``[registers 0..N-1 | %void | discard | %vm | constants, immediates and callees it uses]``

so that every instruction operand, whatever its kind, is one list index. Every ``Call``
follows its :class:`~relaxvm.vm.callplan.CallPlan` (the callee's own specialisation, or the
generic call) and becomes one dispatch-loop entry ``(opcode, destination, data)``: a register
write (:data:`OP_SET`, :data:`OP_MOVE`), a direct call of the callee with up to three slots
(:data:`OP_CALL1` ...), or a small closure over the callee and the slots (:data:`OP_CALL`).
The closures come from the fixed factories below, parameterised only by validated indices:
nothing from a file runs as code, and nothing here knows what any builtin does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..errors import RelaxVMError, VMError, VMIndexError, VMTypeError, VMValueError
from .bytecode import VM_REGISTER, VOID_REGISTER, ArgKind, Instruction, Opcode
from .callplan import CALL, CONSTANT, FORWARD, GENERIC, CallPlan, plan_as_call, plan_call
from .closure import VMClosure
from .diagnostics import builtin_failure_message
from .executable.executable import VMFuncInfo
from .instrument import VMInstrumentReturnKind, instrumented

if TYPE_CHECKING:
    from .executable.executable import Executable
    from .interpreter import VirtualMachine
    from .profiler import Profiler

__all__ = [
    "OP_CALL",
    "OP_CALL1",
    "OP_CALL2",
    "OP_CALL3",
    "OP_GOTO",
    "OP_IF",
    "OP_MOVE",
    "OP_RET",
    "OP_SET",
    "PreparedFunction",
    "VMInstrumentReturnKind",
    "contained_call_error",
    "not_ready",
    "prepare",
]

#: Opcodes of ``PreparedFunction.code``, entries ``(opcode, a, b)``. The first four mirror the
#: bytecode; the rest are generic register writes and calls, so that the commonest calls
#: cost the loop no closure frame. None of them is specific to a builtin.
OP_CALL = 1  # regs[a] = b(regs): a bound closure
OP_RET = 2  # return regs[a]
OP_GOTO = 3  # pc += a
OP_IF = 4  # pc += 1 if regs[a] else b
OP_SET = 5  # regs[a] = b (a CONSTANT plan)
OP_MOVE = 6  # regs[a] = regs[b] (a FORWARD plan)
OP_CALL1 = 7  # f, s = b; regs[a] = f(regs[s])
OP_CALL2 = 8  # f, s, t = b; regs[a] = f(regs[s], regs[t])
OP_CALL3 = 9  # f, s, t, u = b; regs[a] = f(regs[s], regs[t], regs[u])


class PreparedFunction:
    """A VM function prepared for the dispatch loop (built by :func:`prepare`)."""

    __slots__ = (
        "closure",
        "code",
        "compiled",
        "info",
        "invoke",
        "name",
        "num_args",
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
        self.invoke: Callable[..., Any] = not_ready
        # Compiled mode: the function generated from the bytecode (relaxvm.vm.compiled).
        self.compiled: Callable[..., Any] = not_ready
        self.closure: VMClosure | None = None


def not_ready(*args: Any) -> Any:  # pragma: no cover - replaced during construction
    raise VMError("VM function used before the VM finished loading")


def prepare(
    fn: PreparedFunction,
    vm: VirtualMachine,
    instrument: Callable[..., Any] | None,
    profiler: Profiler | None = None,
) -> None:
    """Build ``fn.template`` and ``fn.code`` from the validated instructions.

    With a ``profiler`` (``vm.profile``), every Call becomes a call of what
    :meth:`Profiler.wrap <relaxvm.vm.profiler.Profiler.wrap>` returns for it, whatever its
    plan; without one, nothing of the profiler is left in the code.
    """
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
    for pc in range(info.start_instr, info.end_instr):
        ins: Instruction = ex.instructions[pc]
        if ins.opcode is Opcode.CALL:
            dst = discard_slot if ins.reg == VOID_REGISTER else ins.reg
            plan = plan_call(vm, ins, pc, instrument)
            if profiler is not None:
                f, slots = _call_target(vm, ins, plan, instrument, slot)
                code.append(_bind_slots(dst, profiler.wrap(pc, f), slots))
            elif plan.kind == CONSTANT:
                code.append((OP_SET, dst, plan.value))
            elif plan.kind == FORWARD:
                code.append((OP_MOVE, dst, plan.registers[0]))
            elif plan.kind == CALL:
                code.append(_bind_slots(dst, plan.func, plan.registers))
            else:
                f, slots = _call_target(vm, ins, plan, instrument, slot)
                code.append(_bind_slots(dst, f, slots))
        elif ins.opcode is Opcode.RET:
            code.append((OP_RET, void_slot if ins.reg == VOID_REGISTER else ins.reg, None))
        elif ins.opcode is Opcode.GOTO:
            code.append((OP_GOTO, ins.offset, None))
        else:
            code.append((OP_IF, ins.reg, ins.offset))
    fn.template = template
    fn.code = code


def _bind_slots(dst: int, f: Callable[..., Any], slots: tuple[int, ...]) -> tuple[int, int, Any]:
    """The loop entry calling ``f`` with the frame entries at ``slots``: one of the direct
    call opcodes for up to three, a closure (:func:`_bind_call`) beyond."""
    n = len(slots)
    if n == 1:
        return (OP_CALL1, dst, (f, slots[0]))
    if n == 2:
        return (OP_CALL2, dst, (f, *slots))
    if n == 3:
        return (OP_CALL3, dst, (f, *slots))
    return (OP_CALL, dst, _bind_call(f, slots))


def _bind_call(f: Callable[..., Any], slots: tuple[int, ...]) -> Callable[[list[Any]], Any]:
    """A closure calling ``f`` with the frame entries at ``slots`` (fixed values included:
    they sit in the template's tail)."""
    n = len(slots)
    if n == 0:
        return lambda regs: f()
    if n == 4:
        a, b, c, d = slots
        return lambda regs: f(regs[a], regs[b], regs[c], regs[d])
    if n == 5:
        a, b, c, d, e = slots
        return lambda regs: f(regs[a], regs[b], regs[c], regs[d], regs[e])
    get = itemgetter(*slots)
    if n == 1:
        return lambda regs: f(get(regs))
    return lambda regs: f(*get(regs))


def _call_target(
    vm: VirtualMachine,
    ins: Instruction,
    plan: CallPlan,
    instrument: Callable[..., Any] | None,
    slot: Callable[[int, int], int],
) -> tuple[Callable[..., Any], tuple[int, ...]]:
    """What a call site calls, and the frame slots of its arguments, as one plain call."""
    if plan.kind != GENERIC:
        return plan_as_call(plan)
    slots = tuple(slot(k, v) for k, v in ins.args)
    if instrument is None:
        return plan.callee, slots
    symbol = vm.executable.func_table[ins.func_idx].name
    return instrumented(plan.callee, vm._pool[ins.func_idx], symbol, instrument), slots


#: Plain Python errors a builtin or kernel raises when a program hands it values of the wrong
#: type or content, and the relaxvm error each becomes (still an instance of the original's
#: base class where there is one, so ``except TypeError`` keeps working).
_CONTAINED: tuple[tuple[type[BaseException], type[RelaxVMError]], ...] = (
    (ctypes.ArgumentError, VMTypeError),
    (TypeError, VMTypeError),
    (AttributeError, VMTypeError),
    (IndexError, VMIndexError),
    (KeyError, VMIndexError),
    (ValueError, VMValueError),
    (OverflowError, VMValueError),
)


def contained_call_error(
    err: BaseException, ex: Executable, index: int | None
) -> RelaxVMError | None:
    """The relaxvm error to raise instead of ``err``, or ``None`` to re-raise ``err`` as is.

    A program loaded from a file decides what every builtin and kernel is called with, so a
    damaged one can make them fail in plain Python ways (``AttributeError`` on a string passed
    as a tensor, ``ctypes.ArgumentError`` in a kernel call). Such failures are the file's, and
    surface as :mod:`relaxvm.errors` classes naming the callee, with ``err`` as the cause.
    Functions the user registered under other names keep their own exception types. Called
    on the error path only (both exec modes), so a run pays nothing for it.

    Parameters
    ----------
    err : BaseException
        What the instruction raised (its trace notes already added).
    ex : Executable
    index : int or None
        The absolute instruction that raised it, when known.
    """
    if index is None or isinstance(err, RelaxVMError):
        return None
    replacement = next((new for old, new in _CONTAINED if isinstance(err, old)), None)
    if replacement is None:
        return None
    ins = ex.instructions[index]
    if ins.opcode is not Opcode.CALL:
        return None
    name = ex.func_table[ins.func_idx].name
    if not name.startswith("vm.builtin.") and not is_import(ex, name):
        return None
    contained = replacement(builtin_failure_message(name, err))
    add_note = getattr(contained, "add_note", None)  # Python 3.10 has no notes
    if add_note is not None:
        for note in getattr(err, "__notes__", ()):
            add_note(note)
    return contained


def is_import(ex: Executable, name: str) -> bool:
    """Whether ``name`` is a kernel the executable imports (it is called by that name)."""
    return any(module.get_function(name, query_imports=True) is not None for module in ex.imports)
