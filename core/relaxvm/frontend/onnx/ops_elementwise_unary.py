"""ONNX converters: unary elementwise math (Abs, Neg, Exp, Log, Sqrt, Reciprocal, rounding,
Sign, trigonometric and hyperbolic functions, Erf), the float checks IsNaN and IsInf, and the
negations Not and BitwiseNot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter
from .ops_elementwise_fold import CannotFold, fold, input_dtype, is_float_dtype, scalar


def _abs_element(a: Any) -> Any:
    if isinstance(a, tir.PrimExpr):
        return tir.max(a, a * -1)
    if isinstance(a, float):
        raise CannotFold
    return abs(a)


def _neg_element(a: Any) -> Any:
    if isinstance(a, float):
        raise CannotFold
    return a * -1 if isinstance(a, tir.PrimExpr) else -a


def _sign_element(a: Any) -> Any:
    if isinstance(a, (tir.PrimExpr, float)):
        raise CannotFold  # the sign of a symbol is unknown
    return (a > 0) - (a < 0)


def _reciprocal(x: Any) -> Any:
    return op.divide(scalar(1, str(x.struct_info.dtype)), x)


def _numeric_reciprocal(a: np.ndarray) -> Any:
    return np.reciprocal(a)


#: op type -> (first opset, Relax op, note, numpy fold or None, element fold or None).
_UNARY: dict[str, tuple[int, Callable[[Any], Any], str, Any, Any]] = {
    "Abs": (1, op.abs, "Ints and floats; folded when known.", np.abs, _abs_element),
    "Neg": (
        1,
        op.negative,
        "Signed ints and floats; folded when known.",
        np.negative,
        _neg_element,
    ),
    "Sign": (
        9,
        op.sign,
        "Ints and floats (NaN stays NaN); folded when known.",
        np.sign,
        _sign_element,
    ),
    "Exp": (1, op.exp, "Float types.", None, None),
    "Log": (1, op.log, "Float types.", None, None),
    "Sqrt": (1, op.sqrt, "Float types; folded when known.", np.sqrt, None),
    "Reciprocal": (1, _reciprocal, "Float types; folded when known.", _numeric_reciprocal, None),
    "Floor": (1, op.floor, "Float types; folded when known.", np.floor, None),
    "Ceil": (1, op.ceil, "Float types; folded when known.", np.ceil, None),
    "Round": (11, op.round, "Halves to even, as numpy; folded when known.", np.round, None),
    "Erf": (9, op.erf, "Float types.", None, None),
    "Sin": (7, op.sin, "Float types.", None, None),
    "Cos": (7, op.cos, "Float types.", None, None),
    "Tan": (7, op.tan, "Float types.", None, None),
    "Asin": (7, op.asin, "Float types.", None, None),
    "Acos": (7, op.acos, "Float types.", None, None),
    "Atan": (7, op.atan, "Float types.", None, None),
    "Sinh": (9, op.sinh, "Float types.", None, None),
    "Cosh": (9, op.cosh, "Float types.", None, None),
    "Asinh": (9, op.asinh, "Float types.", None, None),
    "Acosh": (9, op.acosh, "Float types.", None, None),
    "Atanh": (9, op.atanh, "Float types.", None, None),
    "IsNaN": (9, op.isnan, "Float types, gives bool.", None, None),
    "BitwiseNot": (18, op.bitwise_not, "Integer types.", np.invert, lambda a: _no_symbols(~a)),
}


def _no_symbols(value: Any) -> Any:
    if isinstance(value, tir.PrimExpr):
        raise CannotFold
    return value


def _register(op_type: str) -> None:
    since, relax_fn, note, numeric, element = _UNARY[op_type]

    def convert(ctx: Context, node: Node) -> Any:
        if numeric is not None:
            dtype = input_dtype(ctx, node, 0)
            out_dtype = "bool" if op_type == "IsNaN" else dtype
            folded = fold(ctx, node, numeric, out_dtype, element)
            if folded is not None:
                return folded
        return relax_fn(node.input(0))

    convert.__name__ = op_type.lower()
    convert.__doc__ = note
    converter(op_type, since=since)(convert)


for _op_type in _UNARY:
    _register(_op_type)


@converter("IsInf", since=10)
def isinf(ctx: Context, node: Node) -> Any:
    """Float types; `detect_positive`/`detect_negative` supported."""
    x = node.input(0)
    positive = bool(node.attr("detect_positive", 1))
    negative = bool(node.attr("detect_negative", 1))
    dtype = input_dtype(ctx, node, 0)
    if not is_float_dtype(dtype):
        raise node.unsupported(f"IsInf of a {dtype} input (ONNX defines it for floats)")
    if positive and negative:
        return op.isinf(x)
    if positive:
        return op.equal(x, scalar(np.inf, dtype))
    if negative:
        return op.equal(x, scalar(-np.inf, dtype))
    return op.zeros_like(x, "bool")


@converter("Not", since=1)
def not_(ctx: Context, node: Node) -> Any:
    """Bool tensors; folded when known."""
    folded = fold(ctx, node, np.logical_not, "bool", lambda a: _no_symbols(not a))
    if folded is not None:
        return folded
    return op.logical_not(node.input(0))
