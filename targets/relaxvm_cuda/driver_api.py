"""The interface the CUDA runtime needs from a driver (:class:`Driver`) and the ``cuda.h``
codes it passes through it (device and function attributes).

:class:`relaxvm_cuda.driver.CUDADriver` implements it over ``libcuda.so.1``; the simulator
(:mod:`relaxvm_cuda.simulator`) and test doubles implement it too. Re-exported by
:mod:`relaxvm_cuda.driver`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = [
    "FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "FUNC_MAX_THREADS_PER_BLOCK",
    "DeviceAttribute",
    "Driver",
]

# CUfunction_attribute values.
FUNC_MAX_THREADS_PER_BLOCK = 0
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class DeviceAttribute:
    """``CUdevice_attribute`` codes used by relaxvm (cuda.h)."""

    MAX_THREADS_PER_BLOCK = 1
    MAX_BLOCK_DIM_X = 2
    MAX_BLOCK_DIM_Y = 3
    MAX_BLOCK_DIM_Z = 4
    MAX_GRID_DIM_X = 5
    MAX_GRID_DIM_Y = 6
    MAX_GRID_DIM_Z = 7
    MAX_SHARED_MEMORY_PER_BLOCK = 8
    WARP_SIZE = 10
    MULTIPROCESSOR_COUNT = 16
    COMPUTE_CAPABILITY_MAJOR = 75
    COMPUTE_CAPABILITY_MINOR = 76
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class Driver(Protocol):
    """What the CUDA runtime needs from a driver. ``ordinal`` is the device number.

    A driver may also offer ``prepare_launch`` (same parameters as :meth:`launch`, returning
    a callable of no arguments that launches): kernels then bind each launch once and repeat
    it without marshalling the parameters again (:meth:`CUDADriver.prepare_launch`).
    """

    def device_count(self) -> int:
        """Number of CUDA devices."""
        ...

    def attribute(self, ordinal: int, attribute: int) -> int:
        """A ``CUdevice_attribute`` of the device (:class:`DeviceAttribute`)."""
        ...

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        """``(major, minor)``."""
        ...

    def device_name(self, ordinal: int) -> str:
        """The device's product name."""
        ...

    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        """``(free, total)`` bytes of device memory."""
        ...

    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        """Allocate ``nbytes`` (> 0) of device memory (256-byte aligned); the pointer."""
        ...

    def mem_free(self, ordinal: int, pointer: int) -> None:
        """Free memory from :meth:`mem_alloc`."""
        ...

    def memcpy_htod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from host address ``src`` to device pointer ``dst``."""
        ...

    def memcpy_dtoh(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from device pointer ``src`` to host address ``dst``."""
        ...

    def memcpy_dtod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` between device pointers."""
        ...

    def memset_d8(self, ordinal: int, dst: int, value: int, nbytes: int) -> None:
        """Set ``nbytes`` bytes at device pointer ``dst`` to ``value``."""
        ...

    def synchronize(self, ordinal: int) -> None:
        """Wait for all work on the device's context."""
        ...

    def module_load(self, ordinal: int, image: bytes) -> Any:
        """Load PTX (or cubin) ``image``; the module handle."""
        ...

    def module_unload(self, ordinal: int, module: Any) -> None:
        """Unload a module from :meth:`module_load`."""
        ...

    def module_function(self, ordinal: int, module: Any, name: str) -> Any:
        """The handle of kernel ``name`` in ``module``."""
        ...

    def module_global(self, ordinal: int, module: Any, name: str) -> tuple[int, int]:
        """``(device pointer, size)`` of the global variable ``name`` of ``module``."""
        ...

    def function_attribute(self, ordinal: int, function: Any, attribute: int) -> int:
        """A ``CUfunction_attribute`` of a kernel."""
        ...

    def set_function_attribute(
        self, ordinal: int, function: Any, attribute: int, value: int
    ) -> None:
        """Set a ``CUfunction_attribute`` (the dynamic shared memory limit, say)."""
        ...

    def launch(
        self,
        ordinal: int,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        params: Sequence[Any],
    ) -> None:
        """Launch ``function`` on the default stream; ``params`` are ctypes values
        (``c_uint64`` pointers, ``c_int64`` scalars), one per kernel parameter."""
        ...
