"""The ``T`` namespace of the script format: ``from relaxvm.script import tir as T``.

Types and casts (``T.int64``, ``T.float32(x)``), buffers (``T.Buffer``, ``T.match_buffer``,
``T.alloc_buffer``), loops (``T.grid``, ``T.serial``, ``T.parallel``, ``T.vectorized``,
``T.unroll``, ``T.thread_binding``), expressions (``T.Cast``, ``T.Select``,
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
from ..ir.expr import SizeVar as _SizeVar
from ..ir.expr import Var as _Var
from ..ir.tir import intrin as _intrin
from ..ir.tir.index_map import IndexMap
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
    """The arguments of ``T.Buffer``/``T.match_buffer``/``T.alloc_buffer``; the parser makes
    the Buffer once it knows the name."""

    shape: tuple[Any, ...]
    dtype: str
    strides: tuple[Any, ...] | None
    elem_offset: Any
    scope: str
    handle: Any = None


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


def match_buffer(
    param: Any,
    shape: Any,
    dtype: Any = "float32",
    strides: Sequence[Any] | None = None,
    elem_offset: Any = 0,
    scope: str = "global",
) -> BufferSpec:
    """``A = T.match_buffer(a, (n, 4), "float32")``: the buffer behind handle parameter ``a``."""
    if not isinstance(param, _Var) or builtins.str(param.dtype) != "handle":
        raise TypeError(f"T.match_buffer: expected a T.handle parameter, got {param!r}")
    return Buffer(shape, dtype, strides, elem_offset, scope)._replace(handle=param)


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
