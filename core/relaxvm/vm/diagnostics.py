"""What the VM says when something goes wrong, shared by both exec modes.

The dispatch loop (:mod:`~relaxvm.vm.interpreter`) and compiled mode
(:mod:`~relaxvm.vm.compiled`) raise the same errors with the same notes; both take them from
here, so neither imports the other at module level.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VMError, VMTypeError
from ..registry import functions as registry
from .bytecode import Opcode
from .executable.executable import Executable

if TYPE_CHECKING:
    from .frames import PreparedFunction

__all__ = [
    "MAX_TRACE_NOTES",
    "add_note_at",
    "add_trace_note",
    "arity_message",
    "builtin_failure_message",
    "call_depth",
    "call_depth_error",
    "callee_label",
    "condition",
    "default_max_call_depth",
    "missing_message",
    "recursion_error",
]

#: Notes added to an exception as it unwinds through VM frames; deeper frames are elided.
MAX_TRACE_NOTES = 8
_NOTE_PREFIX = "  in VM function"


def missing_message(missing: list[str]) -> str:
    import difflib

    from ..registry import loader as plugins

    known = registry._functions
    parts = []
    for name in missing:
        text = (
            f"Cannot find PackedFunc {name} in either the Relax VM kernel library (the "
            "executable's imports), the global function registry, or the global Relax "
            "functions of the VM executable"
        )
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.75)
        if close:
            text += "; did you mean " + " or ".join(map(repr, close)) + "?"
        parts.append(text)
    loaded = [p.name for p in plugins.plugin_report() if p.status == "loaded"]
    return "; ".join(parts) + f" (plugins loaded: {', '.join(loaded) or 'none'})"


def callee_label(name: str) -> str:
    """``name`` as an error names a called function: with who registered it, when it is a
    global function (``vm.builtin.copy (registered by plugin 'builtins')``), else as is.

    Only a registry lookup: called on error paths, it never loads plugins.
    """
    source = registry._sources.get(name)
    if source is None:
        return name
    if source.startswith("user:"):
        source = f"user code ({source[len('user:') :]})"
    return f"{name} (registered by {source})"


def builtin_failure_message(name: str, err: BaseException) -> str:
    """The message of the relaxvm error raised instead of ``err``, which the function called
    as ``name`` raised: the callee, who registered it, and the original error.

    Parameters
    ----------
    name : str
        The callee as the instruction names it (``vm.builtin.shape_of``, a kernel symbol).
    err : BaseException
        What it raised (chained as the new error's ``__cause__`` by the caller).
    """
    return (
        f"{callee_label(name)} cannot handle what the program passes it: "
        f"{type(err).__name__}: {err}"
    )


def arity_message(fn: PreparedFunction, given: int) -> str:
    return (
        f"Invoking function {fn.name} expects {fn.num_args} arguments "
        f"({', '.join(fn.param_names)}), but {given} arguments were provided."
    )


def condition(value: Any, fn: PreparedFunction, pc: int) -> bool:
    if isinstance(value, int | np.integer | np.bool_):
        return bool(value)
    raise VMTypeError(
        f"If in VM function {fn.name!r} at instruction {fn.info.start_instr + pc}: the "
        f"condition is a {type(value).__name__}, expected bool or int "
        "(tensors go through vm.builtin.read_if_cond first)"
    )


def add_trace_note(err: BaseException, fn: PreparedFunction, pc: int, ex: Executable) -> None:
    """Note on ``err`` that it passed through ``fn`` at local ``pc`` (the dispatch loop)."""
    index = fn.info.start_instr + pc if 0 <= pc < len(fn.code) else None
    add_note_at(err, ex, fn.name, index)


def add_note_at(err: BaseException, ex: Executable, func_name: str, index: int | None) -> None:
    """Note on ``err`` that it passed through VM function ``func_name`` at absolute
    instruction ``index`` (None: somewhere in it), naming the instruction.

    Python 3.10 has no exception notes: nothing is added there.
    """
    add_note = getattr(err, "add_note", None)
    if add_note is None:
        return
    vm_notes = [n for n in getattr(err, "__notes__", []) if n.startswith(_NOTE_PREFIX)]
    if len(vm_notes) > MAX_TRACE_NOTES:
        return
    if len(vm_notes) == MAX_TRACE_NOTES:
        add_note(f"{_NOTE_PREFIX} ... (outer frames elided)")
        return
    if index is None:
        add_note(f"{_NOTE_PREFIX} {func_name!r}")
        return
    ins = ex.instructions[index]
    if ins.opcode is Opcode.CALL:
        what = f": call {ex.func_table[ins.func_idx].name}"
    else:
        what = f": {ins.opcode.name.lower()}"
    add_note(f"{_NOTE_PREFIX} {func_name!r}, instruction {index}{what}")


class _CallDepth(threading.local):
    """How many VM function frames are open on this thread (all VMs together: they share
    the thread's stack)."""

    depth = 0


#: The per-thread count of open VM function frames, kept by both exec modes.
call_depth = _CallDepth()

# Python frames one VM call level may take (dispatch loop, invoker, call closure), and the
# frames left for the caller's own stack, a kernel call and cleanup at the deepest level.
_FRAMES_PER_VM_CALL = 4
_RESERVED_FRAMES = 250


def default_max_call_depth() -> int:
    """The VM call depth allowed by default: what fits in Python's recursion limit with room
    to spare, so that runaway recursion stops with a :class:`VMError` before Python's own
    limit is hit somewhere that cannot report it cleanly (inside ctypes argument conversion,
    or a finalizer)."""
    return max(16, (sys.getrecursionlimit() - _RESERVED_FRAMES) // _FRAMES_PER_VM_CALL)


def call_depth_error(func_name: str, limit: int) -> VMError:
    """The error for a call of VM function ``func_name`` past ``limit`` open frames."""
    return VMError(
        f"maximum call depth exceeded while running VM function {func_name!r}: more than "
        f"{limit} nested VM calls (runaway recursion? VirtualMachine.max_call_depth sets the "
        "limit)"
    )


def recursion_error(func_name: str) -> VMError:
    """The error that replaces a RecursionError escaping VM function ``func_name``."""
    return VMError(
        f"maximum call depth exceeded while running VM function {func_name!r} (runaway recursion?)"
    )
