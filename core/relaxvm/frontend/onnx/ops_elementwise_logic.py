"""ONNX converters: comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual), logic
(And, Or, Xor), bit operations (BitwiseAnd/Or/Xor, BitShift) and Where."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_elementwise_fold import (
    CannotFold,
    element_compare,
    emit_binary,
    fold,
    input_dtype,
    is_int_dtype,
    is_signed_dtype,
    scalar,
)


def _register_binary(
    op_type: str,
    versions: tuple[int, ...],
    relax_fn: Callable[[Any, Any], Any],
    numeric: Callable[[Any, Any], Any],
    element: Callable[[Any, Any], Any] | None,
    note: str,
    bool_result: bool,
) -> None:
    def convert(ctx: Context, node: Node) -> Any:
        dtype = "bool" if bool_result else input_dtype(ctx, node, 0)
        folded = fold(ctx, node, numeric, dtype, element)
        if folded is not None:
            return folded
        return emit_binary(ctx, node, relax_fn)

    for since in versions:
        # One function per registration, so that each carries its own coverage note.
        def registered(ctx: Context, node: Node) -> Any:
            return convert(ctx, node)

        registered.__name__ = f"{op_type.lower()}_{since}"
        registered.__doc__ = "Pre-7 `broadcast`/`axis` attributes supported." if since < 7 else note
        converter(op_type, since=since)(registered)


_COMPARE_NOTE = "Numpy-style broadcasting, gives bool; folded when known (symbols when provable)."
for _op_type, _versions, _relax, _numeric, _py in (
    ("Equal", (1, 7), op.equal, np.equal, operator.eq),
    ("Less", (1, 7), op.less, np.less, operator.lt),
    ("Greater", (1, 7), op.greater, np.greater, operator.gt),
    ("LessOrEqual", (12,), op.less_equal, np.less_equal, operator.le),
    ("GreaterOrEqual", (12,), op.greater_equal, np.greater_equal, operator.ge),
):
    _register_binary(
        _op_type, _versions, _relax, _numeric, element_compare(_py), _COMPARE_NOTE, True
    )


def _bool_element(fn: Callable[[bool, bool], bool]) -> Callable[[Any, Any], bool]:
    def apply(a: Any, b: Any) -> bool:
        if isinstance(a, tir.PrimExpr) or isinstance(b, tir.PrimExpr):
            raise CannotFold
        return fn(bool(a), bool(b))

    return apply


_LOGIC_NOTE = "Bool tensors, numpy-style broadcasting; folded when known."
for _op_type, _relax, _logic_numeric, _py in (
    ("And", op.logical_and, np.logical_and, operator.and_),
    ("Or", op.logical_or, np.logical_or, operator.or_),
    ("Xor", op.logical_xor, np.logical_xor, operator.xor),
):
    _register_binary(
        _op_type, (1, 7), _relax, _logic_numeric, _bool_element(_py), _LOGIC_NOTE, True
    )

_BITWISE_NOTE = "Integer types, numpy-style broadcasting; folded when known."
for _op_type, _relax, _bit_numeric in (
    ("BitwiseAnd", op.bitwise_and, np.bitwise_and),
    ("BitwiseOr", op.bitwise_or, np.bitwise_or),
    ("BitwiseXor", op.bitwise_xor, np.bitwise_xor),
):
    _register_binary(_op_type, (18,), _relax, _bit_numeric, None, _BITWISE_NOTE, False)


# ---- BitShift -------------------------------------------------------------------------------
def _check_bitshift(node: Node) -> str | None:
    direction = node.attr("direction", None)
    if direction not in ("LEFT", "RIGHT"):
        return f"direction must be 'LEFT' or 'RIGHT', got {direction!r}"
    return None


@converter("BitShift", since=11, check=_check_bitshift)
def bitshift(ctx: Context, node: Node) -> Any:
    """Integer types; shifts outside [0, bits) give the sign fill (0, or -1 right of a negative)."""
    x, y = node.input(0), node.input(1)
    dtype = input_dtype(ctx, node, 0)
    if not is_int_dtype(dtype) or input_dtype(ctx, node, 1) != dtype:
        raise node.unsupported(f"BitShift needs two inputs of one integer type, got {dtype}")
    bits = int("".join(c for c in dtype if c.isdigit()))
    zero = scalar(0, dtype)
    # Shifting by the width or more is undefined in the kernels (as in C): such lanes shift
    # by 0 and take the fill the spec gives them instead.
    out_of_range = ctx.emit(op.greater_equal(y, scalar(bits, dtype)))
    if is_signed_dtype(dtype):
        out_of_range = ctx.emit(op.logical_or(out_of_range, op.less(y, zero)))
    safe = ctx.emit(op.where(out_of_range, zero, y))
    if node.attr("direction") == "LEFT":
        return op.where(out_of_range, zero, op.left_shift(x, safe))
    fill: Any = zero
    if is_signed_dtype(dtype):
        fill = ctx.emit(op.where(op.less(x, zero), scalar(-1, dtype), zero))
    return op.where(out_of_range, fill, op.right_shift(x, safe))


# ---- Where ----------------------------------------------------------------------------------
def _where_element(cond: Any, x: Any, y: Any) -> Any:
    if isinstance(cond, tir.PrimExpr):
        raise CannotFold
    return x if cond else y


@converter("Where", since=9)
def where(ctx: Context, node: Node) -> Any:
    """Three-way numpy-style broadcasting; folded when known (a symbolic pick included)."""
    dtype = input_dtype(ctx, node, 1)
    folded = fold(ctx, node, np.where, dtype, _where_element)
    if folded is not None:
        return folded
    return op.where(node.input(0), node.input(1), node.input(2))
