"""Kernels of a CUDA file nobody vouched for: PTX regenerated from the file's TIR.

A file whose tag does not verify under the user's key (and that the user did not trust
explicitly) may carry any PTX: it is ignored. The kernels are compiled again by this
target's code generator from the TIR stored beside them (decoded by the strict codec of
:mod:`relaxvm_llvm.tir_data`), after :func:`harden_gpu` made that TIR memory-safe the way
:mod:`relaxvm_llvm.tir_guard` does for the CPU, keeping the GPU launch:

* every buffer index of every load and store goes through ``T.check_index`` against that
  axis's extent (an out of range index stops the thread and the launch raises
  :class:`relaxvm.errors.VMIndexError`: no access outside a buffer, shared memory included);
* loops bound to blocks and threads stay bound (the launch is the kernel's); other loops run
  serially;
* buffers must be compact without element offset; scratch must have a constant size of at
  most :data:`relaxvm_llvm.tir_guard.MAX_SCRATCH_BYTES`, except ``global`` scratch, which
  may be symbolic (the device heap supplies it and a failed allocation is reported).

The rebuilt kernels' names, symbols, signatures and launch extents must equal the file's
header, else the file is refused as tampered. Checked indices hide the injective schedule's
vector form, so rebuilt kernels are slower; exporting the module again signs it with the
user's key, and later loads use its PTX as is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from relaxvm import security
from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.expr_base import IntImm, PrimExpr
from relaxvm.ir.tir.buffer import Buffer
from relaxvm.ir.tir.function import PrimFunc
from relaxvm.ir.tir.stmt import For, ForKind, Stmt
from relaxvm_llvm.tir_guard import TIRGuard, harden

from .program import LAUNCH_AXES, PTXProgram

__all__ = ["HOW_TO_TRUST", "UNTRUSTED", "harden_gpu", "rebuild"]

#: Why a file's PTX is not used (the start of the messages refusing such a file).
UNTRUSTED = (
    "the PTX is not signed with your key (the file was exported by someone else, or changed "
    "since), so it is never used"
)
#: What the user can do about it.
HOW_TO_TRUST = (
    "export the model again on this machine, or, only if you trust whoever wrote the file as "
    "you trust a program, load it with relaxvm.load_module(path, trust=True) (or set "
    f"{security.TRUST_ENV}=1)"
)

_SCOPES = ("global", "shared", "local")


class _GPUGuard(TIRGuard):
    """The CPU's checks (:class:`relaxvm_llvm.tir_guard.TIRGuard`), keeping the launch:
    loops bound to known thread axes stay bound, scratch may live in shared or local memory,
    and global scratch may be sized at run time."""

    module = "cuda"

    def loop(self, loop: For, lo: PrimExpr, extent: PrimExpr, body: Stmt) -> Stmt:
        if loop.kind == ForKind.THREAD_BINDING:
            axis = loop.thread_binding
            if axis not in LAUNCH_AXES and axis != "vthread":
                raise self.refuse(f"loop bound to unknown thread axis {axis!r}")
            return For(loop.loop_var, lo, extent, loop.kind, body, thread_binding=axis)
        return super().loop(loop, lo, extent, body)

    def scratch(self, buffer: Buffer) -> Buffer:
        self.buffer(buffer)
        if buffer.scope not in _SCOPES:
            raise self.refuse(f"scratch buffer {buffer.name!r} in scope {buffer.scope!r}")
        extents = buffer.shape
        if not all(isinstance(e, IntImm) for e in extents):
            if buffer.scope != "global":  # the code generator refuses these too
                raise self.refuse(f"scratch buffer {buffer.name!r} has a symbolic size")
            return buffer  # from the device heap, sized at run time; failure is reported
        if any(int(e) < 0 for e in extents):  # type: ignore[call-overload]
            raise self.refuse(f"scratch buffer {buffer.name!r} has a negative extent")
        self.scratch_size(buffer)
        return buffer


def harden_gpu(funcs: Sequence[tuple[str, PrimFunc]]) -> list[tuple[str, PrimFunc]]:
    """The kernels with every buffer access checked, launches kept (see the module
    docstring).

    Raises
    ------
    ExecutableFormatError
        A kernel uses strided or offset buffers, an unknown thread axis, or scratch that is
        too large or of a symbolic size outside global memory.
    """
    return harden(funcs, _GPUGuard)


def rebuild(
    stored: PTXProgram, tir: Mapping[str, PrimFunc] | None, tir_missing: str | None = None
) -> tuple[PTXProgram, dict[str, PrimFunc]]:
    """``stored``'s kernels compiled again from ``tir``, hardened (:func:`harden_gpu`), for
    ``stored``'s architecture (``stored``'s PTX is never used): the program and the hardened
    TIR it was compiled from (what the simulated device then runs). ``tir_missing`` says
    why there is no TIR when ``tir`` is None.

    Raises
    ------
    ExecutableFormatError
        No TIR, a kernel without TIR, TIR that does not compile, or kernels that differ from
        the header's (names, symbols, signatures, launch extents).
    """
    if tir is None:
        raise ExecutableFormatError(
            f"cuda module: {UNTRUSTED}, and the file has no TIR to compile the kernels from "
            f"({tir_missing or 'none stored'}); {HOW_TO_TRUST}"
        )
    from .codegen import compile_ptx  # llvmlite loads only when something is compiled
    from .errors import CUDABuildError

    missing = [k.name for k in stored.kernels if k.name not in tir]
    if missing:
        raise ExecutableFormatError(f"cuda module: the file has no TIR for kernel(s) {missing}")
    funcs = harden_gpu([(k.name, tir[k.name]) for k in stored.kernels])
    try:
        program = compile_ptx(funcs, stored.arch)
    except CUDABuildError as err:
        raise ExecutableFormatError(
            f"cuda module: the file's TIR does not compile ({err}); the file's PTX is not "
            "trusted, so it cannot be used instead"
        ) from None
    for old, new in zip(stored.kernels, program.kernels, strict=True):
        if _plain(old.to_json()) != _plain(new.to_json()):
            raise ExecutableFormatError(
                f"cuda module: kernel {old.name!r} compiled from the file's TIR differs from "
                "the file's header (name, symbol, signature or launch): the file was tampered "
                "with"
            )
    return program, dict(funcs)


def _plain(data: object) -> object:
    """``data`` as JSON reads it back (tuples become lists), for comparison."""
    return json.loads(json.dumps(data, sort_keys=True))
