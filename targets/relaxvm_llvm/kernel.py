"""Python entry points of compiled kernels: argument checks, then one ctypes call.

``kernel(*args)`` takes the kernel's parameters in order: :class:`relaxvm.Tensor` or
``numpy.ndarray`` for buffers (outputs are written in place), ``int`` for scalars. Before any
native code runs, every buffer argument's type, ndim, dtype, shape (symbolic dimensions bind
on first use and must agree afterwards) and layout are checked.

The checks are compiled once per kernel into small Python functions specialised to the
signature (constant dimensions inline, no loops): a Tensor-only path (what the VM calls,
about 1 µs for three arguments, half of it the ctypes call), behind it a general path for
numpy arrays, mixed arguments and strided buffers, and behind both a slow path that
re-examines the arguments and raises a precise error naming the kernel, the parameter and
the dimension. Every path checks everything; a faster one only hands unusual arguments on.

What would corrupt memory or give a silently wrong result is refused before native code runs:

* an **output** (a buffer the kernel writes, :attr:`BufferParam.written`) that is a read-only
  array (``flags.writeable`` false, e.g. ``np.frombuffer(bytes)``) or has non-native byte
  order raises :class:`~relaxvm.errors.VMValueError` naming the kernel and the parameter;
* an **input** with non-native byte order (``>f4`` on a little-endian machine) is converted:
  the kernel reads a native-order copy, documented behaviour like numpy's ufuncs;
* for a ``noalias`` kernel (the default), an output whose bytes overlap any other buffer
  argument raises :class:`~relaxvm.errors.VMValueError` (the native code assumes its
  arguments never alias, so an overlap gives wrong results). Inputs may overlap each other.

Tensors the VM allocates are native-order and writable, so the Tensor path only checks each
output's byte range against the other arguments' (by address, so that two Storage objects
viewing one block are caught too).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.runtime.dtype import DataType
from relaxvm.runtime.tensor import Tensor

from .argcheck import checks_overlap, native_buffer, overlap_pairs, overlaps
from .checks import take_check_error
from .errors import KernelRuntimeError
from .kernel_callers import (
    CPU_DEVICE_TYPE,
    HELPERS,
    compact_strides,
    element_strides,
    general_caller,
    int_range,
    tensor_caller,
)
from .parallel import take_last_error
from .signature import BufferParam, KernelSignature, ScalarParam, expr_source, expr_text

__all__ = ["Kernel"]


def _build_sequence(num_bases: int, steps: Any) -> Any:
    """:func:`relaxvm_llvm.sequence.build_sequence`, imported when first needed."""
    from .sequence import build_sequence

    return build_sequence(num_bases, steps)


class Kernel:
    """A compiled kernel, callable in destination-passing style.

    Parameters
    ----------
    signature : KernelSignature
    address : int
        The native entry point.
    owner : object
        Keeps the machine code alive (the MCJIT engine).
    """

    __slots__ = ("_address", "_call", "_cfunc", "_general", "_owner", "signature")

    def __init__(self, signature: KernelSignature, address: int, owner: Any) -> None:
        self.signature = signature
        self._owner = owner
        self._address = address
        nbuf = sum(isinstance(p, BufferParam) for p in signature.params)
        argtypes = [ctypes.c_void_p] * nbuf + [ctypes.c_int64] * len(signature.var_names)
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        # The general caller handles every argument kind; the Tensor-only one, when the
        # signature allows it, hands everything else to it. Generating and compiling a caller
        # is most of a cached model's per-kernel load time, and calls with Tensors (the VM's)
        # never reach the general one: it is made on its first use.
        self._general: Any = None
        self._call = tensor_caller(self, self._general_call) or self._general_caller()

    def _general_caller(self) -> Any:
        """The general caller, made on first use."""
        if self._general is None:
            self._general = general_caller(self)
        return self._general

    def _general_call(self, *args: Any) -> None:
        self._general_caller()(*args)

    @property
    def name(self) -> str:
        """The kernel's name (its ``global_symbol``)."""
        return self.signature.name

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.signature.params)
        return f"<llvm kernel {self.signature.name}({params})>"

    def __call__(self, *args: Any) -> None:
        """Check the arguments, then run the native kernel (outputs are written in place)."""
        self._call(*args)

    @property
    def fast_call(self) -> Any:
        """The checked entry point as a plain function (one Python frame less per call)."""
        return self._call

    def native_call(
        self, *args: Any
    ) -> tuple[Any, int, tuple[int, ...], tuple[int, ...], tuple[bool, ...]] | None:
        """What a call with ``args`` would pass to the native entry, without calling it.

        The whole-function path of the VM (:mod:`relaxvm.vm.native_plan`) records these to
        replay a run as one native sequence (:mod:`relaxvm_llvm.sequence`).

        Returns
        -------
        tuple or None
            ``(builder, address, pointers, ints, written)``: what compiles a sequence of
            such calls into one entry (:func:`relaxvm_llvm.sequence.build_sequence`), the
            native entry's address, the buffer arguments' data addresses and the int64
            arguments in the order the entry takes them, and per buffer whether the kernel
            writes it.
            None when the arguments fail any check the ordinary call makes, or are not all
            CPU Tensors (a numpy array, a converted byte order): the ordinary call then
            raises or converts, and the caller must not replay this call natively.
        """
        sig = self.signature
        if len(args) != len(sig.params):
            return None
        tensors = [a for p, a in zip(sig.params, args, strict=True) if isinstance(p, BufferParam)]
        if any(type(a) is not Tensor for a in tensors):
            return None
        try:
            values, buffers = self._diagnose(args)
        except Exception:  # any failure of the checks: the ordinary call reports it
            return None
        if len(buffers) != len(tensors) or any(
            b is not t for b, t in zip(buffers, tensors, strict=True)
        ):
            return None
        written = tuple(bool(p.written) for p in sig.params if isinstance(p, BufferParam))
        pointers = tuple(t.storage.data_ptr + t.byte_offset for t in tensors)
        return (_build_sequence, self._address, pointers, tuple(values), written)

    def _check_status(self, status: int) -> None:
        if status != 0:
            failed = take_check_error()  # a user index out of range: the interpreter's error
            if failed is not None:
                raise failed
            error = take_last_error()
            message = f"kernel {self.signature.name!r} failed (status {status})"
            if error is not None:
                raise KernelRuntimeError(f"{message}: {error}") from error
            raise KernelRuntimeError(message)

    # ---- the slow path: precise messages ---------------------------------------------------
    def _slow_call(self, args: tuple[Any, ...]) -> None:
        """Validate with precise errors; call when the arguments turn out to be fine
        (numpy integer scalars, for instance, take this path)."""
        values, buffers = self._diagnose(args)
        # ``buffers`` holds any native-order copies of inputs: alive until the call returns.
        pointers = [arg.data_ptr if isinstance(arg, Tensor) else arg.ctypes.data for arg in buffers]
        self._check_status(self._cfunc(*pointers, *values))

    def _diagnose(self, args: tuple[Any, ...]) -> tuple[list[int], list[Any]]:
        """Check every argument; return the variable values and the buffer arguments to
        pass (in parameter order; a non-native-order input replaced by a native copy).

        Raises
        ------
        VMTypeError, VMValueError
            Naming the kernel, the parameter and what is wrong.
        """
        sig = self.signature
        where = f"kernel {sig.name!r}"
        if len(args) != len(sig.params):
            raise VMTypeError(
                f"{where}: expected {len(sig.params)} arguments "
                f"({', '.join(p.name for p in sig.params)}), got {len(args)}"
            )
        values: list[int | None] = [None] * len(sig.var_names)
        origin: dict[int, str] = {}
        checks: list[tuple[str, Any, int, str]] = []
        buffers: dict[int, Any] = {}
        position = {id(p): k for k, p in enumerate(sig.params)}
        pairs = sorted(
            zip(sig.params, args, strict=True), key=lambda p: isinstance(p[0], BufferParam)
        )
        for param, arg in pairs:
            if isinstance(param, ScalarParam):
                if isinstance(arg, bool) or not isinstance(arg, (int, np.integer)):
                    raise VMTypeError(
                        f"{where}: scalar parameter {param.name!r} needs an int, "
                        f"got {type(arg).__name__}"
                    )
                low, high = int_range(DataType(param.dtype))
                if not low <= int(arg) <= high:
                    raise VMValueError(
                        f"{where}: scalar parameter {param.name!r} = {arg} does not fit in "
                        f"{param.dtype}"
                    )
                values[param.var] = int(arg)
                origin[param.var] = f"scalar parameter {param.name!r}"
                continue
            arg = native_buffer(where, param, arg)
            buffers[position[id(param)]] = arg
            shape, strides = self._inspect(where, param, arg)
            for dim, extent in enumerate(param.shape):
                actual = shape[dim]
                if isinstance(extent, list) and extent[0] == "v" and values[extent[1]] is None:
                    values[extent[1]] = actual
                    origin[extent[1]] = f"parameter {param.name!r} dim {dim}"
                else:
                    checks.append(
                        (f"parameter {param.name!r} dim {dim}", extent, actual, str(shape))
                    )
            if param.strides is not None:
                for dim, stride in enumerate(param.strides):
                    actual = strides[dim]
                    if isinstance(stride, list) and stride[0] == "v" and values[stride[1]] is None:
                        values[stride[1]] = actual
                        origin[stride[1]] = f"parameter {param.name!r} stride {dim}"
                    elif shape[dim] > 1:
                        checks.append(
                            (f"parameter {param.name!r} stride {dim}", stride, actual, str(strides))
                        )
            checks.append((f"parameter {param.name!r} elem_offset", param.elem_offset, 0, "0"))
        env = {f"v{i}": value for i, value in enumerate(values)}
        for what, expected, actual, full in checks:
            value = eval(expr_source(expected, "_v"), {"_v": values, **HELPERS}, env)
            if value != actual:
                text = expr_text(expected, sig.var_names)
                source = ""
                if isinstance(expected, list) and expected[0] == "v":
                    source = f" (bound by {origin.get(expected[1], '?')})"
                raise VMValueError(
                    f"{where}: {what} must be `{text}` = {value}{source}, but the argument has "
                    f"{actual} (shape/strides {full})"
                )
        if checks_overlap(sig):
            for k, j in overlap_pairs(sig):
                if overlaps(buffers[k], buffers[j]):
                    out, other = sig.params[k].name, sig.params[j].name
                    raise VMValueError(
                        f"{where}: output parameter {out!r} overlaps parameter {other!r} in "
                        "memory; the kernel's buffer parameters are noalias, so the result "
                        f"would be wrong: write {out!r} into a separate array (or pass a copy "
                        f"of {other!r})"
                    )
        ints = [int(value) for value in values]  # type: ignore[arg-type]
        return ints, [buffers[k] for k in sorted(buffers)]

    def _inspect(self, where: str, param: BufferParam, arg: Any) -> tuple[Any, Any]:
        dtype = DataType(param.dtype)
        if isinstance(arg, Tensor):
            if arg.device.device_type != CPU_DEVICE_TYPE:
                raise VMValueError(
                    f"{where}: parameter {param.name!r} is on {arg.device!r}; llvm kernels "
                    "need CPU tensors"
                )
            actual_dtype, shape = arg.dtype, tuple(arg.shape)
            strides: tuple[int, ...] | None = compact_strides(shape)
        elif isinstance(arg, np.ndarray):
            try:
                actual_dtype = DataType(arg.dtype)
            except (VMTypeError, VMValueError):
                actual_dtype = None  # type: ignore[assignment]
            shape = arg.shape
            strides = element_strides(arg, arg.ndim)
        else:
            raise VMTypeError(
                f"{where}: parameter {param.name!r} needs a relaxvm.Tensor or numpy array, "
                f"got {type(arg).__name__}"
            )
        if len(shape) != param.ndim:
            raise VMValueError(
                f"{where}: parameter {param.name!r} is {param.ndim}-d but the argument has "
                f"shape {tuple(shape)} ({len(shape)}-d)"
            )
        if actual_dtype != dtype:
            shown = actual_dtype if actual_dtype is not None else getattr(arg, "dtype", "?")
            raise VMTypeError(
                f"{where}: parameter {param.name!r} holds {dtype} but the argument is {shown}"
            )
        if isinstance(arg, np.ndarray):
            if param.strides is None and not arg.flags.c_contiguous:
                raise VMValueError(
                    f"{where}: parameter {param.name!r} needs a C-contiguous array, got strides "
                    f"{arg.strides} (bytes); pass np.ascontiguousarray(...)"
                )
            if strides is None:
                raise VMValueError(
                    f"{where}: parameter {param.name!r}: the array's strides {arg.strides} "
                    "are not multiples of its item size"
                )
        return shape, strides
