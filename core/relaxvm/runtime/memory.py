"""Storage and allocators: naive (every request goes to the device) and pooled (freed buffers
are kept per size class and handed out again), with statistics, plus the process-wide
manager that owns one allocator per ``(device, allocator type)``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from ..errors import VMError, VMValueError
from .device import Device, DeviceAPI
from .dtype import DataType
from .shape import Shape
from .tensor import Tensor, _nbytes

__all__ = [
    "Allocator",
    "AllocatorStats",
    "AllocatorType",
    "NaiveAllocator",
    "PooledAllocator",
    "Storage",
    "clear_pools",
    "get_allocator",
]

#: Byte alignment of every allocation (enough for AVX-512 loads and CUDA's 256-byte rule is
#: the device API's business).
DEFAULT_ALIGNMENT = 64
#: Pooled allocations are rounded up to a multiple of this (TVM's page size).
PAGE_SIZE = 4096


class AllocatorType(IntEnum):
    """TVM's ``AllocatorType`` codes (``VirtualMachine.NAIVE_ALLOCATOR`` / ``POOLED_ALLOCATOR``)."""

    NAIVE = 1
    POOLED = 2


@dataclass
class AllocatorStats:
    """Counters kept by every allocator (bytes are as requested from the device)."""

    allocations: int = 0
    releases: int = 0
    pool_hits: int = 0
    device_allocations: int = 0
    bytes_in_use: int = 0
    peak_bytes_in_use: int = 0
    bytes_pooled: int = 0


class Storage:
    """A block of device memory that tensors are carved from.

    Parameters are internal: get a storage from :meth:`Allocator.alloc`.
    """

    __slots__ = ("__weakref__", "_allocator", "api", "buffer", "data_ptr", "device", "nbytes")

    def __init__(
        self,
        buffer: Any,
        nbytes: int,
        device: Device,
        api: DeviceAPI,
        allocator: Allocator | None,
        data_ptr: int | None = None,
    ) -> None:
        self.buffer = buffer
        self.nbytes = nbytes
        self.device = device
        self.api = api
        # Asking the device API for the address can cost a microsecond; allocators pass the
        # one they computed when the buffer was first made.
        self.data_ptr = api.data_ptr(buffer) if data_ptr is None else data_ptr
        self._allocator = allocator

    def alloc_tensor(self, offset: int, shape: Shape, dtype: DataType) -> Tensor:
        """A tensor view of ``shape``/``dtype`` starting ``offset`` bytes into this storage.

        Raises
        ------
        VMValueError
            The view does not fit ("storage allocation failure ...").
        """
        size = _nbytes(shape, dtype)
        if offset < 0 or offset + size > self.nbytes:
            raise VMValueError(
                f"storage allocation failure, attempted to allocate {size} at offset {offset} "
                f"in region that is {self.nbytes} bytes"
            )
        return Tensor(self, offset, shape, dtype)

    def __del__(self) -> None:
        allocator = self._allocator
        if allocator is not None:
            self._allocator = None
            try:
                allocator._release((self.buffer, self.data_ptr), self.nbytes)
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"Storage({self.nbytes} bytes on {self.device!r})"


class Allocator:
    """Base allocator for one device; see :class:`NaiveAllocator` and :class:`PooledAllocator`."""

    type: AllocatorType

    def __init__(self, device: Device) -> None:
        self.device = device
        self.api = device.api
        self.stats = AllocatorStats()
        # Re-entrant: a Storage freed by garbage collection inside alloc() releases into the
        # same allocator on the same thread.
        self._lock = threading.RLock()
        #: Objects built on this allocator's memory that a builtin may recycle (the shape
        #: heaps of ``vm.builtin.alloc_shape_heap``), keyed by the builtin; dropped by
        #: :meth:`clear`.
        self.scratch: dict[Any, list[Any]] = {}

    def alloc(
        self,
        nbytes: int,
        alignment: int = DEFAULT_ALIGNMENT,
        dtype_hint: DataType | str | None = None,
        scope: str = "global",
    ) -> Storage:
        """Allocate ``nbytes`` of storage.

        Raises
        ------
        VMValueError
            ``nbytes`` is negative or the memory scope is not ``"global"``.
        VMError
            The device is out of memory.
        """
        if type(nbytes) is not int:
            if not isinstance(nbytes, int) or isinstance(nbytes, bool):
                raise VMValueError(
                    f"alloc_storage: size must be a non-negative int, got {nbytes!r}"
                )
            nbytes = int(nbytes)
        if nbytes < 0:
            raise VMValueError(f"alloc_storage: size must be a non-negative int, got {nbytes!r}")
        if scope != "global":
            raise VMValueError(
                f"alloc_storage: memory scope {scope!r} is not supported on {self.device!r} "
                "(only 'global')"
            )
        size = self._round(nbytes)
        with self._lock:
            buffer, pointer = self._take(size, alignment)
            stats = self.stats
            stats.allocations += 1
            in_use = stats.bytes_in_use = stats.bytes_in_use + size
            if in_use > stats.peak_bytes_in_use:
                stats.peak_bytes_in_use = in_use
        return Storage(buffer, size, self.device, self.api, self, pointer)

    def empty(self, shape: Shape | tuple[int, ...], dtype: DataType | str) -> Tensor:
        """A new uninitialised tensor in fresh storage."""
        shape = Shape(shape)
        dtype = DataType(dtype)
        return self.alloc(_nbytes(shape, dtype)).alloc_tensor(0, shape, dtype)

    def clear(self) -> None:
        """Give cached memory back to the device (the naive allocator caches only scratch)."""
        self.scratch.clear()

    def _round(self, nbytes: int) -> int:
        return nbytes or 1

    # Buffers travel inside the allocators as (buffer, data pointer) pairs.
    def _device_alloc(self, size: int, alignment: int) -> tuple[Any, int]:
        try:
            buffer = self.api.alloc(self.device.device_id, size, alignment)
        except MemoryError as err:
            if isinstance(err, VMError):
                raise  # the device API's own error already names the request and the memory
            raise VMError(
                f"out of memory: cannot allocate {size} bytes on {self.device!r}"
            ) from None
        self.stats.device_allocations += 1
        return buffer, self.api.data_ptr(buffer)

    def _take(self, size: int, alignment: int) -> tuple[Any, int]:
        """A block of ``size`` bytes (called with the lock held)."""
        return self._device_alloc(size, alignment)

    def _release(self, block: tuple[Any, int], size: int) -> None:
        with self._lock:
            self.stats.releases += 1
            self.stats.bytes_in_use -= size
        self.api.free(block[0])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device!r})"


class NaiveAllocator(Allocator):
    """Every allocation goes to the device; every release frees at once."""

    type = AllocatorType.NAIVE


class PooledAllocator(Allocator):
    """Keeps released buffers, per page-rounded size, for the next allocation of that size.

    Memory stays with the pool until :meth:`clear` (or ``vm.builtin.memory_manager.clear``).
    """

    type = AllocatorType.POOLED

    def __init__(self, device: Device) -> None:
        super().__init__(device)
        self._free: dict[int, list[tuple[Any, int]]] = {}

    def alloc(
        self,
        nbytes: int,
        alignment: int = DEFAULT_ALIGNMENT,
        dtype_hint: DataType | str | None = None,
        scope: str = "global",
    ) -> Storage:
        # The common request (a positive int, global scope) without the helper calls of
        # Allocator.alloc: this runs for every planned storage of every VM call. Anything
        # else takes the general path and its checks.
        if nbytes.__class__ is not int or nbytes <= 0 or scope != "global":
            return super().alloc(nbytes, alignment, dtype_hint, scope)
        size = (nbytes + PAGE_SIZE - 1) // PAGE_SIZE * PAGE_SIZE
        stats = self.stats
        with self._lock:
            bucket = self._free.get(size)
            if bucket:
                stats.pool_hits += 1
                stats.bytes_pooled -= size
                buffer, pointer = bucket.pop()
            else:
                buffer, pointer = self._device_alloc(size, alignment)
            stats.allocations += 1
            in_use = stats.bytes_in_use = stats.bytes_in_use + size
            if in_use > stats.peak_bytes_in_use:
                stats.peak_bytes_in_use = in_use
        return Storage(buffer, size, self.device, self.api, self, pointer)

    def _round(self, nbytes: int) -> int:
        return (nbytes + PAGE_SIZE - 1) // PAGE_SIZE * PAGE_SIZE if nbytes else PAGE_SIZE

    def _take(self, size: int, alignment: int) -> tuple[Any, int]:
        bucket = self._free.get(size)
        if bucket:
            self.stats.pool_hits += 1
            self.stats.bytes_pooled -= size
            return bucket.pop()
        return self._device_alloc(size, alignment)

    def _release(self, block: tuple[Any, int], size: int) -> None:
        stats = self.stats
        with self._lock:
            stats.releases += 1
            stats.bytes_in_use -= size
            stats.bytes_pooled += size
            bucket = self._free.get(size)
            if bucket is None:
                self._free[size] = [block]
            else:
                bucket.append(block)

    def clear(self) -> None:
        """Free every cached buffer back to the device."""
        # Scratch objects first: what they held returns to the pool, freed just below.
        self.scratch.clear()
        with self._lock:
            pooled = self._free
            self._free = {}
            self.stats.bytes_pooled = 0
        for blocks in pooled.values():
            for buffer, _ in blocks:
                self.api.free(buffer)


_allocators: dict[tuple[Device, AllocatorType], Allocator] = {}
_allocators_lock = threading.Lock()


def get_allocator(device: Device, kind: AllocatorType | int = AllocatorType.POOLED) -> Allocator:
    """The process-wide allocator of ``kind`` for ``device`` (created on first use).

    Raises
    ------
    VMValueError
        ``kind`` is not an :class:`AllocatorType`.
    DeviceError
        No device API is installed for ``device``.
    """
    try:
        kind = AllocatorType(kind)
    except ValueError:
        raise VMValueError(
            f"unknown allocator type {kind!r}; expected 1 (naive) or 2 (pooled)"
        ) from None
    key = (device, kind)
    allocator = _allocators.get(key)
    if allocator is None:
        with _allocators_lock:
            allocator = _allocators.get(key)
            if allocator is None:
                cls = NaiveAllocator if kind is AllocatorType.NAIVE else PooledAllocator
                allocator = _allocators[key] = cls(device)
    return allocator


def clear_pools() -> None:
    """Release the memory cached by every pooled allocator."""
    for allocator in list(_allocators.values()):
        allocator.clear()
