"""The ``T`` namespace of the script format: ``from relaxvm.script import tir as T``.

Types and casts (``T.int64``, ``T.float32(x)``), buffers (``T.Buffer``, ``T.match_buffer``,
``T.alloc_buffer``, ``T.decl_buffer``), loops (``T.grid``, ``T.serial``, ``T.parallel``,
``T.vectorized``, ``T.unroll``, ``T.thread_binding``), threads (``T.env_thread``,
``T.launch_thread``), expressions (``T.Cast``, ``T.Select``, ``T.Let``,
``T.if_then_else``, ``T.max``/``T.min``, every math intrinsic of
:mod:`relaxvm.ir.tir.intrin`), ``T.evaluate``, ``T.func_attr``, ``@T.prim_func`` and the
block constructs of :mod:`relaxvm.script.tir_blocks` (``T.block``, ``T.axis``, ``T.reads``,
``T.writes``, ``T.where``, ``T.init``, ``T.block_attr``).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..ir import op as _op
from ..ir._scalar import is_float_dtype
from ..ir.dtype import COMMON_DTYPES
from ..ir.expr import PrimExpr
from ..ir.expr import Range as _Range
from ..ir.expr import SizeVar as _SizeVar
from ..ir.expr import Var as _Var
from ..ir.tir import intrin as _intrin
from ..ir.tir.buffer import Buffer as _BufferNode
from ..ir.tir.index_map import IndexMap
from ..ir.tir.let_expr import Let as _LetExpr
from ..ir.tir.stmt import THREAD_TAGS as _THREAD_TAGS
from ..ir.tir.stmt import ForKind
from ..runtime.dtype import DataType
from ._eval import symbolic_dim
from .tir_blocks import axis, block, block_attr, init, reads, where, writes  # noqa: F401

# This module defines `T.bool`, `T.int32`, `T.max`, `T.min`, `T.abs` (TVM's spelling), which
# shadow the builtins here: code below spells the builtins as `builtins.X`.
_module = sys.modules[__name__]
for _name in _intrin.__all__:
    if _name not in ("BitwiseCall", "Call", "INTRINSICS"):
        setattr(_module, _name, getattr(_intrin, _name))


class DType:
    """``T.int64`` / ``T.float32``...: an annotation, a cast (``T.float32(x)``), a constant
    (``T.int32(4)``) or, called with nothing, a new symbolic variable (``n = T.int64()``)."""

    def __init__(self, name: str) -> None:
        self.dtype = name
        self.__name__ = name

    def __call__(self, value: Any = None, is_size_var: builtins.bool = False) -> Any:
        if value is None:
            return (_SizeVar if is_size_var else _Var)("v", self.dtype)
        if self.dtype == "bool" and isinstance(value, builtins.bool):
            return value  # T.bool(True) in attribute dicts stays a Python bool
        if isinstance(value, PrimExpr):
            return _op.cast(value, self.dtype)
        if isinstance(value, builtins.str) and self.dtype.startswith("float"):
            value = builtins.float(value)  # T.float32("inf")
        return _op.const(value, self.dtype)

    def __repr__(self) -> str:
        return f"T.{self.dtype}"


_DTYPES = [dtype for dtype in COMMON_DTYPES if dtype != "handle"]
for _name in _DTYPES:
    setattr(_module, _name, DType(_name))
handle = DType("handle")


# ---- buffers ------------------------------------------------------------------------------
class BufferSpec(NamedTuple):
    """The arguments of ``T.Buffer``/``T.match_buffer``/``T.alloc_buffer``/``T.decl_buffer``;
    the parser makes the Buffer once it knows the name."""

    shape: tuple[Any, ...]
    dtype: str
    strides: tuple[Any, ...] | None
    elem_offset: Any
    scope: str
    #: The T.handle parameter a function-level T.match_buffer binds.
    handle: Any = None
    #: The buffer region a block-level T.match_buffer binds.
    region: Any = None
    #: T.decl_buffer: True; ``data`` is the memory it declares (None: it allocates).
    decl: builtins.bool = False
    data: Any = None


def _shape(shape: Any, context: str) -> tuple[Any, ...]:
    if isinstance(shape, (builtins.int, builtins.str, PrimExpr)):
        shape = (shape,)
    return tuple(symbolic_dim(value, context) for value in shape)


def Buffer(
    shape: Any,
    dtype: Any = "float32",
    strides: Sequence[Any] | None = None,
    elem_offset: Any = 0,
    scope: str = "global",
) -> BufferSpec:
    """``A: T.Buffer((n, 4), "float32")``: a buffer parameter."""
    dtype_name = dtype.dtype if isinstance(dtype, DType) else builtins.str(DataType(dtype))
    strides_t = None if strides is None else _shape(strides, "T.Buffer strides")
    return BufferSpec(_shape(shape, "T.Buffer shape"), dtype_name, strides_t, elem_offset, scope)


def _dtype_name(dtype: Any) -> builtins.str:
    return dtype.dtype if isinstance(dtype, DType) else builtins.str(DataType(dtype))


def match_buffer(
    param: Any,
    shape: Any = None,
    dtype: Any = None,
    data: Any = None,
    strides: Sequence[Any] | None = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: builtins.int = -1,
    offset_factor: builtins.int = 0,
    buffer_type: builtins.str = "default",
    axis_separators: Any = None,
) -> BufferSpec:
    """``A = T.match_buffer(a, (n, 4), "float32")``: the buffer behind handle parameter ``a``;
    in a block, ``A_sub = T.match_buffer(A[vi, 0:4], (4,))``: a view of a region of ``A``
    (``shape`` and ``dtype`` default to the region's). ``align``, ``offset_factor`` and
    ``buffer_type`` are accepted for TVM compatibility and change nothing."""
    if data is not None or axis_separators:
        raise TypeError("T.match_buffer: data= and axis_separators= are not supported")
    if isinstance(param, _Var) and builtins.str(param.dtype) == "handle":
        if shape is None:
            raise TypeError(f"T.match_buffer({param.name}): shape is required for a T.handle")
        offset = 0 if elem_offset is None else elem_offset
        return Buffer(shape, dtype or "float32", strides, offset, scope)._replace(handle=param)
    region = _as_region(param)
    if region is None:
        raise TypeError(
            "T.match_buffer: expected a T.handle parameter or a buffer region such as "
            f"A[i, 0:4], got {param!r}"
        )
    if strides is not None or elem_offset is not None:
        raise TypeError(
            f"T.match_buffer({region.buffer.name}[...]): strides= and elem_offset= of a "
            "region view are not supported (the view takes the layout of its source)"
        )
    if shape is None:
        shape = tuple(rng.extent for rng in region.region)
    dtype_name = _dtype_name(dtype) if dtype is not None else builtins.str(region.buffer.dtype)
    spec = BufferSpec(_shape(shape, "T.match_buffer shape"), dtype_name, None, 0, scope)
    return spec._replace(region=region)


def _as_region(value: Any) -> Any:
    from ..ir.tir import Buffer as _Buffer
    from ..ir.tir import BufferLoad as _BufferLoad
    from ..ir.tir.block import BufferRegion

    if isinstance(value, BufferRegion):
        return value
    if isinstance(value, _Buffer):
        return BufferRegion.full(value)
    if isinstance(value, _BufferLoad):
        return BufferRegion(
            value.buffer, [_Range.from_min_extent(i, _op.const(1, i.dtype)) for i in value.indices]
        )
    return None


def decl_buffer(
    shape: Any,
    dtype: Any = "float32",
    data: Any = None,
    strides: Sequence[Any] | None = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: builtins.int = 0,
    offset_factor: builtins.int = 0,
    buffer_type: builtins.str = "",
    axis_separators: Any = None,
) -> BufferSpec:
    """``B = T.decl_buffer((4, 4), "float32", data=A.data)``: a buffer over existing memory
    (another buffer's ``.data`` or a ``T.handle`` parameter); without ``data`` it allocates
    (like ``T.alloc_buffer`` outside a block). Also ``with T.decl_buffer(...) as B:``."""
    if axis_separators:
        raise TypeError("T.decl_buffer: axis_separators= is not supported")
    if data is not None and not (isinstance(data, _Var) and builtins.str(data.dtype) == "handle"):
        hint = f" (did you mean {data.name}.data?)" if isinstance(data, _BufferNode) else ""
        raise TypeError(
            f"T.decl_buffer: data= must be a buffer's .data or a T.handle, got {data!r}{hint}"
        )
    offset = 0 if elem_offset is None else elem_offset
    spec = Buffer(shape, dtype, strides, offset, scope)
    return spec._replace(decl=True, data=data)


def alloc_buffer(
    shape: Any, dtype: Any = "float32", scope: str = "global", strides: Any = None
) -> BufferSpec:
    """``B = T.alloc_buffer((4,), "float32", scope="local")``: scratch memory."""
    return Buffer(shape, dtype, strides, 0, scope)


class LetSpec(NamedTuple):
    """``with T.LetStmt(value) as x:``: a let whose scope is the ``with`` body."""

    value: Any
    dtype: Any = None


def LetStmt(value: Any, type_annotation: Any = None) -> LetSpec:
    """``with T.LetStmt(value) as x:`` binds ``x`` for the statements of the block
    (``x = value`` binds it for the rest of the enclosing block)."""
    if isinstance(type_annotation, DType):
        type_annotation = type_annotation.dtype
    return LetSpec(value, type_annotation)


# ---- threads ------------------------------------------------------------------------------
class EnvThread(NamedTuple):
    """``tx = T.env_thread("threadIdx.x")``: a thread variable that ``T.launch_thread(tx, n)``
    launches."""

    thread: builtins.str


class LaunchSpec(NamedTuple):
    """``T.launch_thread(thread, extent)``; the parser makes the thread-bound loop."""

    thread: builtins.str  # empty when launched through a T.env_thread variable
    extent: Any
    var: Any = None


def env_thread(thread: builtins.str) -> EnvThread:
    """``tx = T.env_thread("threadIdx.x")``: declare a thread variable."""
    if thread not in _THREAD_TAGS:
        raise ValueError(f"T.env_thread: unknown thread {thread!r}; expected one of {_THREAD_TAGS}")
    return EnvThread(thread)


def launch_thread(thread: Any, extent: Any) -> LaunchSpec:
    """``tx = T.launch_thread("threadIdx.x", 32)`` (the rest of the block runs on 32 threads),
    ``with T.launch_thread("threadIdx.x", 32) as tx:`` or ``T.launch_thread(tx, 32)`` for
    ``tx = T.env_thread(...)``. It is a loop bound to the thread
    (``T.thread_binding(extent, thread=...)``), as TVM lowers one to the other."""
    if isinstance(thread, _Var):
        return LaunchSpec("", extent, thread)  # the parser knows the variable's thread
    if thread not in _THREAD_TAGS:
        raise ValueError(
            f"T.launch_thread: unknown thread {thread!r}; expected one of {_THREAD_TAGS}"
        )
    return LaunchSpec(thread, extent)


# ---- loops --------------------------------------------------------------------------------
class LoopSpec(NamedTuple):
    """What a loop iterator call evaluates to; the parser builds the For nodes."""

    extents: tuple[tuple[Any, Any], ...]  # (start, stop) per loop variable
    kind: ForKind
    thread: str | None = None
    annotations: dict[str, Any] | None = None


def _range(start: Any, stop: Any) -> tuple[Any, Any]:
    return (0, start) if stop is None else (start, stop)


def serial(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """``for i in T.serial(n):`` (same as ``range``)."""
    return LoopSpec((_range(start, stop),), ForKind.SERIAL, None, annotations)


def parallel(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """``for i in T.parallel(n):``."""
    return LoopSpec((_range(start, stop),), ForKind.PARALLEL, None, annotations)


def vectorized(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """``for i in T.vectorized(4):``."""
    return LoopSpec((_range(start, stop),), ForKind.VECTORIZED, None, annotations)


def unroll(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """``for i in T.unroll(4):``."""
    return LoopSpec((_range(start, stop),), ForKind.UNROLLED, None, annotations)


def thread_binding(
    start: Any, stop: Any = None, thread: str | None = None, *, annotations: Any = None
) -> LoopSpec:
    """``for tx in T.thread_binding(0, 32, thread="threadIdx.x"):``."""
    if thread is None:
        raise TypeError('T.thread_binding: missing thread= (e.g. thread="threadIdx.x")')
    return LoopSpec((_range(start, stop),), ForKind.THREAD_BINDING, thread, annotations)


def grid(*extents: Any) -> LoopSpec:
    """``for i, j in T.grid(n, 4):``: nested serial loops from 0."""
    if not extents:
        raise TypeError("T.grid: give at least one extent")
    return LoopSpec(tuple((0, extent) for extent in extents), ForKind.SERIAL)


# ---- expressions --------------------------------------------------------------------------
def Cast(dtype: Any, value: Any) -> PrimExpr:
    """``T.Cast("float32", x)``."""
    return _op.cast(_op.convert(value), dtype.dtype if isinstance(dtype, DType) else dtype)


def Select(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:
    """``T.Select(c, a, b)``: both sides are evaluated."""
    return _op.select(condition, true_value, false_value)


def max(a: Any, b: Any) -> PrimExpr:
    """``T.max(a, b)``."""
    return _op.max_expr(a, b)


def min(a: Any, b: Any) -> PrimExpr:
    """``T.min(a, b)``."""
    return _op.min_expr(a, b)


def abs(x: Any) -> PrimExpr:
    """``T.abs(x)``: ``fabs`` for floats, a select for integers."""
    expr = _op.convert(x)
    if is_float_dtype(expr.dtype):
        return _intrin.fabs(expr)
    return _op.select(expr < 0, -expr, expr)


def Let(expr: Any, where: dict[Any, Any]) -> PrimExpr:  # noqa: F811 - TVM's keyword
    """``T.Let(body, where={x: value})``: ``body`` with ``x`` (declared ``x = T.int32()``)
    bound to ``value``."""
    if not isinstance(where, dict) or builtins.len(where) != 1:
        raise TypeError("T.Let: where= must be a dict with exactly one {var: value} entry")
    ((var, value),) = where.items()
    if not isinstance(var, _Var):
        raise TypeError(f"T.Let: the key of where= must be a variable, got {var!r}")
    if not isinstance(value, PrimExpr):
        value = _op.const(value, var.dtype)
    return _LetExpr(var, value, _op.convert(expr))


floordiv = _op.floordiv
floormod = _op.floormod
truncdiv = _op.truncdiv
truncmod = _op.truncmod


def index_map(
    mapping: Any, *, inverse_index_map: Any = None, index_dtype: str = "int64"
) -> IndexMap:
    """``T.index_map(lambda i, j: (i // 4, j, i % 4))``: an :class:`~relaxvm.ir.tir.IndexMap`
    (the argument of ``R.layout_transform``)."""
    return IndexMap.from_func(mapping, index_dtype=index_dtype)


def evaluate(value: Any) -> Any:
    """``T.evaluate(expr)``: a statement that evaluates ``expr``."""
    return _Evaluate(value)


class _Evaluate(NamedTuple):
    value: Any


def func_attr(attrs: dict[str, Any]) -> None:
    """``T.func_attr({"global_symbol": "main"})``: function attributes."""
    raise RuntimeError("T.func_attr may only appear as a statement of a prim_func body")


def prim_func(func: Any = None, *, private: bool = False, check_well_formed: bool = True) -> Any:
    """``@T.prim_func``: parse a Python function as a TIR :class:`~relaxvm.ir.tir.PrimFunc`.

    Inside an ``@I.ir_module`` class the function is returned unchanged (the module parses the
    whole class).
    """
    from ._entry import decorate

    options = {"private": private, "check_well_formed": check_well_formed}
    if func is None:
        return lambda f: decorate(f, "tir", options, depth=1)
    return decorate(func, "tir", options, depth=1)
