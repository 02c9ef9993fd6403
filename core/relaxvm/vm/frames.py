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

from ..errors import VMError
from ..runtime import DataType
from .bytecode import VM_REGISTER, VOID_REGISTER, ArgKind, Instruction, Opcode
from .closure import VMClosure
from .executable.executable import VMFuncInfo

if TYPE_CHECKING:
    from .interpreter import VirtualMachine

__all__ = [
    "OP_ALLOC_TENSOR",
    "OP_KILL",
    "PreparedFunction",
    "VMInstrumentReturnKind",
    "not_ready",
    "prepare",
    "static_match_dims",
    "static_tensor_check",
]


class VMInstrumentReturnKind(IntEnum):
    """What an instrument callback asks for before a call."""

    NO_OP = 0
    SKIP_RUN = 1


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
        # Compiled mode: the function generated from the bytecode (relaxvm.vm.compiled).
        self.compiled: Callable[..., Any] = not_ready
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
    intrinsics = _intrinsics() if instrument is None else {}
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
            special = intrinsics.get(id(callee))
            inline = special(callee, slots, template, size) if special is not None else None
            if inline is not None:  # run by the dispatch loop itself, no call
                code.append((inline[0], dst, inline[1]))
                continue
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


def _intrinsics() -> dict[int, Callable[..., Any]]:
    """Binders for the builtins every compiled program calls per op, by callee identity.

    Each binder returns ``(opcode, data)``: an inline opcode run by the dispatch loop itself
    (:data:`OP_KILL`, :data:`OP_ALLOC_TENSOR`) or ``(1, closure)``, a call closure doing
    exactly what the builtin's fast path does; or None to bind the call normally. The
    builtin itself still handles every other case (and raises every error).
    """
    from ..registry import functions as registry

    found: dict[int, Callable[..., Any]] = {}
    null_value = registry.get_global_func("vm.builtin.null_value", allow_missing=True)
    if null_value is not None:
        found[id(null_value)] = _bind_null_value
    alloc_tensor = registry.get_global_func("vm.builtin.alloc_tensor", allow_missing=True)
    if alloc_tensor is not None:
        found[id(alloc_tensor)] = _bind_alloc_tensor
    match_shape = registry.get_global_func("vm.builtin.match_shape", allow_missing=True)
    if match_shape is not None:
        found[id(match_shape)] = _bind_match_shape
    check = registry.get_global_func("vm.builtin.check_tensor_info", allow_missing=True)
    if check is not None:
        found[id(check)] = _bind_check_tensor_info
    return found


def static_tensor_check(values: list[Any]) -> tuple[int, DataType] | None:
    """``(ndim, dtype)`` of a ``check_tensor_info(value, ndim, dtype, err_ctx)`` call whose
    fixed arguments (from ``ndim`` on) are ``values``, when ``ndim`` is an int >= 0 and
    ``dtype`` a DataType; None otherwise (the call then always goes to the builtin).

    Such a call passes when the value is a Tensor with that many dimensions and that very
    (interned) DataType, so that test can stand in for it; anything else goes to the
    builtin, which accepts what it accepts and raises the exact error.
    """
    if len(values) != 3:
        return None
    ndim, dtype = values[0], values[1]
    if type(ndim) is not int or ndim < 0 or type(dtype) is not DataType:
        return None
    return ndim, dtype


def _bind_check_tensor_info(
    f: Callable[..., Any], slots: tuple[int, ...], template: list[Any], size: int
) -> tuple[int, Any] | None:
    """A call closure testing class, ndim and dtype first (see :func:`static_tensor_check`),
    calling the builtin only when that fails."""
    if len(slots) != 4 or not slots[0] < size or min(slots[1:]) < size:
        return None
    fixed = static_tensor_check([template[i] for i in slots[1:]])
    if fixed is None:
        return None
    from ..runtime import Tensor

    ndim, dtype = fixed
    call = _bind_call(f, slots, template, size)
    value_slot = slots[0]

    def check(regs: list[Any]) -> Any:
        value = regs[value_slot]
        if value.__class__ is Tensor and len(value.shape) == ndim and value.dtype is dtype:
            return None
        return call(regs)

    return (1, check)


def static_match_dims(values: list[Any]) -> tuple[int, ...] | None:
    """The dimensions a ``match_shape(value, heap, size, code_0, v_0, ...[, err_ctx])`` call
    asserts, given its fixed arguments from ``size`` on, when every code is
    ``ASSERT_EQUAL_TO_IMM`` (0) with an int value; None otherwise.

    Such a call passes exactly when the value is a Tensor whose shape equals these
    dimensions, so that one tuple comparison can stand in for the call; every other case
    still goes to the builtin (which raises the exact error).
    """
    if not values or type(values[0]) is not int:
        return None
    ndim = values[0]
    pairs = values[1:]
    if ndim < 0 or len(pairs) - 2 * ndim not in (0, 1):
        return None
    dims = []
    for index in range(ndim):
        code, dim = pairs[2 * index], pairs[2 * index + 1]
        if type(code) is not int or code != 0 or type(dim) is not int:
            return None
        dims.append(dim)
    return tuple(dims)


def _bind_match_shape(
    f: Callable[..., Any], slots: tuple[int, ...], template: list[Any], size: int
) -> tuple[int, Any] | None:
    """A call closure checking ``value.shape == dims`` first (see :func:`static_match_dims`),
    calling the builtin only when that fails."""
    if len(slots) < 3 or not slots[0] < size or min(slots[2:]) < size:
        return None
    dims = static_match_dims([template[i] for i in slots[2:]])
    if dims is None:
        return None
    from ..runtime import Tensor

    call = _bind_call(f, slots, template, size)
    value_slot = slots[0]

    def match(regs: list[Any]) -> Any:
        value = regs[value_slot]
        if value.__class__ is Tensor and value.shape == dims:
            return None
        return call(regs)

    return (1, match)


#: Opcodes of ``PreparedFunction.code`` beyond the bytecode's (1 call, 2 ret, 3 goto, 4 if):
#: a register kill (``null_value()``) and an ``alloc_tensor`` with fixed offset, shape and
#: dtype, both done inline by the dispatch loop (no Python call per instruction).
OP_KILL = 5
OP_ALLOC_TENSOR = 6


def _bind_null_value(
    f: Callable[..., Any], slots: tuple[int, ...], template: list[Any], size: int
) -> tuple[int, Any] | None:
    return (OP_KILL, None) if not slots else None


def static_tensor_end(offset: Any, shape: Any, dtype: Any) -> int | None:
    """The byte end of an ``alloc_tensor`` whose offset, shape and dtype are fixed values
    (None when they are not: the call then goes to the builtin)."""
    from ..runtime import Shape

    if type(offset) is not int or offset < 0 or type(shape) is not Shape:
        return None
    if type(dtype) is not DataType:
        return None
    size = 1
    for dim in shape:
        size *= dim
    return offset + size * ((dtype.bits * dtype.lanes + 7) >> 3)


def _bind_alloc_tensor(
    f: Callable[..., Any], slots: tuple[int, ...], template: list[Any], size: int
) -> tuple[int, Any] | None:
    """``(storage register, offset, shape, dtype, byte end, builtin)`` for the dispatch loop:
    it builds the Tensor when the storage is a Storage holding it, else calls the builtin
    (which converts or raises the exact error)."""
    if len(slots) != 4 or not slots[0] < size:
        return None
    if slots[2] < size and slots[1] >= size and slots[3] >= size:
        return _bind_alloc_tensor_shape_reg(f, slots, template, size)
    if min(slots[1:]) < size:
        return None
    offset, shape, dtype = (template[i] for i in slots[1:])
    end = static_tensor_end(offset, shape, dtype)
    if end is None:
        return None
    return (OP_ALLOC_TENSOR, (slots[0], offset, shape, dtype, end, f))


def _bind_alloc_tensor_shape_reg(
    f: Callable[..., Any], slots: tuple[int, ...], template: list[Any], size: int
) -> tuple[int, Any] | None:
    """``alloc_tensor(storage, offset, shape register, dtype)`` (a shape made at run time):
    a call closure doing the builtin's fast path, the byte count taken from the shape."""
    import math

    from ..runtime import Shape, Storage, Tensor

    storage_slot, offset, shape_slot, dtype = (
        slots[0],
        template[slots[1]],
        slots[2],
        template[slots[3]],
    )
    if type(offset) is not int or offset < 0 or type(dtype) is not DataType:
        return None
    itemsize = (dtype.bits * dtype.lanes + 7) >> 3
    prod = math.prod

    def alloc(regs: list[Any]) -> Any:
        storage, shape = regs[storage_slot], regs[shape_slot]
        if (
            storage.__class__ is Storage
            and shape.__class__ is Shape
            and storage.nbytes >= offset + prod(shape) * itemsize
        ):
            return Tensor(storage, offset, shape, dtype)
        return f(storage, offset, shape, dtype)

    return (1, alloc)


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
