"""The ``cuda`` device API: tensors whose storage lives in device memory.

Registered as ``device_api.cuda`` by :mod:`relaxvm_cuda.plugin`, it makes
``relaxvm.tensor(x, relaxvm.cuda())``, ``Tensor.numpy()``, ``Tensor.copyfrom`` and
``vm.builtin.to_device`` work: buffers are :class:`DeviceBuffer` objects, and copies go
through the driver (:mod:`relaxvm_cuda.driver`). The API itself needs no driver: building it,
and ``relaxvm.cuda(0).exist``, work on any machine; the first allocation or copy asks for
the driver and raises :class:`~relaxvm_cuda.runtime_errors.CUDAUnavailableError` saying
what is missing (the library, a working driver, or a device with that ordinal).

Device memory comes from one allocator per device, under relaxvm's own (which pools
:class:`relaxvm.runtime.Storage` blocks): :class:`PooledDeviceAllocator` by default, which
keeps freed blocks by size class for the next request of that class (``cuMemAlloc`` and
``cuMemFree`` are slow and ``cuMemFree`` synchronizes the device), or
:class:`NaiveDeviceAllocator` when ``RELAXVM_CUDA_POOL=0``. When the device runs out of memory
the pool frees what it caches and retries once before raising
:class:`~relaxvm_cuda.runtime_errors.CUDAOutOfMemoryError`.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numpy as np

from relaxvm.errors import DeviceError, VMValueError

from .driver import Driver, get_driver
from .runtime_errors import CUDAOutOfMemoryError, CUDAUnavailableError

__all__ = [
    "ALIGNMENT",
    "POOL_ENV",
    "CUDADeviceAPI",
    "DeviceBuffer",
    "DeviceMemoryStats",
    "NaiveDeviceAllocator",
    "PooledDeviceAllocator",
    "cuda_device_api",
]

#: Set to 0 to give every freed block straight back to the driver.
POOL_ENV = "RELAXVM_CUDA_POOL"
#: What cuMemAlloc guarantees; larger alignments are made by over-allocating.
ALIGNMENT = 256
CUDA_DEVICE_TYPE = 2  # DLPack kDLCUDA


@dataclass
class DeviceMemoryStats:
    """Counters of one device allocator (bytes as held from the driver)."""

    device_allocations: int = 0
    device_frees: int = 0
    pool_hits: int = 0
    bytes_in_use: int = 0
    peak_bytes_in_use: int = 0
    bytes_cached: int = 0


class NaiveDeviceAllocator:
    """Every request goes to ``cuMemAlloc``, every release to ``cuMemFree``.

    Parameters
    ----------
    driver : Driver
    ordinal : int
        The device.
    """

    def __init__(self, driver: Driver, ordinal: int) -> None:
        self.driver = driver
        self.ordinal = ordinal
        self.stats = DeviceMemoryStats()
        self._lock = threading.Lock()

    def size_class(self, nbytes: int) -> int:
        """The bytes actually held for a request of ``nbytes``."""
        return max(nbytes, 1)

    def alloc(self, nbytes: int) -> tuple[int, int]:
        """Allocate at least ``nbytes``; returns ``(pointer, size)``, to give back to
        :meth:`free`.

        Raises
        ------
        CUDAOutOfMemoryError
            The device has not enough free memory.
        """
        size = self.size_class(nbytes)
        pointer = self._device_alloc(size)
        with self._lock:
            self._count_in(size)
        return pointer, size

    def free(self, pointer: int, size: int) -> None:
        """Release a block from :meth:`alloc`."""
        with self._lock:
            self.stats.bytes_in_use -= size
            self.stats.device_frees += 1
        self.driver.mem_free(self.ordinal, pointer)

    def release_cached(self) -> int:
        """Give cached blocks back to the driver; returns the bytes released (none here)."""
        return 0

    def _device_alloc(self, size: int) -> int:
        pointer = self.driver.mem_alloc(self.ordinal, size)
        with self._lock:
            self.stats.device_allocations += 1
        return pointer

    def _count_in(self, size: int) -> None:
        stats = self.stats
        stats.bytes_in_use += size
        stats.peak_bytes_in_use = max(stats.peak_bytes_in_use, stats.bytes_in_use)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cuda({self.ordinal}))"


class PooledDeviceAllocator(NaiveDeviceAllocator):
    """Keeps freed blocks per size class and hands them out again.

    Size classes: multiples of 512 bytes below 1 MiB, multiples of 1 MiB above (a block is
    at most 511 bytes, or 1 MiB - 1, larger than asked). A request the device cannot
    satisfy first releases every cached block, then retries once.
    """

    _SMALL = 512
    _LARGE = 1 << 20

    def __init__(self, driver: Driver, ordinal: int) -> None:
        super().__init__(driver, ordinal)
        self._free: dict[int, list[int]] = {}

    def size_class(self, nbytes: int) -> int:
        step = self._SMALL if nbytes < self._LARGE else self._LARGE
        return max(step, -(-nbytes // step) * step)

    def alloc(self, nbytes: int) -> tuple[int, int]:
        size = self.size_class(nbytes)
        with self._lock:
            bucket = self._free.get(size)
            if bucket:
                self.stats.pool_hits += 1
                self.stats.bytes_cached -= size
                self._count_in(size)
                return bucket.pop(), size
        try:
            return super().alloc(nbytes)
        except CUDAOutOfMemoryError:
            if not self.release_cached():
                raise
            return super().alloc(nbytes)  # raises again when it still does not fit

    def free(self, pointer: int, size: int) -> None:
        with self._lock:
            self.stats.bytes_in_use -= size
            self.stats.bytes_cached += size
            self._free.setdefault(size, []).append(pointer)

    def release_cached(self) -> int:
        with self._lock:
            blocks, self._free = self._free, {}
            released = self.stats.bytes_cached
            self.stats.bytes_cached = 0
        for pointers in blocks.values():
            for pointer in pointers:
                self.stats.device_frees += 1
                self.driver.mem_free(self.ordinal, pointer)
        return released


class DeviceBuffer:
    """A block of device memory handed out by :class:`CUDADeviceAPI` (opaque to the core).

    Attributes
    ----------
    ordinal : int
        The device.
    pointer : int
        The ``CUdeviceptr`` of the first byte (aligned as requested).
    nbytes : int
        Bytes usable from ``pointer``.
    """

    __slots__ = ("_allocator", "_base", "_size", "freed", "nbytes", "ordinal", "pointer")

    def __init__(
        self,
        ordinal: int,
        pointer: int,
        nbytes: int,
        base: int,
        size: int,
        allocator: NaiveDeviceAllocator,
    ) -> None:
        self.ordinal = ordinal
        self.pointer = pointer
        self.nbytes = nbytes
        self._base = base
        self._size = size
        self._allocator = allocator
        self.freed = False

    def __repr__(self) -> str:
        state = ", freed" if self.freed else ""
        return f"<DeviceBuffer cuda({self.ordinal}) 0x{self.pointer:x} {self.nbytes} bytes{state}>"


def _pool_enabled() -> bool:
    return os.environ.get(POOL_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


class CUDADeviceAPI:
    """``device_api.cuda``: DLPack device type 2, memory the host cannot read directly."""

    kind = "cuda"
    device_type = CUDA_DEVICE_TYPE
    host_accessible = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._driver: Driver | None = None
        self._allocators: dict[int, NaiveDeviceAllocator] = {}

    # ---- availability ----------------------------------------------------------------------
    def exists(self, device_id: int) -> bool:
        """Whether ``cuda(device_id)`` is present; False (never an error) without a driver."""
        try:
            return 0 <= device_id < get_driver().device_count()
        except Exception:  # no library, cuInit failed, a broken driver: all mean "absent"
            return False

    def require(self, device_id: int) -> Driver:
        """The driver, after checking that device ``device_id`` is present.

        Raises
        ------
        CUDAUnavailableError
            No driver library, ``cuInit`` failed, or no device with that ordinal (the message
            says which, and how many devices there are).
        """
        driver = get_driver()
        count = driver.device_count()
        if not 0 <= device_id < count:
            raise CUDAUnavailableError(
                f"no CUDA device with ordinal {device_id}: {count} present"
                + (f" (cuda(0) .. cuda({count - 1}))" if count else ""),
                "device",
            )
        return driver

    def allocator(self, device_id: int) -> NaiveDeviceAllocator:
        """The device memory allocator of ``cuda(device_id)`` (pooled unless
        ``RELAXVM_CUDA_POOL=0`` when it was created)."""
        driver = self.require(device_id)
        with self._lock:
            if driver is not self._driver:  # a new driver (tests): its own allocators
                self._driver = driver
                self._allocators = {}
            allocator = self._allocators.get(device_id)
            if allocator is None:
                cls = PooledDeviceAllocator if _pool_enabled() else NaiveDeviceAllocator
                allocator = self._allocators[device_id] = cls(driver, device_id)
        return allocator

    # ---- the DeviceAPI protocol ------------------------------------------------------------
    def alloc(self, device_id: int, nbytes: int, alignment: int) -> DeviceBuffer:
        """Allocate ``nbytes`` of device memory aligned to ``alignment`` (a power of two).

        Raises
        ------
        CUDAUnavailableError
            CUDA or the device is missing.
        CUDAOutOfMemoryError
            (A ``MemoryError``.) The device is out of memory, even after the pool released
            what it caches.
        """
        if alignment <= 0 or alignment & (alignment - 1):
            raise VMValueError(f"cuda alloc: alignment must be a power of two, got {alignment}")
        allocator = self.allocator(device_id)
        extra = max(alignment - ALIGNMENT, 0)
        base, size = allocator.alloc(max(nbytes, 1) + extra)
        pointer = (base + alignment - 1) // alignment * alignment
        return DeviceBuffer(device_id, pointer, nbytes, base, size, allocator)

    def free(self, buffer: DeviceBuffer) -> None:
        """Release a buffer (a second release of the same buffer does nothing)."""
        if buffer.freed:
            return
        buffer.freed = True
        buffer._allocator.free(buffer._base, buffer._size)

    def data_ptr(self, buffer: DeviceBuffer) -> int:
        """The device address of the buffer's first byte."""
        return buffer.pointer

    def _span(self, what: str, buffer: DeviceBuffer, byte_offset: int, nbytes: int) -> int:
        if buffer.freed:
            raise VMValueError(f"cuda {what}: the buffer was freed")
        if buffer._allocator.driver is not get_driver():
            raise VMValueError(
                f"cuda {what}: the buffer was allocated through another CUDA driver than the "
                "current one (relaxvm_cuda.driver.set_driver replaced it)"
            )
        if byte_offset < 0 or byte_offset + nbytes > buffer.nbytes:
            raise VMValueError(
                f"cuda {what}: {nbytes} bytes at offset {byte_offset} do not fit in the "
                f"buffer's {buffer.nbytes} bytes"
            )
        return buffer.pointer + byte_offset

    def copy_from_host(self, buffer: DeviceBuffer, byte_offset: int, src: np.ndarray) -> None:
        """Copy the host array ``src`` (made C-contiguous) into ``buffer`` at ``byte_offset``."""
        src = np.ascontiguousarray(src)
        dst = self._span("copy_from_host", buffer, byte_offset, src.nbytes)
        if src.nbytes:
            self.require(buffer.ordinal).memcpy_htod(
                buffer.ordinal, dst, src.ctypes.data, src.nbytes
            )

    def copy_to_host(self, buffer: DeviceBuffer, byte_offset: int, dst: np.ndarray) -> None:
        """Copy ``dst.nbytes`` bytes from ``buffer`` at ``byte_offset`` into ``dst``."""
        src = self._span("copy_to_host", buffer, byte_offset, dst.nbytes)
        if not dst.nbytes:
            return
        driver = self.require(buffer.ordinal)
        if dst.flags.c_contiguous and dst.flags.writeable:
            driver.memcpy_dtoh(buffer.ordinal, dst.ctypes.data, src, dst.nbytes)
            return
        if not dst.flags.writeable:
            raise VMValueError("cuda copy_to_host: the destination array is read-only")
        staged = np.empty(dst.shape, dst.dtype)
        driver.memcpy_dtoh(buffer.ordinal, staged.ctypes.data, src, staged.nbytes)
        dst[...] = staged

    def copy_within(
        self,
        dst: DeviceBuffer,
        dst_offset: int,
        src: DeviceBuffer,
        src_offset: int,
        nbytes: int,
    ) -> None:
        """Copy ``nbytes`` between two buffers of the same device, without the host.

        Raises
        ------
        VMValueError
            The buffers are on different devices, or a range does not fit.
        """
        if dst.ordinal != src.ordinal:
            raise VMValueError(
                f"cuda copy_within: buffers on cuda({src.ordinal}) and cuda({dst.ordinal}); "
                "copy through the host"
            )
        to = self._span("copy_within", dst, dst_offset, nbytes)
        frm = self._span("copy_within", src, src_offset, nbytes)
        if nbytes:
            self.require(dst.ordinal).memcpy_dtod(dst.ordinal, to, frm, nbytes)

    def fill_bytes(self, buffer: DeviceBuffer, byte_offset: int, nbytes: int, value: int) -> None:
        """Set ``nbytes`` bytes of ``buffer`` from ``byte_offset`` to ``value`` (0..255)."""
        if not 0 <= value <= 255:
            raise VMValueError(f"cuda fill_bytes: value must be a byte (0..255), got {value}")
        dst = self._span("fill_bytes", buffer, byte_offset, nbytes)
        if nbytes:
            self.require(buffer.ordinal).memset_d8(buffer.ordinal, dst, value, nbytes)

    def host_view(self, buffer: DeviceBuffer) -> np.ndarray:
        """Never possible: device memory is not host-accessible.

        Raises
        ------
        DeviceError
            Always; copy with ``Tensor.numpy()`` instead.
        """
        raise DeviceError(
            f"cuda({buffer.ordinal}) memory is not host-accessible; copy it with Tensor.numpy()"
        )

    # ---- extras: synchronization and memory state ------------------------------------------
    def synchronize(self, device_id: int) -> None:
        """Wait until every kernel and copy queued on ``cuda(device_id)`` has finished."""
        self.require(device_id).synchronize(device_id)

    def memory_info(self, device_id: int) -> tuple[int, int]:
        """``(free, total)`` bytes of ``cuda(device_id)``'s memory."""
        return self.require(device_id).mem_get_info(device_id)

    def release_cached(self, device_id: int | None = None) -> int:
        """Give the blocks the device pools cache back to the driver (every device when
        ``device_id`` is None); returns the bytes released."""
        with self._lock:
            allocators = [
                a for k, a in self._allocators.items() if device_id is None or k == device_id
            ]
        return sum(a.release_cached() for a in allocators)

    def __repr__(self) -> str:
        return "<CUDADeviceAPI>"


_CUDA = CUDADeviceAPI()


def cuda_device_api() -> CUDADeviceAPI:
    """The process-wide ``cuda`` device API (what ``device_api.cuda`` returns)."""
    return _CUDA
