"""Conformance templates of the unary/binary math, bitwise and shift ops (see :mod:`.cases`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.relax import op as _op
from .cases import F32, F32_TRANSCENDENTAL, OpTemplate, one_input, random_values, row_param

__all__ = ["EXCLUSIONS", "INTEGER_ONLY_OPS", "templates"]

# Several op builders are generated when their module is imported, out of mypy's sight.
op: Any = _op

Arrays = list[np.ndarray]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {}

#: Ops that take integers only (floats and bools are refused): the matrix runs them in int32.
INTEGER_ONLY_OPS = frozenset({"relax.left_shift", "relax.right_shift"})

FLOAT = ("float32",)
FLOAT_INT = ("float32", "int32")
INT_BOOL = ("int32", "bool")


def _uniform(low: float, high: float) -> Callable[..., Arrays]:
    # Inputs inside the function's domain (asin, acosh, ...): NaN results are the edge test's.
    return lambda rng, n, dt: [rng.uniform(low, high, size=(n, 4)).astype(dt)]


# name: (reference, inputs)
_TRIG: dict[str, tuple[Callable[..., Any], Callable[..., Arrays]]] = {
    "sin": (np.sin, one_input(lambda n: (n, 4))),
    "cos": (np.cos, one_input(lambda n: (n, 4))),
    # Inside (-1.4, 1.4): away from the poles at +-pi/2, where one ulp of input is huge.
    "tan": (np.tan, _uniform(-1.4, 1.4)),
    "asin": (np.arcsin, _uniform(-0.99, 0.99)),
    "acos": (np.arccos, _uniform(-0.99, 0.99)),
    "atan": (np.arctan, one_input(lambda n: (n, 4))),
    "sinh": (np.sinh, one_input(lambda n: (n, 4))),
    "cosh": (np.cosh, one_input(lambda n: (n, 4))),
    "asinh": (np.arcsinh, one_input(lambda n: (n, 4))),
    "acosh": (np.arccosh, _uniform(1.0, 4.0)),
    "atanh": (np.arctanh, _uniform(-0.99, 0.99)),
}

_OTHER_UNARY: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "sign": (np.sign, FLOAT_INT),
    "square": (np.square, FLOAT_INT),
    "trunc": (np.trunc, FLOAT_INT),
    "isnan": (np.isnan, FLOAT_INT),
    "isinf": (np.isinf, FLOAT_INT),
    "isfinite": (np.isfinite, FLOAT_INT),
    "bitwise_not": (np.invert, INT_BOOL),
}


def _binary_params(d: Any, dt: str) -> list[tuple[str, tuple[Any, ...], str]]:
    # (d, 4) with (4,): every case also broadcasts.
    return [("a", (d, 4), dt), ("b", (4,), dt)]


def _remainder_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    # Signed dividends and divisors (the sign rules are the point), divisors away from 0.
    a = random_values(rng, (n, 4), dt)
    b = random_values(rng, (4,), dt, "pos") * np.array([1, -1, 1, -1], dtype=dt)
    return [a, b]


def _shift_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    a = rng.integers(-1000, 1000, size=(n, 4)).astype(dt)
    # Counts in and out of [0, 32): negative and too-large counts follow numpy's rule.
    return [a, np.array([0, 3, 31, 35], dtype=dt) * np.array([1, 1, 1, -1], dtype=dt)]


def _plain_binary(name: str) -> Callable[..., Any]:
    return lambda d, a, b: getattr(op, name)(a, b)


def _plain_unary(name: str) -> Callable[..., Any]:
    return lambda d, x: getattr(op, name)(x)


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    out = []
    for name, (ref, inputs) in _TRIG.items():
        out.append(
            OpTemplate(
                f"relax.{name}",
                "",
                "math_unary",
                FLOAT,
                row_param,
                _plain_unary(name),
                inputs,
                ref,
                F32_TRANSCENDENTAL,
            )
        )
    for name, (ref, dtypes) in _OTHER_UNARY.items():
        out.append(
            OpTemplate(
                f"relax.{name}",
                "",
                "math_unary",
                dtypes,
                row_param,
                _plain_unary(name),
                one_input(lambda n: (n, 4)),
                ref,
                F32,
            )
        )
    binary: dict[str, tuple[Callable[..., Any], tuple[str, ...], Callable[..., Arrays]]] = {
        "mod": (np.fmod, FLOAT_INT, _remainder_inputs),
        "floor_mod": (np.mod, FLOAT_INT, _remainder_inputs),
        "bitwise_and": (np.bitwise_and, INT_BOOL, _bits_inputs),
        "bitwise_or": (np.bitwise_or, INT_BOOL, _bits_inputs),
        "bitwise_xor": (np.bitwise_xor, INT_BOOL, _bits_inputs),
        "left_shift": (np.left_shift, ("int32",), _shift_inputs),
        "right_shift": (np.right_shift, ("int32",), _shift_inputs),
    }
    for name, (ref, dtypes, inputs) in binary.items():
        out.append(
            OpTemplate(
                f"relax.{name}",
                "",
                "math_binary",
                dtypes,
                _binary_params,
                _plain_binary(name),
                inputs,
                ref,
                F32,
            )
        )
    return out


def _bits_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    if dt == "bool":
        return [random_values(rng, (n, 4), dt), random_values(rng, (4,), dt)]
    return [
        rng.integers(-1000, 1000, size=(n, 4)).astype(dt),
        rng.integers(-99, 99, size=4).astype(dt),
    ]
