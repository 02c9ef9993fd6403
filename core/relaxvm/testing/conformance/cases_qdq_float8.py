"""Conformance templates of the float8 types (see :mod:`.cases`): ``astype`` to and from
``float8_e4m3fn`` / ``float8_e5m2`` and ``quantize`` / ``dequantize`` with a float8 type.

The matrix feeds and reads float32 or int32 tensors, so each case has its float8 tensor in
the middle (cast in, cast or dequantize out). The oracle is the numpy reference of
:mod:`relaxvm.runtime.float8`: round to nearest even, overflow to NaN (e4m3fn) or infinity
(e5m2) in a cast; quantize clips to the finite range first. Scales are powers of two, so
``x / scale`` is exact whatever division the target emits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.relax import const
from ...runtime.float8 import float8_bits_to_float, float8_format, float_to_float8_bits
from .cases import FLOAT_INT, Arrays, Dim, OpTemplate, Param, _plain, op, random_values

__all__ = ["EXCLUSIONS", "templates"]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS` (none: the
#: reference defines NaN, infinities, signed zeros and subnormals).
EXCLUSIONS: dict[str, dict[str, str]] = {}

_F8 = ("float8_e4m3fn", "float8_e5m2")
_SCALE = np.array([0.5, 2.0, 0.25], "float32")
_ZERO = np.array([1, -2, 0], "int8")
_EXACT = (0.0, 0.0)


def _round_trip(name: str) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        return float8_bits_to_float(float_to_float8_bits(x, name), name)

    return ref


def _qdq_ref(name: str) -> Callable[[np.ndarray], np.ndarray]:
    bound = float8_format(name).max_value

    def ref(x: np.ndarray) -> np.ndarray:
        z = _ZERO.astype("float32")
        with np.errstate(invalid="ignore", over="ignore"):
            scaled = np.clip(x.astype("float32") / _SCALE + z, -bound, bound)
            codes = float_to_float8_bits(scaled, name)
            return ((float8_bits_to_float(codes, name) - z) * _SCALE).astype("float32")

    return ref


def _params(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 3), dt)]


def _wide(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    """Values of every scale a float8 meets: subnormal, ordinary and overflowing ones."""
    values = random_values(rng, (n, 3), dt)
    if dt == "int32":
        return [values * rng.choice(np.array([1, 7, 300, 70000], dt), size=(n, 3))]
    exponents = rng.integers(-12, 18, size=(n, 3)).astype("float32")
    return [(values * np.float32(2.0) ** exponents).astype(dt)]


def templates() -> list[OpTemplate]:
    """The float8 templates (one per float8 type and variant)."""
    scale, zero = (lambda: const(_SCALE)), (lambda: const(_ZERO))
    result: list[OpTemplate] = []
    for name in _F8:
        short = name.removeprefix("float8_")
        other = _F8[1 - _F8.index(name)]
        result += [
            OpTemplate("relax.astype", f"via-{short}", "float8", FLOAT_INT, _params,
                       _plain(lambda x, n=name: op.astype(op.astype(x, n), "float32")),
                       _wide, lambda x, n=name: _round_trip(n)(x.astype("float64")), _EXACT),
            OpTemplate("relax.astype", f"via-{short}-float16", "float8", FLOAT_INT, _params,
                       _plain(lambda x, n=name: op.astype(op.astype(x, n), "float16")),
                       _wide, lambda x, n=name: _round_trip(n)(x.astype("float64"))
                       .astype("float16"), _EXACT),
            OpTemplate("relax.astype", f"{short}-to-{other.removeprefix('float8_')}", "float8",
                       FLOAT_INT, _params,
                       _plain(lambda x, n=name, o=other: op.astype(
                           op.astype(op.astype(x, n), o), "float32")),
                       _wide, lambda x, n=name, o=other: _round_trip(o)(
                           _round_trip(n)(x.astype("float64"))), _EXACT),
            OpTemplate("relax.quantize", f"{short}-roundtrip", "float8", ("float32",), _params,
                       _plain(lambda x, n=name: op.dequantize(
                           op.quantize(x, scale(), zero(), axis=1, out_dtype=n),
                           scale(), zero(), axis=1)),
                       _wide, _qdq_ref(name), _EXACT),
        ]  # fmt: skip
    return result
