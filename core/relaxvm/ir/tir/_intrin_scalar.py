"""The scalar semantics of the TIR intrinsics on Python numbers, as C's libm and numpy define
them where Python's :mod:`math` raises or differs. :mod:`.intrin` attaches them to the call
nodes; the interpreter and constant folding evaluate with them."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

from ...runtime.dtype import DataType
from .._scalar import cast_scalar

__all__ = ["BITWISE_FNS", "FLOAT_INTRINSICS", "float_max", "float_min", "shift_result"]


def _sigmoid(x: float) -> float:
    # Split by sign so that exp never overflows.
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _pow(x: float, y: float) -> float:
    # C's pow (and numpy's), where math.pow raises: overflow is inf with the sign an odd
    # integer exponent keeps, a zero base with a negative exponent is inf (-inf for -0.0 and
    # an odd exponent), and a negative base with a non-integer exponent is NaN.
    try:
        return math.pow(x, y)
    except (OverflowError, ValueError):
        odd = float(y).is_integer() and float(y) % 2 == 1
        if x == 0:
            return math.copysign(math.inf, x) if odd else math.inf
        if x < 0 and not float(y).is_integer():
            return math.nan
        return -math.inf if x < 0 and odd else math.inf


def float_max(a: Any, b: Any) -> Any:
    """numpy's ``maximum`` on two floats: NaN if either is NaN, else the larger (``a`` on
    ties, so ``max(-0.0, 0.0)`` is ``-0.0``). Python's ``max`` drops a NaN in second place."""
    return b if b != b or b > a else a


def float_min(a: Any, b: Any) -> Any:
    """numpy's ``minimum`` on two floats: NaN if either is NaN, else the smaller."""
    return b if b != b or b < a else a


def _log(x: float, base_log: Callable[[float], float]) -> float:
    if x > 0:
        return base_log(x)
    return -math.inf if x == 0 else math.nan


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _rsqrt(x: float) -> float:
    if x == 0:
        return math.copysign(math.inf, x)  # 1 / sqrt(-0.0) is -inf, as in numpy
    return 1.0 / math.sqrt(x) if x > 0 else math.nan


def _round_half_even(x: float) -> float:
    # TVM's round lowers to nearbyint: ties go to the even neighbour, like Python's round.
    return _rounding(builtins.round)(x)


def _rounding(fn: Callable[[float], int]) -> Callable[[float], float]:
    # The integer value as a float with x's sign: a zero result keeps it (trunc(-0.5) and
    # ceil(-0.5) are -0.0 in C and numpy; Python's int result has no sign). A nonzero result
    # always has x's sign, so copysign is exact. NaN and inf pass through.
    return lambda x: math.copysign(float(fn(x)), x) if math.isfinite(x) else x


def _libm(fn: Callable[[float], float], overflow: Callable[[float], float]) -> Callable[..., float]:
    """``fn`` with C's (and numpy's) results where Python's math raises: a domain error
    (``sin(inf)``, ``asin(2)``, ``acosh(0)``) is NaN, an overflow is ``overflow(x)``."""

    def apply(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return math.nan
        except OverflowError:
            return overflow(x)

    return apply


def _atanh(x: float) -> float:
    if abs(x) == 1.0:
        return math.copysign(math.inf, x)  # a pole, not a domain error (C and numpy agree)
    return math.atanh(x) if abs(x) < 1.0 else math.nan


def _signed_inf(x: float) -> float:
    return math.copysign(math.inf, x)


def _inf(x: float) -> float:
    return math.inf


# name -> (number of arguments, scalar function on Python floats)
FLOAT_INTRINSICS: dict[str, tuple[int, Callable[..., float]]] = {
    "exp": (1, _exp),
    "exp2": (1, lambda x: _pow(2.0, x)),
    "log": (1, lambda x: _log(x, math.log)),
    "log2": (1, lambda x: _log(x, math.log2)),
    "sqrt": (1, _sqrt),
    "rsqrt": (1, _rsqrt),
    "tanh": (1, math.tanh),
    "sigmoid": (1, _sigmoid),
    "erf": (1, math.erf),
    "fabs": (1, abs),
    "floor": (1, _rounding(math.floor)),
    "ceil": (1, _rounding(math.ceil)),
    "round": (1, _round_half_even),
    "trunc": (1, _rounding(math.trunc)),
    "pow": (2, _pow),
    "sin": (1, _libm(math.sin, _signed_inf)),
    "cos": (1, _libm(math.cos, _inf)),
    "tan": (1, _libm(math.tan, _signed_inf)),
    "asin": (1, _libm(math.asin, _signed_inf)),
    "acos": (1, _libm(math.acos, _inf)),
    "atan": (1, math.atan),
    "sinh": (1, _libm(math.sinh, _signed_inf)),
    "cosh": (1, _libm(math.cosh, _inf)),
    "asinh": (1, math.asinh),
    "acosh": (1, _libm(math.acosh, _inf)),
    "atanh": (1, _atanh),
}


def shift_result(op: str, a: int, b: int, dtype: DataType) -> int:
    """``shift_left``/``shift_right`` on Python ints with numpy's rule for a count outside
    ``[0, bits)``: a left shift gives 0, a right shift the sign fill (0 or -1), where C leaves
    the result undefined. Every target computes exactly this."""
    if not 0 <= b < dtype.bits:
        return -1 if op == "shift_right" and a < 0 else 0
    if op == "shift_right":
        return a >> b  # arithmetic for signed values, logical for unsigned (a >= 0)
    return int(cast_scalar(a << b, dtype))  # keep the low bits, as the hardware does


BITWISE_FNS: dict[str, Callable[..., int]] = {
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "bitwise_not": lambda a: ~a,
}
