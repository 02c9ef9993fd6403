"""Errors of the CUDA code generator (the runtime's live in :mod:`.runtime_errors`)."""

from __future__ import annotations

from relaxvm.errors import RelaxVMError

__all__ = ["CUDABuildError"]


class CUDABuildError(RelaxVMError, RuntimeError):
    """A kernel could not be compiled to PTX: an unsupported construct or intrinsic, a bad
    architecture name, LLVM rejecting the IR, or ``ptxas`` rejecting the PTX.

    The message names the kernel (and the construct); the process stays usable: nothing that
    could abort LLVM (an intrinsic NVPTX cannot lower) ever reaches it.
    """
