"""Shared helpers of the elementwise converters: known-value folding and operand handling.

Folding
-------
When every input of a node is known at import time (:meth:`Context.known_inputs`), the
elementwise converters compute the result here instead of emitting a kernel. Plain numeric
arrays go through numpy (whose fixed-width integer and IEEE float arithmetic is what the
kernels compute). Arrays holding symbolic elements (``object`` arrays of PrimExprs, such as a
``batch`` dim read by ``Shape``) are mapped element by element with a function that knows how
to combine PrimExprs; that function raises :class:`CannotFold` when the answer depends on the
values of the symbols (a comparison it cannot prove), and the converter then emits the op.

Every symbolic element the importer tracks is built from tensor dims, so its variables are
non-negative; comparisons are proved under that assumption.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import tir
from ...ir.arith import Analyzer
from ...ir.expr_functor import free_vars
from ...ir.relax import op
from ._context import Context, Node
from .ops_shape_util import known_value

__all__ = [
    "CannotFold",
    "astype",
    "element_compare",
    "emit_binary",
    "fold",
    "input_dtype",
    "int_divide_by_zero",
    "is_float_dtype",
    "is_int_dtype",
    "is_signed_dtype",
    "legacy_broadcast",
    "scalar",
    "trunc_divide",
]

_FLOATS = ("float16", "float32", "float64", "bfloat16")


class CannotFold(Exception):
    """Raised by an element function when a symbolic result cannot be computed."""


def is_float_dtype(dtype: str | None) -> bool:
    return dtype in _FLOATS


def is_int_dtype(dtype: str | None) -> bool:
    return dtype is not None and dtype.startswith(("int", "uint"))


def is_signed_dtype(dtype: str | None) -> bool:
    return dtype is not None and dtype.startswith("int")


def input_dtype(ctx: Context, node: Node, index: int) -> str:
    """The dtype of input ``index``; unsupported (naming the node) when the importer lacks it."""
    dtype = ctx.dtype(node.input(index))
    if dtype is None:
        raise node.unsupported(f"input {index} has an unknown element type")
    return dtype


def scalar(value: float | int | bool, dtype: str) -> Any:
    """A 0-d constant of ``dtype``."""
    if dtype == "bool":
        return Context.const(np.asarray(bool(value)), "bool")
    return Context.const(np.asarray(value).astype(dtype), dtype)


# ---- folding --------------------------------------------------------------------------------
def _symbolic(array: np.ndarray) -> bool:
    return array.dtype == object and any(
        isinstance(e, tir.PrimExpr) and not isinstance(e, tir.IntImm)
        for e in array.reshape(-1).tolist()
    )


def _plain_element(element: Any) -> Any:
    if isinstance(element, tir.IntImm):
        return int(element.value)
    if isinstance(element, np.generic):
        return element.item()
    return element


def _map_elements(fn: Callable[..., Any], arrays: list[np.ndarray]) -> np.ndarray:
    objects = [np.asarray(a).astype(object) for a in arrays]
    broadcast = np.broadcast_arrays(*objects)
    out = np.empty(broadcast[0].shape, dtype=object)
    flat = out.reshape(-1)
    columns = [b.reshape(-1) for b in broadcast]
    for i in range(flat.size):
        flat[i] = fn(*(_plain_element(column[i]) for column in columns))
    return out


def fold(
    ctx: Context,
    node: Node,
    numeric: Callable[..., Any],
    dtype: str,
    element: Callable[..., Any] | None = None,
    only: int | None = None,
) -> Any:
    """The node's result as a known value when every input is known, else None.

    ``numeric`` computes on plain numpy arrays (the present inputs, in order); ``element``
    computes one element from Python ints and PrimExprs when some input is symbolic (None:
    symbolic inputs are not folded). ``dtype`` is the output's element type. ``only``: fold
    on that one input alone (the others only describe the operation).
    """
    if node.opset < 7 and node.attr("broadcast", 0) and "axis" in node.attrs:
        return None  # the pre-7 axis alignment is not numpy's
    if only is not None:
        value = ctx.known(node.input(only))
        known = None if value is None else [value]
    else:
        known = ctx.known_inputs(node)
    if known is None:
        return None
    arrays = [np.asarray(k) for k in known if k is not None]
    try:
        if any(_symbolic(a) for a in arrays):
            if element is None:
                return None
            result = _map_elements(element, arrays)
        else:
            plain = [a.astype(_plain_dtype(a)) if a.dtype == object else a for a in arrays]
            with np.errstate(all="ignore"):
                result = numeric(*plain)
    except CannotFold:
        return None
    # ``known_value`` is ``ctx.from_known`` with kernels that bind the symbols they read
    # (``Context._materialize`` builds a kernel without them, which emit_te refuses).
    return known_value(ctx, result, dtype)


def _plain_dtype(array: np.ndarray) -> Any:
    # An object array without symbols (IntImm elements, say): back to numbers.
    values = [_plain_element(e) for e in array.reshape(-1).tolist()]
    return np.asarray(values).dtype if values else np.int64


def _dims_analyzer(*values: Any) -> Analyzer:
    analyzer = Analyzer()
    for value in values:
        if isinstance(value, tir.PrimExpr):
            for var in free_vars(value):
                if str(var.dtype).startswith("int"):
                    analyzer.update(var, 0, None)  # a dim is never negative
    return analyzer


def element_compare(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], bool]:
    """An element function for a comparison: numbers compare directly, symbolic operands only
    when the analyzer proves the answer either way."""

    def compare(a: Any, b: Any) -> bool:
        if not isinstance(a, tir.PrimExpr) and not isinstance(b, tir.PrimExpr):
            return bool(fn(a, b))
        if isinstance(a, float) or isinstance(b, float):
            raise CannotFold
        analyzer = _dims_analyzer(a, b)
        claim = fn(tir.const(a, "int64") if isinstance(a, int) else a, b)
        if analyzer.can_prove(claim):
            return True
        if analyzer.can_prove(tir_not(claim)):
            return False
        raise CannotFold

    return compare


def tir_not(expr: Any) -> Any:
    """``not expr`` for a bool PrimExpr."""
    from ...ir import op as sop

    return sop.logical_not(expr)


def trunc_divide(a: Any, b: Any) -> Any:
    """Integer division rounding toward zero (ONNX's integer ``Div``), for numpy int arrays."""
    a = np.asarray(a)
    b = np.asarray(b)
    if np.any(b == 0):
        raise ZeroDivisionError
    quotient = np.floor_divide(a, b)
    adjust = (np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))
    return quotient + adjust.astype(quotient.dtype)


def int_divide_by_zero(node: Node) -> FrontendError:
    """The error for an integer division by zero met while folding (undefined in ONNX)."""
    return FrontendError(f"from_onnx: {node.label} divides an integer by zero")


# ---- emitting -------------------------------------------------------------------------------
def legacy_broadcast(ctx: Context, node: Node, a: Any, b: Any) -> tuple[Any, Any]:
    """The operands of a binary op before opset 7: ``broadcast=1`` with ``axis`` lines ``b``'s
    dims up with ``a``'s from ``axis`` (padding ``b`` with trailing unit dims); without
    ``axis`` the alignment is from the right, as numpy's."""
    if not node.attr("broadcast", 0) or "axis" not in node.attrs:
        return a, b
    rank_a = ctx.require_ndim(node, a, "input A")
    rank_b = ctx.require_ndim(node, b, "input B")
    axis = int(node.attrs["axis"])
    axis = axis + rank_a if axis < 0 else axis
    trailing = rank_a - axis - rank_b
    if axis < 0 or trailing < 0:
        raise FrontendError(
            f"from_onnx: {node.label}: axis {node.attrs['axis']} does not fit B (rank {rank_b}) "
            f"into A (rank {rank_a})"
        )
    if trailing:
        b = ctx.emit(op.expand_dims(b, list(range(rank_b, rank_b + trailing))))
    return a, b


def astype(x: Any, source: str, target: str) -> Any:
    """``x`` cast from ``source`` to ``target``.

    float64 -> float16 goes through float32: the direct conversion crashes the llvm kernels
    (a missing ``__truncdfhf2`` runtime helper). float32 keeps more than twice float16's
    precision plus two bits, so the double rounding gives the correctly rounded result.
    """
    if source == target:
        return x
    if source == "float64" and target == "float16":
        return op.astype(op.astype(x, "float32"), "float16")
    return op.astype(x, target)


def emit_binary(ctx: Context, node: Node, fn: Callable[[Any, Any], Any]) -> Any:
    """``fn(A, B)`` of the node's two inputs (with the pre-7 broadcast attributes applied)."""
    a, b = node.input(0), node.input(1)
    if node.opset < 7:
        a, b = legacy_broadcast(ctx, node, a, b)
    return fn(a, b)
