"""The CPU device API: host memory as aligned numpy byte arrays."""

from __future__ import annotations

import numpy as np

from ._table import builtin


class CPUDeviceAPI:
    """``device_api.cpu``: DLPack device type 1, memory readable by the host."""

    kind = "cpu"
    device_type = 1
    host_accessible = True

    def exists(self, device_id: int) -> bool:
        return device_id == 0

    def alloc(self, device_id: int, nbytes: int, alignment: int) -> np.ndarray:
        # Over-allocate and slice so the first byte is aligned; the slice keeps the raw
        # block alive.
        raw = np.empty(nbytes + alignment, dtype=np.uint8)
        start = (-raw.ctypes.data) % alignment
        return raw[start : start + nbytes]

    def free(self, buffer: np.ndarray) -> None:
        """Nothing to do: numpy frees the block with its last reference."""

    def data_ptr(self, buffer: np.ndarray) -> int:
        return int(buffer.__array_interface__["data"][0])

    def copy_from_host(self, buffer: np.ndarray, byte_offset: int, src: np.ndarray) -> None:
        flat = np.ascontiguousarray(src).reshape(-1).view(np.uint8)
        buffer[byte_offset : byte_offset + flat.size] = flat

    def copy_to_host(self, buffer: np.ndarray, byte_offset: int, dst: np.ndarray) -> None:
        flat = dst.reshape(-1).view(np.uint8)
        flat[:] = buffer[byte_offset : byte_offset + flat.size]

    def host_view(self, buffer: np.ndarray) -> np.ndarray:
        return buffer


_CPU = CPUDeviceAPI()


@builtin("device_api.cpu")
def cpu_device_api() -> CPUDeviceAPI:
    """The process-wide CPU device API."""
    return _CPU
