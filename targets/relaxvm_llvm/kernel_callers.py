"""The generated entry points of a :class:`~relaxvm_llvm.kernel.Kernel` (see its module).

Each is Python source written from the kernel's validated signature (never from anything a
file supplies as code) and compiled once: :func:`general_caller` checks every argument kind,
:func:`tensor_caller` is the straight-line path for the VM's Tensor arguments and hands
anything else to the general one.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import CodeType
from typing import TYPE_CHECKING, Any

import numpy as np

from relaxvm.runtime.dtype import DataType
from relaxvm.runtime.tensor import Tensor

from .argcheck import byte_span, checks_overlap, overlap_pairs
from .signature import BufferParam, ScalarParam, expr_source

if TYPE_CHECKING:
    from .kernel import Kernel

__all__ = [
    "CPU_DEVICE_TYPE",
    "HELPERS",
    "compact_strides",
    "element_strides",
    "general_caller",
    "int_range",
    "tensor_caller",
]

CPU_DEVICE_TYPE = 1  # DLPack kDLCPU


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _truncmod(a: int, b: int) -> int:
    return a - b * _truncdiv(a, b)


def int_range(dtype: DataType) -> tuple[int, int]:
    bits = dtype.bits
    if dtype.code == 1:  # uint
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


HELPERS = {"_truncdiv": _truncdiv, "_truncmod": _truncmod}


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


def compact_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        running *= extent
    return tuple(reversed(strides))


def element_strides(arg: Any, ndim: int) -> tuple[int, ...] | None:
    if isinstance(arg, Tensor):
        return compact_strides(tuple(arg.shape))
    itemsize = arg.itemsize
    result = []
    for stride in arg.strides:
        count, rest = divmod(stride, itemsize)
        if rest:
            return None
        result.append(count)
    return tuple(result)


@functools.lru_cache(maxsize=1024)
def _compiled(source: str) -> CodeType:
    """The code object of a caller's source: kernels of one signature (every load of a model
    in a process, kernels alike across models) compile their callers once."""
    return compile(source, "<relaxvm_llvm kernel caller>", "exec")


def general_caller(kernel: Kernel) -> Callable[..., None]:
    """The checked entry point for every argument kind (Tensors, arrays, strided), as a
    function generated for ``kernel``'s signature; anything unusual goes to its slow path."""
    sig = kernel.signature
    names = [f"a{k}" for k in range(len(sig.params))]
    lines = [
        "def call(*args):",
        f"    if len(args) != {len(sig.params)}: return _slow(args)",
        f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args" if names else "    pass",
    ]
    nvars = len(sig.var_names)
    lines.append(f"    v = [None] * {nvars}" if nvars else "    v = ()")
    ptrs: list[str] = []
    deferred: list[str] = []
    bound: set[int] = set()
    consts: dict[str, Any] = {
        "_Tensor": Tensor,
        "_ndarray": np.ndarray,
        "_slow": kernel._slow_call,
        "_cfunc": kernel._cfunc,
        "_done": kernel._check_status,
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
            low, high = int_range(DataType(param.dtype))
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
            f"        if {a}.device.device_type != {CPU_DEVICE_TYPE}: return _slow(args)",
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
            size = " * ".join([*(f"s[{dim}]" for dim in range(param.ndim)), str(dtype.itemsize)])
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
                deferred.append(f"    if s{k}[{dim}] != {expr_source(extent)}: return _slow(args)")
        if any(not isinstance(e, int) for e in param.shape):
            lines.append(f"    s{k} = s")
        if param.strides is not None:
            lines.append(f"    st{k} = _strides({a}, {param.ndim})")
            consts["_strides"] = element_strides
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
    exec(_compiled("\n".join(lines)), namespace)  # from validated signature data only
    return namespace["call"]  # type: ignore[no-any-return]


def tensor_caller(kernel: Kernel, general: Callable[..., None]) -> Callable[..., None] | None:
    """Replace ``_call`` by a straight-line path for the VM's case: every buffer a CPU
    :class:`Tensor` of the exact dtype object (dtypes are interned), every scalar an int.

    Arguments are named parameters (no tuple packing); a constant shape is one tuple
    comparison; symbolic variables are locals. Anything else, including a wrong number
    of arguments, goes to the general caller built by :meth:`_build_caller`, which
    re-checks everything and raises the precise errors.
    """
    sig = kernel.signature
    if any(isinstance(p, BufferParam) and p.strides is not None for p in sig.params):
        return None  # explicit strides: the general caller computes them
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
        "_general": general,
        "_retry": _retry_call(general),
        "_cfunc": kernel._cfunc,
        "_fail": kernel._check_status,
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
            low, high = int_range(DataType(param.dtype))
            lines.append(f"    if type({a}) is not _int or not {low} <= {a} <= {high}: {fallback}")
            if param.var in bound:
                deferred.append(f"    if {a} != v{param.var}: {fallback}")
            else:
                lines.append(f"    v{param.var} = {a}")
                bound.add(param.var)
            continue
        consts[f"D{k}"] = DataType(param.dtype)
        check = (
            f"    if type({a}) is not _Tensor or {a}.dtype is not D{k} or "
            f"{a}.device.device_type != {CPU_DEVICE_TYPE}"
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
            lines.append(f"    p{k} = {a}.storage.data_ptr + {a}.byte_offset")
            ptrs.append(f"p{k}")
            # The byte size from the signature (the shape checks make it exact): constant
            # extents folded, symbolic ones as the local variables already bound.
            factor = DataType(param.dtype).itemsize
            factor *= math.prod(e for e in param.shape if isinstance(e, int))
            symbolic = [
                expr_source(e, "v", local=True) for e in param.shape if not isinstance(e, int)
            ]
            size[k] = " * ".join([*symbolic, str(factor)]) if factor and symbolic else str(factor)
        else:
            ptrs.append(f"{a}.storage.data_ptr + {a}.byte_offset")
    if len(bound) != len(sig.var_names):
        return None  # a variable bound only by strides: leave it to the general caller
    lines += deferred
    # Byte ranges by address: overlap iff -size_k < p_k - p_j < size_j. Addresses, not
    # Storage identity: two Storage objects may view one block (vm.builtin's
    # ensure_zero_offset makes such views). The general caller then raises the error.
    for k, j in overlap_pairs(sig) if overlap else ():
        if size[k] != "0" and size[j] != "0":  # empty tensors never overlap
            lines.append(f"    if -({size[k]}) < p{k} - p{j} < {size[j]}: {fallback}")
    args = ", ".join(ptrs + [f"v{i}" for i in range(len(sig.var_names))])
    lines += [f"    status = _cfunc({args})", "    if status: _fail(status)"]
    namespace = dict(consts)
    exec(_compiled("\n".join(lines)), namespace)  # from validated signature data only
    return namespace["call"]  # type: ignore[no-any-return]
