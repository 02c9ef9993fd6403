"""The ctypes driver binding without a GPU: a missing library, CUresult -> exception mapping,
and :class:`CUDADriver` itself run against a fake ``libcuda`` made of Python functions."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
import relaxvm_cuda
from relaxvm.errors import DeviceError, VMError, VMValueError
from relaxvm_cuda.driver import (
    HEAP_ENV,
    CUDADriver,
    DeviceAttribute,
    check,
    get_driver,
    set_driver,
    wanted_heap_bytes,
)
from relaxvm_cuda.runtime_errors import (
    CUDADriverError,
    CUDAModuleLoadError,
    CUDAOutOfMemoryError,
    CUDAUnavailableError,
    error_for,
)

NAMES = {
    1: b"CUDA_ERROR_INVALID_VALUE",
    2: b"CUDA_ERROR_OUT_OF_MEMORY",
    100: b"CUDA_ERROR_NO_DEVICE",
}


# ---- no driver library ---------------------------------------------------------------------
def test_missing_library_raises_naming_it(no_driver: None) -> None:
    with pytest.raises(CUDAUnavailableError, match="cannot load the driver library") as info:
        get_driver()
    assert info.value.missing == "library"
    assert "libcuda-relaxvm-test-missing.so.1" in str(info.value)
    # Remembered: the second call raises the same without trying again.
    with pytest.raises(CUDAUnavailableError, match="libcuda-relaxvm-test-missing"):
        get_driver()


def test_missing_library_is_not_fatal_until_a_gpu_is_needed(no_driver: None) -> None:
    assert relaxvm_cuda.is_available() is False
    assert "cannot load the driver library" in str(relaxvm_cuda.driver_unavailable_reason())
    dev = relaxvm.cuda(0)
    assert dev.exist is False and repr(dev) == "cuda(0)"
    target = relaxvm.target.Target("cuda")
    assert target.attrs["arch"] == "sm_80"  # no driver to ask: the default
    with pytest.raises(DeviceError, match="cannot load the driver library") as info:
        relaxvm.tensor(np.ones(3, "float32"), dev)
    assert isinstance(info.value, CUDAUnavailableError)


def test_missing_library_reported_by_to_device(no_driver: None) -> None:
    to_device = relaxvm.get_global_func("vm.builtin.to_device")
    with pytest.raises(DeviceError, match=r"device cuda\(0\) does not exist"):
        to_device(relaxvm.tensor(np.ones(2, "float32")), 2, 0)


# ---- CUresult -> exception ------------------------------------------------------------------
def test_check_success_is_silent() -> None:
    assert check(0, "cuInit") is None


@pytest.mark.parametrize(
    ("code", "cls", "name"),
    [
        (1, CUDADriverError, "CUDA_ERROR_INVALID_VALUE"),
        (2, CUDAOutOfMemoryError, "CUDA_ERROR_OUT_OF_MEMORY"),
        (201, CUDADriverError, "CUDA_ERROR_INVALID_CONTEXT"),
        (218, CUDAModuleLoadError, "CUDA_ERROR_INVALID_PTX"),
        (700, CUDADriverError, "CUDA_ERROR_ILLEGAL_ADDRESS"),
        (12345, CUDADriverError, "CUresult 12345"),
    ],
)
def test_check_maps_codes_to_exceptions(code: int, cls: type, name: str) -> None:
    call = "cuModuleLoadDataEx" if code == 218 else "cuMemAlloc_v2"
    with pytest.raises(cls) as info:
        check(code, call)
    err = info.value
    assert type(err) is cls and isinstance(err, VMError)
    assert err.code == code and err.name == name and err.call == call
    assert name in str(err) and call in str(err)


def test_sticky_errors_say_the_context_is_lost() -> None:
    err = error_for(700, "cuCtxSynchronize")
    assert err.sticky and "sticky" in str(err) and "RELAXVM_CUDA_LAUNCH_BLOCKING" in str(err)
    assert not error_for(1, "cuMemcpyHtoD_v2").sticky


def test_error_names_come_from_the_driver_first() -> None:
    err = error_for(1, "cuMemFree_v2", lambda code: "CUDA_ERROR_FROM_DRIVER")
    assert err.name == "CUDA_ERROR_FROM_DRIVER"

    def broken(code: int) -> str:
        raise OSError("cuGetErrorName is gone")

    assert error_for(1, "cuMemFree_v2", broken).name == "CUDA_ERROR_INVALID_VALUE"


def test_out_of_memory_names_request_and_free_memory() -> None:
    err = error_for(
        2, "cuMemAlloc_v2", requested=3 << 30, mem_info=lambda: (1 << 30, 80 << 30), context="x"
    )
    assert isinstance(err, CUDAOutOfMemoryError) and isinstance(err, MemoryError)
    assert (err.requested, err.free, err.total) == (3 << 30, 1 << 30, 80 << 30)
    message = str(err)
    assert "3221225472 bytes (3072.0 MiB)" in message
    assert "1073741824 bytes (1024.0 MiB) free of 85899345920" in message
    # A failing memory query does not hide the out-of-memory error.
    err = error_for(2, "cuMemAlloc_v2", requested=10, mem_info=lambda: 1 / 0)  # type: ignore[arg-type,return-value]
    assert isinstance(err, CUDAOutOfMemoryError) and err.free is None


# ---- CUDADriver over a fake libcuda ----------------------------------------------------------
class FakeLib:
    """Python functions standing in for libcuda's entry points (ctypes passes its argument
    objects through unchanged: byref(x)._obj is x)."""

    def __init__(self, **overrides: Callable[..., int]) -> None:
        self.memory: dict[int, Any] = {}
        self.launched: list[tuple[Any, ...]] = []
        self.contexts: list[Any] = []
        self.heap_limit = 8 << 20  # CUDA's default device heap
        self.limits_set: list[tuple[int, int]] = []
        functions: dict[str, Callable[..., int]] = {
            "cuInit": lambda flags: 0,
            "cuDriverGetVersion": lambda out: self._set(out, 12040),
            "cuGetErrorName": self._error_name,
            "cuDeviceGetCount": lambda out: self._set(out, 1),
            "cuDeviceGet": lambda out, ordinal: self._set(out, ordinal),
            "cuDeviceGetAttribute": self._attribute,
            "cuDeviceGetName": lambda buf, size, dev: ctypes.memmove(buf, b"Fake\0", 5) and 0,
            "cuDevicePrimaryCtxRetain": lambda out, dev: self._set(out, 0xC0),
            "cuDevicePrimaryCtxRelease_v2": lambda dev: 0,
            "cuCtxSetCurrent": lambda ctx: self.contexts.append(ctx) or 0,
            "cuCtxSynchronize": lambda: 0,
            "cuCtxGetLimit": lambda out, limit: self._set(out, self.heap_limit),
            "cuCtxSetLimit": self._set_limit,
            "cuModuleLoadDataEx": lambda out, image, n, opts, values: self._set(out, 0x40),
            "cuModuleUnload": lambda module: 0,
            "cuModuleGetFunction": lambda out, module, name: self._set(out, 0x50),
            "cuModuleGetGlobal_v2": lambda ptr, size, module, name: (
                self._set(ptr, 0x60) or self._set(size, 32)
            ),
            "cuFuncGetAttribute": lambda out, attr, fn: self._set(out, 1024),
            "cuFuncSetAttribute": lambda fn, attr, value: 0,
            "cuLaunchKernel": self._launch,
            "cuMemAlloc_v2": self._alloc,
            "cuMemFree_v2": lambda ptr: (
                0
                if self.memory.pop(ptr.value if hasattr(ptr, "value") else ptr, None) is not None
                else 1
            ),
            "cuMemGetInfo_v2": lambda free, total: self._set(free, 100) or self._set(total, 1000),
            "cuMemcpyHtoD_v2": lambda dst, src, n: ctypes.memmove(dst, src, n) and 0,
            "cuMemcpyDtoH_v2": lambda dst, src, n: ctypes.memmove(dst, src, n) and 0,
            "cuMemcpyDtoD_v2": lambda dst, src, n: ctypes.memmove(dst, src, n) and 0,
            "cuMemsetD8_v2": lambda dst, value, n: ctypes.memset(dst, value, n) and 0,
        }
        functions.update(overrides)
        for name, fn in functions.items():
            # A fresh function object per entry: the driver sets restype/argtypes on it.
            setattr(self, name, (lambda f: lambda *a: f(*a))(fn))

    @staticmethod
    def _set(ref: Any, value: int) -> int:
        ref._obj.value = value
        return 0

    def _set_limit(self, limit: int, value: int) -> int:
        self.limits_set.append((limit, value))
        if limit == 2:
            self.heap_limit = value
        return 0

    @staticmethod
    def _error_name(code: int, out: Any) -> int:
        if code not in NAMES:
            return 1
        out._obj.value = NAMES[code]
        return 0

    @staticmethod
    def _attribute(out: Any, attribute: int, dev: int) -> int:
        values = {
            DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: 9,
            DeviceAttribute.COMPUTE_CAPABILITY_MINOR: 0,
        }
        out._obj.value = values.get(attribute, 1024)
        return 0

    def _alloc(self, out: Any, nbytes: int) -> int:
        if nbytes > 1000:
            return 2
        block = ctypes.create_string_buffer(nbytes)
        self.memory[ctypes.addressof(block)] = block
        out._obj.value = ctypes.addressof(block)
        return 0

    def _launch(self, fn: Any, *rest: Any) -> int:
        grid, block, shared = rest[0:3], rest[3:6], rest[6]
        pointers = rest[8]
        values = [ctypes.c_uint64.from_address(pointers[k]).value for k in range(2)]
        self.launched.append((fn, grid, block, shared, values))
        return 0


def test_driver_binds_and_runs_the_call_sequence() -> None:
    lib = FakeLib()
    driver = CUDADriver("fake-libcuda", lib=lib)
    assert driver.device_count() == 1
    assert driver.driver_version() == 12040
    assert driver.compute_capability(0) == (9, 0)
    assert driver.device_name(0) == "Fake"
    assert lib.contexts and all(
        c.value == 0xC0 for c in lib.contexts
    )  # primary context made current
    pointer = driver.mem_alloc(0, 16)
    data = np.arange(4, dtype="float32")
    driver.memcpy_htod(0, pointer, data.ctypes.data, 16)
    out = np.zeros(4, "float32")
    driver.memcpy_dtoh(0, out.ctypes.data, pointer, 16)
    np.testing.assert_array_equal(out, data)
    assert driver.mem_get_info(0) == (100, 1000)
    module = driver.module_load(0, b".version 7.0")
    function = driver.module_function(0, module, "k")
    assert driver.module_global(0, module, "__rvm_index_error") == (0x60, 32)
    driver.launch(
        0, function, (2, 1, 1), (128, 1, 1), 0, [ctypes.c_uint64(pointer), ctypes.c_int64(4)]
    )
    (fn, grid, block, _shared, values) = lib.launched[0]
    assert fn.value == 0x50 and grid == (2, 1, 1) and block == (128, 1, 1)
    assert values == [pointer, 4]
    driver.mem_free(0, pointer)
    assert not lib.memory


def test_driver_rejects_an_ordinal_naming_the_device_count() -> None:
    driver = CUDADriver("fake-libcuda", lib=FakeLib())
    with pytest.raises(
        CUDAUnavailableError, match=r"no CUDA device with ordinal 3: 1 present"
    ) as info:
        driver.mem_alloc(3, 16)
    assert info.value.missing == "device"


def test_driver_out_of_memory_reports_free_and_total() -> None:
    driver = CUDADriver("fake-libcuda", lib=FakeLib())
    with pytest.raises(
        CUDAOutOfMemoryError, match=r"cannot allocate 5000 bytes.*100 bytes .* free of 1000"
    ) as info:
        driver.mem_alloc(0, 5000)
    assert isinstance(info.value, MemoryError) and info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"


def test_driver_failed_call_is_named() -> None:
    driver = CUDADriver("fake-libcuda", lib=FakeLib())
    with pytest.raises(
        CUDADriverError, match=r"cuMemFree_v2 failed with CUDA_ERROR_INVALID_VALUE \(1\)"
    ):
        driver.mem_free(0, 12345)


def test_module_load_failure_carries_the_jit_log() -> None:
    def load(out: Any, image: bytes, n: int, options: Any, values: Any) -> int:
        assert list(options) == [5, 6, 3, 4]  # error log buffer and size first
        log = b"ptxas application ptx input, line 7; error: Unknown symbol 'foo'\0"
        ctypes.memmove(values[0], log, len(log))
        return 218

    driver = CUDADriver("fake-libcuda", lib=FakeLib(cuModuleLoadDataEx=load))
    with pytest.raises(
        CUDAModuleLoadError, match=r"(?s)CUDA_ERROR_INVALID_PTX.*Unknown symbol 'foo'"
    ):
        driver.module_load(0, b"garbage")


@pytest.mark.parametrize(
    ("code", "missing", "text"),
    [
        (100, "device", "CUDA_ERROR_NO_DEVICE .*installed but sees no CUDA device"),
        (3, "driver", r"cuInit failed with CUDA_ERROR_NOT_INITIALIZED \(3\)"),
    ],
)
def test_cuinit_failure_says_what_is_missing(code: int, missing: str, text: str) -> None:
    with pytest.raises(CUDAUnavailableError, match=text) as info:
        CUDADriver("fake-libcuda", lib=FakeLib(cuInit=lambda flags: code))
    assert info.value.missing == missing


def test_library_without_an_entry_point() -> None:
    lib = FakeLib()
    del lib.cuMemAlloc_v2
    with pytest.raises(CUDAUnavailableError, match="has no entry point cuMemAlloc_v2") as info:
        CUDADriver("libnotcuda.so", lib=lib)
    assert info.value.missing == "library"


def test_set_driver_installs_and_restores() -> None:
    sentinel: Any = object()
    previous = set_driver(sentinel)
    try:
        assert get_driver() is sentinel
    finally:
        assert set_driver(previous) is sentinel


def test_a_forked_child_does_not_reuse_the_parents_driver(
    no_driver: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaxvm_cuda import driver as driver_module

    sentinel: Any = object()
    set_driver(sentinel)
    assert get_driver() is sentinel
    monkeypatch.setattr(driver_module, "_pid", -1)  # as if this process were a fork's child
    with pytest.raises(CUDAUnavailableError, match="cannot load the driver library"):
        get_driver()


# ---- the device heap (kernels' malloc scratch) ----------------------------------------------
def test_first_context_use_raises_the_device_heap_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HEAP_ENV, raising=False)
    lib = FakeLib(cuMemGetInfo_v2=lambda free, total: FakeLib._set(total, 80 << 30))
    driver = CUDADriver("fake-libcuda", lib=lib)
    driver.synchronize(0)
    driver.synchronize(0)
    # 1/32 of 80 GiB is 2.5 GiB: capped at 1 GiB, asked for once (when the context is retained).
    assert lib.limits_set == [(2, 1 << 30)]
    assert wanted_heap_bytes(64 << 20, None) == 2 << 20  # a small device: 1/32 of it


def test_the_device_heap_is_never_shrunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HEAP_ENV, "4")
    lib = FakeLib()
    CUDADriver("fake-libcuda", lib=lib).synchronize(0)
    assert lib.limits_set == [] and lib.heap_limit == 8 << 20  # 4 MiB < the current 8 MiB
    monkeypatch.setenv(HEAP_ENV, "64")
    lib = FakeLib()
    CUDADriver("fake-libcuda", lib=lib).synchronize(0)
    assert lib.limits_set == [(2, 64 << 20)]


def test_a_bad_heap_setting_is_refused_before_the_context_is_retained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(HEAP_ENV, "lots")
    lib = FakeLib()
    driver = CUDADriver("fake-libcuda", lib=lib)
    with pytest.raises(VMValueError, match=r"RELAXVM_CUDA_MALLOC_HEAP_MB must be a whole number"):
        driver.synchronize(0)
    assert lib.contexts == []
