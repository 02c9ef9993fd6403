"""Plans of the whole-function native path: a recorded run turned into one native call.

:mod:`relaxvm.vm.native_plan` records a run of a VM function (a list of :class:`Record`) and
hands it to :func:`build_plan`, which plans every kernel pointer (an argument plus an offset,
a fixed address kept alive by the plan, or a fresh output plus an offset), asks the kernels'
builder for one native entry, and generates the replay (:class:`NativePlan`): the signature
test, the output allocations, the native call and the return value, as one Python function
made from validated data only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..runtime import DataType, Device, Shape, Storage, Tensor

if TYPE_CHECKING:
    from .interpreter import VirtualMachine

__all__ = ["MISS", "NO_MATCH", "NativePlan", "NotEligible", "Record", "build_plan"]

#: Values a replay may hand back as recorded (immutable, independent of the inputs' data).
_PLAIN = (int, float, bool, str, type(None), Shape, DataType, Device)

#: What a plan returns when the arguments have another signature, or it cannot run now.
NO_MATCH = object()
MISS = object()


class Record:
    """One recorded Call: the registered callee, what the call site called, its arguments
    and result, whether the callee is replay-safe, and a kernel's ``native_call`` answer."""

    __slots__ = ("args", "entry", "func", "native", "result", "safe")

    def __init__(
        self, entry: Any, func: Callable[..., Any], args: tuple[Any, ...], safe: bool
    ) -> None:
        self.entry = entry
        self.func = func
        self.args = args
        self.safe = safe
        self.native: Any = None
        self.result: Any = None


class NotEligible(Exception):
    """The recorded run does not qualify (the message says why).

    ``retry``: only these arguments' values are to blame (two share memory), so another
    call with the same signature may be recorded again.
    """

    def __init__(self, message: str, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


class NativePlan:
    """A recorded run of one VM function for one argument signature, as one native call.

    Calling the plan with the function's arguments returns the function's result, or one of
    two markers: the arguments do not have the plan's signature, or the plan cannot run
    now (another thread is in it, an allocation or a kernel failed): the ordinary path
    must run the call.

    Attributes
    ----------
    num_steps : int
        Kernel calls the native entry makes.
    failed_step : int
        The step of the last failing native run (-1: none).
    """

    def __init__(
        self,
        key: tuple[Any, ...],
        sequence: Any,
        input_positions: tuple[int, ...],
        creators: list[Callable[[], Any]],
        template: _Template,
        keep: list[Any],
        num_steps: int,
    ) -> None:
        self.key = key
        self.sequence = sequence
        self.input_positions = input_positions
        self.creators = creators
        self._keep = keep  # intermediates the entry's absolute addresses point into
        self.num_steps = num_steps
        self.lock = threading.Lock()
        self.failed_step = -1
        self.call = self._generate(template)

    def _failed(self) -> None:
        self.failed_step = self.sequence.failed_step()

    def _generate(self, template: _Template) -> Callable[..., Any]:
        """The replay as one Python function of the VM function's arguments, generated
        from the plan's validated data only (ints; every object is bound as a value)."""
        bound: dict[str, Any] = {
            "_T": Tensor,
            "MISS": MISS,
            "NO_MATCH": NO_MATCH,
            "_acquire": self.lock.acquire,
            "_release": self.lock.release,
            "_fail": self._failed,
            "_run": None if self.sequence is None else self.sequence.run,
        }

        def bind(value: Any) -> str:
            name = f"_v{len(bound)}"
            bound[name] = value
            return name

        params = [f"a{i}" for i in range(len(self.key))]
        tests: list[str] = []
        for a, entry in zip(params, self.key, strict=True):
            if len(entry) == 3:  # a Tensor: shape, dtype, device
                shape, dtype, device = (bind(v) for v in entry)
                tests.append(
                    f"type({a}) is _T and {a}.shape == {shape} and ({a}.dtype is {dtype} or "
                    f"{a}.dtype == {dtype}) and ({a}.device is {device} or {a}.device == {device})"
                )
            else:  # an int or a Shape, by value
                tests.append(f"type({a}) is {bind(entry[0])} and {a} == {bind(entry[1])}")
        lines = [f"def replay({', '.join(params)}):"]
        if tests:
            lines.append(f"    if not ({' and '.join(tests)}): return NO_MATCH")
        lines += ["    if not _acquire(False): return MISS", "    try:", "        try:"]
        outputs = [f"s{k}" for k in range(len(self.creators))]
        lines += [f"            s{k} = {bind(c)}()" for k, c in enumerate(self.creators)]
        lines += ["            pass", "        except Exception: return MISS"]
        if self.sequence is not None:
            bases = [f"a{i}.storage.data_ptr + a{i}.byte_offset" for i in self.input_positions]
            bases += [f"{s}.data_ptr" for s in outputs]
            lines += [
                f"        if _run({', '.join(bases)}):",
                "            _fail()",
                "            return MISS",
            ]
        lines += [
            f"        return {template.source(bind)}",
            "    finally:",
            "        _release()",
        ]
        namespace = dict(bound)
        exec(compile("\n".join(lines) + "\n", "<relaxvm native plan>", "exec"), namespace)
        return namespace["replay"]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<NativePlan: {self.num_steps} kernels, {len(self.creators)} outputs>"


class _Template:
    """How the recorded return value is rebuilt from the fresh output storages."""

    def __init__(self, kind: str, value: Any = None, parts: tuple[_Template, ...] = ()) -> None:
        self.kind = kind  # "tensor" (value: index, offset, shape, dtype), "tuple", "plain"
        self.value = value
        self.parts = parts

    def source(self, bind: Callable[[Any], str]) -> str:
        if self.kind == "tensor":
            index, offset, shape, dtype = self.value
            return f"_T(s{int(index)}, {int(offset)}, {bind(shape)}, {bind(dtype)})"
        if self.kind == "tuple":
            return "(" + "".join(part.source(bind) + ", " for part in self.parts) + ")"
        return bind(self.value)


def _storage_of(value: Any) -> Any:
    if type(value) is Storage or isinstance(value, Storage):
        return value
    if type(value) is Tensor:
        return value.storage
    return None


def build_plan(
    vm: VirtualMachine,
    key: tuple[Any, ...],
    args: tuple[Any, ...],
    records: list[Record],
    result: Any,
) -> NativePlan:
    """The plan of a recorded run, or raise :class:`NotEligible`."""
    # id(storage) -> [(argument, its address)]: several when arguments share memory.
    inputs: dict[int, list[tuple[int, int]]] = {}
    by_id: dict[int, tuple[int, int]] = {}  # id(tensor) -> (argument, its address)
    for i, a in enumerate(args):
        if type(a) is Tensor:
            where = (i, a.storage.data_ptr + a.byte_offset)
            inputs.setdefault(id(a.storage), []).append(where)
            # The same tensor twice: which parameter a kernel's argument is stays unknown.
            by_id[id(a)] = where if id(a) not in by_id else (-1, 0)
    constants = {id(c.storage) for c in vm._constants if type(c) is Tensor}
    outputs: list[Any] = []  # output storages, in order of first appearance
    out_index: dict[int, int] = {}
    template = _template(result, outputs, out_index)
    creators = [_creator(vm, s, records, inputs, constants) for s in outputs]
    calls: list[_Call] = []
    builder = None
    for record in records:
        if record.safe:
            continue  # a replay skips it: its results are planned below
        if record.native is None:
            raise NotEligible(f"{record.entry!r} cannot describe its call")
        step_builder, address, pointers, ints, written = record.native
        if builder is None:
            builder = step_builder
        elif step_builder is not builder:
            raise NotEligible("kernels of two targets")
        tensors = [a for a in record.args if type(a) is Tensor]
        if len(tensors) != len(pointers) or len(written) != len(pointers):
            raise NotEligible(f"{record.entry!r} takes buffers that are not Tensors")
        buffers = list(zip(tensors, pointers, written, strict=True))
        for t, _, writes in buffers:
            if writes and (id(t.storage) in inputs or id(t.storage) in constants):
                raise NotEligible(f"{record.entry!r} writes into an argument or constant")
        calls.append((address, buffers, list(ints)))
    positions: list[int] = []
    base_of: dict[int, int] = {}
    steps: list[tuple[int, list[tuple[int, int]], list[int]]] = []
    keep: list[Any] = []  # what the entry's absolute addresses point into
    for address, buffers, ints in _live(calls, set(inputs), set(out_index)):
        specs: list[tuple[int, int]] = []
        for t, pointer, _ in buffers:
            sid = id(t.storage)
            if sid in inputs:
                # The argument itself, or a view (a reshape) of the one argument it views.
                found = by_id.get(id(t))
                if (found is None and len(inputs[sid]) > 1) or (found and found[0] < 0):
                    raise NotEligible("a kernel reads arguments that share memory", retry=True)
                arg, address_of = found if found is not None else inputs[sid][0]
                if arg not in base_of:
                    base_of[arg] = len(positions)
                    positions.append(arg)
                specs.append((arg, pointer - address_of))  # base index fixed below
            elif sid in out_index:
                specs.append((-2 - out_index[sid], pointer - t.storage.data_ptr))
            else:
                specs.append((-1, pointer))
                keep.append(t)
        steps.append((address, specs, ints))
    num_inputs = len(positions)
    for _, specs, _ in steps:
        for j, (base, offset) in enumerate(specs):
            if base >= 0:
                specs[j] = (base_of[base], offset)
            elif base <= -2:
                specs[j] = (num_inputs - 2 - base, offset)
    sequence = None
    if builder is not None:
        sequence = builder(num_inputs + len(outputs), steps)
    return NativePlan(key, sequence, tuple(positions), creators, template, keep, len(steps))


#: One recorded kernel call: its address, its buffers (tensor, pointer, written), its ints.
_Call = tuple[int, list[tuple[Tensor, int, bool]], list[int]]


def _live(calls: list[_Call], inputs: set[int], outputs: set[int]) -> list[_Call]:
    """The calls a replay must make (by storage, conservatively): those whose writes reach
    an output, and those that read data derived from the arguments (they may fail on it, as
    the ordinary run would, and what they write may be read later). The others only redo
    what the recording computed from the signature alone, such as shape functions filling
    the shape heap for builtins a replay skips: leaving them out also leaves the heap free
    for other calls."""
    tainted = set(inputs)
    reads_data: list[bool] = []
    for _, buffers, _ in calls:
        reads = any(id(t.storage) in tainted for t, _, _ in buffers)
        reads_data.append(reads)
        if reads:
            tainted.update(id(t.storage) for t, _, writes in buffers if writes)
    needed = set(outputs)
    live = [False] * len(calls)
    for k in range(len(calls) - 1, -1, -1):
        buffers = calls[k][1]
        if reads_data[k] or any(writes and id(t.storage) in needed for t, _, writes in buffers):
            live[k] = True
            needed.update(id(t.storage) for t, _, _ in buffers)
    return [call for call, keep in zip(calls, live, strict=True) if keep]


def _template(value: Any, outputs: list[Any], out_index: dict[int, int]) -> _Template:
    """How to build the value the run returned from fresh copies of its output storages
    (collected into ``outputs``)."""
    if type(value) is Tensor:
        storage = value.storage
        index = out_index.get(id(storage))
        if index is None:
            index = out_index[id(storage)] = len(outputs)
            outputs.append(storage)
        return _Template("tensor", (index, value.byte_offset, value.shape, value.dtype))
    if type(value) is tuple:
        return _Template("tuple", parts=tuple(_template(v, outputs, out_index) for v in value))
    if type(value) in _PLAIN:
        return _Template("plain", value)
    raise NotEligible(f"the function returns a {type(value).__name__}")


def _creator(
    vm: VirtualMachine,
    storage: Any,
    records: list[Record],
    inputs: dict[int, list[tuple[int, int]]],
    constants: set[int],
) -> Callable[[], Any]:
    """What allocates a fresh copy of the output ``storage``: the recorded call that made it
    (a replay-safe function called with plain values only), repeated."""
    sid = id(storage)
    if sid in inputs or sid in constants:
        raise NotEligible("the function returns (a view of) an argument or constant")
    for record in records:
        made = _storage_of(record.result)
        if made is not storage:
            continue
        if not record.safe:
            break
        if not all(a is vm or type(a) in _PLAIN for a in record.args):
            raise NotEligible("an output is allocated from run-time values")
        func, fixed = record.func, record.args
        if made is record.result:
            return lambda: func(*fixed)
        return lambda: func(*fixed).storage
    raise NotEligible("an output's memory was not allocated by the function")
