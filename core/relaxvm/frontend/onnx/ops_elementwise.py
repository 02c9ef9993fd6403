"""ONNX converters: elementwise arithmetic (Add, Sub, Mul, Div, Mod, Pow) and the variadic
Max, Min, Sum and Mean, plus Identity.

Unary math lives in :mod:`.ops_elementwise_unary`, comparisons, logic, bit operations and Where
in :mod:`.ops_elementwise_logic`, Clip and casts in :mod:`.ops_elementwise_cast`, activations
in :mod:`.ops_elementwise_activation`; the folding helpers in :mod:`.ops_elementwise_fold`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import Any

import numpy as np

from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_elementwise_fold import (
    CannotFold,
    astype,
    emit_binary,
    fold,
    input_dtype,
    int_divide_by_zero,
    is_float_dtype,
    is_int_dtype,
    scalar,
    trunc_divide,
)


@converter("Identity", since=1)
def identity(ctx: Context, node: Node) -> Any:
    """Passes its input through (tensors only)."""
    return node.input(0)


# ---- Add, Sub, Mul, Div ---------------------------------------------------------------------
def _int_element(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """An element function for integer arithmetic; float elements are never symbolic, so a
    symbolic float operation is not folded."""

    def apply(a: Any, b: Any) -> Any:
        if isinstance(a, float) or isinstance(b, float):
            raise CannotFold
        return fn(a, b)

    return apply


def _py_trunc_divide(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _arith(
    op_type: str,
    relax_fn: Callable[[Any, Any], Any],
    numeric: Callable[[Node, str], Callable[..., Any]],
    element: Callable[[Node], Callable[..., Any]],
) -> None:
    def convert(ctx: Context, node: Node) -> Any:
        dtype = input_dtype(ctx, node, 0)
        folded = fold(ctx, node, numeric(node, dtype), dtype, element(node))
        if folded is not None:
            return folded
        return emit_binary(ctx, node, relax_fn)

    convert.__name__ = op_type.lower()
    convert.__doc__ = "Pre-7 `broadcast`/`axis` attributes supported."
    converter(op_type, since=1)(convert)

    def convert7(ctx: Context, node: Node) -> Any:
        return convert(ctx, node)

    convert7.__name__ = f"{op_type.lower()}7"
    convert7.__doc__ = "Numpy-style broadcasting; folded when the inputs are known."
    converter(op_type, since=7)(convert7)


def _divide_numeric(node: Node, dtype: str) -> Callable[..., Any]:
    def divide(a: np.ndarray, b: np.ndarray) -> Any:
        if not is_int_dtype(dtype):
            return np.divide(a, b)
        try:
            return trunc_divide(a, b)  # ONNX integer Div rounds toward zero, as C
        except ZeroDivisionError:
            raise int_divide_by_zero(node) from None

    return divide


def _divide_element(node: Node) -> Callable[..., Any]:
    def divide(a: Any, b: Any) -> Any:
        if isinstance(b, int) and b == 0:
            raise int_divide_by_zero(node)
        if isinstance(a, int) and isinstance(b, int):
            return _py_trunc_divide(a, b)
        return tir.truncdiv(a, b)

    return _int_element(divide)


_arith("Add", op.add, lambda n, d: np.add, lambda n: _int_element(lambda a, b: a + b))
_arith("Sub", op.subtract, lambda n, d: np.subtract, lambda n: _int_element(lambda a, b: a - b))
_arith("Mul", op.multiply, lambda n, d: np.multiply, lambda n: _int_element(lambda a, b: a * b))
_arith("Div", op.divide, _divide_numeric, _divide_element)


# ---- Mod ------------------------------------------------------------------------------------
def _check_mod(node: Node) -> str | None:
    fmod = node.attr("fmod", 0)
    if fmod not in (0, 1):
        return f"fmod must be 0 or 1, got {fmod}"
    return None


@converter("Mod", since=10, check=_check_mod)
def mod(ctx: Context, node: Node) -> Any:
    """fmod=0: the divisor's sign (numpy's %); fmod=1: the dividend's (C fmod); ints, floats."""
    dtype = input_dtype(ctx, node, 0)
    truncated = node.attr("fmod", 0) == 1

    def numeric(a: np.ndarray, b: np.ndarray) -> Any:
        if is_int_dtype(dtype) and np.any(b == 0):
            raise int_divide_by_zero(node)
        return np.fmod(a, b) if truncated else np.mod(a, b)

    def element(a: Any, b: Any) -> Any:
        if isinstance(b, int) and b == 0:
            raise int_divide_by_zero(node)
        if isinstance(a, int) and isinstance(b, int):
            return a - b * _py_trunc_divide(a, b) if truncated else a % b
        return tir.truncmod(a, b) if truncated else tir.floormod(a, b)

    folded = fold(ctx, node, numeric, dtype, _int_element(element))
    if folded is not None:
        return folded
    a, b = node.input(0), node.input(1)
    return op.mod(a, b) if truncated else op.floor_mod(a, b)


# ---- Pow ------------------------------------------------------------------------------------
def _pow(ctx: Context, node: Node) -> Any:
    base, exponent = node.input(0), node.input(1)
    base_dtype = input_dtype(ctx, node, 0)
    exp_dtype = input_dtype(ctx, node, 1)
    if node.opset < 7:
        base, exponent = emit_binary(ctx, node, lambda a, b: (a, b))
    if base_dtype == exp_dtype:
        return op.power(base, exponent)
    if is_int_dtype(base_dtype) and is_int_dtype(exp_dtype):
        return op.power(base, op.astype(exponent, base_dtype))
    # Mixed int/float (or two float widths): compute in float64, then take the base's type
    # (an int result truncates, as the spec's reference ``np.power(a, b).astype(a.dtype)``).
    wide = op.power(astype(base, base_dtype, "float64"), astype(exponent, exp_dtype, "float64"))
    return astype(wide, "float64", base_dtype)


@converter("Pow", since=1)
def pow_legacy(ctx: Context, node: Node) -> Any:
    """Pre-7 `broadcast`/`axis` attributes supported."""
    return _pow(ctx, node)


@converter("Pow", since=7)
def pow_(ctx: Context, node: Node) -> Any:
    """Numpy-style broadcasting; base and exponent of different types (result: base's type)."""
    return _pow(ctx, node)


# ---- Max, Min, Sum, Mean --------------------------------------------------------------------
def _variadic(
    ctx: Context,
    node: Node,
    relax_fn: Callable[[Any, Any], Any],
    numeric: Callable[[Any, Any], Any],
    element: Callable[[Any, Any], Any] | None,
) -> Any:
    values = [v for v in node.inputs if v is not None]
    if not values:
        raise node.unsupported("it has no inputs")
    dtype = input_dtype(ctx, node, 0)
    folded = fold(
        ctx,
        node,
        lambda *arrays: reduce(numeric, arrays),
        dtype,
        None if element is None else lambda *items: reduce(element, items),
    )
    if folded is not None:
        return folded
    result = values[0]
    for value in values[1:]:
        result = ctx.emit(relax_fn(result, value))
    return result


def _symbolic_max(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return tir.max(a, b)


def _symbolic_min(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return tir.min(a, b)


@converter("Max", since=1)
def max_(ctx: Context, node: Node) -> Any:
    """Variadic, broadcasting; NaN in any input gives NaN."""
    return _variadic(ctx, node, op.maximum, np.maximum, _int_element(_symbolic_max))


@converter("Min", since=1)
def min_(ctx: Context, node: Node) -> Any:
    """Variadic, broadcasting; NaN in any input gives NaN."""
    return _variadic(ctx, node, op.minimum, np.minimum, _int_element(_symbolic_min))


@converter("Sum", since=1)
def sum_(ctx: Context, node: Node) -> Any:
    """Variadic, broadcasting."""
    return _variadic(ctx, node, op.add, np.add, _int_element(lambda a, b: a + b))


@converter("Mean", since=1)
def mean(ctx: Context, node: Node) -> Any:
    """Variadic, broadcasting; float types."""
    dtype = input_dtype(ctx, node, 0)
    if not is_float_dtype(dtype):
        raise node.unsupported(f"Mean of {dtype} inputs (ONNX defines it for floats)")
    count = len([v for v in node.inputs if v is not None])
    total = _variadic(ctx, node, op.add, np.add, None)
    if count == 1:
        return total
    known = ctx.known(total)
    if known is not None:
        return ctx.from_known(np.asarray(known / np.asarray(count, dtype=known.dtype)), dtype)
    return op.divide(total, scalar(count, dtype))
