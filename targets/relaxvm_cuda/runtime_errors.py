"""Errors of the CUDA runtime (driver, device memory, kernel launches).

Every failing driver call becomes a Python exception here; none of them ends the process::

    DeviceError (relaxvm.errors)
    └── CUDAUnavailableError        no libcuda.so.1, cuInit failed, or no device with that
                                    ordinal (:attr:`CUDAUnavailableError.missing` says which)
    VMError (relaxvm.errors)
    └── CUDADriverError             a driver call returned a CUresult other than CUDA_SUCCESS
        ├── CUDAOutOfMemoryError    CUDA_ERROR_OUT_OF_MEMORY (also a MemoryError), naming the
        │                           bytes requested and the device's free/total memory
        └── CUDAModuleLoadError     the driver's JIT rejected PTX (its error log is in the
                                    message)

The code generator's errors (``CUDABuildError``) live in :mod:`relaxvm_cuda.errors`.
"""

from __future__ import annotations

from collections.abc import Callable

from relaxvm.errors import DeviceError, VMError

__all__ = [
    "CUDA_ERROR_NAMES",
    "STICKY_ERRORS",
    "CUDADriverError",
    "CUDAModuleLoadError",
    "CUDAOutOfMemoryError",
    "CUDAUnavailableError",
    "error_for",
]

#: CUresult codes of cuda.h, for names when the driver cannot be asked (cuGetErrorName
#: itself failing, or a test double without it).
CUDA_ERROR_NAMES: dict[int, str] = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
    200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    218: "CUDA_ERROR_INVALID_PTX",
    221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
    222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
    300: "CUDA_ERROR_INVALID_SOURCE",
    400: "CUDA_ERROR_INVALID_HANDLE",
    500: "CUDA_ERROR_NOT_FOUND",
    600: "CUDA_ERROR_NOT_READY",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}

#: Errors after which the CUDA context is unusable: every later call in this process fails.
STICKY_ERRORS = frozenset({214, 700, 715, 716, 717, 718, 719})

_OUT_OF_MEMORY = 2
_JIT_ERRORS = frozenset({200, 209, 218, 221, 222, 223})


class CUDAUnavailableError(DeviceError):
    """CUDA cannot be used in this process, and why.

    Attributes
    ----------
    missing : str
        ``"library"`` (no ``libcuda.so.1``, or it lacks a driver entry point), ``"driver"``
        (``cuInit`` failed: the message names the CUresult) or ``"device"`` (no device with
        the requested ordinal; the message says how many there are).
    """

    def __init__(self, message: str, missing: str) -> None:
        super().__init__(message)
        self.missing = missing


class CUDADriverError(VMError):
    """A CUDA driver call failed.

    Attributes
    ----------
    code : int
        The ``CUresult``.
    name : str
        Its name (``"CUDA_ERROR_INVALID_VALUE"``), from ``cuGetErrorName``.
    call : str
        The driver function that returned it (``"cuMemcpyHtoD_v2"``).
    """

    def __init__(self, message: str, code: int, name: str, call: str) -> None:
        super().__init__(message)
        self.code = code
        self.name = name
        self.call = call

    @property
    def sticky(self) -> bool:
        """Whether the error leaves the context unusable (an illegal address in a kernel...)."""
        return self.code in STICKY_ERRORS


class CUDAOutOfMemoryError(CUDADriverError, MemoryError):
    """The device has not enough free memory for an allocation.

    Attributes
    ----------
    requested : int
        Bytes asked for.
    free, total : int or None
        The device's free and total memory when the allocation failed (None if unknown).
    """

    def __init__(
        self,
        message: str,
        code: int,
        name: str,
        call: str,
        requested: int | None = None,
        free: int | None = None,
        total: int | None = None,
    ) -> None:
        super().__init__(message, code, name, call)
        self.requested = requested
        self.free = free
        self.total = total


class CUDAModuleLoadError(CUDADriverError):
    """The driver rejected a PTX image (its JIT error log is part of the message)."""


def _mib(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.1f} MiB"


def error_for(
    code: int,
    call: str,
    name_of: Callable[[int], str | None] | None = None,
    *,
    context: str = "",
    requested: int | None = None,
    mem_info: Callable[[], tuple[int, int]] | None = None,
    jit_log: str = "",
) -> CUDADriverError:
    """The exception for a failed driver call.

    Parameters
    ----------
    code : int
        The ``CUresult`` (not 0).
    call : str
        The driver function's name.
    name_of : callable, optional
        ``cuGetErrorName`` as a Python function (None when it failed); the built-in table is
        the fallback.
    context : str
        What was being done, for the message ("allocating 4096 bytes on cuda(0)").
    requested : int, optional
        Bytes requested, for an out-of-memory error.
    mem_info : callable, optional
        ``() -> (free, total)``, asked only for an out-of-memory error (failures ignored).
    jit_log : str
        The JIT's error log (module loads).

    Returns
    -------
    CUDADriverError
        :class:`CUDAOutOfMemoryError` for ``CUDA_ERROR_OUT_OF_MEMORY``,
        :class:`CUDAModuleLoadError` for a failed module load, else :class:`CUDADriverError`.
    """
    name = None
    if name_of is not None:
        try:
            name = name_of(code)
        except Exception:  # a second failure must not hide the first
            name = None
    if not name:
        name = CUDA_ERROR_NAMES.get(code, f"CUresult {code}")
    where = f" while {context}" if context else ""
    message = f"{call} failed with {name} ({code}){where}"
    if code == _OUT_OF_MEMORY:
        free = total = None
        if mem_info is not None:
            try:
                free, total = mem_info()
            except Exception:
                free = total = None
        wanted = f"{requested} bytes ({_mib(requested)})" if requested is not None else "memory"
        state = (
            f"; the device has {free} bytes ({_mib(free)}) free of {total} ({_mib(total)})"
            if free is not None and total is not None
            else ""
        )
        return CUDAOutOfMemoryError(
            f"CUDA out of memory: cannot allocate {wanted}{where} ({call}: {name}){state}; "
            "free tensors you no longer need, release the blocks relaxvm's pools cache with "
            "relaxvm.runtime.clear_pools(), or use smaller inputs",
            code,
            name,
            call,
            requested,
            free,
            total,
        )
    if code in STICKY_ERRORS:
        message += (
            "; this error is sticky: the CUDA context is unusable and every later CUDA call "
            "in this process fails (restart the process; set RELAXVM_CUDA_LAUNCH_BLOCKING=1 "
            "to find the kernel at fault)"
        )
    if jit_log or (call.startswith("cuModuleLoad") and code in _JIT_ERRORS):
        log = jit_log.strip() or "(the JIT wrote no log)"
        return CUDAModuleLoadError(f"{message}\nJIT error log:\n{log}", code, name, call)
    return CUDADriverError(message, code, name, call)
