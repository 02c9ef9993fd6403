"""How compiled kernels report a failed ``T.check_index``: a runtime symbol and an error slot.

A kernel that finds a user-supplied index out of range calls
``relaxvm_llvm_index_error(op, axis, index, extent)`` (registered with ``llvm.add_symbol`` when
this module is imported, which :mod:`.kernel` does) and returns :data:`CHECK_FAILED_STATUS`.
The callback builds the same :class:`~relaxvm.errors.VMIndexError` the TIR interpreter raises
and keeps it for the calling thread; the kernel's Python wrapper sees the non-zero status and
raises it (:func:`take_check_error`). The check runs on the thread that called the kernel
(never inside a parallel body), so a thread-local slot is enough.

The design is deliberately small: an integer status and one C callback, nothing that a GPU
target could not mirror (a device flag plus the four values, read back after the launch).
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm

from relaxvm.errors import VMIndexError
from relaxvm.ir.tir.intrin import index_error_message

__all__ = [
    "CHECK_FAILED_STATUS",
    "INDEX_ERROR_SYMBOL",
    "UNSIGNED_INDEX_FLAG",
    "take_check_error",
]

#: The process symbol generated code calls on a failed index check.
INDEX_ERROR_SYMBOL = "relaxvm_llvm_index_error"
#: The status a kernel returns after a failed check (the parallel runtime's failure is -1).
CHECK_FAILED_STATUS = 2

INDEX_ERROR_TYPE = ctypes.CFUNCTYPE(
    None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64
)
_local = threading.local()


#: Set in the op code argument when the index has an unsigned type (print it unsigned).
UNSIGNED_INDEX_FLAG = 1 << 32


def _index_error(op_code: int, axis: int, index: int, extent: int) -> None:
    try:
        if op_code & UNSIGNED_INDEX_FLAG:
            op_code, index = op_code & ~UNSIGNED_INDEX_FLAG, index & ((1 << 64) - 1)
        _local.error = VMIndexError(index_error_message(op_code, axis, index, extent))
    except BaseException as err:  # must not propagate into native code  # pragma: no cover
        _local.error = err


_index_error_callback = INDEX_ERROR_TYPE(_index_error)
llvm.add_symbol(INDEX_ERROR_SYMBOL, ctypes.cast(_index_error_callback, ctypes.c_void_p).value)


def take_check_error() -> BaseException | None:
    """The error a failed check stored on this thread, cleared on reading."""
    error = getattr(_local, "error", None)
    _local.error = None
    return error
