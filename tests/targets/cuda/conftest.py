"""Shared fixtures of the CUDA runtime tests.

* ``requires_gpu``: skips (with the reason: "no libcuda.so.1" or "driver present but no
  device") unless the real driver loads and reports a device; yields the real driver.
* ``fake_driver``: a :class:`FakeDriver` (device memory is host memory) installed as the
  process-wide driver for the test, so the device API, allocators and kernel modules run
  for real without a GPU.
* ``no_driver``: the driver state reset with ``RELAXVM_CUDA_LIBRARY`` naming a library that
  does not exist, i.e. a machine without an NVIDIA driver.
* ``cuda_simulator``: a :class:`relaxvm_cuda.simulator.CUDASimulator` installed for the test
  (kernels run their TIR on the CPU), so compiled models run end to end without a GPU;
  :func:`simulated_cuda` does the same for a wider scope.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from relaxvm_cuda import driver as driver_module
from relaxvm_cuda.runtime_errors import CUDAUnavailableError, error_for
from relaxvm_cuda.simulator import LAUNCH_LIMITS, CUDASimulator, device_attribute


def _gpu_skip_reason() -> str | None:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no libcuda.so.1 (no NVIDIA driver on this machine)"
    driver_module.set_driver(None)
    try:
        count = driver_module.get_driver().device_count()
    except CUDAUnavailableError as err:
        if err.missing == "device":
            return f"driver present but no device ({err})"
        return f"the CUDA driver does not initialize: {err}"
    if count == 0:
        return "driver present but no device"
    if not isinstance(driver_module.get_driver(), driver_module.CUDADriver):
        return f"{driver_module.SIMULATOR_ENV} is on: the real driver is not in use"
    return None


@pytest.fixture
def requires_gpu() -> Iterator[Any]:
    """The real CUDA driver; the test is skipped, with the reason, without a GPU."""
    reason = _gpu_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    yield driver_module.get_driver()


class FakeModule:
    """What :meth:`FakeDriver.module_load` returns: the entries found in the PTX."""

    def __init__(self, image: bytes) -> None:
        text = image.rstrip(b"\0").decode()
        self.entries = set(re.findall(r"\.entry\s+([A-Za-z_][A-Za-z0-9_]*)", text))
        self.globals = set(re.findall(r"\.global\s+[^;]*?([A-Za-z_][A-Za-z0-9_]*)\[", text))
        self.unloaded = False
        #: The module's index-error slot (i64[4]) in "device" memory.
        self.slot = (ctypes.c_int64 * 4)()


class FakeDriver:
    """A :class:`relaxvm_cuda.driver.Driver` over host memory.

    ``kernels[symbol] = impl`` makes a launch of ``symbol`` call
    ``impl(grid, block, values)`` with the parameter values (pointers are host addresses).
    """

    def __init__(
        self, devices: int = 1, total: int = 1 << 24, capability: tuple[int, int] = (8, 0)
    ) -> None:
        self.devices = devices
        self.total = total
        self.capability = capability
        self.blocks: dict[int, Any] = {}
        self.used = 0
        self.calls: list[str] = []
        self.kernels: dict[str, Callable[..., None]] = {}
        self.launches: list[tuple[str, tuple[int, ...], tuple[int, ...], int, list[int]]] = []
        self.modules: list[FakeModule] = []
        self.function_attributes: dict[int, int] = {0: 1024}
        self.attributes = dict(LAUNCH_LIMITS)

    # devices
    def _ordinal(self, ordinal: int) -> None:
        if not 0 <= ordinal < self.devices:
            raise CUDAUnavailableError(
                f"no CUDA device with ordinal {ordinal}: {self.devices} present", "device"
            )

    def device_count(self) -> int:
        return self.devices

    def attribute(self, ordinal: int, attribute: int) -> int:
        self._ordinal(ordinal)
        return device_attribute(self.capability, self.attributes, attribute)

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        self._ordinal(ordinal)
        return self.capability

    def device_name(self, ordinal: int) -> str:
        return "Fake GPU"

    # memory
    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        return self.total - self.used, self.total

    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        self._ordinal(ordinal)
        self.calls.append("mem_alloc")
        if self.used + nbytes > self.total:
            raise error_for(
                2,
                "cuMemAlloc_v2",
                None,
                context=f"allocating on cuda({ordinal})",
                requested=nbytes,
                mem_info=lambda: self.mem_get_info(ordinal),
            )
        # cuMemAlloc's blocks start on a 256-byte boundary, and relaxvm's larger alignments
        # rely on it: an unaligned host block would make them flaky (malloc's addresses vary).
        storage = ctypes.create_string_buffer(nbytes + 255)
        offset = -ctypes.addressof(storage) % 256
        block = (ctypes.c_char * nbytes).from_buffer(storage, offset)  # keeps storage alive
        pointer = ctypes.addressof(block)
        self.blocks[pointer] = block
        self.used += nbytes
        return pointer

    def mem_free(self, ordinal: int, pointer: int) -> None:
        self.calls.append("mem_free")
        block = self.blocks.pop(pointer, None)
        if block is None:
            raise error_for(1, "cuMemFree_v2", None)
        self.used -= ctypes.sizeof(block)

    def _inside(self, pointer: int, nbytes: int) -> None:
        for base, block in self.blocks.items():
            if base <= pointer and pointer + nbytes <= base + ctypes.sizeof(block):
                return
        raise error_for(1, "cuMemcpy", None, context=f"{nbytes} bytes at 0x{pointer:x}")

    def memcpy_htod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._inside(dst, nbytes)
        ctypes.memmove(dst, src, nbytes)

    def memcpy_dtoh(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._inside(src, nbytes)
        ctypes.memmove(dst, src, nbytes)

    def memcpy_dtod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._inside(dst, nbytes)
        self._inside(src, nbytes)
        ctypes.memmove(dst, src, nbytes)

    def memset_d8(self, ordinal: int, dst: int, value: int, nbytes: int) -> None:
        self._inside(dst, nbytes)
        ctypes.memset(dst, value, nbytes)

    def synchronize(self, ordinal: int) -> None:
        self.calls.append("synchronize")

    # modules
    def module_load(self, ordinal: int, image: bytes) -> FakeModule:
        self._ordinal(ordinal)
        self.calls.append("module_load")
        module = FakeModule(image)
        self.modules.append(module)
        self.blocks[ctypes.addressof(module.slot)] = module.slot  # copies may reach it
        return module

    def module_unload(self, ordinal: int, module: FakeModule) -> None:
        module.unloaded = True

    def module_function(self, ordinal: int, module: FakeModule, name: str) -> str:
        if name not in module.entries:
            raise error_for(500, "cuModuleGetFunction", None, context=f"looking up {name!r}")
        return name

    def module_global(self, ordinal: int, module: FakeModule, name: str) -> tuple[int, int]:
        self.calls.append(f"module_global {name}")
        if name not in module.globals:
            raise error_for(500, "cuModuleGetGlobal_v2", None, context=f"looking up {name!r}")
        return ctypes.addressof(module.slot), 32

    def function_attribute(self, ordinal: int, function: Any, attribute: int) -> int:
        return self.function_attributes[attribute]

    def set_function_attribute(
        self, ordinal: int, function: Any, attribute: int, value: int
    ) -> None:
        self.calls.append(f"set_function_attribute {attribute}={value}")

    def launch(
        self,
        ordinal: int,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        params: list[Any],
    ) -> None:
        values = [p.value for p in params]
        self.launches.append((function, grid, block, shared_bytes, values))
        impl = self.kernels.get(function)
        if impl is not None:
            impl(grid, block, values)


@pytest.fixture
def fake_driver() -> Iterator[FakeDriver]:
    """A :class:`FakeDriver` installed for the test (the previous state restored after)."""
    from relaxvm.runtime.memory import clear_pools

    # Tensors of an earlier test may have been released into relaxvm's pools after that
    # test ended: their blocks belong to its driver, so the pools start empty (VMs hold
    # reference cycles: collect them first, or they release blocks later).
    gc.collect()
    clear_pools()
    fake = FakeDriver()
    driver_module.set_driver(fake)
    try:
        yield fake
    finally:
        gc.collect()
        clear_pools()  # relaxvm's pools must not keep buffers of this driver
        driver_module.set_driver(None)


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The driver state reset, with the loader pointed at a library that does not exist."""
    monkeypatch.setenv(driver_module.LIBRARY_ENV, "libcuda-relaxvm-test-missing.so.1")
    driver_module.set_driver(None)
    try:
        yield
    finally:
        driver_module.set_driver(None)


@contextlib.contextmanager
def simulated_cuda(**options: Any) -> Iterator[CUDASimulator]:
    """A :class:`CUDASimulator` (``options`` go to it) installed as the process-wide driver
    inside the block; relaxvm's memory pools start and end empty (their blocks belong to
    one driver)."""
    from relaxvm.runtime.memory import clear_pools

    # VMs hold reference cycles: one of an earlier test, collected during this one, would
    # release its blocks (of another driver) into the pools. Collect them first.
    gc.collect()
    clear_pools()
    simulator = CUDASimulator(**options)
    driver_module.set_driver(simulator)
    try:
        yield simulator
    finally:
        gc.collect()
        clear_pools()
        driver_module.set_driver(None)


@pytest.fixture
def cuda_simulator() -> Iterator[CUDASimulator]:
    """The simulated CUDA device installed for the test: ``relaxvm.cuda(0)`` exists (sm_80),
    kernels launched there run their TIR on the reference interpreter."""
    with simulated_cuda() as simulator:
        yield simulator


@pytest.fixture(scope="module")
def cuda_simulator_module() -> Iterator[CUDASimulator]:
    """:func:`cuda_simulator` for a whole test module (its tests share compiled VMs)."""
    with simulated_cuda() as simulator:
        yield simulator


#: (name, PrimFunc as legalized and lowered, the same GPU-scheduled) of one device kernel.
MatrixKernel = tuple[str, Any, Any]


@pytest.fixture(scope="session")
def matrix_kernels() -> dict[tuple[str, str, str], list[MatrixKernel]]:
    """Every device kernel of the op conformance matrix, by case group (family, dtype, shape
    kind): the default pipeline runs once per group for the whole session (the PTX matrix
    and the schedule matrix share it). Shape functions (``tir.is_host_func``) are left out."""
    import collections

    from relaxvm.ir.tir import PrimFunc, lower_blocks
    from relaxvm.testing.conformance.cases import all_cases, build_module
    from relaxvm.transform.pipeline import get_pipeline
    from relaxvm_cuda.schedule import schedule_prim_func

    groups: dict[tuple[str, str, str], list[Any]] = collections.defaultdict(list)
    for case in all_cases():
        groups[case.group].append(case)
    pipeline = get_pipeline("default")
    kernels: dict[tuple[str, str, str], list[MatrixKernel]] = {}
    for group, cases in groups.items():
        mod = pipeline(build_module(cases))
        found = []
        for gvar, func in mod.functions.items():
            if isinstance(func, PrimFunc) and not func.attrs.get("tir.is_host_func"):
                lowered = lower_blocks(func)
                found.append((gvar.name_hint, lowered, schedule_prim_func(lowered)))
        kernels[group] = found
    return kernels
