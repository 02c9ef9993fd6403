"""Tensors: a shape and dtype viewing a :class:`~relaxvm.runtime.memory.Storage` at a byte
offset. Views share memory; :meth:`Tensor.numpy` copies out, like TVM."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DeviceError, VMValueError
from .device import Device
from .dtype import DataType
from .shape import Shape

if TYPE_CHECKING:
    # memory.py builds Tensors (Storage.alloc_tensor), so the import runs one way only.
    from .memory import Storage

__all__ = ["Tensor"]


def _nbytes(shape: tuple[int, ...], dtype: DataType) -> int:
    return math.prod(shape) * dtype.itemsize


class Tensor:
    """An n-dimensional array on a device (TVM's ``runtime.Tensor``).

    Create one with :func:`tensor` or :func:`empty`; the constructor is for the runtime.

    Attributes
    ----------
    shape : Shape
    dtype : DataType
    device : Device
    storage : Storage
        The memory this tensor views.
    byte_offset : int
        Where the first element sits in ``storage``.
    """

    __slots__ = ("__weakref__", "_array", "byte_offset", "device", "dtype", "shape", "storage")

    def __init__(self, storage: Storage, byte_offset: int, shape: Shape, dtype: DataType) -> None:
        self.storage = storage
        self.byte_offset = byte_offset
        self.shape = shape
        self.dtype = dtype
        self.device = storage.device
        self._array: np.ndarray | None = None

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes covered by this tensor's elements."""
        return _nbytes(self.shape, self.dtype)

    @property
    def data_ptr(self) -> int:
        """Address of the first element (device memory for non-host devices)."""
        return self.storage.data_ptr + self.byte_offset

    def host_array(self) -> np.ndarray:
        """A zero-copy numpy view of the elements (host-accessible devices only).

        Raises
        ------
        DeviceError
            The tensor lives on a device the host cannot read directly.
        """
        array = self._array
        if array is None:
            storage = self.storage
            if not storage.api.host_accessible:
                raise DeviceError(
                    f"Tensor.host_array: {self.device!r} memory is not host-accessible; "
                    "use .numpy() to copy it"
                )
            raw = storage.api.host_view(storage.buffer)
            array = np.ndarray(
                self.shape, self.dtype.numpy_dtype(), buffer=raw, offset=self.byte_offset
            )
            self._array = array
        return array

    def numpy(self) -> np.ndarray:
        """Copy the elements into a new numpy array."""
        if self.storage.api.host_accessible:
            return self.host_array().copy()
        out = np.empty(self.shape, self.dtype.numpy_dtype())
        self.storage.api.copy_to_host(self.storage.buffer, self.byte_offset, out)
        return out

    def copyfrom(self, source: Tensor | np.ndarray | Any) -> Tensor:
        """Overwrite the elements from an array or tensor of the same shape and dtype.

        Raises
        ------
        VMValueError
            The shapes or dtypes differ.
        """
        if isinstance(source, Tensor):
            source = source.numpy()
        # np.asarray(order="C"), not ascontiguousarray, which turns 0-d arrays into 1-d.
        array = np.asarray(source, dtype=self.dtype.numpy_dtype(), order="C")
        if array.shape != tuple(self.shape):
            raise VMValueError(
                f"Tensor.copyfrom: shape {array.shape} does not match the tensor's "
                f"{tuple(self.shape)}"
            )
        self.storage.api.copy_from_host(self.storage.buffer, self.byte_offset, array)
        return self

    def copyto(self, target: Device | Tensor) -> Tensor:
        """Copy into ``target`` (a tensor of the same shape, or a new tensor on a device)."""
        if isinstance(target, Tensor):
            return target.copyfrom(self)
        # creation.py imports this module: the call-time import keeps the graph acyclic.
        from .creation import tensor

        return tensor(self.numpy(), target)

    def view(
        self,
        shape: Shape | tuple[int, ...],
        dtype: DataType | str | None = None,
        relative_byte_offset: int = 0,
    ) -> Tensor:
        """A zero-copy view with another shape (and dtype) over the same memory.

        Raises
        ------
        VMValueError
            The view would reach outside this tensor's own bytes (as in TVM's CreateView).
        """
        new_dtype = self.dtype if dtype is None else DataType(dtype)
        new_shape = Shape(shape)
        size = _nbytes(new_shape, new_dtype)
        if relative_byte_offset < 0 or relative_byte_offset + size > self.nbytes:
            raise VMValueError(
                f"Tensor.view: a view of {size} bytes at relative offset {relative_byte_offset} "
                f"does not fit in the tensor's {self.nbytes} bytes"
            )
        return Tensor(self.storage, self.byte_offset + relative_byte_offset, new_shape, new_dtype)

    def __repr__(self) -> str:
        return f"<Tensor shape={list(self.shape)} dtype={self.dtype} device={self.device!r}>"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)
