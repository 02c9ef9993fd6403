"""Tensors: a shape and dtype viewing a :class:`~relaxvm.runtime.memory.Storage` at a byte
offset. Views share memory; :meth:`Tensor.numpy` copies out, like TVM."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DeviceError, VMTypeError, VMValueError
from .device import Device
from .dtype import DataType, DataTypeCode
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
        """Copy the elements into a new numpy array.

        A float8 tensor (``float8_e4m3fn``, ``float8_e5m2``) gives an array of ml_dtypes' type
        of the same name, as TVM does.

        Raises
        ------
        VMTypeError
            A float8 tensor while the optional package ml_dtypes is not installed (the message
            says how to get the values without it).
        """
        if self.dtype.is_float8:
            from .float8 import to_ml_dtypes

            return to_ml_dtypes(self._copy_out(), self.dtype)
        return self._copy_out()

    def numpy_storage(self) -> np.ndarray:
        """Copy the elements into a numpy array of the storage type.

        The same as :meth:`numpy` except for float8 tensors, whose ``uint8`` codes it returns
        (bit for bit, without ml_dtypes): what a serializer or a byte-level copy wants.
        """
        return self._copy_out()

    def _copy_out(self) -> np.ndarray:
        """The elements copied into a numpy array of the storage type (float8: uint8 codes)."""
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
            The shapes or dtypes differ, or the tensor is read-only (imported from a read-only
            DLPack producer).
        """
        if self._is_read_only():
            raise VMValueError(
                "Tensor.copyfrom: the tensor is read-only (its memory came from a read-only "
                "DLPack producer)"
            )
        if isinstance(source, Tensor) and source.dtype == self.dtype and self.dtype.is_float8:
            source = source.numpy_storage()  # the codes, bit for bit (no ml_dtypes needed)
        else:
            if isinstance(source, Tensor) and source.dtype.is_float8:
                from .float8 import float8_bits_to_float

                # Another type: the exact float32 values, converted below like any array.
                source = float8_bits_to_float(source.numpy_storage(), source.dtype)
            elif isinstance(source, Tensor):
                source = source.numpy()
            if self.dtype.is_float8:
                from .float8 import host_float8_bits

                source = host_float8_bits(source, self.dtype)
        # np.asarray(order="C"), not ascontiguousarray, which turns 0-d arrays into 1-d.
        array = np.asarray(source, dtype=self.dtype.numpy_dtype(), order="C")
        if array.shape != tuple(self.shape):
            raise VMValueError(
                f"Tensor.copyfrom: shape {array.shape} does not match the tensor's "
                f"{tuple(self.shape)}"
            )
        self.storage.api.copy_from_host(self.storage.buffer, self.byte_offset, array)
        return self

    def __setitem__(self, key: Any, value: Tensor | np.ndarray | np.generic) -> None:
        """``tensor[:] = value``: copy ``value`` in, as TVM's ``NDArray.__setitem__``.

        Only the whole-tensor slice ``[:]`` is supported. A numpy array is converted to the
        tensor's dtype (as :meth:`copyfrom` and TVM do) and must have its shape; a Tensor must
        have the same shape and dtype.

        Raises
        ------
        VMValueError
            ``key`` is not ``[:]``, or the shapes differ.
        VMTypeError
            ``value`` is neither a Tensor nor a numpy array/scalar, or a Tensor of another
            dtype.
        """
        if not (
            isinstance(key, slice) and key.start is None and key.stop is None and key.step is None
        ):
            raise VMValueError(
                f"Tensor.__setitem__: only tensor[:] = value (a whole copy) is supported, got "
                f"index {key!r}"
            )
        if isinstance(value, Tensor):
            if value is self:
                return
            if value.dtype != self.dtype:
                raise VMTypeError(
                    f"Tensor.__setitem__: dtype {value.dtype} does not match the tensor's "
                    f"{self.dtype}"
                )
            if tuple(value.shape) != tuple(self.shape):
                raise VMValueError(
                    f"Tensor.__setitem__: shape {tuple(value.shape)} does not match the "
                    f"tensor's {tuple(self.shape)}"
                )
            self.copyfrom(value)
            return
        if not isinstance(value, (np.ndarray, np.generic)):
            raise VMTypeError(
                "Tensor.__setitem__: the value must be a Tensor or a numpy array, got "
                f"{type(value).__name__}"
            )
        self.copyfrom(value)

    def copyto(self, target: Device | Tensor) -> Tensor:
        """Copy into ``target`` (a tensor of the same shape, or a new tensor on a device)."""
        if isinstance(target, Tensor):
            return target.copyfrom(self)
        # creation.py imports this module: the call-time import keeps the graph acyclic.
        from .creation import tensor

        return tensor(self if self.dtype.is_float8 else self.numpy(), target)

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

    def _is_read_only(self) -> bool:
        """Whether the memory refuses writes (imported from a read-only DLPack producer)."""
        storage = self.storage
        if not storage.api.host_accessible:
            return False
        buffer = storage.api.host_view(storage.buffer)
        return isinstance(buffer, np.ndarray) and not buffer.flags.writeable

    def __dlpack__(
        self,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export the tensor as a DLPack capsule (Python array API standard).

        Consumers call this for you: ``np.from_dlpack(t)``, ``torch.from_dlpack(t)``.

        Parameters
        ----------
        stream : None
            Must be ``None`` for CPU tensors.
        max_version : tuple of int, optional
            The highest DLPack version the consumer reads. ``(1, 0)`` or later gives a
            ``"dltensor_versioned"`` capsule (with the read-only and copied flags); otherwise
            a DLPack 0.8 ``"dltensor"`` capsule.
        dl_device : tuple of int, optional
            The device the consumer wants; another device than the tensor's is only possible
            for ``(1, 0)`` (CPU) with a copy.
        copy : bool, optional
            ``True`` exports a copy; ``False`` or ``None`` export this tensor's memory.

        Returns
        -------
        PyCapsule
            Until the consumer releases it, the capsule keeps this tensor's memory alive.

        Raises
        ------
        DLPackError
            (A ``BufferError``.) A stream on CPU, an impossible ``dl_device``, a read-only tensor
            asked for as DLPack 0.8, or a dtype DLPack cannot describe (``uint1``).
        """
        # ctypes and the structs load on first use: ``import relaxvm`` stays cheap.
        from .dlpack import export_tensor

        return export_tensor(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device_type, device_id)`` of the memory (``(1, 0)`` for the CPU)."""
        return (self.device.device_type, self.device.device_id)

    def __repr__(self) -> str:
        return f"<Tensor shape={list(self.shape)} dtype={self.dtype} device={self.device!r}>"

    def __str__(self) -> str:
        """The :meth:`__repr__` line, then the values as numpy prints them (abbreviated past
        numpy's print threshold)."""
        return f"{self!r}\n{self._format_values()}"

    def _format_values(self) -> str:
        # Printing must never fail: a debugging print of a broken or foreign tensor is the
        # worst place for a second error.
        try:
            if not self.storage.api.host_accessible:
                return f"<values on device {self.device!r}>"
            array = self._printable_array()
            return np.array2string(array)
        except Exception as err:
            return f"<values not printable: {err}>"

    def _printable_array(self) -> np.ndarray:
        """A host array of the values for printing (a view when numpy has the dtype)."""
        raw = self.storage.api.host_view(self.storage.buffer)
        dtype = self.dtype
        shape = tuple(self.shape) if dtype.lanes == 1 else (*self.shape, dtype.lanes)
        if dtype.code == DataTypeCode.BFLOAT:
            # bfloat16 is the upper half of a float32.
            bits = np.ndarray(shape, np.uint16, buffer=raw, offset=self.byte_offset)
            return (bits.astype(np.uint32) << 16).view(np.float32)
        lane = dtype.with_lanes(1).numpy_dtype()
        array = np.ndarray(shape, lane, buffer=raw, offset=self.byte_offset)
        if dtype.is_float8:
            from .float8 import float8_bits_to_float

            return float8_bits_to_float(array, dtype.with_lanes(1))
        return array

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)
