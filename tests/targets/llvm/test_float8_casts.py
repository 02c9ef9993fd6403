"""Casts to and from float8_e4m3fn / float8_e5m2 on the llvm target and the TIR interpreter.

LLVM has no 8-bit float: the code generator rounds with integer bit manipulation
(targets/relaxvm_llvm/codegen_float8.py). Every result must equal the numpy reference
(relaxvm.runtime.float8) bit for bit: all 256 codes out, and a dense sweep in (every float8
value, every tie between neighbours and one ulp either side, NaN, infinities, subnormals,
overflow, random floats of every scale, every float16).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.runtime.float8 import FLOAT8_DTYPES, float8_bits_to_float, float_to_float8_bits
from relaxvm.testing.targets import interpreter_target, registered_target

CODES = np.arange(256, dtype=np.uint8)


@pytest.fixture(params=["llvm", "interp"])
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "interp":
        with registered_target(interpreter_target()):
            yield "interp"
    else:
        yield "llvm"


def _cast(values: np.ndarray, src: str, dst: str, target: str) -> np.ndarray:
    """``astype(values, dst)`` compiled for ``target``; float8 in and out as uint8 codes."""
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo(values.shape, src))
    with bb.function("main", [x]):
        y = bb.emit(op.astype(x, dst))
        bb.emit_func_output(y)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), target), relaxvm.cpu())
    if src.startswith("float8"):
        arg = relaxvm.empty(values.shape, src)
        arg.view(values.shape, "uint8").copyfrom(values)
    else:
        arg = relaxvm.tensor(values)
    out = vm["main"](arg)
    return out.view(out.shape, "uint8").numpy() if out.dtype.is_float8 else out.numpy()


def _sweep(name: str) -> np.ndarray:
    values = float8_bits_to_float(CODES, name).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mids = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(0)
    scale = np.float32(2.0) ** rng.integers(-30, 30, 4000).astype(np.float32)
    pool = [
        finite.astype(np.float32),
        mids,
        np.nextafter(mids, np.float32(np.inf)),
        np.nextafter(mids, np.float32(-np.inf)),
        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 1e-40, 1e30, 3.4e38, 464, 61440]),
        rng.standard_normal(4000).astype(np.float32) * scale,
        rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32),
    ]
    return np.concatenate([p.astype(np.float32) for p in pool])


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
@pytest.mark.parametrize("dst", ["float32", "float16", "float64"])
def test_every_code_to_float(name: str, dst: str, target: str) -> None:
    got = _cast(CODES, name, dst, target)
    expected = float8_bits_to_float(CODES, name).astype(dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), expected.view(f"u{got.itemsize}"))


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_every_code_to_the_other_float8_and_to_bool(name: str, target: str) -> None:
    other = FLOAT8_DTYPES[1 - FLOAT8_DTYPES.index(name)]
    values = float8_bits_to_float(CODES, name)
    np.testing.assert_array_equal(
        _cast(CODES, name, other, target), float_to_float8_bits(values, other)
    )
    np.testing.assert_array_equal(_cast(CODES, name, "bool", target), values != 0)  # NaN: True


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_finite_codes_to_integers(name: str, target: str) -> None:
    values = float8_bits_to_float(CODES, name)
    small = CODES[np.isfinite(values) & (np.abs(values) < 120)]
    expected = float8_bits_to_float(small, name).astype(np.int8)  # truncates toward zero
    np.testing.assert_array_equal(_cast(small, name, "int8", target), expected)
    np.testing.assert_array_equal(_cast(small, name, "int32", target), expected.astype(np.int32))


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
@pytest.mark.parametrize("src", ["float32", "float16", "float64"])
def test_float_sweep_to_float8(name: str, src: str, target: str) -> None:
    with np.errstate(over="ignore", invalid="ignore"):  # the sweep holds a signalling NaN
        values = _sweep(name).astype(src)
    if src == "float64":
        # Doubles beside the ties, where rounding through float32 would round twice.
        decoded = float8_bits_to_float(CODES, name)
        finite = np.unique(decoded[np.isfinite(decoded)])
        mids = (finite[:-1].astype(np.float64) + finite[1:]) / 2
        values = np.concatenate([values, mids * (1 + 2.0**-40), mids * (1 - 2.0**-40)])
    np.testing.assert_array_equal(
        _cast(values, src, name, target), float_to_float8_bits(values, name)
    )


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_every_float16_to_float8(name: str) -> None:
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    np.testing.assert_array_equal(
        _cast(halves, "float16", name, "llvm"), float_to_float8_bits(halves, name)
    )


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
@pytest.mark.parametrize("src", ["int8", "int32", "uint8", "bool"])
def test_integers_to_float8(name: str, src: str, target: str) -> None:
    if src == "bool":
        values = np.array([True, False])
    else:
        info = np.iinfo(src)
        candidates = [info.min, info.max, 0, 1, 17, 19, 100, 449, 465, 60000, -3, -1000]
        values = np.array([v for v in candidates if info.min <= v <= info.max], dtype=src)
    np.testing.assert_array_equal(
        _cast(values, src, name, target), float_to_float8_bits(values.astype(np.float64), name)
    )


def test_float8_arithmetic_is_refused_at_the_ir_level() -> None:
    # No float8 arithmetic or comparison: a kernel must cast to a wider float first.
    from relaxvm.errors import VMTypeError
    from relaxvm.ir import Var
    from relaxvm.ir import op as sop

    a = Var("a", "float8_e4m3fn")
    with pytest.raises(VMTypeError, match="needs int or float operands, got float8_e4m3fn"):
        sop.add(a, a)
    with pytest.raises(VMTypeError, match="cannot compare values of type float8_e4m3fn"):
        sop.less(a, a)


def test_float8_constant_survives_export_and_load(tmp_path: Path) -> None:
    const = relaxvm.tensor([1.0, 2.5, -3.0, 0.3], dtype="float8_e4m3fn")
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x]):
        y = bb.emit(op.add(x, op.astype(rx.const(const), "float32")))
        bb.emit_func_output(y)
    ex = relaxvm.compile(bb.get(), "llvm")
    path = str(tmp_path / "float8.rvm")
    ex.export_library(path)
    zeros = relaxvm.tensor(np.zeros(4, np.float32))
    for module in (ex, relaxvm.load_module(path)):
        out = relaxvm.VirtualMachine(module, relaxvm.cpu())["main"](zeros).numpy()
        np.testing.assert_array_equal(out, [1.0, 2.5, -3.0, 0.3125])
