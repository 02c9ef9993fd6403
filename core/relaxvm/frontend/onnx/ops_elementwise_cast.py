"""ONNX converters: Clip (bounds as attributes before opset 11, as optional inputs from 11),
Cast and CastLike."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import tir
from ...ir.relax import op
from ._context import Context, Node
from ._loader import onnx_dtype
from ._registry import converter
from .ops_elementwise_fold import CannotFold, astype, fold, input_dtype, is_int_dtype, scalar


# ---- Clip -----------------------------------------------------------------------------------
def _clip_element(x: Any, low: Any = None, high: Any = None) -> Any:
    if isinstance(x, float):
        raise CannotFold
    for bound, pick in ((low, tir.max), (high, tir.min)):
        if bound is None:
            continue
        if isinstance(x, int) and isinstance(bound, int):
            x = max(x, bound) if pick is tir.max else min(x, bound)
        else:
            x = pick(x, bound)
    return x


def _clip(x: Any, low: Any, high: Any) -> Any:
    # maximum, then minimum: NaN stays NaN and min > max gives max, as the spec says.
    if low is not None:
        x = op.maximum(x, low)
    if high is not None:
        x = op.minimum(x, high)
    return x


@converter("Clip", since=1)
def clip_attrs(ctx: Context, node: Node) -> Any:
    """`min`/`max` attributes (absent: unbounded); float types."""
    dtype = input_dtype(ctx, node, 0)
    low, high = node.attr("min", None), node.attr("max", None)

    def numeric(x: np.ndarray) -> Any:
        return np.minimum(
            np.maximum(x, x.dtype.type(-np.inf if low is None else low)),
            x.dtype.type(np.inf if high is None else high),
        )

    folded = fold(ctx, node, numeric, dtype, None) if dtype.startswith("float") else None
    if folded is not None:
        return folded
    return _clip(
        node.input(0),
        None if low is None else scalar(low, dtype),
        None if high is None else scalar(high, dtype),
    )


@converter("Clip", since=11)
def clip(ctx: Context, node: Node) -> Any:
    """Optional `min`/`max` inputs (either may be absent); ints and floats; folded when known."""
    dtype = input_dtype(ctx, node, 0)
    low, high = node.optional_input(1), node.optional_input(2)
    for index, bound in ((1, low), (2, high)):
        if bound is not None and ctx.dtype(bound) not in (None, dtype):
            raise FrontendError(
                f"from_onnx: {node.label}: input {index} is {ctx.dtype(bound)}, input 0 {dtype}"
            )

    def numeric(x: np.ndarray, *bounds: np.ndarray) -> Any:
        present = iter(bounds)
        if low is not None:
            x = np.maximum(x, next(present))
        if high is not None:
            x = np.minimum(x, next(present))
        return x

    def element(x: Any, *bounds: Any) -> Any:
        present = iter(bounds)
        lo = next(present) if low is not None else None
        hi = next(present) if high is not None else None
        return _clip_element(x, lo, hi)

    folded = fold(ctx, node, numeric, dtype, element)
    if folded is not None:
        return folded
    return _clip(node.input(0), low, high)


# ---- Cast, CastLike -------------------------------------------------------------------------
def _target_code(node: Node) -> int:
    to = node.attr("to")
    if isinstance(to, str):  # opset 1 spells the type by name
        from onnx import TensorProto

        try:
            return int(TensorProto.DataType.Value(to.upper()))
        except ValueError:
            raise FrontendError(f"from_onnx: {node.label}: unknown type name to={to!r}") from None
    return int(to)


def _check_cast(node: Node) -> str | None:
    try:
        onnx_dtype(_target_code(node), "the target type")
    except FrontendError as exc:
        return str(exc).removeprefix("from_onnx: ")
    return None


def _cast_element(target: str) -> Any:
    def element(a: Any) -> Any:
        # A symbolic dim stays itself under a cast to another int type (the tensor built from
        # it casts each element); other targets are not folded.
        if isinstance(a, float) or not is_int_dtype(target):
            raise CannotFold
        return a

    return element


def _is_float8(dtype: str) -> bool:
    return dtype.startswith("float8_")


def _cast(ctx: Context, node: Node, source: str, target: str) -> Any:
    x = node.input(0)

    def numeric(a: np.ndarray) -> Any:
        if _is_float8(source) or _is_float8(target):
            raise CannotFold  # float8 rounds in the kernels (one definition of it)
        if target == "bool":
            return a != 0
        return a.astype(target)

    folded = fold(ctx, node, numeric, target, _cast_element(target), only=0)
    if folded is not None:
        return folded
    if source == target:
        return x
    if _is_float8(source) and (target == "bool" or _is_float8(target)):
        # float8 has no comparisons or clip: work on its exact float32 value.
        x, source = ctx.emit(op.astype(x, "float32")), "float32"
    if _is_float8(target) and int(node.attr("saturate", 1)):
        # ONNX's default saturate=1: out-of-range values (infinities too) become the largest
        # finite float8; NaN stays NaN. Without it the cast overflows to NaN/inf.
        from ...runtime.float8 import float8_format

        bound = int(float8_format(target).max_value)
        return op.astype(op.clip(x, -bound, bound), target)
    if target == "bool":
        # Any nonzero (NaN included) is True: compare, rather than trusting a narrowing cast.
        return op.not_equal(x, scalar(0, source))
    return astype(x, source, target)


@converter("Cast", since=1, check=_check_cast)
def cast(ctx: Context, node: Node) -> Any:
    """Numeric, bool and float8 (E4M3FN, E5M2, with ``saturate``) targets; string, bfloat16,
    the FNUZ float8 and 4-bit targets are refused."""
    target = onnx_dtype(_target_code(node), f"{node.label}: the target type")
    return _cast(ctx, node, input_dtype(ctx, node, 0), target)


@converter("CastLike", since=15)
def cast_like(ctx: Context, node: Node) -> Any:
    """To the type of input 1 (numeric and bool types); folded when input 0 is known."""
    target = input_dtype(ctx, node, 1)
    return _cast(ctx, node, input_dtype(ctx, node, 0), target)
