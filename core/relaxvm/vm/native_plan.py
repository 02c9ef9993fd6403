"""Whole-function native calls: replay a recorded run of a VM function as one native call.

For a VM function whose shapes are fixed once its arguments' shapes are known, every call
with the same argument signature makes the same kernel calls on the same shapes; only the
input and output addresses change. The first call with a signature runs the ordinary code
(the dispatch loop) while recording every Call it makes. When the recorded run qualifies,
it becomes a :class:`~relaxvm.vm.native_replay.NativePlan`: one native entry, built by the kernels' target, that calls
every kernel in order with its arguments planned once. Later calls with that signature check
the arguments in Python (one tuple comparison), allocate the outputs, make one native call
and build the return value as the ordinary run would.

A run qualifies when the function is straight-line (no ``If``/``Goto``), and every callee is
either a kernel offering ``native_call`` (which must describe every call of the run) or a
function declared :func:`replay_safe` by the plugin that registers it (shape checks,
allocation, views, tuples: what a replay may skip because, for the same signature, it
returns the same kind of result and moves no tensor data). The VM knows no builtin: the
declaration is the builtin's own. Memory is planned from the run: each kernel pointer is an
argument's address plus an offset, an address that stays valid (a constant, or an
intermediate the plan keeps alive and reuses), or an output's address plus an offset
(outputs are allocated fresh on every call by repeating the call that allocated them).
Kernel calls whose writes reach no output and which read no argument data (shape functions
filling the shape heap for skipped builtins) are left out. A
kernel writing into an argument or constant, an output that aliases an argument or
constant, or any other value in the return makes the run not qualify, and calls with that
signature keep the ordinary path.

Errors: a signature that differs from every plan's takes the ordinary path, which raises
exactly what it always raises. A nonzero status from the native entry re-runs the call
through the ordinary path (kernels are pure functions of their inputs), which raises the
kernel's own error. The switch: ``RELAXVM_NATIVE_FUNCTIONS=0`` in the environment, or
``VirtualMachine(..., native_functions=False)``, or the attribute ``vm.native_functions``.
An instrument or a running ``vm.profile`` turns the path off while set, so that each
instruction is still seen.

The native-call protocol (duck-typed, so that the VM imports no target): a callee's
``native_call(*args)`` returns ``(builder, address, pointers, ints, written)`` or None:
what its call would pass to its native entry (``int32 f(void*..., int64...)``), and
``builder(num_bases, steps)``, which compiles calls of such entries into one entry
(``relaxvm_llvm.sequence`` documents the arguments) with ``run(*bases) -> status`` and
``failed_step()``. Every kernel of a plan must name the same builder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..runtime import Shape, Tensor
from .bytecode import Opcode
from .executable.executable import VMFuncKind
from .native_replay import MISS, NO_MATCH, NativePlan, NotEligible, Record, build_plan

if TYPE_CHECKING:
    from .frames import PreparedFunction
    from .interpreter import VirtualMachine

__all__ = [
    "MAX_PLANS",
    "NativePlan",
    "enabled_by_default",
    "install",
    "is_replay_safe",
    "plans_of",
    "replay_safe",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The attribute :func:`replay_safe` sets on a function.
_ATTRIBUTE = "__relaxvm_replay_safe__"
#: Plans kept per function (one per argument signature); further signatures run as usual.
MAX_PLANS = 4
#: Recording runs per function; after that, new signatures run as usual.
MAX_TRACES = 16


def replay_safe(func: F) -> F:
    """Declare ``func`` skippable when a recorded run of a VM function is replayed.

    Declare a function only when, called with arguments of the same types, shapes, dtypes,
    devices and plain values, it succeeds again with an equivalent result, reads and writes
    no tensor data, and has no effect besides allocating memory (shape checks, shape
    arithmetic, allocation, views, tuples). A function registered with ``override=True``
    in its place is not declared unless it says so itself.
    """
    setattr(func, _ATTRIBUTE, True)
    return func


def is_replay_safe(func: Any) -> bool:
    """Whether ``func`` was declared with :func:`replay_safe`."""
    return getattr(func, _ATTRIBUTE, False) is True


def enabled_by_default() -> bool:
    """The default of ``VirtualMachine(native_functions=None)``: on unless the environment
    sets ``RELAXVM_NATIVE_FUNCTIONS=0``."""
    return os.environ.get("RELAXVM_NATIVE_FUNCTIONS", "1").strip() not in ("0", "false", "off")


def _straight_line(vm: VirtualMachine, fn: PreparedFunction) -> bool:
    """Whether ``fn`` can ever qualify: straight-line code whose every callee is a kernel
    that describes its calls or a replay-safe function."""
    ex = vm.executable
    info = fn.info
    if info.end_instr <= info.start_instr:
        return False
    for pc in range(info.start_instr, info.end_instr):
        ins = ex.instructions[pc]
        if ins.opcode is Opcode.RET:
            return pc == info.end_instr - 1
        if ins.opcode is not Opcode.CALL:
            return False
        if ex.func_table[ins.func_idx].kind is not VMFuncKind.PACKED_FUNC:
            return False
        entry = vm._pool[ins.func_idx]
        if not is_replay_safe(entry) and not callable(getattr(entry, "native_call", None)):
            return False
    return False


def install(vm: VirtualMachine) -> dict[str, _FunctionState]:
    """Give every VM function that can qualify the whole-function path (``fn.invoke``).

    Returns the per-function state by name (what :func:`plans_of` reads).
    """
    states: dict[str, _FunctionState] = {}
    for name, fn in vm._functions.items():
        if fn.info.kind is VMFuncKind.VM_FUNC and _straight_line(vm, fn):
            state = states[name] = _FunctionState(vm, fn, fn.invoke)
            fn.invoke = state.make_invoke()
    return states


def plans_of(vm: VirtualMachine, func_name: str) -> list[NativePlan]:
    """The plans ``vm`` holds for ``func_name`` (empty when it has none)."""
    state = vm._native.get(func_name)
    return [] if state is None else list(state.plans)


def _key(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The argument signature, or None when an argument is not a Tensor, int or Shape."""
    key: list[Any] = []
    for a in args:
        t = type(a)
        if t is Tensor:
            key.append((a.shape, a.dtype, a.device))
        elif t is int or t is Shape:
            key.append((t, a))
        else:
            return None
    return tuple(key)


class _FunctionState:
    """One VM function's plans and recording budget."""

    def __init__(
        self, vm: VirtualMachine, fn: PreparedFunction, invoke: Callable[..., Any]
    ) -> None:
        self.vm = vm
        self.fn = fn
        self.invoke = invoke
        #: The plans, in the order they were made (replaced whole, never mutated).
        self.plans: tuple[NativePlan, ...] = ()
        self.rejected: set[tuple[Any, ...]] = set()
        self.traces = 0
        #: No more recordings (plan or recording budget spent).
        self.closed = False
        #: Why the last recorded run did not qualify (for tests and debugging).
        self.last_reason = ""
        self.lock = threading.Lock()

    def make_invoke(self) -> Callable[..., Any]:
        vm, invoke, num_args, state = self.vm, self.invoke, self.fn.num_args, self
        record = self.record

        def native_invoke(*args: Any) -> Any:
            if (
                vm.native_functions
                and vm._profiler is None
                and vm._instrument is None
                and len(args) == num_args
            ):
                for plan in state.plans:
                    result = plan.call(*args)
                    if result is NO_MATCH:
                        continue
                    if result is MISS:
                        return invoke(*args)  # raises what the native run hit, or runs
                    return result
                if not state.closed:
                    return record(args)
            return invoke(*args)

        native_invoke.__name__ = self.fn.name
        return native_invoke

    def record(self, args: tuple[Any, ...]) -> Any:
        """Run the call with every Call recorded; keep a plan when the run qualifies."""
        key = _key(args)
        with self.lock:
            go = key is not None and key not in self.rejected and not self.closed
            if go:
                self.traces += 1
                self.closed = self.traces >= MAX_TRACES
        if not go or key is None:
            return self.invoke(*args)
        from .frames import PreparedFunction, prepare

        recorder = _Recorder(self.vm)
        traced = PreparedFunction(self.fn.info)
        # The profiler's hook wraps every call site of a fresh copy of the function (the
        # plans and errors are the ordinary ones); the function's own code is untouched.
        prepare(traced, self.vm, None, recorder)  # type: ignore[arg-type]
        try:
            result = self.vm._run(traced, args)  # raises what the ordinary path raises
        except BaseException:
            with self.lock:  # a failing call (a wrong shape) spends no recording
                self.traces -= 1
                self.closed = self.traces >= MAX_TRACES or len(self.plans) >= MAX_PLANS
            raise
        plan: NativePlan | None = None
        try:
            plan, reason = build_plan(self.vm, key, args, recorder.records, result), ""
        except NotEligible as why:
            reason = str(why)
            if why.retry:
                key = None  # not remembered: another call may qualify
        except Exception as err:  # e.g. the target cannot build the entry: run as usual
            reason = f"{type(err).__name__}: {err}"
        with self.lock:
            self.last_reason = reason
            if plan is None:
                if key is not None and len(self.rejected) < MAX_TRACES:
                    self.rejected.add(key)
            elif len(self.plans) < MAX_PLANS and all(p.key != key for p in self.plans):
                self.plans = (*self.plans, plan)
                self.closed = self.closed or len(self.plans) >= MAX_PLANS
        return result


class _Recorder:
    """Stands in for the profiler in :func:`~relaxvm.vm.frames.prepare`: every call site
    calls what :meth:`wrap` returns, which records the call (and keeps its values alive
    until the plan is made, so that no memory is reused within the recorded run)."""

    def __init__(self, vm: VirtualMachine) -> None:
        self.vm = vm
        self.records: list[Record] = []

    def wrap(self, pc: int, f: Callable[..., Any]) -> Callable[..., Any]:
        ins = self.vm.executable.instructions[pc]
        entry = self.vm._pool[ins.func_idx]
        records = self.records
        safe = is_replay_safe(entry)
        describe = None if safe else entry.native_call

        def recorded(*args: Any) -> Any:
            record = Record(entry, f, args, safe)
            records.append(record)
            if describe is not None:
                record.native = describe(*args)
            record.result = f(*args)
            return record.result

        return recorded
