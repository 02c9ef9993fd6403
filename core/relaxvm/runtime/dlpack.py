"""DLPack both ways: :meth:`Tensor.__dlpack__` (export) and :func:`from_dlpack` (import).

The structs of ``dlpack.h`` (0.8 and 1.0) are built with :mod:`ctypes`; no compiler is
involved. Ownership follows the protocol:

* **Export.** ``__dlpack__`` returns a capsule named ``"dltensor"`` (or
  ``"dltensor_versioned"`` when the consumer passes ``max_version >= (1, 0)``). Until the
  consumer calls the struct's deleter, a module-level table holds the struct, its shape and
  strides arrays and the :class:`~relaxvm.runtime.Tensor`, so the memory cannot go back to the
  pool while a numpy array or torch tensor still views it. A capsule dropped without being
  consumed is released at the next export (see :func:`_sweep_pending` for why not in a
  capsule destructor).
* **Import.** :func:`~relaxvm.runtime.from_dlpack` renames the capsule to ``"used_dltensor"`` (or
  ``"used_dltensor_versioned"``) and takes over the struct; the deleter runs when the last
  relaxvm tensor viewing the memory is gone, which keeps the producer alive until then.

Only host memory (DLPack ``kDLCPU``) is imported today: :data:`_IMPORTERS` maps a device type
to the function that wraps its memory, so a CUDA importer is one more entry.
"""

from __future__ import annotations

import ctypes
import math
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DeviceError, VMTypeError, VMValueError
from .device import Device
from .dtype import DataType, DataTypeCode
from .shape import Shape

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["DLPackError", "export_tensor", "import_tensor"]


class DLPackError(VMValueError, BufferError):
    """A tensor cannot be exchanged through DLPack as asked.

    A ``BufferError`` as the Python array API standard asks of producers, and a
    :class:`~relaxvm.errors.VMValueError` like every other relaxvm value error.
    """


# --- dlpack.h ---------------------------------------------------------------------------------

KDL_CPU = 1
#: ``DLPACK_FLAG_BITMASK_READ_ONLY`` and ``DLPACK_FLAG_BITMASK_IS_COPIED`` (DLPack 1.0).
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
#: The version written into versioned capsules; consumers accept any 1.x.
DLPACK_VERSION = (1, 0)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


#: ``void (*deleter)(DLManagedTensor*)``: a C function type, so ctypes takes the GIL when a
#: consumer calls our deleter from C on any thread.
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


_LEGACY = b"dltensor"
_VERSIONED = b"dltensor_versioned"
_USED_LEGACY = b"used_dltensor"
_USED_VERSIONED = b"used_dltensor_versioned"

# A private handle on the Python C API: setting argtypes on ``ctypes.pythonapi`` itself would
# change them for every other library in the process.
_api = ctypes.PyDLL(None, handle=ctypes.pythonapi._handle)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]


# --- export -----------------------------------------------------------------------------------

#: Every exported struct not yet deleted, by address: the struct, its shape/strides arrays and
#: the tensor (whose storage must not return to the pool while a consumer views it).
_live: dict[int, tuple[Any, ...]] = {}
#: Capsules handed out and not yet seen consumed, by struct address (see _sweep_pending).
_pending: dict[int, Any] = {}
_live_lock = threading.Lock()


def _release_export(address: int | None) -> None:
    if address:
        with _live_lock:
            _live.pop(address, None)


def _deleter(address: int | None) -> None:
    # Called from C: an exception escaping here would only be printed, never raised, and the
    # consumer could not handle it anyway.
    try:
        _release_export(address)
    except BaseException:
        pass


def _sweep_pending() -> None:
    """Settle the capsules handed out since the last call.

    A capsule destructor written in Python is unsafe: CPython may free the capsule while an
    exception is being raised, and calling Python code then crashes the interpreter. So our
    capsules have no destructor; instead :data:`_pending` holds each one until it is seen
    either consumed (renamed ``"used_..."``: the consumer now owns the struct and will call
    its deleter) or abandoned (only this table still refers to it: nobody can consume it, so
    the export is released). This runs at every export, where the table is small: consumers
    rename a capsule as soon as they receive it.
    """
    with _live_lock:
        pending = list(_pending.items())
    for address, capsule in pending:
        name = _api.PyCapsule_GetName(capsule)
        # Abandoned: only the table, the snapshot's tuple, the loop variable and getrefcount's
        # own argument refer to it.
        if name in (_USED_LEGACY, _USED_VERSIONED):
            with _live_lock:
                _pending.pop(address, None)
        elif sys.getrefcount(capsule) <= 4:
            with _live_lock:
                _pending.pop(address, None)
                _live.pop(address, None)
    del pending


# The deleter lives as long as the process: C code may call it at any time.
_DELETER_FN = _DELETER(_deleter)


def _export_dtype(dtype: DataType) -> DLDataType:
    if dtype.code == DataTypeCode.UINT and dtype.bits == 1:
        # DLPack reads bits=1 as packed bits; relaxvm keeps one byte per element.
        raise DLPackError(
            "Tensor.__dlpack__: dtype uint1 (one byte per element) has no DLPack encoding; "
            "convert it to bool first"
        )
    return DLDataType(dtype.code, dtype.bits, dtype.lanes)


def export_tensor(
    tensor: Tensor,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> Any:
    """Implement :meth:`Tensor.__dlpack__` (see there)."""
    device = tensor.device
    own_device = (device.device_type, device.device_id)
    api = tensor.storage.api
    copied = False
    if dl_device is not None and tuple(dl_device) != own_device:
        if tuple(dl_device) != (KDL_CPU, 0) or copy is False:
            raise DLPackError(
                f"Tensor.__dlpack__: cannot export a tensor on {device!r} to dl_device "
                f"{tuple(dl_device)}" + (" without a copy (copy=False)" if copy is False else "")
            )
        # creation imports memory which imports tensor: call-time import, acyclic graph.
        from .creation import tensor as new_tensor

        tensor, copied = new_tensor(tensor.numpy()), True
    elif copy:
        tensor, copied = tensor.copyto(device), True
    if stream is not None and tensor.device.device_type == KDL_CPU:
        raise DLPackError(f"Tensor.__dlpack__: stream must be None for CPU tensors, got {stream!r}")
    sync = getattr(tensor.storage.api, "synchronize", None)
    if sync is not None and not api.host_accessible:
        # Producer side of the stream contract: the data is ready before the consumer reads.
        sync(tensor.device.device_id)
    versioned = max_version is not None and int(max_version[0]) >= 1
    read_only = tensor._is_read_only()
    if read_only and not versioned:
        raise DLPackError(
            "Tensor.__dlpack__: the tensor is read-only and DLPack 0.8 cannot say so; "
            "the consumer must ask for max_version=(1, 0)"
        )
    ndim = tensor.ndim
    shape = (ctypes.c_int64 * max(ndim, 1))(*tensor.shape)
    # Compact row-major tensors: NULL strides (allowed by 0.8 and 1.0).
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned:
        managed = DLManagedTensorVersioned()
        managed.version = DLPackVersion(*DLPACK_VERSION)
        managed.flags = (FLAG_READ_ONLY if read_only else 0) | (FLAG_IS_COPIED if copied else 0)
    else:
        managed = DLManagedTensor()
    dl = managed.dl_tensor
    # data stays the storage's (aligned) base and byte_offset says where the tensor starts,
    # as dlpack.h asks; numpy and torch both add byte_offset.
    dl.data = tensor.storage.data_ptr
    dl.device = DLDevice(tensor.device.device_type, tensor.device.device_id)
    dl.ndim = ndim
    dl.dtype = _export_dtype(tensor.dtype)
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.POINTER(ctypes.c_int64)()
    dl.byte_offset = tensor.byte_offset
    managed.manager_ctx = None
    managed.deleter = _DELETER_FN
    address = ctypes.addressof(managed)
    _sweep_pending()
    with _live_lock:
        _live[address] = (managed, shape, tensor)
    try:
        capsule = _api.PyCapsule_New(address, _VERSIONED if versioned else _LEGACY, None)
    except BaseException:
        _release_export(address)
        raise
    with _live_lock:
        _pending[address] = capsule
    return capsule


# --- import -----------------------------------------------------------------------------------


class _ImportedMemory:
    """Owns one consumed DLPack struct: calls its deleter when the last view is gone.

    numpy arrays built from :attr:`__array_interface__` keep this object as their base, so
    the storage buffer of an imported tensor keeps the producer's memory alive.
    """

    def __init__(self, address: int, managed: Any, pointer: int, nbytes: int, read_only: bool):
        self._address = address
        self._managed = managed
        self.__array_interface__ = {
            "version": 3,
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (pointer, read_only),
        }

    def release(self) -> None:
        managed, self._managed = self._managed, None
        if managed is not None and managed.deleter:
            managed.deleter(self._address)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            # A failing producer deleter must not surface from garbage collection.
            pass


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _capsule_of(obj: Any) -> Any:
    if _is_capsule(obj):
        return obj
    producer = getattr(obj, "__dlpack__", None)
    if producer is None:
        raise VMTypeError(
            f"from_dlpack: expected an object with __dlpack__ (numpy >= 1.22 array, torch "
            f"tensor, ...) or a DLPack capsule, got {type(obj).__name__}"
        )
    device_of = getattr(obj, "__dlpack_device__", None)
    if device_of is not None:
        device_type, device_id = device_of()
        _importer(int(device_type), int(device_id))
    try:
        return producer(max_version=DLPACK_VERSION)
    except TypeError:
        # Producers older than the 2023 array API (numpy < 2) take no max_version.
        return producer()


def _importer(device_type: int, device_id: int) -> Callable[..., Tensor]:
    importer = _IMPORTERS.get(device_type)
    if importer is None:
        raise DeviceError(
            f"from_dlpack: cannot import a tensor on {Device(device_type, device_id)!r}: "
            "only CPU memory (kDLCPU) is supported"
        )
    return importer


def _dtype_of(dl: DLTensor) -> DataType:
    code, bits, lanes = int(dl.dtype.code), int(dl.dtype.bits), int(dl.dtype.lanes)
    try:
        return DataType.from_code(code, bits, lanes)
    except VMValueError as err:
        raise DLPackError(
            f"from_dlpack: DLPack dtype (code={code}, bits={bits}, lanes={lanes}) has no "
            f"relaxvm equivalent: {err}"
        ) from None


def _strides_in_bytes(dl: DLTensor, shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    if not dl.strides:
        return _compact_strides(shape, itemsize)
    return tuple(int(dl.strides[i]) * itemsize for i in range(len(shape)))


def _compact_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _is_compact(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    if 0 in shape:
        return True
    # A dimension of extent 1 never steps, whatever stride the producer wrote (torch writes
    # arbitrary ones).
    expected = _compact_strides(shape, itemsize)
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected, strict=True))


def _import_cpu(
    address: int, managed: Any, dl: DLTensor, dtype: DataType, read_only: bool, copy: bool | None
) -> Tensor:
    from .creation import tensor as new_tensor
    from .memory import Storage
    from .tensor import Tensor

    shape = tuple(int(dl.shape[i]) for i in range(int(dl.ndim)))
    itemsize = dtype.itemsize
    strides = _strides_in_bytes(dl, shape, itemsize)
    compact = _is_compact(shape, strides, itemsize)
    device = Device(KDL_CPU, int(dl.device.device_id))
    start = int(dl.data or 0) + int(dl.byte_offset)
    if math.prod(shape) == 0:
        low, span = 0, 0
    else:
        # The bytes the elements reach: strides may be negative.
        low = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s < 0)
        high = sum(s * (n - 1) for n, s in zip(shape, strides, strict=True) if s > 0)
        span = high - low + itemsize
    owner = _ImportedMemory(address, managed, start + low, span, read_only)
    if not compact and copy is False:
        owner.release()
        raise DLPackError(
            f"from_dlpack: the producer's tensor is strided (shape {shape}, byte strides "
            f"{strides}) and copy=False forbids copying it into a compact tensor"
        )
    raw = np.asarray(owner) if span else np.empty(0, np.uint8)
    if compact and not copy:
        storage = Storage(raw, span, device, device.api, None, start + low)
        return Tensor(storage, 0, Shape(shape), dtype)
    # Copy rule: a strided producer (or copy=True) gives a new compact tensor; numpy reads
    # the elements through their strides, with an unsigned type of the same width where numpy
    # has none (bfloat16).
    try:
        element = dtype.numpy_dtype()
    except VMTypeError:
        element = np.dtype(f"u{itemsize}")
    view = np.lib.stride_tricks.as_strided(
        raw[-low:].view(element) if span else raw.view(element), shape, strides, writeable=False
    )
    result = new_tensor(np.ascontiguousarray(view), device)
    if result.dtype != dtype:
        result = result.view(result.shape, dtype)
    owner.release()
    return result


_IMPORTERS: dict[int, Callable[..., Tensor]] = {KDL_CPU: _import_cpu}


def import_tensor(obj: Any, copy: bool | None = None) -> Tensor:
    """Implement :func:`relaxvm.runtime.from_dlpack` (see there)."""
    if copy not in (None, True, False):
        raise VMTypeError(f"from_dlpack: copy must be None, True or False, got {copy!r}")
    capsule = _capsule_of(obj)
    if not _is_capsule(capsule):
        raise VMTypeError(
            f"from_dlpack: __dlpack__ of {type(obj).__name__} returned "
            f"{type(capsule).__name__}, not a DLPack capsule"
        )
    name = _api.PyCapsule_GetName(capsule)
    if name in (_USED_LEGACY, _USED_VERSIONED):
        raise DLPackError(
            "from_dlpack: the capsule was already consumed (named "
            f"{name.decode()!r}); ask the producer for a new one"
        )
    if name not in (_LEGACY, _VERSIONED):
        raise DLPackError(f"from_dlpack: not a DLPack capsule (capsule name {name!r})")
    versioned = name == _VERSIONED
    address = _api.PyCapsule_GetPointer(ctypes.c_void_p(id(capsule)), name)
    managed: Any
    if versioned:
        managed = DLManagedTensorVersioned.from_address(address)
        if managed.version.major != 1:
            raise DLPackError(
                f"from_dlpack: DLPack version {managed.version.major}.{managed.version.minor} "
                "is not supported (relaxvm reads 1.x)"
            )
        read_only = bool(managed.flags & FLAG_READ_ONLY)
    else:
        managed = DLManagedTensor.from_address(address)
        read_only = False
    dl = managed.dl_tensor
    importer = _importer(int(dl.device.device_type), int(dl.device.device_id))
    dtype = _dtype_of(dl)
    # From here the struct is ours: the rename tells the producer's capsule destructor so.
    if _api.PyCapsule_SetName(capsule, _USED_VERSIONED if versioned else _USED_LEGACY):
        raise DLPackError("from_dlpack: could not rename the capsule")
    return importer(address, managed, dl, dtype, read_only, copy)
