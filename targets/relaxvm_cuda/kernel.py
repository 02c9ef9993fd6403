"""A CUDA kernel made callable: argument checks, launch extents and the index-error slot.

:class:`CUDAKernel` is what ``module["add"]`` returns (:mod:`relaxvm_cuda.module` holds the
module and its per-device state). Every argument is checked against the kernel's
:class:`~relaxvm_llvm.signature.KernelSignature` exactly as an LLVM kernel's are, before
anything reaches the GPU; the grid and block extents are computed from the variables and checked
against the device's limits.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
from collections.abc import Callable, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any

from relaxvm.errors import VMIndexError, VMTypeError, VMValueError
from relaxvm.ir.tir.intrin import index_error_message
from relaxvm.runtime.dtype import DataType
from relaxvm.runtime.tensor import Tensor
from relaxvm_llvm.argcheck import checks_overlap, overlap_pairs, overlaps
from relaxvm_llvm.kernel_callers import HELPERS, compact_strides, int_range
from relaxvm_llvm.signature import (
    BufferParam,
    ExprData,
    ScalarParam,
    expr_source,
    expr_text,
)

from .call_key import call_key_function
from .device import CUDA_DEVICE_TYPE
from .driver import (
    FUNC_MAX_THREADS_PER_BLOCK,
    DeviceAttribute,
    Driver,
    get_driver,
)
from .program import LAUNCH_AXES, PTXKernel
from .runtime_errors import CUDAOutOfMemoryError

if TYPE_CHECKING:
    from .module import CUDAModule


__all__ = [
    "ERROR_SLOT",
    "HEAP_FLAG",
    "LAUNCH_BLOCKING_ENV",
    "UNSIGNED_FLAG",
    "CUDAKernel",
    "DeviceState",
    "arch_number",
    "check_launch_expr",
    "index_error",
    "kernels_checking_indices",
]

#: Set to 1 to wait for every kernel to finish, so an error is reported by the launch at fault.
LAUNCH_BLOCKING_ENV = "RELAXVM_CUDA_LAUNCH_BLOCKING"
# The index-error slot the code generator defines (relaxvm_cuda.codegen_func.ERROR_SYMBOL and
# UNSIGNED_FLAG; repeated here because that module imports llvmlite): i64[4], word 0 is
# op_code + 1 (0: no failure, UNSIGNED_FLAG set for an unsigned index), then axis, index,
# extent. The first failing thread writes it and leaves; the runtime reads it after the launch.
ERROR_SLOT = "__rvm_index_error"
UNSIGNED_FLAG = 1 << 16
_ENTRY = re.compile(r"\.(?:entry|func)\s+([A-Za-z_$][A-Za-z0-9_$]*)\s*\(")
_ARCH = re.compile(r"sm_(\d{2,3})([af]?)\Z")
_OPS = frozenset(
    ("add", "sub", "mul", "floordiv", "floormod", "truncdiv", "truncmod", "min", "max")
)
# Static shared memory above this needs an opt-in attribute per kernel (cuda.h).
DEFAULT_SHARED_LIMIT = 48 * 1024


def arch_number(arch: str) -> tuple[int, str]:
    """``"sm_86"`` -> ``(86, "")``; ``"sm_90a"`` -> ``(90, "a")``.

    Raises
    ------
    VMValueError
        Not an ``sm_XY`` name.
    """
    match = _ARCH.match(arch) if isinstance(arch, str) else None
    if match is None:
        raise VMValueError(f"expected a CUDA architecture such as 'sm_80', got {arch!r}")
    return int(match.group(1)), match.group(2)


def check_launch_expr(data: Any, nvars: int, depth: int = 0) -> ExprData:
    """Validate one launch extent tree (an int, ``["v", k]`` or ``[op, a, b]``).

    Raises
    ------
    ValueError, TypeError
        Malformed (the loader reports these as a corrupt file).
    """
    if depth > 64:
        raise ValueError("launch expression nested too deeply")
    if isinstance(data, bool):
        raise TypeError("a bool is not a launch expression")
    if isinstance(data, int):
        return data
    if isinstance(data, list) and len(data) == 2 and data[0] == "v":
        if isinstance(data[1], bool) or not isinstance(data[1], int) or not 0 <= data[1] < nvars:
            raise ValueError(f"launch variable index {data[1]!r} out of range (0..{nvars - 1})")
        return data
    if isinstance(data, list) and len(data) == 3 and data[0] in _OPS:
        return [
            data[0],
            check_launch_expr(data[1], nvars, depth + 1),
            check_launch_expr(data[2], nvars, depth + 1),
        ]
    raise ValueError(f"malformed launch expression {data!r}")


@functools.lru_cache(maxsize=1024)
def _compiled(source: str) -> CodeType:
    """Byte code of a shape expression's source (written by ``expr_source`` from a validated
    signature), compiled once."""
    return compile(source, "<cuda kernel signature>", "eval")


def _launch_function(kernel: PTXKernel) -> Callable[[list[int]], tuple[int, ...]]:
    nvars = len(kernel.signature.var_names)
    trees = [check_launch_expr(e, nvars) for e in kernel.launch]
    # Source written from validated trees only (ints, variable slots and a fixed set of
    # operators), never from text a file supplies.
    source = "lambda _v: (" + ", ".join(expr_source(t, "_v") for t in trees) + ",)"
    return eval(source, dict(HELPERS))  # type: ignore[no-any-return]


def kernels_checking_indices(ptx: str) -> set[str] | None:
    """The symbols of the ``.entry`` kernels whose PTX body uses the index-error slot (so
    their launches must be followed by a look at it); None means every kernel (a ``.func``
    uses it, and any kernel may call that)."""
    if ERROR_SLOT not in ptx:
        return set()
    found: set[str] = set()
    matches = list(_ENTRY.finditer(ptx))
    for k, match in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(ptx)
        if ERROR_SLOT in ptx[match.end() : end]:
            if ptx[match.start() : match.start() + 5] == ".func":
                return None
            found.add(match.group(1))
    return found


#: Set in the error slot's first word by a kernel whose device ``malloc`` of scratch failed
#: (``relaxvm_cuda.codegen_func.HEAP_FLAG``); the third word is the size asked for.
HEAP_FLAG = 1 << 17


def index_error(words: Sequence[int]) -> VMIndexError | CUDAOutOfMemoryError:
    """The exception a kernel's error slot describes."""
    if words[0] & HEAP_FLAG:
        return CUDAOutOfMemoryError(
            f"a kernel's scratch of {words[2]} bytes does not fit the device heap (device "
            "malloc failed; the heap's size is the context's CU_LIMIT_MALLOC_HEAP_SIZE, set "
            "from RELAXVM_CUDA_MALLOC_HEAP_MB when relaxvm first uses the context)",
            2,
            "CUDA_ERROR_OUT_OF_MEMORY",
            "device malloc",
            requested=words[2],
        )
    flags = words[0] & UNSIGNED_FLAG
    op_code = (words[0] & ~UNSIGNED_FLAG) - 1
    index = words[2] & ((1 << 64) - 1) if flags else words[2]
    return VMIndexError(index_error_message(op_code, words[1], index, words[3]))


_CHECKED_CALLS = 256
# A prepared launch: the driver it was made with, the launch, the module's state on the
# device and the device ordinal.
_Prepared = tuple[Any, "Callable[[], None]", "DeviceState", int]


class DeviceState:
    """One device's copy of the module: driver, module handle, kernels looked up so far."""

    def __init__(self, driver: Driver, handle: Any) -> None:
        self.driver = driver
        self.handle = handle
        self.functions: dict[str, Any] = {}
        self.limits: tuple[tuple[int, ...], tuple[int, ...], int] | None = None
        self.error_slot: int | None = None  # device address, looked up on first need
        self.max_threads: dict[int, int] = {}  # per function handle id: its thread limit


class CUDAKernel:
    """One kernel of a :class:`CUDAModule`, callable in destination-passing style."""

    def __init__(self, kernel: PTXKernel, module: CUDAModule) -> None:
        self.kernel = kernel
        self.signature = kernel.signature
        self._module = module
        self._launch = _launch_function(kernel)
        self._overlap = checks_overlap(self.signature)
        checking = module._checking
        # Per call key (call_key_function): the launch prepared for arguments that passed the checks.
        self._prepared: dict[tuple[Any, ...], _Prepared] = {}
        self._key = call_key_function(self.signature)
        self._within_limits: set[tuple[int, tuple[int, ...]]] = set()
        # Read when the module is made (built or loaded), not per launch.
        self._blocking = os.environ.get(LAUNCH_BLOCKING_ENV, "").strip() not in ("", "0")
        self._checks_indices = checking is None or kernel.symbol in checking

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.kernel.name

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.signature.params)
        return f"<cuda kernel {self.kernel.name}({params})>"

    def __call__(self, *args: Any) -> None:
        """Check the arguments, then launch the kernel (outputs are written in place)."""
        # The checks depend only on each tensor's address, shape, dtype and device and on the
        # scalars' values: a repeated call (the VM reuses its planned memory) skips them and
        # reuses the launch prepared for those arguments (function handle, extents, kernel
        # parameters already in ctypes memory). The driver must be the one it was prepared
        # with (set_driver may replace it; CUDAModule.unload drops every prepared launch).
        key = self._key(args)
        prepared = self._prepared.get(key) if key is not None else None
        if prepared is None or prepared[0] is not get_driver():
            prepared = self._prepare(args, key)
            if prepared is None:
                return  # an empty grid or block: nothing to compute
        _, launch, state, ordinal = prepared
        launch()
        if self._checks_indices:
            # Reading the slot waits for the kernel: only kernels with user indices pay it.
            self._module._raise_index_error(state, ordinal)
        elif self._blocking:
            state.driver.synchronize(ordinal)

    def _prepare(self, args: tuple[Any, ...], key: tuple[Any, ...] | None) -> _Prepared | None:
        """Check ``args`` in full and prepare their launch (remembered under ``key``); None
        for an empty grid or block (checked every time: such launches are rare)."""
        values, pointers, ordinal = self.check_args(args)
        extents = self.launch_extents(values)
        if 0 in extents:
            return None
        state = self._module._state(ordinal)
        function = self._module._function(state, ordinal, self.kernel.symbol)
        if (id(state), extents) not in self._within_limits:
            self._check_limits(state, ordinal, function, extents)
            self._within_limits.add((id(state), extents))
        params: list[Any] = [ctypes.c_uint64(p) for p in pointers]
        params += [ctypes.c_int64(v) for v in values]
        grid = (extents[0], extents[1], extents[2])
        block = (extents[3], extents[4], extents[5])
        shared = self.kernel.dynamic_shared_bytes
        driver = state.driver
        # A driver that can bind a launch once (CUDADriver) gives a call without
        # per-launch marshalling; any other (test doubles, the simulator) is called as is.
        bind = getattr(driver, "prepare_launch", None)
        if bind is not None:
            launch = bind(ordinal, function, grid, block, shared, params)
        else:
            launch = functools.partial(
                driver.launch, ordinal, function, grid, block, shared, params
            )
        prepared: _Prepared = (driver, launch, state, ordinal)
        if key is not None:
            if len(self._prepared) >= _CHECKED_CALLS:
                self._prepared.clear()
                self._within_limits.clear()
            self._prepared[key] = prepared
        return prepared

    def launch_extents(self, values: Sequence[int]) -> tuple[int, ...]:
        """Grid x, y, z and block x, y, z for the variables ``values``.

        Raises
        ------
        VMValueError
            An extent is negative or cannot be computed (division by zero).
        """
        where = f"cuda kernel {self.kernel.name!r}"
        try:
            extents = self._launch(list(values))
        except ZeroDivisionError:
            raise VMValueError(
                f"{where}: a launch extent divides by zero for variables "
                f"{dict(zip(self.signature.var_names, values, strict=True))}"
            ) from None
        for axis, value in zip(LAUNCH_AXES, extents, strict=True):
            if value < 0:
                raise VMValueError(f"{where}: launch extent {axis} is {value} (negative)")
        return tuple(extents)

    def _check_limits(
        self, state: DeviceState, ordinal: int, function: Any, extents: tuple[int, ...]
    ) -> None:
        where = f"cuda kernel {self.kernel.name!r} on cuda({ordinal})"
        if state.limits is None:
            attr = state.driver.attribute
            a = DeviceAttribute
            grid = tuple(
                attr(ordinal, x) for x in (a.MAX_GRID_DIM_X, a.MAX_GRID_DIM_Y, a.MAX_GRID_DIM_Z)
            )
            block = tuple(
                attr(ordinal, x) for x in (a.MAX_BLOCK_DIM_X, a.MAX_BLOCK_DIM_Y, a.MAX_BLOCK_DIM_Z)
            )
            state.limits = (grid, block, attr(ordinal, a.MAX_THREADS_PER_BLOCK))
        grid_limits, block_limits, _ = state.limits
        for axis, value, limit in zip(
            LAUNCH_AXES, extents, (*grid_limits, *block_limits), strict=True
        ):
            if value > limit:
                raise VMValueError(f"{where}: launch extent {axis} = {value} exceeds {limit}")
        threads = extents[3] * extents[4] * extents[5]
        most = state.max_threads.get(id(function))
        if most is None:
            most = state.driver.function_attribute(ordinal, function, FUNC_MAX_THREADS_PER_BLOCK)
            state.max_threads[id(function)] = most
        if threads > most:
            raise VMValueError(
                f"{where}: a block of {threads} threads exceeds the {most} this kernel can "
                "run with (its register use and the device's limit decide)"
            )

    # ---- argument checks -------------------------------------------------------------------
    def check_args(self, args: tuple[Any, ...]) -> tuple[list[int], list[int], int]:
        """Check every argument; return the variable values, the buffers' device pointers (in
        parameter order) and the device ordinal.

        Raises
        ------
        VMTypeError, VMValueError
            Naming the kernel, the parameter and what is wrong.
        """
        sig = self.signature
        where = f"cuda kernel {sig.name!r}"
        if len(args) != len(sig.params):
            raise VMTypeError(
                f"{where}: expected {len(sig.params)} arguments "
                f"({', '.join(p.name for p in sig.params)}), got {len(args)}"
            )
        values: list[int | None] = [None] * len(sig.var_names)
        origin: dict[int, str] = {}
        checks: list[tuple[str, ExprData, int, str]] = []
        buffers: dict[int, Tensor] = {}
        ordinal: int | None = None
        # Scalars first: they bind variables a buffer's shape may use.
        order = sorted(range(len(args)), key=lambda k: isinstance(sig.params[k], BufferParam))
        for k in order:
            param, arg = sig.params[k], args[k]
            if isinstance(param, ScalarParam):
                values[param.var] = self._scalar(where, param, arg)
                origin[param.var] = f"scalar parameter {param.name!r}"
                continue
            tensor = self._tensor(where, param, arg)
            if ordinal is None:
                ordinal = tensor.device.device_id
            elif tensor.device.device_id != ordinal:
                raise VMValueError(
                    f"{where}: parameter {param.name!r} is on {tensor.device!r} but earlier "
                    f"buffers are on cuda({ordinal}); all buffers must be on one device"
                )
            buffers[k] = tensor
            shape = tuple(tensor.shape)
            strides = compact_strides(shape)
            for dim, extent in enumerate(param.shape):
                self._bind_or_check(
                    values, origin, checks, extent, shape[dim], f"{param.name!r} dim {dim}", shape
                )
            if param.strides is not None:
                for dim, stride in enumerate(param.strides):
                    if shape[dim] > 1 or (isinstance(stride, list) and stride[0] == "v"):
                        what = f"{param.name!r} stride {dim}"
                        self._bind_or_check(
                            values, origin, checks, stride, strides[dim], what, strides
                        )
            checks.append((f"parameter {param.name!r} elem_offset", param.elem_offset, 0, "0"))
        for what, expected, actual, full in checks:
            value = self._evaluate(where, expected, values)
            if value != actual:
                source = ""
                if isinstance(expected, list) and expected[0] == "v":
                    source = f" (bound by {origin.get(expected[1], '?')})"
                raise VMValueError(
                    f"{where}: {what} must be `{expr_text(expected, sig.var_names)}` = {value}"
                    f"{source}, but the argument has {actual} (shape/strides {full})"
                )
        if self._overlap:
            for k, j in overlap_pairs(sig):
                if overlaps(buffers[k], buffers[j]):
                    out, other = sig.params[k].name, sig.params[j].name
                    raise VMValueError(
                        f"{where}: output parameter {out!r} overlaps parameter {other!r} in "
                        "device memory; the kernel's buffer parameters are noalias, so the "
                        f"result would be wrong: write {out!r} into a separate tensor"
                    )
        missing = [sig.var_names[i] for i, v in enumerate(values) if v is None]
        if missing:  # a well-formed signature binds every variable; a corrupt one may not
            raise VMValueError(f"{where}: no argument binds variables {missing}")
        pointers = [buffers[k].data_ptr for k in sorted(buffers)]
        return [int(v) for v in values if v is not None], pointers, ordinal or 0

    @staticmethod
    def _bind_or_check(
        values: list[int | None],
        origin: dict[int, str],
        checks: list[tuple[str, ExprData, int, str]],
        expected: ExprData,
        actual: int,
        what: str,
        full: tuple[int, ...],
    ) -> None:
        if isinstance(expected, list) and expected[0] == "v" and values[expected[1]] is None:
            values[expected[1]] = actual
            origin[expected[1]] = f"parameter {what}"
        else:
            checks.append((f"parameter {what}", expected, actual, str(full)))

    def _evaluate(self, where: str, expr: ExprData, values: list[int | None]) -> int:
        if isinstance(expr, int):
            return expr
        if expr[0] == "v" and values[expr[1]] is not None:
            return values[expr[1]]  # type: ignore[return-value]
        try:
            return int(eval(_compiled(expr_source(expr, "_v")), {"_v": values, **HELPERS}))
        except (ZeroDivisionError, TypeError):
            raise VMValueError(
                f"{where}: cannot evaluate `{expr_text(expr, self.signature.var_names)}` "
                "for these arguments"
            ) from None

    @staticmethod
    def _scalar(where: str, param: ScalarParam, arg: Any) -> int:
        if isinstance(arg, bool) or not isinstance(arg, int):
            import numpy as np

            if not isinstance(arg, np.integer):
                raise VMTypeError(
                    f"{where}: scalar parameter {param.name!r} needs an int, got "
                    f"{type(arg).__name__}"
                )
        low, high = int_range(DataType(param.dtype))
        if not low <= int(arg) <= high:
            raise VMValueError(
                f"{where}: scalar parameter {param.name!r} = {arg} does not fit in {param.dtype}"
            )
        return int(arg)

    @staticmethod
    def _tensor(where: str, param: BufferParam, arg: Any) -> Tensor:
        if not isinstance(arg, Tensor):
            hint = (
                "; copy it to the GPU first: relaxvm.tensor(array, relaxvm.cuda(0))"
                if type(arg).__module__ == "numpy"
                else ""
            )
            raise VMTypeError(
                f"{where}: parameter {param.name!r} needs a relaxvm.Tensor on a CUDA device, "
                f"got {type(arg).__name__}{hint}"
            )
        if arg.device.device_type != CUDA_DEVICE_TYPE:
            raise VMValueError(
                f"{where}: parameter {param.name!r} is on {arg.device!r}; cuda kernels need "
                "tensors on a CUDA device (tensor.copyto(relaxvm.cuda(0)))"
            )
        if len(arg.shape) != param.ndim:
            raise VMValueError(
                f"{where}: parameter {param.name!r} is {param.ndim}-d but the argument has "
                f"shape {tuple(arg.shape)} ({len(arg.shape)}-d)"
            )
        if arg.dtype != DataType(param.dtype):
            raise VMTypeError(
                f"{where}: parameter {param.name!r} holds {param.dtype} but the argument is "
                f"{arg.dtype}"
            )
        return arg
