"""One plan per ``Call`` instruction, shared by the dispatch loop and compiled mode.

The VM resolves every callee by name (executable imports first, then the global registry)
and then asks the callee whether it specialises the call site (the protocol of
:mod:`relaxvm.registry.specialization`). The answer becomes a :class:`CallPlan`, which both
exec modes turn into code: :mod:`relaxvm.vm.frames` into dispatch-loop entries,
:mod:`relaxvm.vm.compiled` into Python source. The VM itself knows no builtin: whatever is
registered under a name is what runs, with whatever fast path *it* offers.

With an instrument set (``vm.set_instrument``) every call stays generic, so that the
instrument sees each one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import PluginError
from ..registry.specialization import REGISTER, CallSite, Specialization, get_specializer
from .bytecode import VM_REGISTER, VOID_REGISTER, ArgKind, Instruction
from .executable.executable import VMFuncKind

if TYPE_CHECKING:
    from .interpreter import VirtualMachine

__all__ = ["CALL", "CONSTANT", "FORWARD", "GENERIC", "CallPlan", "plan_as_call", "plan_call"]

#: Plan kinds. GENERIC: call ``func`` (the resolved callee) with every argument; CALL: call
#: ``func`` (the specialised function) with the register arguments only; CONSTANT: the
#: destination receives ``value``; FORWARD: it receives the register ``registers[0]``.
GENERIC, CALL, CONSTANT, FORWARD = "generic", "call", "constant", "forward"


class CallPlan:
    """What one ``Call`` instruction does (see the module docstring).

    Attributes
    ----------
    kind : str
        :data:`GENERIC`, :data:`CALL`, :data:`CONSTANT` or :data:`FORWARD`.
    func : callable
        CALL: the specialised function; otherwise the resolved callee.
    callee : callable
        The resolved callee (what ``{call}`` in an inline template calls).
    registers : tuple of int
        CALL: the registers read, in order; FORWARD: the one register forwarded.
    value : Any
        CONSTANT: the value written.
    inline, bound
        CALL: the specialisation's inline template and its named values (compiled mode).
    """

    __slots__ = ("bound", "callee", "func", "inline", "kind", "registers", "value")

    def __init__(
        self,
        kind: str,
        callee: Callable[..., Any],
        func: Callable[..., Any] | None = None,
        registers: tuple[int, ...] = (),
        value: Any = None,
        inline: str | None = None,
        bound: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.callee = callee
        self.func: Callable[..., Any] = callee if func is None else func
        self.registers = registers
        self.value = value
        self.inline = inline
        self.bound = bound or {}

    def __repr__(self) -> str:
        return f"CallPlan({self.kind}, registers={self.registers})"


def plan_as_call(plan: CallPlan) -> tuple[Callable[..., Any], tuple[int, ...]]:
    """A specialised plan (not :data:`GENERIC`) as one plain call: the function and the
    registers it takes.

    The profiler times every Call instruction, even one whose plan is a register write: a
    constant becomes a function of no arguments, a forward the identity of its register.
    """
    if plan.kind == CONSTANT:
        value = plan.value
        return (lambda: value), ()
    if plan.kind == FORWARD:
        return _identity, plan.registers
    return plan.func, plan.registers


def _identity(value: Any) -> Any:
    return value


def fixed_value(vm: VirtualMachine, kind: int, value: int) -> Any:
    """The value of a non-register argument (or ``%vm`` / ``%void``) as the VM sees it;
    :data:`REGISTER` for an ordinary register."""
    if kind == ArgKind.REGISTER:
        if value == VOID_REGISTER:
            return None
        if value == VM_REGISTER:
            return vm
        return REGISTER
    if kind == ArgKind.IMMEDIATE:
        return value
    if kind == ArgKind.CONST_IDX:
        return vm._constants[value]
    return vm._pool[value]


def plan_call(
    vm: VirtualMachine, ins: Instruction, pc: int, instrument: Callable[..., Any] | None
) -> CallPlan:
    """The plan of the ``Call`` instruction ``ins`` (at absolute ``pc``) for ``vm``.

    Plans are cached per VM (``vm._plans``, emptied when the instrument changes), so the
    callee's specialiser runs once per call site whichever exec mode asks.

    Raises
    ------
    PluginError
        The callee's specialiser raised, or returned something that is not a
        :class:`~relaxvm.registry.specialization.Specialization` or None.
    """
    plan = vm._plans.get(pc)
    if plan is None:
        plan = vm._plans[pc] = _plan(vm, ins, pc, instrument)
    return plan


def _plan(
    vm: VirtualMachine, ins: Instruction, pc: int, instrument: Callable[..., Any] | None
) -> CallPlan:
    callee = vm._direct[ins.func_idx]
    generic = CallPlan(GENERIC, callee, func=callee)
    info = vm.executable.func_table[ins.func_idx]
    if instrument is not None or info.kind is not VMFuncKind.PACKED_FUNC:
        return generic
    entry = vm._pool[ins.func_idx]
    spec = get_specializer(entry)
    if spec is None:
        return generic
    site = CallSite(info.name, entry, tuple(fixed_value(vm, k, v) for k, v in ins.args))
    try:
        result = spec(site)
    except Exception as err:
        raise PluginError(
            f"the specialiser of {info.name} ({_source(info.name)}) failed on the call at "
            f"instruction {pc}: {type(err).__name__}: {err}"
        ) from err
    if result is None:
        return generic
    if not isinstance(result, Specialization):
        raise PluginError(
            f"the specialiser of {info.name} ({_source(info.name)}) returned "
            f"{type(result).__name__}; expected a Specialization or None"
        )
    registers = tuple(int(ins.args[p][1]) for p in site.register_positions)
    if result.kind == "constant":
        return CallPlan(CONSTANT, callee, value=result.value)
    if result.kind == "forward":
        position = result.position
        if position >= len(site.args):
            raise PluginError(
                f"the specialiser of {info.name} forwards argument {position} of a call with "
                f"{len(site.args)} arguments"
            )
        if not site.is_register(position):  # a fixed value: the destination receives it
            return CallPlan(CONSTANT, callee, value=site.args[position])
        return CallPlan(FORWARD, callee, registers=(int(ins.args[position][1]),))
    for field in result.bound:
        if not field.isidentifier():
            raise PluginError(f"the specialiser of {info.name}: bad inline name {field!r}")
    if result.inline is not None:
        _check_inline_registers(info.name, result.inline, len(registers))
    return CallPlan(CALL, callee, result.func, registers, inline=result.inline, bound=result.bound)


def _check_inline_registers(name: str, inline: str, count: int) -> None:
    from ..registry.specialization import template_fields

    for field in template_fields(inline):
        if field.isdigit() and int(field) >= count:
            raise PluginError(
                f"the specialiser of {name}: inline template field {{{field}}} names a "
                f"register argument the call site does not have (it has {count})"
            )


def _source(name: str) -> str:
    from ..registry import functions

    source = functions._sources.get(name)
    return source if source is not None else "from the executable's imports"
