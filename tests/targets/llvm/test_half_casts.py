"""Casts between float16 and float64 or integers on the llvm target.

LLVM lowers these to compiler-rt calls the JIT does not link, which would crash the process;
the code generator goes through float32 instead (round-to-odd from double), and every result
must equal numpy's single, correctly rounded conversion.
"""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op


def _cast(values: np.ndarray, dtype: str) -> np.ndarray:
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo(values.shape, str(values.dtype)))
    with bb.function("main", [x]):
        y = bb.emit(op.astype(x, dtype))
        bb.emit_func_output(y)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())
    return vm["main"](relaxvm.tensor(values)).numpy()


def _hard_doubles() -> np.ndarray:
    # Doubles just above, at and below the midpoints between neighbouring halves: rounding
    # through float32 with round-to-nearest would round some of them twice the wrong way.
    halves = np.arange(0, 0x7C00, 7, dtype=np.uint16).view(np.float16).astype(np.float64)
    following = np.nextafter(halves.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    middle = (halves + following) / 2
    tiny = np.ldexp(1.0, -40)
    values = np.concatenate(
        [middle, middle * (1 + tiny), middle * (1 - tiny), halves, [65520.0, 65519.99, 1e300]]
    )
    rng = np.random.default_rng(0)
    values = np.concatenate([values, -values, rng.normal(scale=100.0, size=999)])
    return np.concatenate([values, [np.inf, -np.inf, np.nan, 0.0, -0.0, 5e-324]])


def test_float64_to_float16_is_rounded_once() -> None:
    values = _hard_doubles()
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16)
    got = _cast(values, "float16")
    np.testing.assert_array_equal(got.view(np.uint16) & 0x7FFF == 0x7E00, np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(got[finite].view(np.uint16), expected[finite].view(np.uint16))


@pytest.mark.parametrize("src", ["int8", "uint8", "int16", "int32", "int64", "uint64"])
def test_integers_to_float16(src: str) -> None:
    info = np.iinfo(src)
    candidates = [info.min, info.max, 0, 1, 2049, 2051, 65519, 65520, 70000, -70000, 12345]
    values = np.array([v for v in candidates if info.min <= v <= info.max], dtype=src)
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16)
    np.testing.assert_array_equal(_cast(values, "float16"), expected)


@pytest.mark.parametrize("dst", ["float64", "int8", "int32", "int64", "uint16", "bool"])
def test_float16_to_wider_types(dst: str) -> None:
    values = np.array([0.0, -0.0, 1.5, -2.75, 100.25, 65504.0, 6e-8, 1e-3], dtype=np.float16)
    if dst.startswith("u"):
        values = np.abs(values)
    if dst in ("int8",):
        values = np.clip(values, -100, 100)
    np.testing.assert_array_equal(_cast(values, dst), values.astype(dst))
