"""Casts from or to float8 in the TIR reference interpreter.

A float8 value is its ``uint8`` code (a Python int) in the interpreter: loads of float8
buffers give codes, stores write them, and only casts look at the value, converting with the
numpy reference :mod:`relaxvm.runtime.float8` (the oracle the compiled targets match).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import VMValueError
from ...runtime.float8 import float8_bits_to_float, float_to_float8_bits
from .._scalar import cast_scalar, is_bool_dtype, is_int_dtype
from ..expr import Cast

__all__ = ["float8_cast"]


def float8_cast(
    value_fn: Callable[[Any], Any],
    node: Cast,
    to_dtype: type | None,
    error: Callable[[str], VMValueError],
) -> Callable[[Any], Any]:
    """The closure evaluating ``node`` (a cast with float8 on either side).

    ``to_dtype`` is the numpy scalar type of a float result (``None`` otherwise); ``error``
    makes the interpreter's error for a failed conversion (NaN or infinity to an integer).
    """
    src, dst = node.value.dtype, node.dtype

    def cast_value(env: Any) -> Any:
        value = value_fn(env)
        if src.is_float8:
            value = float(float8_bits_to_float(np.uint8(value), src))
        elif is_bool_dtype(src) or is_int_dtype(src):
            value = float(value)  # exact up to 2**53, as the compiled targets' float64 route
        if dst.is_float8:
            return int(float_to_float8_bits(value, dst))
        try:
            result = cast_scalar(float(value), dst)
        except VMValueError as err:
            raise error(f"in `{node}`: {err}") from None
        return to_dtype(result) if to_dtype is not None else result

    return cast_value
