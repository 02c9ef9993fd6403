"""Errors of the LLVM target."""

from __future__ import annotations

from relaxvm.errors import RelaxVMError

__all__ = ["KernelRuntimeError", "LLVMBuildError"]


class LLVMBuildError(RelaxVMError, RuntimeError):
    """A kernel could not be compiled: an unsupported construct, or LLVM rejected the IR.

    The message names the kernel; the process stays usable.
    """


class KernelRuntimeError(RelaxVMError, RuntimeError):
    """A compiled kernel reported a failure while running (e.g. in its parallel runtime)."""
