"""The per-op profiler behind :meth:`VirtualMachine.profile <relaxvm.VirtualMachine.profile>`.

How it works: for the duration of one ``profile()`` the VM's functions are rebuilt with
every ``Call`` instruction going through a timing wrapper (:meth:`Profiler.wrap`), in
either exec mode (:func:`relaxvm.vm.frames.prepare` and
:func:`relaxvm.vm.compiled.compile_functions` take the profiler as a switch, as they take
the instrument). Afterwards, also when the call raises, the functions get back exactly the
code they had, so a VM that is not being profiled runs no profiler code at all.

The wrapper keeps the call's specialisation (:mod:`relaxvm.vm.callplan`): what is timed is
what an unprofiled run executes, and a call site that its callee turned into a register
write still counts as one (nearly free) call. Each call appends one event
``(instruction, start, elapsed, self, bytes)``; :class:`~relaxvm.vm.profile_report.ProfileReport`
aggregates them.
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VMError
from ..runtime import Shape, Storage, Tensor, tensor
from ..runtime.memory import AllocatorType, get_allocator
from .executable.executable import VMFuncKind
from .frames import is_import
from .profile_report import ProfileReport, ProfileRow, SiteInfo

if TYPE_CHECKING:
    from .frames import PreparedFunction
    from .interpreter import VirtualMachine

__all__ = ["ProfileReport", "ProfileRow", "Profiler", "profile"]


class Profiler:
    """Records the calls of one profiled run (internal: use ``vm.profile``).

    Parameters
    ----------
    vm : VirtualMachine
        The VM being profiled; its executable names the call sites.
    """

    def __init__(self, vm: VirtualMachine) -> None:
        self.vm = vm
        #: One event per executed call: (instruction, start ns, elapsed ns, self ns, bytes).
        self.events: list[tuple[int, int, int, int, int]] = []
        # cell[0]: the time the calls nested in the running call took so far (ns); cell[1]:
        # the allocation count when a call last returned memory.
        self._count = _allocation_counter(vm)
        self._cell = [0, self._count()]
        # Storages seen so far (inputs, constants, arguments, earlier results), by id: they
        # are not new again. Weak references: the profile must not keep memory alive (nor
        # change what the pooled allocator reuses); a dead one's id may come back.
        self._known: dict[int, weakref.ref[Storage]] = {}
        self._function_of = _function_ranges(vm)

    # -- recording --------------------------------------------------------------------------
    def wrap(self, pc: int, f: Callable[..., Any]) -> Callable[..., Any]:
        """``f`` timed as the call at absolute instruction ``pc``.

        The wrapper measures the call, subtracts the time of the profiled calls nested in
        it (``self`` time) and counts the bytes of new storage it returned. A nested call's
        span includes its own bookkeeping, so the profiler's cost is not billed to the VM
        function around it.
        """
        clock = time.perf_counter_ns
        cell = self._cell
        record = self.events.append
        measure = self._measure
        known = self._known
        kinds = _KINDS
        tensor_type = Tensor

        # Kept lean: this runs around every call of a profiled run (docs/profiling.md gives
        # its cost); memory is looked at only for results that may hold some.
        def timed(*args: Any) -> Any:
            outer = cell[0]
            cell[0] = 0
            start = clock()
            try:
                result = f(*args)
            except BaseException:
                cell[0] = outer + (clock() - start)
                raise
            elapsed = clock() - start
            if result is None:
                nbytes = 0
            elif result.__class__ is tensor_type:
                # The common case first: a tensor on storage already seen (a view, an
                # argument passed through, a tensor carved from a counted storage).
                storage = result.storage
                ref = known.get(id(storage))
                nbytes = 0 if ref is not None and ref() is storage else measure(result, args)
            else:
                kind = kinds.get(result.__class__)
                if kind is None:
                    kind = _kind(result.__class__)
                nbytes = measure(result, args) if kind else 0
            record((pc, start, elapsed, elapsed - cell[0], nbytes))
            cell[0] = outer + (clock() - start)
            return result

        return timed

    def reset(self, *existing: Any) -> None:
        """Forget what was recorded; the storage reachable from ``existing`` exists."""
        self.events.clear()
        self._known.clear()
        self._cell[:] = [0, self._count()]
        for values in existing:
            self.seed(values)

    def seed(self, values: Any) -> None:
        """Mark the storage reachable from ``values`` as existing before the run."""
        found: dict[int, Storage] = {}
        _storages(values, found)
        for key, storage in found.items():
            self._known[key] = weakref.ref(storage)

    def _measure(self, result: Any, args: tuple[Any, ...]) -> int:
        """Bytes of the storage reachable from ``result`` that is new (docs/profiling.md):
        neither reachable from the call's arguments nor seen before in this run, and the
        allocators of the VM's devices handed out memory since the last call that returned
        memory (a recycled object is not new). Every storage looked at is remembered."""
        found: dict[int, Storage] = {}
        _storages(result, found)
        if not found:
            return 0
        # The allocation count is read here, off the common path, rather than around every
        # call: between two calls that return memory, allocations are those of the second
        # (the dispatch loop allocates nothing itself).
        count = self._count()
        allocated = count != self._cell[1]
        self._cell[1] = count
        known = self._known
        if allocated:
            inputs: dict[int, Storage] = {}
            _storages(args, inputs)
            for key, storage in inputs.items():
                known[key] = weakref.ref(storage)  # existed before the call: never new
        total = 0
        for key, storage in found.items():
            ref = known.get(key)
            if ref is not None and ref() is storage:
                continue
            known[key] = weakref.ref(storage)
            if allocated:
                total += int(storage.nbytes)
        return total

    # -- the report -------------------------------------------------------------------------
    def site(self, pc: int) -> SiteInfo:
        """Who calls whom at absolute instruction ``pc``."""
        ex = self.vm.executable
        callee = ex.func_table[ex.instructions[pc].func_idx]
        if callee.kind is not VMFuncKind.PACKED_FUNC:
            kind = "vm function"
        elif callee.name.startswith("vm.builtin."):
            kind = "builtin"
        elif is_import(ex, callee.name):
            kind = "kernel"
        else:
            kind = "packed func"
        return SiteInfo(self._function_of(pc), pc, callee.name, kind)

    def report(self, func_name: str, start: int, end: int) -> ProfileReport:
        """The report of the run of ``func_name`` that lasted from ``start`` to ``end`` (ns)."""
        sites = {pc: self.site(pc) for pc in {event[0] for event in self.events}}
        return ProfileReport(
            func_name,
            self.vm.executable.exec_mode,
            [str(d) for d in self.vm.devices],
            start,
            end,
            self.events,
            sites,
        )


# What a value of a class is to the bytes column: no storage, a tensor, a storage, or a
# sequence to look into (plain tuples and lists; not Shape, a tuple of ints).
_NONE, _TENSOR, _STORAGE, _SEQUENCE = 0, 1, 2, 3
_KINDS: dict[type, int] = {
    Tensor: _TENSOR,
    Storage: _STORAGE,
    tuple: _SEQUENCE,
    list: _SEQUENCE,
    Shape: _NONE,
    int: _NONE,
    float: _NONE,
    bool: _NONE,
    str: _NONE,
    type(None): _NONE,
}


def _kind(cls: type) -> int:
    """The entry of :data:`_KINDS` for ``cls`` (computed once per class)."""
    kind = _KINDS.get(cls)
    if kind is None:
        if issubclass(cls, Tensor):
            kind = _TENSOR
        elif issubclass(cls, Storage):
            kind = _STORAGE
        elif issubclass(cls, tuple | list) and not issubclass(cls, Shape):
            kind = _SEQUENCE
        else:
            kind = _NONE
        _KINDS[cls] = kind
    return kind


def _storages(value: Any, out: dict[int, Storage]) -> None:
    """Collect (by identity) the storage reachable from ``value`` through tuples/lists."""
    stack = [value]
    kinds = _KINDS
    while stack:
        item = stack.pop()
        kind = kinds.get(item.__class__)
        if kind is None:
            kind = _kind(item.__class__)
        if kind == _TENSOR:
            storage = item.storage
            out[id(storage)] = storage
        elif kind == _STORAGE:
            out[id(item)] = item
        elif kind == _SEQUENCE:
            stack.extend(item)


def _allocation_counter(vm: VirtualMachine) -> Callable[[], int]:
    """A function returning how many allocations have been made so far on the VM's devices:
    by the VM's allocators and by the process-wide ones of both kinds (a kernel returning a
    new tensor takes it from ``relaxvm.tensor``'s pooled allocator, whatever the VM uses)."""
    allocators = [*vm.allocators]
    for device in vm.devices:
        allocators += [get_allocator(device, kind) for kind in AllocatorType]
    stats = list({id(a): a.stats for a in allocators}.values())
    if len(stats) == 2:  # one device (a CPU VM): its naive and pooled allocators
        first, second = stats
        return lambda: first.allocations + second.allocations
    return lambda: sum(s.allocations for s in stats)


def _function_ranges(vm: VirtualMachine) -> Callable[[int], str]:
    """A function mapping an absolute instruction index to the VM function holding it."""
    ranges = [
        (info.start_instr, info.end_instr, info.name)
        for info in vm.executable.func_table
        if info.kind is VMFuncKind.VM_FUNC
    ]

    def function_of(pc: int) -> str:
        for start, end, name in ranges:
            if start <= pc < end:
                return name
        return "?"

    return function_of


# -- installing and removing the profiler ---------------------------------------------------
def profile(
    vm: VirtualMachine, func_name: str, args: tuple[Any, ...], warmup: int
) -> ProfileReport:
    """Run ``vm[func_name](*args)`` once with every call timed (``vm.profile``).

    Raises
    ------
    FunctionNotFoundError
        ``func_name`` is not a function of the VM (as ``vm[func_name]``).
    VMValueError
        ``warmup`` is negative, or ``args`` is empty and no :meth:`set_input` inputs exist
        for a function that takes arguments (then the call's own arity error).
    VMError
        ``profile`` is already running on this VM.
    """
    from ..errors import VMValueError

    entry = vm[func_name]  # the same lookup, and errors, as an ordinary call
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise VMValueError(f"profile: warmup must be an int >= 0, got {warmup!r}")
    if vm._profiler is not None:
        raise VMError(
            f"profile({func_name!r}): this VM is already being profiled (profile() called "
            "from inside a profiled run)"
        )
    if not args and func_name in vm._inputs:
        args = tuple(vm._inputs[func_name])  # TVM: the set_input inputs when none are given
    device = vm.devices[0]
    # The entry's own numpy conversion, done here so that the inputs count as existing.
    args = tuple(tensor(v, device) if type(v) is np.ndarray else v for v in args)
    profiler = Profiler(vm)
    restore = _install(vm, profiler)
    collecting = gc.isenabled()
    try:
        # Warm-up runs take the profiled code too, then are forgotten: the first run of
        # freshly built code is slower than the ones after it.
        for _ in range(warmup):
            entry(*args)
        profiler.reset(args, vm._constants)
        # As timeit does: no cyclic garbage collection inside the measured call (rebuilding
        # the functions made plenty of garbage), so that no op is billed a collection.
        gc.disable()
        start = time.perf_counter_ns()
        entry(*args)
        end = time.perf_counter_ns()
    finally:
        if collecting:
            gc.enable()
        restore()
    return profiler.report(func_name, start, end)


def _install(vm: VirtualMachine, profiler: Profiler) -> Callable[[], None]:
    """Rebuild ``vm``'s functions with ``profiler`` on; returns what undoes it."""
    from .compiled import compile_functions
    from .frames import prepare

    functions: list[PreparedFunction] = [
        fn for fn in vm._functions.values() if fn.info.kind is VMFuncKind.VM_FUNC
    ]
    saved = [(fn, fn.template, fn.code, fn.compiled) for fn in functions]
    instrument = vm._instrument
    vm._profiler = profiler

    def restore() -> None:
        vm._profiler = None
        if vm._instrument is not instrument:
            # set_instrument ran during the profile: build for the instrument now set.
            vm._compile_all(vm._instrument)
            return
        for fn, template, code, compiled in saved:
            fn.template, fn.code, fn.compiled = template, code, compiled

    try:
        # The call plans stay those of the current instrument (vm._plans is kept).
        if vm.executable.exec_mode == "compiled":
            compile_functions(vm, instrument, profiler)
        else:
            for fn in functions:
                prepare(fn, vm, instrument, profiler)
    except BaseException:
        restore()
        raise
    return restore
