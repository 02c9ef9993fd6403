"""Whole-function native entries: one JIT-compiled function calling kernels in sequence.

The VM's whole-function path (:mod:`relaxvm.vm.native_plan`) records a straight-line run of a
VM function and asks the target of its kernels (through the builder that
:meth:`Kernel.native_call <relaxvm_llvm.kernel.Kernel.native_call>` names) for one native
entry that makes every kernel call of that run in order. :func:`build_sequence` writes it as LLVM IR::

    int32 relaxvm_sequence(void* base0, void* base1, ...)

Each step calls a kernel's native address (``int32 f(void* buf0, ..., int64 var0, ...)``,
the ABI of :class:`~relaxvm_llvm.kernel.Kernel`) with pointers ``base_i + offset`` (or an
absolute address) and constant ints, and returns the first nonzero status; the step that
failed is kept for :meth:`NativeSequence.failed_step`. The checks a kernel's Python entry
makes were made when the run was recorded, for exactly these shapes and dtypes; the caller
of the entry guarantees the same ones hold when it runs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from relaxvm.errors import VMValueError

from .errors import LLVMBuildError

__all__ = ["NativeSequence", "build_sequence"]

_ENTRY = "relaxvm_sequence"
_FAILED = "relaxvm_sequence_failed"

#: One step: the kernel's address, its pointer arguments as ``(base, offset)`` (``base`` -1:
#: ``offset`` is an absolute address), and its int64 arguments.
Step = tuple[int, Sequence[tuple[int, int]], Sequence[int]]


class NativeSequence:
    """A compiled whole-function entry (built by :func:`build_sequence`).

    Attributes
    ----------
    run : ctypes function
        ``run(base0, base1, ...) -> int``: 0, or the first nonzero kernel status.
    num_bases : int
        How many base pointers ``run`` takes.
    num_steps : int
    """

    __slots__ = ("_engine", "_failed", "num_bases", "num_steps", "run")

    def __init__(self, engine: Any, num_bases: int, num_steps: int) -> None:
        self._engine = engine  # keeps the machine code alive
        self.num_bases = num_bases
        self.num_steps = num_steps
        entry = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * num_bases))
        self.run = entry(engine.address(_ENTRY))
        self._failed = ctypes.CFUNCTYPE(ctypes.c_int32)(engine.address(_FAILED))

    def failed_step(self) -> int:
        """The step whose kernel failed in the last failing ``run`` (-1: none yet).

        Also discards the errors the failing kernel left for its Python entry (index-check
        and parallel-launch error slots of this thread): the caller re-runs the call through
        the ordinary path, whose kernel call reports its own.
        """
        from .checks import take_check_error
        from .parallel import take_last_error

        take_check_error()
        take_last_error()
        return int(self._failed())

    def __repr__(self) -> str:
        return f"<llvm native sequence: {self.num_steps} kernels, {self.num_bases} bases>"


def sequence_ir(num_bases: int, steps: Sequence[Step]) -> str:
    """The LLVM IR text of the entry (see the module docstring).

    Raises
    ------
    VMValueError
        A base index out of range, or a value that does not fit its LLVM type.
    """
    params = ", ".join(f"ptr %b{i}" for i in range(num_bases))
    lines = [
        "@failed_step = internal global i32 -1",
        f"define i32 @{_FAILED}() {{",
        "  %v = load i32, ptr @failed_step",
        "  ret i32 %v",
        "}",
        f"define i32 @{_ENTRY}({params}) {{",
        "entry:",
    ]
    for k, (address, pointers, ints) in enumerate(steps):
        args: list[str] = []
        for j, (base, offset) in enumerate(pointers):
            _check_int(offset, "pointer offset")
            if base == -1:
                args.append(f"ptr inttoptr (i64 {int(offset)} to ptr)")
            elif 0 <= base < num_bases:
                lines.append(f"  %p{k}_{j} = getelementptr i8, ptr %b{base}, i64 {int(offset)}")
                args.append(f"ptr %p{k}_{j}")
            else:
                raise VMValueError(f"native sequence: step {k} uses base {base} of {num_bases}")
        for value in ints:
            _check_int(value, "int argument")
            args.append(f"i64 {int(value)}")
        _check_int(address, "kernel address")
        lines += [
            f"  %f{k} = inttoptr i64 {int(address)} to ptr",
            f"  %s{k} = call i32 %f{k}({', '.join(args)})",
            f"  %c{k} = icmp ne i32 %s{k}, 0",
            f"  br i1 %c{k}, label %fail{k}, label %ok{k}",
            f"fail{k}:",
            f"  store i32 {k}, ptr @failed_step",
            f"  ret i32 %s{k}",
            f"ok{k}:",
        ]
    lines += ["  ret i32 0", "}"]
    return "\n".join(lines) + "\n"


def _check_int(value: Any, what: str) -> None:
    if type(value) is not int or not -(1 << 63) <= value < (1 << 63):
        raise VMValueError(f"native sequence: {what} {value!r} is not a 64-bit int")


def build_sequence(num_bases: int, steps: Sequence[Step]) -> NativeSequence:
    """Compile a whole-function entry calling ``steps`` in order.

    Parameters
    ----------
    num_bases : int
        Base pointers the entry takes (the caller's inputs and fresh outputs).
    steps : sequence of (address, pointers, ints)
        Per kernel call: its native address, its buffer arguments as ``(base, offset)``
        pairs (``base`` -1 for an absolute address held alive by the caller), and its
        int64 arguments, in the kernel's parameter order.

    Returns
    -------
    NativeSequence

    Raises
    ------
    VMValueError
        Malformed steps.
    LLVMBuildError
        LLVM rejects the entry.
    """
    import llvmlite.binding as llvm

    from . import jit

    if type(num_bases) is not int or num_bases < 0:
        raise VMValueError(f"native sequence: bad number of bases {num_bases!r}")
    text = sequence_ir(num_bases, steps)
    info = jit.TargetInfo(jit.host_cpu_name(), jit.host_cpu_features(), ())
    with jit.LLVM_LOCK:
        tm = jit.target_machine(info.triple, info.cpu, info.features)
        try:
            mod = llvm.parse_assembly(text)
            mod.verify()
        except RuntimeError as err:
            raise LLVMBuildError(f"llvm target: LLVM rejected a native sequence: {err}") from None
        mod.triple = info.triple
        mod.data_layout = str(tm.target_data)
        obj = jit.emit_object(mod, info)
    return NativeSequence(jit.load_object((obj,), info), num_bases, len(steps))
