"""Creating tensors: :func:`empty` and :func:`tensor` (memory from the device's pooled
allocator), and :func:`from_dlpack` (another library's memory, shared).

These live apart from :mod:`~relaxvm.runtime.tensor` so that imports run one way:
``tensor`` (the view type) <- ``memory`` (storage and allocators) <- ``creation``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import VMTypeError
from .device import Device, cpu
from .dtype import DataType
from .memory import AllocatorType, get_allocator
from .shape import Shape
from .tensor import Tensor

__all__ = ["empty", "from_dlpack", "tensor"]


def empty(
    shape: Shape | tuple[int, ...],
    dtype: DataType | str = "float32",
    device: Device | None = None,
) -> Tensor:
    """A new uninitialised tensor (memory from the device's pooled allocator)."""
    device = cpu() if device is None else device
    return get_allocator(device, AllocatorType.POOLED).empty(shape, dtype)


def tensor(data: Any, device: Device | None = None, dtype: DataType | str | None = None) -> Tensor:
    """Copy array-like ``data`` into a new tensor on ``device`` (CPU by default).

    Parameters
    ----------
    data : array-like or Tensor
    device : Device, optional
    dtype : str or DataType, optional
        Convert to this type first.

    Raises
    ------
    VMTypeError
        ``data`` has an element type relaxvm cannot hold (object, strings, ...).
    """
    target = None if dtype is None else DataType(dtype)
    if isinstance(data, Tensor) and data.dtype.is_float8:
        if target in (None, data.dtype):
            return _from_host(data.numpy_storage(), data.dtype, device)
        from .float8 import float8_bits_to_float

        data = float8_bits_to_float(data.numpy_storage(), data.dtype)  # exact in float32
    if isinstance(data, Tensor):
        data = data.numpy()
    if target is not None and target.is_float8:
        # numpy has no float8: convert values to codes (round half to even), keep the type.
        from .float8 import host_float8_bits

        return _from_host(host_float8_bits(data, target), target, device)
    array = np.asarray(data) if target is None else np.asarray(data, target.numpy_dtype())
    try:
        element_type = DataType(array.dtype)
    except VMTypeError:
        raise VMTypeError(f"tensor: cannot hold numpy dtype {array.dtype}") from None
    return _from_host(array, element_type, device)


def _from_host(array: np.ndarray, element_type: DataType, device: Device | None) -> Tensor:
    result = empty(array.shape, element_type, device)
    # Native byte order and C layout: the bytes are copied as they are.
    native = np.asarray(array, dtype=array.dtype.newbyteorder("="), order="C")
    result.storage.api.copy_from_host(result.storage.buffer, result.byte_offset, native)
    return result


def from_dlpack(obj: Any, *, copy: bool | None = None) -> Tensor:
    """Wrap the memory of a DLPack producer in a relaxvm tensor, without copying.

    Parameters
    ----------
    obj : object with ``__dlpack__``, or a DLPack capsule
        A numpy (>= 1.22) array, a torch tensor, another relaxvm tensor, or a capsule named
        ``"dltensor"`` / ``"dltensor_versioned"``. A capsule is consumed (renamed
        ``"used_dltensor..."``) and cannot be imported twice.
    copy : bool, optional
        As in the array API: ``None`` (default) views the memory when the producer's tensor is
        compact (row-major, no gaps) and copies it into a new compact tensor otherwise;
        ``False`` never copies (a strided producer raises); ``True`` always copies.

    Returns
    -------
    Tensor
        A tensor on the CPU. Unless copied, it shares memory with the producer (writes are
        seen both ways) and keeps the producer's memory alive while it or any view of it
        lives. A read-only producer (DLPack 1.0 flag) gives a read-only tensor.

    Raises
    ------
    VMTypeError
        ``obj`` is neither a DLPack producer nor a capsule, or ``copy`` is not a bool/None.
    DeviceError
        The memory is not on the CPU (the device is named).
    relaxvm.runtime.dlpack.DLPackError
        (A ``VMValueError`` and a ``BufferError``.) The capsule was already consumed, has an
        unknown name or version, holds a dtype relaxvm lacks, or is strided with
        ``copy=False``.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(3, dtype="float32")
    >>> t = from_dlpack(a)
    >>> a[0] = 7.0
    >>> float(t.numpy()[0])
    7.0
    """
    # ctypes structs load on first use, keeping ``import relaxvm`` as fast as it was.
    from .dlpack import import_tensor

    return import_tensor(obj, copy)
