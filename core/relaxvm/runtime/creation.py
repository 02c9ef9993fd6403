"""Creating tensors: :func:`empty` and :func:`tensor` (memory from the device's pooled
allocator).

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

__all__ = ["empty", "tensor"]


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
    if isinstance(data, Tensor):
        data = data.numpy()
    array = np.asarray(data) if dtype is None else np.asarray(data, DataType(dtype).numpy_dtype())
    try:
        element_type = DataType(array.dtype)
    except VMTypeError:
        raise VMTypeError(f"tensor: cannot hold numpy dtype {array.dtype}") from None
    result = empty(array.shape, element_type, device)
    # Native byte order and C layout: the bytes are copied as they are.
    native = np.asarray(array, dtype=array.dtype.newbyteorder("="), order="C")
    result.storage.api.copy_from_host(result.storage.buffer, result.byte_offset, native)
    return result
