"""Conformance templates of log_add_exp, outer, ewise_fma, bucketize, hamming_window, wrap_param,
nn.relu6 and nn.batch_flatten, and of
``masked_fill`` (a ``relax.where`` of a ``full_like``, run as a variant of where); see
:mod:`.cases`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.op import const
from ...ir.relax import PrimValue
from ...ir.relax import const as rconst
from .cases import (
    F32_TRANSCENDENTAL,
    FLOAT,
    FLOAT_INT,
    Arrays,
    Dim,
    OpTemplate,
    Param,
    one_input,
    op,
    random_values,
    row_param,
)

__all__ = ["templates"]


def _log_add_exp_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # Integers: computed in float64, truncated back (astype truncates toward zero).
    return np.logaddexp(a.astype("float64"), b.astype("float64")).astype(a.dtype)


def _log_add_exp_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    a = random_values(rng, (n, 4), dt)
    b = random_values(rng, (4,), dt)
    a[0, :2] = b[:2]  # equal operands take the exact a + log 2 branch
    return [a, b]


def _outer_params(d: Dim, dt: str) -> list[Param]:
    return [("a", (d,), dt), ("b", (4,), dt)]


def _outer_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n,), dt), random_values(rng, (4,), dt)]


def _fma_params(d: Dim, dt: str) -> list[Param]:
    return [("a", (d, 4), dt), ("b", (d, 4), dt), ("c", (d, 4), dt)]


def _fma_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), dt) for _ in range(3)]


def _relu6_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    # Values on both sides of 0 and of 6.
    if dt.startswith("int"):
        return [rng.integers(-3, 10, size=(n, 4)).astype(dt)]
    return [rng.uniform(-3, 9, size=(n, 4)).astype(dt)]


def _relu6_ref(x: np.ndarray) -> np.ndarray:
    zero, six = np.asarray(0, x.dtype), np.asarray(6, x.dtype)
    return np.where(x < zero, zero, np.where(x > six, six, x))


def _flatten_params(d: Dim, dt: str) -> list[Param]:
    return [("x", (d, 2, 3), dt)]


def _fill_value(dt: str) -> float:
    return -2.5 if dt.startswith("float") else -7


def _masked_fill_build(d: Dim, x: Any, mask: Any) -> Any:
    dt = str(x.struct_info.dtype)
    return op.masked_fill(x, mask, PrimValue(const(_fill_value(dt), dt)))


def _masked_fill_inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
    return [random_values(rng, (n, 4), dt), np.array([True, False, True, False])]


def _masked_fill_ref(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.where(mask, np.asarray(_fill_value(str(x.dtype)), x.dtype), x)


def _boundaries(dt: str) -> np.ndarray:
    # A constant of the call (not a parameter): the edge-value test fills parameters, and
    # boundaries out of order have no defined answer.
    values = [-2.0, -0.5, 0.0, 1.0, 2.5] if dt.startswith("float") else [-3, -1, 0, 2, 4]
    return np.array(values, dt)


def _bucketize(right: bool, out_int32: bool) -> OpTemplate:
    def build(d: Dim, x: Any) -> Any:
        b = rconst(_boundaries(str(x.struct_info.dtype)))
        return op.bucketize(x, b, out_int32=out_int32, right=right)

    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        x = random_values(rng, (n, 4), dt)
        x[0, :3] = _boundaries(dt)[1:4]  # ties: the two sides differ exactly there
        return [x]

    def ref(x: np.ndarray) -> np.ndarray:
        found = np.searchsorted(_boundaries(str(x.dtype)), x, side="right" if right else "left")
        return found.astype("int32" if out_int32 else "int64")

    label = "right_int32" if right else ""
    return OpTemplate("relax.bucketize", label, "tvm_extra_a", FLOAT_INT, row_param, build,
                      inputs, ref)  # fmt: skip


def _hamming(periodic: bool) -> OpTemplate:
    # As eye's template: a vector parameter carries the (symbolic) size and the dtype.
    def build(d: Dim, x: Any) -> Any:
        return op.hamming_window(d, periodic, 0.54, 0.46, str(x.struct_info.dtype))

    def ref(x: np.ndarray) -> np.ndarray:
        size = x.shape[0]
        if size == 1:
            return np.ones(1, x.dtype)
        denom = size if periodic else size - 1
        n = np.arange(size, dtype="float64")
        return (0.54 - 0.46 * np.cos(2 * np.pi * n / max(denom, 1))).astype(x.dtype)

    return OpTemplate("relax.hamming_window", "periodic" if periodic else "", "tvm_extra_a",
                      FLOAT, lambda d, dt: [("x", (d,), dt)], build,
                      one_input(lambda n: (n,)), ref, F32_TRANSCENDENTAL)  # fmt: skip


def _plain(f: Any) -> Any:
    return lambda d, *vs: f(*vs)


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    return [
        OpTemplate("relax.log_add_exp", "", "tvm_extra_a", FLOAT_INT,
                   lambda d, dt: [("a", (d, 4), dt), ("b", (4,), dt)],
                   _plain(op.log_add_exp), _log_add_exp_inputs, _log_add_exp_ref,
                   F32_TRANSCENDENTAL),
        OpTemplate("relax.outer", "", "tvm_extra_a", FLOAT_INT, _outer_params,
                   _plain(op.outer), _outer_inputs, np.outer),
        OpTemplate("relax.ewise_fma", "", "tvm_extra_a", FLOAT_INT, _fma_params,
                   _plain(op.ewise_fma), _fma_inputs, lambda a, b, c: a * b + c),
        OpTemplate("relax.nn.relu6", "", "tvm_extra_a", FLOAT_INT, row_param,
                   _plain(op.nn.relu6), _relu6_inputs, _relu6_ref),
        OpTemplate("relax.nn.batch_flatten", "", "tvm_extra_a", FLOAT_INT, _flatten_params,
                   _plain(op.nn.batch_flatten), one_input(lambda n: (n, 2, 3)),
                   lambda x: x.reshape(x.shape[0], 6)),
        _bucketize(right=False, out_int32=False),
        _bucketize(right=True, out_int32=True),
        _hamming(periodic=False),
        _hamming(periodic=True),
        # float32 stays float32 (the legalization returns the parameter) and int32 becomes
        # float32 (rounding as numpy): a NaN -> int cast would have no defined result, and the
        # matrix's outputs are at most 32-bit.
        OpTemplate("relax.wrap_param", "", "tvm_extra_a", FLOAT_INT, row_param,
                   lambda d, x: op.wrap_param(x, "float32"),
                   one_input(lambda n: (n, 4)),
                   lambda x: x.astype("float32")),
        OpTemplate("relax.where", "masked_fill", "tvm_extra_a", FLOAT_INT,
                   lambda d, dt: [("x", (d, 4), dt), ("mask", (4,), "bool")],
                   _masked_fill_build, _masked_fill_inputs, _masked_fill_ref),
    ]  # fmt: skip
