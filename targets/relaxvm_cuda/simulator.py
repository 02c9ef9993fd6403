"""A simulated CUDA device: the :class:`~relaxvm_cuda.driver.Driver` interface over host memory,
whose launches run the kernels' scheduled TIR with the reference interpreter's GPU semantics.

A testing tool, for CI without a GPU (``docs/cuda.md``): everything above the driver runs for
real (the ``cuda`` device API and its pooled allocators, the kernel module's argument checks,
launch extents and index-error slot, the VM's transfers between ``cpu`` and ``cuda``), and a
launch of a kernel runs the thread-bound PrimFunc that kernel was compiled from
(:func:`relaxvm.ir.tir.interpreter.run_prim_func`: blocks and threads, ``shared`` memory per
block, barriers phase by phase). It is slow (an interpreter, thread by thread) and checks the
schedules and the runtime, not the PTX: the PTX itself is only checked by ``ptxas``.

Selected with ``RELAXVM_CUDA_SIMULATOR=1`` (read by :func:`relaxvm_cuda.driver.get_driver`) or
installed with ``relaxvm_cuda.set_driver(CUDASimulator())``. It reports one device of compute
capability 8.0 (so ``Target("cuda")`` compiles for ``sm_80``).

How a launch finds its TIR: a :class:`~relaxvm_cuda.module.CUDAModule` that loads its PTX on a
driver with an ``attach_kernels`` method hands it, per kernel symbol, the
:class:`~relaxvm_cuda.program.PTXKernel` and the PrimFunc (a module without TIR cannot run
here, and says so). Buffer parameters arrive as device pointers and become numpy views of the
simulated memory, with shapes computed from the kernel signature and the ``i64`` variables.

Semantics honoured beyond the interpreter's own:

* device memory is filled with ``0xFF`` bytes when allocated (NaN for floats, -1 for integers),
  so a kernel that reads memory nobody wrote shows it;
* every copy and every buffer argument must lie inside one allocation (an error otherwise,
  where a GPU would corrupt memory or fault);
* a ``T.check_index`` failure is not raised by the launch: like the first failing GPU thread, it
  is written into the module's ``__rvm_index_error`` slot (op code + 1, axis, index, extent),
  where the kernel module finds it after the launch and raises.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import re
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import CodeType, MappingProxyType
from typing import Any

import numpy as np

from relaxvm.errors import DeviceError, VMIndexError
from relaxvm.ir.tir import PrimFunc
from relaxvm.ir.tir.intrin import FLAT_AXIS, INDEX_CHECK_OPS
from relaxvm.runtime.dtype import DataType
from relaxvm_llvm.kernel_callers import HELPERS
from relaxvm_llvm.signature import BufferParam, ExprData, ScalarParam, expr_source

from .driver import SIMULATOR_ENV, DeviceAttribute, simulator_enabled
from .program import PTXKernel
from .runtime_errors import CUDAUnavailableError, error_for

__all__ = [
    "LAUNCH_LIMITS",
    "SIMULATOR_ENV",
    "CUDASimulator",
    "CUDASimulatorError",
    "SimulatedFunction",
    "SimulatedModule",
    "device_attribute",
    "simulator_enabled",
]

_ALIGNMENT = 256
_FILL = 0xFF
_UNSIGNED_FLAG = 1 << 16  # relaxvm_cuda.module.UNSIGNED_FLAG
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*\(")
_GLOBAL = re.compile(r"\.global\s+[^;]*?([A-Za-z_$][A-Za-z0-9_$]*)\s*\[")
_INDEX_MESSAGE = re.compile(
    r"(?P<op>.+?): index (?P<index>-?\d+) is out of range for "
    r"(?:the flattened input|axis (?P<axis>-?\d+)) with size (?P<extent>-?\d+) "
)


#: The launch limits the simulator reports (those of every GPU since compute capability 3.0).
LAUNCH_LIMITS: Mapping[int, int] = MappingProxyType(
    {
        DeviceAttribute.MAX_THREADS_PER_BLOCK: 1024,
        DeviceAttribute.MAX_BLOCK_DIM_X: 1024,
        DeviceAttribute.MAX_BLOCK_DIM_Y: 1024,
        DeviceAttribute.MAX_BLOCK_DIM_Z: 64,
        DeviceAttribute.MAX_GRID_DIM_X: 2**31 - 1,
        DeviceAttribute.MAX_GRID_DIM_Y: 65535,
        DeviceAttribute.MAX_GRID_DIM_Z: 65535,
    }
)


def device_attribute(
    capability: tuple[int, int], attributes: Mapping[int, int], attribute: int
) -> int:
    """A ``CUdevice_attribute`` of a simulated device: the compute capability's parts from
    ``capability``, any other from ``attributes``.

    Raises
    ------
    relaxvm_cuda.runtime_errors.CUDAError
        ``CUDA_ERROR_INVALID_VALUE`` for an attribute the device does not report.
    """
    if attribute == DeviceAttribute.COMPUTE_CAPABILITY_MAJOR:
        return capability[0]
    if attribute == DeviceAttribute.COMPUTE_CAPABILITY_MINOR:
        return capability[1]
    value = attributes.get(attribute)
    if value is None:
        raise error_for(1, "cuDeviceGetAttribute", None, context=f"attribute {attribute}")
    return value


class CUDASimulatorError(DeviceError):
    """The simulator cannot do what it was asked: a kernel without TIR, a pointer outside
    every allocation, a kernel the simulator was never told about."""


@dataclass(frozen=True)
class _Kernel:
    kernel: PTXKernel
    func: PrimFunc


class SimulatedModule:
    """What :meth:`CUDASimulator.module_load` returns: the PTX's entries, the module's index
    error slot (``i64[4]`` in simulated device memory) and, once attached, its kernels' TIR."""

    def __init__(self, image: bytes, slot: int) -> None:
        text = image.rstrip(b"\0").decode("utf-8", "replace")
        self.entries = frozenset(_ENTRY.findall(text))
        self.globals = frozenset(_GLOBAL.findall(text))
        self.slot = slot
        self.kernels: dict[str, _Kernel] = {}
        self.unloaded = False

    def __repr__(self) -> str:
        return f"<SimulatedModule {len(self.entries)} entries>"


@dataclass(frozen=True)
class SimulatedFunction:
    """A kernel handle: its module and symbol."""

    module: SimulatedModule
    symbol: str


@functools.lru_cache(maxsize=1024)
def _compiled(source: str) -> CodeType:
    return compile(source, "<cuda simulator shape>", "eval")


def _evaluate(expr: ExprData, values: Sequence[int]) -> int:
    if isinstance(expr, int):
        return expr
    if expr[0] == "v":
        return int(values[expr[1]])
    return int(eval(_compiled(expr_source(expr, "_v")), {"_v": values, **HELPERS}))


def _index_words(err: VMIndexError) -> list[int] | None:
    """The slot words of a failed ``check_index`` (from its message, which
    :func:`relaxvm.ir.tir.intrin.index_error_message` writes), or None for another message."""
    match = _INDEX_MESSAGE.match(str(err))
    if match is None:
        return None
    op = match.group("op")
    op_code = INDEX_CHECK_OPS.index(op) if op in INDEX_CHECK_OPS else None
    if op_code is None:
        found = re.fullmatch(r"op (-?\d+)", op)
        if found is None:
            return None
        op_code = int(found.group(1))
    axis = FLAT_AXIS if match.group("axis") is None else int(match.group("axis"))
    index = int(match.group("index"))
    flags = 0
    if index >= 1 << 63:  # an unsigned index: the raw bits travel, flagged
        flags, index = _UNSIGNED_FLAG, index - (1 << 64)
    return [(op_code + 1) | flags, axis, index, int(match.group("extent"))]


class CUDASimulator:
    """A simulated CUDA driver (implements :class:`relaxvm_cuda.driver.Driver`).

    Parameters
    ----------
    devices : int
        How many devices it reports.
    total : int
        Bytes of device memory per device (accounting only: allocations come from the host
        heap); an allocation beyond it raises
        :class:`~relaxvm_cuda.runtime_errors.CUDAOutOfMemoryError`.
    capability : tuple of int
        The compute capability reported (default 8.0, i.e. ``sm_80``).
    """

    def __init__(
        self, devices: int = 1, total: int = 4 << 30, capability: tuple[int, int] = (8, 0)
    ) -> None:
        if devices < 1:
            raise CUDASimulatorError(f"CUDASimulator: devices must be >= 1, got {devices}")
        self.devices = devices
        self.total = total
        self.capability = capability
        self.used = [0] * devices
        #: The latest kernel launches (symbol, grid, block), for tests (the last 10000).
        self.launches: deque[tuple[str, tuple[int, int, int], tuple[int, int, int]]] = deque(
            maxlen=10_000
        )
        self._lock = threading.RLock()
        # Allocations by aligned address: (backing array, bytes usable, device, bytes held).
        self._blocks: dict[int, tuple[np.ndarray, int, int, int]] = {}
        self._starts: list[int] = []  # sorted keys of _blocks
        self.attributes = {
            **LAUNCH_LIMITS,
            DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK: 48 * 1024,
            DeviceAttribute.WARP_SIZE: 32,
            DeviceAttribute.MULTIPROCESSOR_COUNT: 1,
            DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 163 * 1024,
        }

    # ---- devices ---------------------------------------------------------------------------
    def _check(self, ordinal: int) -> None:
        if isinstance(ordinal, bool) or not isinstance(ordinal, int):
            raise CUDAUnavailableError(f"no CUDA device with ordinal {ordinal!r}", "device")
        if not 0 <= ordinal < self.devices:
            raise CUDAUnavailableError(
                f"no CUDA device with ordinal {ordinal}: {self.devices} present (simulated)",
                "device",
            )

    def driver_version(self) -> int:
        """The CUDA version the simulator claims (12.0)."""
        return 12000

    def device_count(self) -> int:
        return self.devices

    def attribute(self, ordinal: int, attribute: int) -> int:
        self._check(ordinal)
        return device_attribute(self.capability, self.attributes, attribute)

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        self._check(ordinal)
        return self.capability

    def device_name(self, ordinal: int) -> str:
        self._check(ordinal)
        major, minor = self.capability
        return f"relaxvm CUDA simulator (sm_{major}{minor}, host memory)"

    # ---- memory ----------------------------------------------------------------------------
    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        self._check(ordinal)
        return self.total - self.used[ordinal], self.total

    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        self._check(ordinal)
        if nbytes <= 0:
            raise error_for(1, "cuMemAlloc_v2", None, context=f"allocating {nbytes} bytes")
        with self._lock:
            if self.used[ordinal] + nbytes > self.total:
                raise error_for(
                    2,
                    "cuMemAlloc_v2",
                    None,
                    context=f"allocating on cuda({ordinal}) (simulated)",
                    requested=nbytes,
                    mem_info=lambda: self.mem_get_info(ordinal),
                )
            return self._new_block(ordinal, nbytes)

    def _new_block(self, ordinal: int, nbytes: int) -> int:
        backing = np.full(nbytes + _ALIGNMENT, _FILL, dtype=np.uint8)
        base = backing.ctypes.data
        pointer = -(-base // _ALIGNMENT) * _ALIGNMENT
        view = backing[pointer - base : pointer - base + nbytes]
        self._blocks[pointer] = (view, nbytes, ordinal, nbytes)
        bisect.insort(self._starts, pointer)
        self.used[ordinal] += nbytes
        return pointer

    def mem_free(self, ordinal: int, pointer: int) -> None:
        with self._lock:
            block = self._blocks.pop(pointer, None)
            if block is None:
                raise error_for(1, "cuMemFree_v2", None, context=f"freeing 0x{pointer:x}")
            del self._starts[bisect.bisect_left(self._starts, pointer)]
            self.used[block[2]] -= block[3]

    def _find(self, pointer: int, nbytes: int, what: str) -> tuple[np.ndarray, int]:
        """The allocation holding ``nbytes`` at ``pointer`` and the offset into it."""
        with self._lock:
            k = bisect.bisect_right(self._starts, pointer) - 1
            if k >= 0:
                start = self._starts[k]
                array, size = self._blocks[start][:2]
                if pointer + nbytes <= start + size:
                    return array, pointer - start
        raise CUDASimulatorError(
            f"cuda simulator: {what}: {nbytes} bytes at 0x{pointer:x} are not inside one "
            "allocation (on a GPU: an illegal address)"
        )

    def _bytes(self, pointer: int, nbytes: int, what: str) -> np.ndarray:
        array, offset = self._find(pointer, nbytes, what)
        return array[offset : offset + nbytes]

    def memcpy_htod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._bytes(dst, nbytes, "cuMemcpyHtoD")  # checks the range
        ctypes.memmove(dst, src, nbytes)

    def memcpy_dtoh(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._bytes(src, nbytes, "cuMemcpyDtoH")
        ctypes.memmove(dst, src, nbytes)

    def memcpy_dtod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._bytes(dst, nbytes, "cuMemcpyDtoD")
        self._bytes(src, nbytes, "cuMemcpyDtoD")
        ctypes.memmove(dst, src, nbytes)

    def memset_d8(self, ordinal: int, dst: int, value: int, nbytes: int) -> None:
        self._bytes(dst, nbytes, "cuMemsetD8")[:] = value

    def synchronize(self, ordinal: int) -> None:
        self._check(ordinal)  # every launch has finished when it returns

    # ---- modules ---------------------------------------------------------------------------
    def module_load(self, ordinal: int, image: bytes) -> SimulatedModule:
        self._check(ordinal)
        with self._lock:
            slot = self._new_block(ordinal, 32)
        self._bytes(slot, 32, "the index-error slot")[:] = 0  # a .global starts zeroed
        return SimulatedModule(image, slot)

    def attach_kernels(
        self, module: SimulatedModule, kernels: Mapping[str, tuple[PTXKernel, PrimFunc]]
    ) -> None:
        """Give a loaded module the TIR of its kernels (by symbol), which launches run.

        Raises
        ------
        CUDASimulatorError
            A symbol that is not an ``.entry`` of the module's PTX.
        """
        for symbol, (kernel, func) in kernels.items():
            if symbol not in module.entries:
                raise CUDASimulatorError(
                    f"cuda simulator: kernel {symbol!r} is not an .entry of the loaded PTX"
                )
            module.kernels[symbol] = _Kernel(kernel, func)

    def module_unload(self, ordinal: int, module: SimulatedModule) -> None:
        if not module.unloaded:
            module.unloaded = True
            self.mem_free(ordinal, module.slot)

    def module_function(self, ordinal: int, module: SimulatedModule, name: str) -> Any:
        if name not in module.entries:
            raise error_for(500, "cuModuleGetFunction", None, context=f"looking up {name!r}")
        return SimulatedFunction(module, name)

    def module_global(self, ordinal: int, module: SimulatedModule, name: str) -> tuple[int, int]:
        if name not in module.globals:
            raise error_for(500, "cuModuleGetGlobal_v2", None, context=f"looking up {name!r}")
        return module.slot, 32

    def function_attribute(self, ordinal: int, function: Any, attribute: int) -> int:
        return 1024 if attribute == 0 else 0  # FUNC_MAX_THREADS_PER_BLOCK; nothing else asked

    def set_function_attribute(
        self, ordinal: int, function: Any, attribute: int, value: int
    ) -> None:
        """Accepted (the simulator has no shared memory limit to raise)."""

    def launch(
        self,
        ordinal: int,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        params: Sequence[Any],
    ) -> None:
        """Run the kernel's TIR on the interpreter (synchronously).

        Raises
        ------
        CUDASimulatorError
            The module was given no TIR for this kernel, or a buffer lies outside the
            simulated memory.
        relaxvm.errors.RelaxVMError
            What the interpreter raises for a kernel that goes wrong (an access out of a
            buffer's bounds: a schedule or code generation bug).
        """
        self._check(ordinal)
        if not isinstance(function, SimulatedFunction):
            raise CUDASimulatorError(f"cuda simulator: {function!r} is not a kernel handle")
        module, symbol = function.module, function.symbol
        if module.unloaded:
            raise error_for(400, "cuLaunchKernel", None, context="the module was unloaded")
        entry = module.kernels.get(symbol)
        if entry is None:
            raise CUDASimulatorError(
                f"cuda simulator: no TIR for kernel {symbol!r}: the simulator runs the TIR a "
                "kernel was compiled from, which the CUDA module gives when it loads"
            )
        self.launches.append((symbol, tuple(grid), tuple(block)))  # type: ignore[arg-type]
        args = self._arguments(entry.kernel, [int(p.value) for p in params])
        from relaxvm.ir.tir.interpreter import run_prim_func

        try:
            run_prim_func(entry.func, *args)
        except VMIndexError as err:
            words = _index_words(err)
            if words is None:
                raise
            slot = self._bytes(module.slot, 32, "the index-error slot").view(np.int64)
            if slot[0] == 0:  # the first failing thread writes the slot, the others leave
                slot[:] = words

    def _arguments(self, kernel: PTXKernel, raw: list[int]) -> list[Any]:
        sig = kernel.signature
        nbuf = sum(isinstance(p, BufferParam) for p in sig.params)
        if len(raw) != nbuf + len(sig.var_names):
            raise CUDASimulatorError(
                f"cuda simulator: kernel {kernel.symbol!r} takes {nbuf} pointers and "
                f"{len(sig.var_names)} variables, launched with {len(raw)} parameters"
            )
        pointers, values = raw[:nbuf], raw[nbuf:]
        args: list[Any] = []
        k = 0
        for param in sig.params:
            if isinstance(param, ScalarParam):
                args.append(values[param.var])
                continue
            shape = tuple(_evaluate(e, values) for e in param.shape)
            dtype = DataType(param.dtype).numpy_dtype()
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if nbytes == 0:
                args.append(np.empty(shape, dtype))
            else:
                what = f"kernel {kernel.symbol!r} parameter {param.name!r}"
                data = self._bytes(pointers[k], nbytes, what)
                args.append(data.view(dtype).reshape(shape))
            k += 1
        return args

    def __repr__(self) -> str:
        return (
            f"<CUDASimulator {self.devices} device(s), sm_{self.capability[0]}{self.capability[1]}>"
        )
