"""The CUDA driver API through ctypes (``libcuda.so.1``), behind a small interface.

Nothing here runs at import: the library is loaded and ``cuInit`` called on the first
:func:`get_driver`. Everything else in the CUDA runtime (the ``cuda`` device API, kernel
modules) talks to the :class:`Driver` protocol only, so a test double can stand in for the
real :class:`CUDADriver` (:func:`set_driver`).

Conventions of the binding (``docs/cuda.md``):

* the ``_v2`` entry points are bound by their exported names (``cuMemAlloc_v2``...; the plain
  names in ``cuda.h`` are macros for them);
* every device ordinal uses its **primary context**, retained on first use and made current on
  the calling thread before each call (so any thread may use any device);
* every ``CUresult`` is checked: failures raise :class:`~relaxvm_cuda.runtime_errors.CUDADriverError`
  named by ``cuGetErrorName``, ``CUDA_ERROR_OUT_OF_MEMORY`` raises
  :class:`~relaxvm_cuda.runtime_errors.CUDAOutOfMemoryError` with the device's free/total memory;
* pointers cross the interface as ``int`` (device pointers are ``CUdeviceptr``, host pointers
  plain addresses), module and function handles as opaque objects.

``RELAXVM_CUDA_LIBRARY`` names another library file to load (a path, or a name such as
``libcuda.so``); pointing it at a missing file simulates a machine without a driver.
``RELAXVM_CUDA_SIMULATOR=1`` makes :func:`get_driver` return the simulated device of
:mod:`relaxvm_cuda.simulator` instead (a testing tool: kernels run as TIR on the CPU).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from relaxvm.errors import VMValueError

from .driver_api import (
    FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    FUNC_MAX_THREADS_PER_BLOCK,
    DeviceAttribute,
    Driver,
)
from .runtime_errors import CUDA_ERROR_NAMES, CUDAUnavailableError, error_for

__all__ = [
    "DEFAULT_LIBRARY",
    "FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES",
    "FUNC_MAX_THREADS_PER_BLOCK",
    "HEAP_ENV",
    "LIBRARY_ENV",
    "SIMULATOR_ENV",
    "CUDADriver",
    "DeviceAttribute",
    "Driver",
    "check",
    "driver_unavailable_reason",
    "get_driver",
    "heap_setting",
    "set_driver",
    "simulator_enabled",
    "wanted_heap_bytes",
]

LIBRARY_ENV = "RELAXVM_CUDA_LIBRARY"
#: Set to 1 for the simulated device (:mod:`relaxvm_cuda.simulator`) instead of libcuda.
SIMULATOR_ENV = "RELAXVM_CUDA_SIMULATOR"
#: The device heap (``malloc`` in kernels: scratch of sort, argsort, topk...) in MiB.
HEAP_ENV = "RELAXVM_CUDA_MALLOC_HEAP_MB"
DEFAULT_LIBRARY = "libcuda.so.1"

# JIT options of cuModuleLoadDataEx (cuda.h CUjit_option).
_JIT_INFO_LOG_BUFFER = 3
_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
_JIT_ERROR_LOG_BUFFER = 5
_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_JIT_LOG_BYTES = 16384


def check(
    result: int,
    call: str,
    name_of: Callable[[int], str | None] | None = None,
    **details: Any,
) -> None:
    """Raise the exception for ``result`` unless it is ``CUDA_SUCCESS`` (0).

    ``details`` go to :func:`relaxvm_cuda.runtime_errors.error_for` (``context``,
    ``requested``, ``mem_info``, ``jit_log``).
    """
    if result != 0:
        raise error_for(int(result), call, name_of, **details)


_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_size_p = ctypes.POINTER(ctypes.c_size_t)
_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_u64 = ctypes.c_uint64
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "cuInit": (ctypes.c_uint,),
    "cuDriverGetVersion": (_c_int_p,),
    "cuGetErrorName": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
    "cuDeviceGetCount": (_c_int_p,),
    "cuDeviceGet": (_c_int_p, ctypes.c_int),
    "cuDeviceGetAttribute": (_c_int_p, ctypes.c_int, ctypes.c_int),
    "cuDeviceGetName": (ctypes.c_char_p, ctypes.c_int, ctypes.c_int),
    "cuDevicePrimaryCtxRetain": (_c_void_pp, ctypes.c_int),
    "cuDevicePrimaryCtxRelease_v2": (ctypes.c_int,),
    "cuCtxSetCurrent": (ctypes.c_void_p,),
    "cuCtxSynchronize": (),
    "cuCtxGetLimit": (_c_size_p, ctypes.c_int),
    "cuCtxSetLimit": (ctypes.c_int, ctypes.c_size_t),
    "cuModuleLoadDataEx": (
        _c_void_pp,
        ctypes.c_char_p,
        ctypes.c_uint,
        _c_int_p,
        _c_void_pp,
    ),
    "cuModuleUnload": (ctypes.c_void_p,),
    "cuModuleGetFunction": (_c_void_pp, ctypes.c_void_p, ctypes.c_char_p),
    "cuModuleGetGlobal_v2": (ctypes.POINTER(_u64), _c_size_p, ctypes.c_void_p, ctypes.c_char_p),
    "cuFuncGetAttribute": (_c_int_p, ctypes.c_int, ctypes.c_void_p),
    "cuFuncSetAttribute": (ctypes.c_void_p, ctypes.c_int, ctypes.c_int),
    "cuLaunchKernel": (
        ctypes.c_void_p,
        *([ctypes.c_uint] * 7),
        ctypes.c_void_p,
        _c_void_pp,
        _c_void_pp,
    ),
    "cuMemAlloc_v2": (ctypes.POINTER(_u64), ctypes.c_size_t),
    "cuMemFree_v2": (_u64,),
    "cuMemGetInfo_v2": (_c_size_p, _c_size_p),
    "cuMemcpyHtoD_v2": (_u64, ctypes.c_void_p, ctypes.c_size_t),
    "cuMemcpyDtoH_v2": (ctypes.c_void_p, _u64, ctypes.c_size_t),
    "cuMemcpyDtoD_v2": (_u64, _u64, ctypes.c_size_t),
    "cuMemsetD8_v2": (_u64, ctypes.c_ubyte, ctypes.c_size_t),
}


_LIMIT_MALLOC_HEAP_SIZE = 2  # CU_LIMIT_MALLOC_HEAP_SIZE
_MiB = 1 << 20


def heap_setting() -> int | None:
    """``$RELAXVM_CUDA_MALLOC_HEAP_MB`` in bytes, or None when unset.

    Raises
    ------
    VMValueError
        The variable is not a whole number of MiB.
    """
    text = os.environ.get(HEAP_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise VMValueError(f"{HEAP_ENV} must be a whole number of MiB (e.g. 256), got {text!r}")
    return int(text) * _MiB


def wanted_heap_bytes(total_memory: int, setting: int | None) -> int:
    """The device heap relaxvm asks for on a device with ``total_memory`` bytes: the
    :func:`heap_setting` when there is one, else 1/32 of the memory, at most 1 GiB (the driver
    reserves it when a kernel that calls ``malloc`` first runs in the context)."""
    if setting is not None:
        return setting
    return min(total_memory // 32, 1024 * _MiB)


class CUDADriver:
    """The real driver: ``libcuda.so.1`` through ctypes (implements :class:`Driver`).

    Parameters
    ----------
    library : str, optional
        The library to load (default: ``$RELAXVM_CUDA_LIBRARY`` or ``libcuda.so.1``).
    lib : object, optional
        An already loaded library object (a ``ctypes.CDLL`` or a test double with the same
        function attributes); ``library`` is then only used in messages.

    Raises
    ------
    CUDAUnavailableError
        The library cannot be loaded or lacks an entry point (``missing="library"``), or
        ``cuInit`` fails (``missing="driver"``; ``"device"`` for CUDA_ERROR_NO_DEVICE).
    """

    def __init__(self, library: str | None = None, lib: Any = None) -> None:
        self.library = library or os.environ.get(LIBRARY_ENV) or DEFAULT_LIBRARY
        if lib is None:
            try:
                lib = ctypes.CDLL(self.library)
            except OSError as err:
                raise CUDAUnavailableError(
                    f"CUDA is not available: cannot load the driver library {self.library!r} "
                    f"({err}); running on a CUDA device needs an NVIDIA driver (libcuda.so.1 "
                    f"comes with it, not with the CUDA toolkit); set {LIBRARY_ENV} to its path "
                    "if it is installed somewhere the loader does not look",
                    "library",
                ) from None
        self._lib = lib
        self._fn: dict[str, Any] = {}
        for name, argtypes in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise CUDAUnavailableError(
                    f"CUDA is not available: {self.library!r} has no entry point {name} "
                    "(not a CUDA driver library, or a driver too old for relaxvm)",
                    "library",
                ) from None
            fn.restype = ctypes.c_int
            fn.argtypes = argtypes
            self._fn[name] = fn
        result = self._fn["cuInit"](0)
        if result != 0:
            name = self._error_name(result) or CUDA_ERROR_NAMES.get(result, f"CUresult {result}")
            no_device = result == 100
            raise CUDAUnavailableError(
                f"CUDA is not available: cuInit failed with {name} ({result})"
                + (
                    ": the driver is installed but sees no CUDA device"
                    if no_device
                    else f" (driver library {self.library!r})"
                ),
                "device" if no_device else "driver",
            )
        self._lock = threading.Lock()
        self._contexts: dict[int, ctypes.c_void_p] = {}
        self._count: int | None = None

    # ---- plumbing --------------------------------------------------------------------------
    def _error_name(self, code: int) -> str | None:
        text = ctypes.c_char_p()
        if self._fn["cuGetErrorName"](code, ctypes.byref(text)) != 0 or not text.value:
            return None
        return text.value.decode("ascii", "replace")

    def _call(self, name: str, *args: Any, **details: Any) -> None:
        check(self._fn[name](*args), name, self._error_name, **details)

    def _activate(self, ordinal: int) -> None:
        """Make the device's primary context current on this thread (retained once)."""
        context = self._contexts.get(ordinal)
        if context is None:
            count = self.device_count()
            if not isinstance(ordinal, int) or not 0 <= ordinal < count:
                raise CUDAUnavailableError(
                    f"no CUDA device with ordinal {ordinal}: {count} present"
                    + (f" (ordinals 0..{count - 1})" if count else ""),
                    "device",
                )
            with self._lock:
                context = self._contexts.get(ordinal)
                if context is None:
                    heap = heap_setting()  # a bad value fails before anything is retained
                    device = ctypes.c_int()
                    self._call("cuDeviceGet", ctypes.byref(device), ordinal)
                    context = ctypes.c_void_p()
                    self._call(
                        "cuDevicePrimaryCtxRetain",
                        ctypes.byref(context),
                        device.value,
                        context=f"retaining the primary context of cuda({ordinal})",
                    )
                    self._call("cuCtxSetCurrent", context)
                    self._raise_heap_limit(heap)
                    self._contexts[ordinal] = context
        # Always: another library (or thread-local state we cannot see) may have changed it.
        self._call("cuCtxSetCurrent", context)

    def _raise_heap_limit(self, setting: int | None) -> None:
        """Grow the current context's device heap to :func:`wanted_heap_bytes` (never
        shrink it). CUDA's default of 8 MiB is too small for kernels whose threads take row
        scratch (256 sorted rows of 4096 floats need about 16 MiB). Best effort: once a kernel
        that calls ``malloc`` has run in the context (another library sharing the primary
        context), the driver refuses a new size, and a kernel whose scratch does not fit
        raises ``CUDAOutOfMemoryError`` naming :data:`HEAP_ENV`."""
        current, total, free = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
        if self._fn["cuCtxGetLimit"](ctypes.byref(current), _LIMIT_MALLOC_HEAP_SIZE) != 0:
            return
        if self._fn["cuMemGetInfo_v2"](ctypes.byref(free), ctypes.byref(total)) != 0:
            return
        wanted = wanted_heap_bytes(total.value, setting)
        if wanted > current.value:
            self._fn["cuCtxSetLimit"](_LIMIT_MALLOC_HEAP_SIZE, wanted)

    # ---- devices ---------------------------------------------------------------------------
    def driver_version(self) -> int:
        """The driver's CUDA version as ``1000 * major + 10 * minor`` (12040 for 12.4)."""
        value = ctypes.c_int()
        self._call("cuDriverGetVersion", ctypes.byref(value))
        return value.value

    def device_count(self) -> int:
        if self._count is None:
            value = ctypes.c_int()
            self._call("cuDeviceGetCount", ctypes.byref(value))
            self._count = value.value
        return self._count

    def attribute(self, ordinal: int, attribute: int) -> int:
        self._activate(ordinal)  # validates the ordinal
        value = ctypes.c_int()
        self._call("cuDeviceGetAttribute", ctypes.byref(value), attribute, ordinal)
        return value.value

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        return (
            self.attribute(ordinal, DeviceAttribute.COMPUTE_CAPABILITY_MAJOR),
            self.attribute(ordinal, DeviceAttribute.COMPUTE_CAPABILITY_MINOR),
        )

    def device_name(self, ordinal: int) -> str:
        self._activate(ordinal)
        buffer = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", buffer, len(buffer), ordinal)
        return buffer.value.decode("utf-8", "replace")

    # ---- memory ----------------------------------------------------------------------------
    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        self._activate(ordinal)
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        self._activate(ordinal)
        pointer = _u64()
        self._call(
            "cuMemAlloc_v2",
            ctypes.byref(pointer),
            nbytes,
            context=f"allocating on cuda({ordinal})",
            requested=nbytes,
            mem_info=lambda: self.mem_get_info(ordinal),
        )
        return pointer.value

    def mem_free(self, ordinal: int, pointer: int) -> None:
        self._activate(ordinal)
        self._call("cuMemFree_v2", pointer)

    def memcpy_htod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._activate(ordinal)
        self._call("cuMemcpyHtoD_v2", dst, src, nbytes)

    def memcpy_dtoh(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._activate(ordinal)
        self._call("cuMemcpyDtoH_v2", dst, src, nbytes)

    def memcpy_dtod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._activate(ordinal)
        self._call("cuMemcpyDtoD_v2", dst, src, nbytes)

    def memset_d8(self, ordinal: int, dst: int, value: int, nbytes: int) -> None:
        self._activate(ordinal)
        self._call("cuMemsetD8_v2", dst, value, nbytes)

    def synchronize(self, ordinal: int) -> None:
        self._activate(ordinal)
        self._call("cuCtxSynchronize")

    # ---- modules and launches --------------------------------------------------------------
    def module_load(self, ordinal: int, image: bytes) -> Any:
        self._activate(ordinal)
        if not image.endswith(b"\0"):
            image += b"\0"  # PTX is read as a NUL-terminated string
        error_log = ctypes.create_string_buffer(_JIT_LOG_BYTES)
        info_log = ctypes.create_string_buffer(_JIT_LOG_BYTES)
        options = (ctypes.c_int * 4)(
            _JIT_ERROR_LOG_BUFFER,
            _JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            _JIT_INFO_LOG_BUFFER,
            _JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        )
        # Sizes travel as the pointer value itself (cuda.h: "cast to void*").
        values = (ctypes.c_void_p * 4)(
            ctypes.cast(error_log, ctypes.c_void_p),
            ctypes.c_void_p(_JIT_LOG_BYTES),
            ctypes.cast(info_log, ctypes.c_void_p),
            ctypes.c_void_p(_JIT_LOG_BYTES),
        )
        module = ctypes.c_void_p()
        result = self._fn["cuModuleLoadDataEx"](ctypes.byref(module), image, 4, options, values)
        if result != 0:
            log = error_log.value.decode("utf-8", "replace") or info_log.value.decode(
                "utf-8", "replace"
            )
            check(
                result,
                "cuModuleLoadDataEx",
                self._error_name,
                context=f"loading PTX on cuda({ordinal})",
                jit_log=log,
            )
        return module

    def module_unload(self, ordinal: int, module: Any) -> None:
        self._activate(ordinal)
        self._call("cuModuleUnload", module)

    def module_function(self, ordinal: int, module: Any, name: str) -> Any:
        self._activate(ordinal)
        function = ctypes.c_void_p()
        self._call(
            "cuModuleGetFunction",
            ctypes.byref(function),
            module,
            name.encode(),
            context=f"looking up kernel {name!r}",
        )
        return function

    def module_global(self, ordinal: int, module: Any, name: str) -> tuple[int, int]:
        self._activate(ordinal)
        pointer, size = _u64(), ctypes.c_size_t()
        self._call(
            "cuModuleGetGlobal_v2",
            ctypes.byref(pointer),
            ctypes.byref(size),
            module,
            name.encode(),
            context=f"looking up global {name!r}",
        )
        return pointer.value, size.value

    def function_attribute(self, ordinal: int, function: Any, attribute: int) -> int:
        self._activate(ordinal)
        value = ctypes.c_int()
        self._call("cuFuncGetAttribute", ctypes.byref(value), attribute, function)
        return value.value

    def set_function_attribute(
        self, ordinal: int, function: Any, attribute: int, value: int
    ) -> None:
        self._activate(ordinal)
        self._call("cuFuncSetAttribute", function, attribute, value)

    def launch(
        self,
        ordinal: int,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        params: Sequence[Any],
    ) -> None:
        self._activate(ordinal)
        # kernelParams: one pointer per parameter, to where its value is stored.
        pointers = (ctypes.c_void_p * max(len(params), 1))(*[ctypes.addressof(p) for p in params])
        self._call(
            "cuLaunchKernel",
            function,
            *grid,
            *block,
            shared_bytes,
            None,
            pointers,
            None,
            context=f"launching a kernel with grid {grid}, block {block}",
        )

    def prepare_launch(
        self,
        ordinal: int,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        params: Sequence[Any],
    ) -> Callable[[], None]:
        """:meth:`launch` bound once: a callable of no arguments that makes the device's
        context current and launches, with the kernel-parameter array built here (the
        driver copies the values at each launch, so one array serves every launch). What a
        kernel repeats for arguments it has checked already."""
        self._activate(ordinal)  # retains the primary context once, here
        context = self._contexts[ordinal]
        set_current = self._fn["cuCtxSetCurrent"]
        launch = self._fn["cuLaunchKernel"]
        error_name = self._error_name
        keep = tuple(params)  # the values' storage must live as long as the array
        pointers = (ctypes.c_void_p * max(len(keep), 1))(*[ctypes.addressof(p) for p in keep])
        gx, gy, gz = grid
        bx, by, bz = block
        where = f"launching a kernel with grid {grid}, block {block}"

        def run(_keep: tuple[Any, ...] = keep) -> None:
            # As _activate: the current context is set before every launch (another library
            # may have changed it); only the checks of the results are inlined.
            result = set_current(context)
            if result:
                check(result, "cuCtxSetCurrent", error_name)
            result = launch(function, gx, gy, gz, bx, by, bz, shared_bytes, None, pointers, None)
            if result:
                check(result, "cuLaunchKernel", error_name, context=where)

        return run

    def __repr__(self) -> str:
        return f"<CUDADriver {self.library!r}>"


# ---- the process-wide driver -------------------------------------------------------------------
_lock = threading.Lock()
_driver: Driver | None = None
_failure: CUDAUnavailableError | None = None
_pid = os.getpid()


def get_driver() -> Driver:
    """The process-wide driver, loaded on first use (or the one :func:`set_driver` installed).

    Raises
    ------
    CUDAUnavailableError
        No driver library, ``cuInit`` failed, or no device (the message says which). The
        failure is remembered: later calls raise it again without retrying, until
        :func:`set_driver` resets the state.
    """
    global _driver, _failure, _pid
    driver = _driver
    if driver is not None and _pid == os.getpid():
        return driver
    with _lock:
        if _pid != os.getpid():
            # A forked child: CUDA state does not survive fork(), so the parent's driver
            # object (and its contexts) must not be used here. Start again.
            _driver, _failure, _pid = None, None, os.getpid()
        if _driver is None and _failure is None:
            try:
                _driver = _simulator() or CUDADriver()
            except CUDAUnavailableError as err:
                _failure = err
        if _driver is not None:
            return _driver
        assert _failure is not None  # one of the two is set just above
        raise CUDAUnavailableError(str(_failure), _failure.missing)


def simulator_enabled(value: str | None = None) -> bool:
    """Whether ``value`` (default: ``$RELAXVM_CUDA_SIMULATOR``) switches the simulator on."""
    if value is None:
        value = os.environ.get(SIMULATOR_ENV)
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def _simulator() -> Driver | None:
    """A :class:`~relaxvm_cuda.simulator.CUDASimulator` when ``RELAXVM_CUDA_SIMULATOR`` asks
    for one (read at each fresh start of the driver state), else None."""
    if not simulator_enabled():
        return None
    from .simulator import CUDASimulator

    return CUDASimulator()


def set_driver(driver: Driver | None) -> Driver | None:
    """Install ``driver`` as the process-wide one (a test double, say); ``None`` forgets the
    current driver and any remembered failure, so the next :func:`get_driver` loads the
    library again (``RELAXVM_CUDA_LIBRARY`` is read then). Returns the previous driver.

    Modules and buffers made with one driver must not be used with another: the memory that
    relaxvm's pools cache is given back through the outgoing driver first, so no block of one
    driver (or of a context it may have released) is handed out under the next.
    """
    global _driver, _failure, _pid
    with _lock:
        previous = _driver
    if previous is not None and previous is not driver:
        _release_pooled_memory()
    with _lock:
        previous = _driver
        _driver, _failure, _pid = driver, None, os.getpid()
    return previous


def _release_pooled_memory() -> None:
    import gc

    from relaxvm.runtime.memory import clear_pools

    from .device import cuda_device_api

    # VMs hold reference cycles: collected later, they would release their blocks into the
    # pools after the switch. Collect them now, then empty relaxvm's pools (into the CUDA
    # allocators' caches) and those caches (to the outgoing driver).
    gc.collect()
    try:
        clear_pools()
        cuda_device_api().release_cached()
    except Exception:  # a broken outgoing driver: its blocks are lost with it, not reused
        pass


def driver_unavailable_reason() -> str | None:
    """Why CUDA cannot be used here (no library, cuInit failed, no device), or None when a
    driver with at least one device is present. Never raises."""
    try:
        count = get_driver().device_count()
    except Exception as err:  # whatever went wrong, it is the answer, not an exception
        return str(err)
    return None if count > 0 else "the CUDA driver is present but reports no device"
