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
output against the other arguments: the same Storage object (one ``is``), then overlapping
byte offsets. The other paths compare addresses.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.runtime.dtype import DataType
from relaxvm.runtime.tensor import Tensor

from .argcheck import byte_span, checks_overlap, native_buffer, overlap_pairs, overlaps
from .checks import take_check_error
from .errors import KernelRuntimeError
from .parallel import take_last_error
from .signature import BufferParam, KernelSignature, ScalarParam, expr_source, expr_text

__all__ = ["Kernel"]

_CPU = 1  # DLPack kDLCPU


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _truncmod(a: int, b: int) -> int:
    return a - b * _truncdiv(a, b)


def _int_range(dtype: DataType) -> tuple[int, int]:
    bits = dtype.bits
    if dtype.code == 1:  # uint
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


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

    __slots__ = ("_call", "_cfunc", "_general", "_owner", "signature")

    def __init__(self, signature: KernelSignature, address: int, owner: Any) -> None:
        self.signature = signature
        self._owner = owner
        nbuf = sum(isinstance(p, BufferParam) for p in signature.params)
        argtypes = [ctypes.c_void_p] * nbuf + [ctypes.c_int64] * len(signature.var_names)
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)
        self._build_caller()
        self._general = self._call  # handles every argument kind; the fallback of the next
        self._build_tensor_caller()

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

    def _build_caller(self) -> None:
        sig = self.signature
        names = [f"a{k}" for k in range(len(sig.params))]
        lines = [
            "def call(*args):",
            f"    if len(args) != {len(sig.params)}: return _slow(args)",
            f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args"
            if names
            else "    pass",
        ]
        nvars = len(sig.var_names)
        lines.append(f"    v = [None] * {nvars}" if nvars else "    v = ()")
        ptrs: list[str] = []
        deferred: list[str] = []
        bound: set[int] = set()
        consts: dict[str, Any] = {
            "_Tensor": Tensor,
            "_ndarray": np.ndarray,
            "_slow": self._slow_call,
            "_cfunc": self._cfunc,
            "_done": self._check_status,
            "_truncdiv": _truncdiv,
            "_truncmod": _truncmod,
            "_int": int,
        }
        overlap = checks_overlap(sig)
        if overlap:
            consts["_span"] = byte_span
        # Scalar parameters first: a shape variable that is also a parameter must agree with it.
        order = sorted(range(len(sig.params)), key=lambda k: isinstance(sig.params[k], BufferParam))
        for k in order:
            param = sig.params[k]
            a = names[k]
            if isinstance(param, ScalarParam):
                low, high = _int_range(DataType(param.dtype))
                lines.append(
                    f"    if type({a}) is not _int or not {low} <= {a} <= {high}: return _slow(args)"
                )
                lines.append(f"    v[{param.var}] = {a}")
                bound.add(param.var)
                continue
            dtype = DataType(param.dtype)
            consts[f"D{k}"] = dtype
            consts[f"N{k}"] = dtype.numpy_dtype()
            lines += [
                f"    if type({a}) is _Tensor:",
                f"        if {a}.dtype is not D{k} and {a}.dtype != D{k}: return _slow(args)",
                f"        if {a}.device.device_type != {_CPU}: return _slow(args)",
                f"        s = {a}.shape",
                f"        p{k} = {a}.storage.data_ptr + {a}.byte_offset",
            ]
            lines += [
                f"    elif type({a}) is _ndarray:",
                # N{k} is the native-order dtype: other byte orders differ and go slow.
                f"        if {a}.dtype is not N{k} and {a}.dtype != N{k}: return _slow(args)",
                f"        s = {a}.shape",
                f"        p{k} = {a}.ctypes.data",
            ]
            if param.written:
                lines.append(f"        if not {a}.flags.writeable: return _slow(args)")
            lines += [
                "    else: return _slow(args)",
                f"    if len(s) != {param.ndim}: return _slow(args)",
            ]
            if overlap and param.strides is None:  # compact (arrays: C-contiguous, below)
                # The size from the shape: Tensor.nbytes is a property doing math.prod.
                size = " * ".join(
                    [*(f"s[{dim}]" for dim in range(param.ndim)), str(dtype.itemsize)]
                )
                lines.append(f"    lo{k} = p{k}; hi{k} = p{k} + {size}")
            elif overlap:
                lines.append(f"    lo{k}, hi{k} = _span({a})")
            if param.strides is None:
                lines.append(
                    f"    if type({a}) is _ndarray and not {a}.flags.c_contiguous: return _slow(args)"
                )
            ptrs.append(f"p{k}")
            for dim, extent in enumerate(param.shape):
                if isinstance(extent, int):
                    lines.append(f"    if s[{dim}] != {extent}: return _slow(args)")
                elif extent[0] == "v" and extent[1] not in bound:
                    lines.append(f"    v[{extent[1]}] = s[{dim}]")
                    bound.add(extent[1])
                else:
                    deferred.append(
                        f"    if s{k}[{dim}] != {expr_source(extent)}: return _slow(args)"
                    )
            if any(not isinstance(e, int) for e in param.shape):
                lines.append(f"    s{k} = s")
            if param.strides is not None:
                lines.append(f"    st{k} = _strides({a}, {param.ndim})")
                consts["_strides"] = _element_strides
                for dim, stride in enumerate(param.strides):
                    check = f"s{k}[{dim}] > 1 and "  # strides of unit dims do not matter
                    if isinstance(stride, list) and stride[0] == "v" and stride[1] not in bound:
                        lines.append(f"    v[{stride[1]}] = st{k}[{dim}]")
                        bound.add(stride[1])
                    else:
                        deferred.append(
                            f"    if {check}st{k}[{dim}] != {expr_source(stride)}: return _slow(args)"
                        )
                lines.append(f"    s{k} = s")
            if param.elem_offset != 0:
                deferred.append(f"    if {expr_source(param.elem_offset)} != 0: return _slow(args)")
        lines += deferred
        if overlap:
            lines += [
                f"    if lo{k} < hi{j} and lo{j} < hi{k}: return _slow(args)"
                for k, j in overlap_pairs(sig)
            ]
        var_args = [f"v[{i}]" for i in range(nvars)]
        lines.append(f"    _done(_cfunc({', '.join(ptrs + var_args)}))")
        namespace = dict(consts)
        exec("\n".join(lines), namespace)  # generated from validated signature data only
        self._call = namespace["call"]

    def _build_tensor_caller(self) -> None:
        """Replace ``_call`` by a straight-line path for the VM's case: every buffer a CPU
        :class:`Tensor` of the exact dtype object (dtypes are interned), every scalar an int.

        Arguments are named parameters (no tuple packing); a constant shape is one tuple
        comparison; symbolic variables are locals. Anything else, including a wrong number
        of arguments, goes to the general caller built by :meth:`_build_caller`, which
        re-checks everything and raises the precise errors.
        """
        sig = self.signature
        if any(isinstance(p, BufferParam) and p.strides is not None for p in sig.params):
            return  # explicit strides: the general caller computes them
        count = len(sig.params)
        names = [f"a{k}" for k in range(count)]
        if count:
            head = f"def call({', '.join(f'{a}=_NA' for a in names)}, *rest):"
            plain = ", ".join(names)
            fallback = f"return _general({plain})"
            lines = [head, f"    if rest or {names[-1]} is _NA: return _retry(({plain},), rest)"]
        else:
            lines = ["def call(*rest):", "    if rest: return _general(*rest)"]
            fallback = "return _general()"
        consts: dict[str, Any] = {
            "_Tensor": Tensor,
            "_int": int,
            "_NA": _MISSING,
            "_general": self._call,
            "_retry": _retry_call(self._call),
            "_cfunc": self._cfunc,
            "_fail": self._check_status,
            "_truncdiv": _truncdiv,
            "_truncmod": _truncmod,
        }
        bound: set[int] = set()
        deferred: list[str] = []
        ptrs: list[str] = []
        overlap = checks_overlap(sig)
        size: dict[int, str] = {}  # byte size of each buffer argument (source)
        order = sorted(range(count), key=lambda k: isinstance(sig.params[k], BufferParam))
        for k in order:
            param = sig.params[k]
            a = names[k]
            if isinstance(param, ScalarParam):
                low, high = _int_range(DataType(param.dtype))
                lines.append(
                    f"    if type({a}) is not _int or not {low} <= {a} <= {high}: {fallback}"
                )
                if param.var in bound:
                    deferred.append(f"    if {a} != v{param.var}: {fallback}")
                else:
                    lines.append(f"    v{param.var} = {a}")
                    bound.add(param.var)
                continue
            consts[f"D{k}"] = DataType(param.dtype)
            check = (
                f"    if type({a}) is not _Tensor or {a}.dtype is not D{k} or "
                f"{a}.device.device_type != {_CPU}"
            )
            if all(isinstance(e, int) for e in param.shape):
                consts[f"S{k}"] = tuple(param.shape)
                lines.append(f"{check} or {a}.shape != S{k}: {fallback}")
            else:
                lines += [f"{check}: {fallback}", f"    s{k} = {a}.shape"]
                lines.append(f"    if len(s{k}) != {param.ndim}: {fallback}")
                for dim, extent in enumerate(param.shape):
                    if isinstance(extent, int):
                        lines.append(f"    if s{k}[{dim}] != {extent}: {fallback}")
                    elif extent[0] == "v" and extent[1] not in bound:
                        lines.append(f"    v{extent[1]} = s{k}[{dim}]")
                        bound.add(extent[1])
                    else:
                        source = expr_source(extent, "v", local=True)
                        deferred.append(f"    if s{k}[{dim}] != {source}: {fallback}")
            if param.elem_offset != 0:
                source = expr_source(param.elem_offset, "v", local=True)
                deferred.append(f"    if {source} != 0: {fallback}")
            if overlap:
                lines.append(f"    t{k} = {a}.storage")
                ptrs.append(f"t{k}.data_ptr + {a}.byte_offset")
                # The byte size from the signature (the shape checks make it exact): constant
                # extents folded, symbolic ones as the local variables already bound.
                factor = DataType(param.dtype).itemsize
                factor *= math.prod(e for e in param.shape if isinstance(e, int))
                symbolic = [
                    expr_source(e, "v", local=True) for e in param.shape if not isinstance(e, int)
                ]
                size[k] = (
                    " * ".join([*symbolic, str(factor)]) if factor and symbolic else str(factor)
                )
            else:
                ptrs.append(f"{a}.storage.data_ptr + {a}.byte_offset")
        if len(bound) != len(sig.var_names):
            return  # a variable bound only by strides: leave it to the general caller
        lines += deferred
        # Storage identity first (one `is` per pair in the common case), then byte ranges:
        # overlap iff -size_k < offset_k - offset_j < size_j. The general caller compares
        # addresses instead, which also catches two Storage objects viewing one block (only
        # vm.builtin.ensure_zero_offset makes those, never for a kernel's in/out pair).
        for k, j in overlap_pairs(sig) if overlap else ():
            if size[k] != "0" and size[j] != "0":  # empty tensors never overlap
                lines.append(
                    f"    if t{k} is t{j} and -({size[k]}) < a{k}.byte_offset - a{j}.byte_offset "
                    f"< {size[j]}: {fallback}"
                )
        args = ", ".join(ptrs + [f"v{i}" for i in range(len(sig.var_names))])
        lines += [f"    status = _cfunc({args})", "    if status: _fail(status)"]
        namespace = dict(consts)
        exec("\n".join(lines), namespace)  # generated from validated signature data only
        self._call = namespace["call"]

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
                low, high = _int_range(DataType(param.dtype))
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
            value = eval(expr_source(expected, "_v"), {"_v": values, **_HELPERS}, env)
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
            if arg.device.device_type != _CPU:
                raise VMValueError(
                    f"{where}: parameter {param.name!r} is on {arg.device!r}; llvm kernels "
                    "need CPU tensors"
                )
            actual_dtype, shape = arg.dtype, tuple(arg.shape)
            strides: tuple[int, ...] | None = _compact_strides(shape)
        elif isinstance(arg, np.ndarray):
            try:
                actual_dtype = DataType(arg.dtype)
            except (VMTypeError, VMValueError):
                actual_dtype = None  # type: ignore[assignment]
            shape = arg.shape
            strides = _element_strides(arg, arg.ndim)
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


_HELPERS = {"_truncdiv": _truncdiv, "_truncmod": _truncmod}


class _Missing:
    """Default of the fast caller's parameters: tells a missing argument apart."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _retry_call(general: Any) -> Any:
    def retry(given: tuple[Any, ...], rest: tuple[Any, ...]) -> Any:
        return general(*[a for a in given if a is not _MISSING], *rest)

    return retry


def _compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= extent
    return tuple(reversed(strides))


def _element_strides(arg: Any, ndim: int) -> tuple[int, ...] | None:
    if isinstance(arg, Tensor):
        return _compact_strides(tuple(arg.shape))
    itemsize = arg.itemsize
    result = []
    for stride in arg.strides:
        count, rest = divmod(stride, itemsize)
        if rest:
            return None
        result.append(count)
    return tuple(result)
