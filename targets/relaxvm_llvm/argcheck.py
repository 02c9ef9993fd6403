"""Argument checks that keep a direct kernel call from corrupting memory.

Used by :mod:`relaxvm_llvm.kernel` (which documents the behaviour): outputs must be writable
and native-order (inputs in another byte order are converted), and for a ``noalias`` kernel
no output may overlap another buffer argument. Addresses come from the arguments themselves:
a Tensor's storage pointer plus byte offset, an array's data pointer and strides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaxvm.errors import VMValueError
from relaxvm.runtime.tensor import Tensor

from .signature import BufferParam, KernelSignature

__all__ = ["byte_span", "checks_overlap", "native_buffer", "overlap_pairs", "overlaps"]


def native_buffer(where: str, param: BufferParam, arg: Any) -> Any:
    """``arg`` itself, or a native-order copy of a byte-swapped input array.

    Raises
    ------
    VMValueError
        ``param`` is written by the kernel and ``arg`` is a read-only or byte-swapped
        array (writing through it would corrupt immutable memory or store bytes in the
        wrong order).
    """
    if not isinstance(arg, np.ndarray):
        return arg  # Tensors are native-order and writable by construction
    if param.written and not arg.flags.writeable:
        raise VMValueError(
            f"{where}: parameter {param.name!r} is written by the kernel, but the array "
            "is read-only (flags.writeable is False, e.g. np.frombuffer over bytes or a "
            "broadcast view); pass a writable array such as arr.copy()"
        )
    if arg.dtype.isnative:
        return arg
    if param.written:
        raise VMValueError(
            f"{where}: parameter {param.name!r} is written by the kernel, but the array "
            f"has non-native byte order ({arg.dtype.str}); pass a native-order array "
            "(arr.astype(arr.dtype.newbyteorder('=')))"
        )
    # Inputs are converted (documented in the module docstring): a copy, read only.
    return arg.astype(arg.dtype.newbyteorder("="), order="K")


def checks_overlap(sig: KernelSignature) -> bool:
    """Whether calls must check outputs against other arguments for overlap."""
    buffers = [p for p in sig.params if isinstance(p, BufferParam)]
    return sig.noalias and len(buffers) > 1 and any(p.written for p in buffers)


def overlap_pairs(sig: KernelSignature) -> list[tuple[int, int]]:
    """``(output, other)`` parameter positions whose memory must not overlap, each unordered
    pair once."""
    buffers = [k for k, p in enumerate(sig.params) if isinstance(p, BufferParam)]
    pairs: list[tuple[int, int]] = []
    for k in buffers:
        if not sig.params[k].written:  # type: ignore[union-attr]
            continue
        for j in buffers:
            written_j = sig.params[j].written  # type: ignore[union-attr]
            if j != k and not (written_j and j < k):  # two outputs: once
                pairs.append((k, j))
    return pairs


def byte_span(arg: Any) -> tuple[int, int]:
    """``[low, high)`` addresses of the bytes ``arg`` (Tensor or array) may touch; empty
    (``low == high``) when it has no elements."""
    if isinstance(arg, Tensor):
        return arg.data_ptr, arg.data_ptr + arg.nbytes
    low = high = arg.ctypes.data
    if arg.size == 0:
        return low, low
    for extent, stride in zip(arg.shape, arg.strides, strict=True):
        if stride < 0:
            low += stride * (extent - 1)
        else:
            high += stride * (extent - 1)
    return low, high + arg.itemsize


def overlaps(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` share a byte (exactly for arrays; by span otherwise)."""
    a_low, a_high = byte_span(a)
    b_low, b_high = byte_span(b)
    if not (a_low < b_high and b_low < a_high):
        return False
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        # Interleaved strided views share a span but no element: ask numpy exactly, and
        # count a question too hard to settle as an overlap.
        try:
            shares: Any = np.shares_memory  # the stubs allow only max_work -1 or 0
            return bool(shares(a, b, max_work=1 << 16))
        except np.exceptions.TooHardError:
            return True
    return True
