"""Runtime modules of CUDA kernels: a :class:`~relaxvm_cuda.program.PTXProgram` made callable.

``module["add"](a, b, out)`` takes the kernel's parameters in order: :class:`relaxvm.Tensor`
objects on one CUDA device for buffers, ``int`` for scalars. Before anything reaches the
GPU, every argument is checked against the kernel's
:class:`~relaxvm_llvm.signature.KernelSignature` exactly as an LLVM kernel's are (type, device,
dtype, ndim, shape with symbolic dimensions bound on first use, compact layout, outputs not
overlapping other buffers of a ``noalias`` kernel), and errors name the kernel, the parameter
and the dimension. The grid and block extents are then computed from the variables
(:attr:`PTXKernel.launch`) and checked against the device's limits, and the kernel is
launched on the device's default stream (asynchronously, unless
``RELAXVM_CUDA_LAUNCH_BLOCKING=1``). A launch whose grid or block has an extent of 0 does
nothing.

The PTX is handed to the driver lazily, on a kernel's first call on a device, so building and
loading a module need no GPU.

A module also keeps, per kernel, the scheduled (thread-bound) PrimFunc it was compiled from
(:attr:`CUDAModule.tir`; exported with the PTX when the TIR encodes): the simulated device of
:mod:`relaxvm_cuda.simulator` runs those instead of the PTX.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relaxvm.errors import VMValueError
from relaxvm.runtime.module import Module

from .driver import (
    FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    Driver,
    get_driver,
)
from .kernel import (
    DEFAULT_SHARED_LIMIT,
    ERROR_SLOT,
    LAUNCH_BLOCKING_ENV,
    UNSIGNED_FLAG,
    CUDAKernel,
    DeviceState,
    arch_number,
    check_launch_expr,
    index_error,
    kernels_checking_indices,
)
from .program import PTXKernel, PTXProgram

if TYPE_CHECKING:
    from relaxvm.ir.tir import PrimFunc

__all__ = [
    "ERROR_SLOT",
    "LAUNCH_BLOCKING_ENV",
    "UNSIGNED_FLAG",
    "CUDAKernel",
    "CUDAModule",
    "arch_number",
    "check_launch_expr",
    "kernels_checking_indices",
]


class CUDAModule(Module):
    """A runtime module of CUDA kernels (the result of :func:`relaxvm_cuda.build`).

    Its functions are :class:`CUDAKernel` objects, by kernel name. The PTX is loaded into a
    device's context on the first call of one of its kernels there.

    Parameters
    ----------
    program : PTXProgram
    tir : mapping of str to PrimFunc, optional
        The scheduled PrimFunc of each kernel, by kernel name, as the code generator got it
        (what the simulated device runs).
    host : Module, optional
        The host functions (``tir.is_host_func``: shape functions over the VM's host shape
        heap), compiled for the CPU; imported, so lookups with ``query_imports`` find them.
    tir_missing : str, optional
        Why there is no TIR (said when the simulator asks for it).

    Attributes
    ----------
    program : PTXProgram
        The PTX and kernel table (what :func:`relaxvm_cuda.serialize` writes).
    tir : dict of str to PrimFunc, or None
        The kernels' TIR, by kernel name; None when the module was loaded without it.
    host : Module or None
        The host functions' module.
    rebuilt : bool
        Whether the PTX was compiled again from the TIR of a file nobody vouched for (its
        own PTX ignored; :mod:`relaxvm_cuda.untrusted`).
    """

    type_key = "cuda"

    def __init__(
        self,
        program: PTXProgram,
        tir: Mapping[str, PrimFunc] | None = None,
        *,
        host: Module | None = None,
        tir_missing: str | None = None,
    ) -> None:
        arch_number(program.arch)  # a bad architecture name fails here, not at launch
        if tir is not None:
            absent = sorted({k.name for k in program.kernels} - set(tir))
            if absent:
                raise VMValueError(f"CUDAModule: no TIR for kernel(s) {absent}")
        self.tir: dict[str, PrimFunc] | None = None if tir is None else dict(tir)
        #: Why :attr:`tir` is None (said when the simulator asks for it).
        self.tir_missing = tir_missing or "the module was made without its kernels' TIR"
        self._simulated: dict[str, tuple[PTXKernel, PrimFunc]] | None = None
        self._checking = kernels_checking_indices(program.ptx)
        kernels = {k.name: CUDAKernel(k, self) for k in program.kernels}
        if len(kernels) != len(program.kernels):
            raise VMValueError("CUDAModule: two kernels have the same name")
        super().__init__(kernels, name="cuda")
        self.program = program
        self.host = host
        self.rebuilt = False
        if host is not None:
            self.import_module(host)
        self._lock = threading.Lock()
        self._states: dict[int, DeviceState] = {}

    @property
    def kernels(self) -> dict[str, CUDAKernel]:
        """The kernels by name."""
        return dict(self._functions)  # type: ignore[arg-type]

    def get_source(self, fmt: str = "ptx") -> str:
        """The PTX text (``fmt="ptx"``, the only format kept).

        Raises
        ------
        VMValueError
            Another format.
        """
        if fmt != "ptx":
            raise VMValueError(f"CUDAModule.get_source: fmt must be 'ptx', got {fmt!r}")
        return self.program.ptx

    def _state(self, ordinal: int) -> DeviceState:
        """The module loaded on ``cuda(ordinal)`` (loading it on first use)."""
        state = self._states.get(ordinal)
        driver = get_driver()
        if state is not None and state.driver is driver:
            return state
        with self._lock:
            state = self._states.get(ordinal)
            if state is None or state.driver is not driver:
                self._check_arch(driver, ordinal)
                # A simulated device runs the kernels' TIR: it asks for it with this method.
                attach = getattr(driver, "attach_kernels", None)
                kernels = self.simulated_kernels() if attach is not None else None
                handle = driver.module_load(ordinal, self.program.ptx.encode("utf-8"))
                if attach is not None:
                    attach(handle, kernels)
                state = self._states[ordinal] = DeviceState(driver, handle)
        return state

    def simulated_kernels(self) -> dict[str, tuple[PTXKernel, PrimFunc]]:
        """Per kernel symbol, its :class:`PTXKernel` and the thread-bound PrimFunc the PTX was
        generated from (a kernel without thread bindings as the code generator runs it: one
        thread of one block). What :mod:`relaxvm_cuda.simulator` launches.

        Raises
        ------
        CUDASimulatorError
            The module has no TIR (loaded from a file exported without it).
        """
        if self._simulated is None:
            if self.tir is None:
                from .simulator import CUDASimulatorError

                raise CUDASimulatorError(
                    "cuda module: the CUDA simulator runs the kernels' TIR, and this module "
                    f"has none ({self.tir_missing}); compile the model again to simulate it"
                )
            from .schedule import single_thread

            self._simulated = {
                k.symbol: (k, single_thread(self.tir[k.name])) for k in self.program.kernels
            }
        return self._simulated

    def _check_arch(self, driver: Driver, ordinal: int) -> None:
        number, suffix = arch_number(self.program.arch)
        major, minor = driver.compute_capability(ordinal)
        device = major * 10 + minor
        # PTX for sm_XY JITs on devices of compute capability >= X.Y; the a/f variants
        # only on exactly that architecture (family).
        if number > device or (suffix and number // 10 != major):
            raise VMValueError(
                f"cuda module: the kernels were compiled for {self.program.arch}, which "
                f"cuda({ordinal}) (compute capability {major}.{minor}) cannot run; compile for "
                f"Target('cuda -arch=sm_{device}') or leave -arch out to target this device"
            )

    def _function(self, state: DeviceState, ordinal: int, symbol: str) -> Any:
        function = state.functions.get(symbol)
        if function is None:
            function = state.driver.module_function(ordinal, state.handle, symbol)
            kernel = next(k for k in self.program.kernels if k.symbol == symbol)
            if kernel.dynamic_shared_bytes > DEFAULT_SHARED_LIMIT:
                state.driver.set_function_attribute(
                    ordinal,
                    function,
                    FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    kernel.dynamic_shared_bytes,
                )
            state.functions[symbol] = function
        return function

    def _raise_index_error(self, state: DeviceState, ordinal: int) -> None:
        """Raise the failure a kernel recorded in the index-error slot (and clear it)."""
        if state.error_slot is None:
            state.error_slot = state.driver.module_global(ordinal, state.handle, ERROR_SLOT)[0]
        words = (ctypes.c_int64 * 4)()
        state.driver.memcpy_dtoh(ordinal, ctypes.addressof(words), state.error_slot, 32)
        if words[0]:
            state.driver.memset_d8(ordinal, state.error_slot, 0, 32)
            raise index_error(list(words))

    def unload(self) -> None:
        """Unload the PTX from every device it was loaded on (it loads again when a kernel
        is called next)."""
        with self._lock:
            states, self._states = self._states, {}
            for kernel in self._functions.values():
                kernel._within_limits.clear()  # type: ignore[attr-defined]
                kernel._prepared.clear()  # type: ignore[attr-defined]  # handles now invalid
        for ordinal, state in states.items():
            state.driver.module_unload(ordinal, state.handle)

    def loaded_devices(self) -> list[int]:
        """The ordinals the PTX is currently loaded on."""
        return sorted(self._states)

    def __repr__(self) -> str:
        return (
            f"<CUDAModule {len(self._functions)} kernels for {self.program.arch}: "
            f"{', '.join(self.list_functions())}>"
        )
