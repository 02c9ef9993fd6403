"""float8_e4m3fn / float8_e5m2: DataType spelling and codes, the numpy reference conversion
(bit-exact against ml_dtypes where ml_dtypes converts exactly), and float8 tensors."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMTypeError
from relaxvm.runtime import DataType
from relaxvm.runtime.dtype import DataTypeCode
from relaxvm.runtime.float8 import (
    FLOAT8_DTYPES,
    float8_bits_to_float,
    float8_format,
    float_to_float8_bits,
    host_float8_bits,
)

CODES = np.arange(256, dtype=np.uint8)


def _ml(name: str) -> Any:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    return getattr(ml_dtypes, name)


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(f"u{values.itemsize}")


# ---- DataType ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "code"), [("float8_e4m3fn", 10), ("float8_e5m2", 12)])
def test_dtype_spelling_and_dlpack_code(name: str, code: int) -> None:
    dtype = DataType(name)
    assert (dtype.code, dtype.bits, dtype.lanes, dtype.itemsize) == (code, 8, 1, 1)
    assert str(dtype) == name and dtype == name and dtype.is_float8
    assert DataType.from_code(code, 8) is dtype
    assert dtype.numpy_dtype() == np.uint8  # storage: the codes
    vector = DataType(f"{name}x4")
    assert (vector.lanes, vector.itemsize, str(vector)) == (4, 4, f"{name}x4")
    assert not DataType("float16").is_float8 and not DataType("uint8").is_float8
    assert DataTypeCode.FLOAT8_E4M3FN == 10 and DataTypeCode.FLOAT8_E5M2 == 12


@pytest.mark.parametrize("text", ["float8", "float8_e4m3", "float8_e4m3fn8", "float8_e5m2fnuz"])
def test_dtype_rejects_other_float8_spellings(text: str) -> None:
    with pytest.raises(VMTypeError, match="cannot parse data type"):
        DataType(text)


def test_dtype_from_code_rejects_wrong_bits() -> None:
    with pytest.raises(relaxvm.errors.VMValueError, match=r"16 bits is not valid for type code 10"):
        DataType.from_code(10, 16)


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_dtype_of_ml_dtypes_arrays(name: str) -> None:
    ml_type = _ml(name)
    assert DataType(ml_type) == name and DataType(np.dtype(ml_type)) == name


# ---- reference conversion ---------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_decode_matches_ml_dtypes_on_every_code(name: str) -> None:
    expected = CODES.view(_ml(name)).astype(np.float32)
    np.testing.assert_array_equal(_bits(float8_bits_to_float(CODES, name)), _bits(expected))


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_decode_values_by_hand(name: str) -> None:
    fmt = float8_format(name)
    values = float8_bits_to_float(CODES, name)
    assert values[0x38 if name == "float8_e4m3fn" else 0x3C] == 1.0
    assert values[fmt.max_code] == fmt.max_value == (448.0 if name.endswith("fn") else 57344.0)
    assert values[1] == 2.0 ** (fmt.min_exponent - fmt.man_bits)  # smallest subnormal
    assert np.signbit(values[0x80]) and values[0x80] == 0
    nan_codes = {0x7F, 0xFF} if name.endswith("fn") else {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF}
    assert set(np.flatnonzero(np.isnan(values))) == nan_codes
    assert np.isinf(values).sum() == (0 if name.endswith("fn") else 2)


def _hard_float32(name: str) -> np.ndarray:
    """Every float8 value, the midpoints between neighbours (ties), one float32 ulp either side
    of them, specials, overflow and subnormal boundaries, and random floats of all scales."""
    values = float8_bits_to_float(CODES, name).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mids = (finite[:-1] + finite[1:]) / 2
    fmt = float8_format(name)
    top = fmt.max_value
    ulp = top - float(float8_bits_to_float(np.uint8(fmt.max_code - 1), name))
    mids32 = mids.astype(np.float32)
    rng = np.random.default_rng(0)
    scale = np.float32(2.0) ** rng.integers(-30, 30, 20000).astype(np.float32)
    pool = [
        finite.astype(np.float32),
        mids32,
        np.nextafter(mids32, np.float32(np.inf)),
        np.nextafter(mids32, np.float32(-np.inf)),
        np.array([top + ulp / 2, top + ulp / 2 + 1, top + ulp, 1e30, 3.4e38, 1e-30, 1e-45]),
        np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]),
        rng.standard_normal(20000).astype(np.float32) * scale,
        rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32),
    ]
    values32 = np.concatenate([p.astype(np.float32) for p in pool])
    return np.concatenate([values32, -values32])


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_encode_float32_matches_ml_dtypes(name: str) -> None:
    values = _hard_float32(name)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = values.astype(_ml(name)).view(np.uint8)
    np.testing.assert_array_equal(float_to_float8_bits(values, name), expected)


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_encode_every_float16_matches_ml_dtypes(name: str) -> None:
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = halves.astype(_ml(name)).view(np.uint8)
    np.testing.assert_array_equal(float_to_float8_bits(halves, name), expected)


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_encode_rounds_ties_to_even_and_saturates_as_documented(name: str) -> None:
    fmt = float8_format(name)
    one = 0x38 if name.endswith("fn") else 0x3C
    step = 2.0**-fmt.man_bits
    # 1 + step/2 is a tie between 1 (even mantissa) and 1 + step (odd): rounds to 1.
    assert float_to_float8_bits(1 + step / 2, name) == one
    # 1 + 3*step/2 is a tie between 1 + step (odd) and 1 + 2*step (even): rounds up.
    assert float_to_float8_bits(1 + 3 * step / 2, name) == one + 2
    overflow = 0x7F if name.endswith("fn") else 0x7C  # NaN in e4m3fn, inf in e5m2
    assert float_to_float8_bits([1e9, -1e9, np.inf], name).tolist() == [
        overflow,
        overflow | 0x80,
        overflow,
    ]
    assert float_to_float8_bits([np.nan, -np.nan], name).tolist() == [
        fmt.nan_code,
        fmt.nan_code | 0x80,
    ]
    assert float_to_float8_bits(-0.0, name) == 0x80 and float_to_float8_bits(-1e-30, name) == 0x80


@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_encode_float64_rounds_once(name: str) -> None:
    # Doubles just beside a tie between neighbouring float8 values must round to the nearer
    # one. (ml_dtypes goes through float32 here, where the tie reappears: it rounds these
    # twice; relaxvm rounds the exact value.)
    values = float8_bits_to_float(CODES, name).astype(np.float64)
    finite = np.unique(values[np.isfinite(values) & (values > 0)])
    low, high = finite[:-1], finite[1:]
    mids = (low + high) / 2
    tiny = 2.0**-40
    np.testing.assert_array_equal(
        float8_bits_to_float(float_to_float8_bits(mids * (1 - tiny), name), name), low
    )
    np.testing.assert_array_equal(
        float8_bits_to_float(float_to_float8_bits(mids * (1 + tiny), name), name), high
    )
    # Away from ties the float64 route agrees with the float32 one.
    rng = np.random.default_rng(1)
    doubles = rng.standard_normal(5000) * 2.0 ** rng.integers(-20, 17, 5000)
    singles = doubles.astype(np.float32)
    np.testing.assert_array_equal(
        float_to_float8_bits(singles.astype(np.float64), name), float_to_float8_bits(singles, name)
    )


def test_encode_integers_and_bools_by_value() -> None:
    assert float_to_float8_bits(np.array([0, 1, 2, 3]), "float8_e4m3fn").tolist() == [
        0,
        0x38,
        0x40,
        0x44,
    ]
    assert float_to_float8_bits(np.array([True, False]), "float8_e5m2").tolist() == [0x3C, 0]


def test_reference_errors() -> None:
    with pytest.raises(VMTypeError, match="float8_format: float16 is not a float8 type"):
        float_to_float8_bits([1.0], "float16")
    with pytest.raises(VMTypeError, match=r"bits must be uint8 codes \(0..255\)"):
        float8_bits_to_float(np.array([256]), "float8_e5m2")
    with pytest.raises(VMTypeError, match="cannot convert numpy dtype <U1 to float8_e5m2"):
        host_float8_bits(np.array(["a"]), "float8_e5m2")


# ---- tensors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT8_DTYPES)
def test_tensor_rounds_values_and_numpy_gives_ml_dtypes(name: str) -> None:
    values = np.array([[1.0, 0.3, -2.75], [1e6, np.nan, -0.0]], np.float32)
    t = relaxvm.tensor(values, dtype=name)
    assert t.dtype == name and t.shape == (2, 3) and t.nbytes == 6
    codes = t.view((2, 3), "uint8").numpy()
    np.testing.assert_array_equal(codes, float_to_float8_bits(values, name))
    out = t.numpy()
    assert out.dtype == np.dtype(_ml(name))
    np.testing.assert_array_equal(out.view(np.uint8), codes)
    # Back in: an ml_dtypes array keeps its bits; the result has its type.
    again = relaxvm.tensor(out)
    assert again.dtype == name
    np.testing.assert_array_equal(again.view((2, 3), "uint8").numpy(), codes)


def test_tensor_of_tensor_and_copyfrom_keep_codes() -> None:
    t = relaxvm.tensor([0.5, 3.0, -7.0], dtype="float8_e5m2")
    copy = relaxvm.tensor(t)
    assert copy.dtype == "float8_e5m2"
    np.testing.assert_array_equal(copy.view((3,), "uint8").numpy(), t.view((3,), "uint8").numpy())
    target = relaxvm.empty((3,), "float8_e5m2")
    target.copyfrom(t)
    np.testing.assert_array_equal(
        target.view((3,), "uint8").numpy(), float_to_float8_bits([0.5, 3.0, -7.0], "float8_e5m2")
    )
    target.copyfrom(np.array([1, 2, 5]))  # integers by value: 5 rounds to 5 (exact in e5m2)
    assert float8_bits_to_float(target.view((3,), "uint8").numpy(), "float8_e5m2").tolist() == [
        1.0,
        2.0,
        5.0,
    ]
    target[:] = np.array([9.0, 0.0, -1.0], np.float64)  # 9 -> 8 (tie to even)
    assert float8_bits_to_float(target.view((3,), "uint8").numpy(), "float8_e5m2").tolist() == [
        8.0,
        0.0,
        -1.0,
    ]
    moved = t.copyto(relaxvm.cpu())
    assert moved.dtype == "float8_e5m2"


def test_tensor_prints_values_without_ml_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now fails
    t = relaxvm.tensor([1.5, -448.0, 1e9], dtype="float8_e4m3fn")
    assert "dtype=float8_e4m3fn" in str(t) and "-448." in str(t) and "nan" in str(t)
    with pytest.raises(VMTypeError, match=r"install the optional package ml_dtypes") as info:
        t.numpy()
    assert "R.astype(x, 'float32')" in str(info.value)


def test_dlpack_round_trip_keeps_the_float8_type() -> None:
    t = relaxvm.tensor([1.0, -2.0, 0.25], dtype="float8_e4m3fn")
    back = relaxvm.from_dlpack(t.__dlpack__(max_version=(1, 0)))
    assert back.dtype == "float8_e4m3fn"
    np.testing.assert_array_equal(back.view((3,), "uint8").numpy(), t.view((3,), "uint8").numpy())


def test_float8_tensors_convert_to_other_types_without_ml_dtypes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    e4 = relaxvm.tensor([1.0, 0.3, -448.0], dtype="float8_e4m3fn")
    as_float = relaxvm.tensor(e4, dtype="float32")
    np.testing.assert_array_equal(as_float.numpy(), [1.0, 0.3125, -448.0])
    e5 = relaxvm.empty((3,), "float8_e5m2")
    e5.copyfrom(e4)  # by value: 0.3125 -> 0.3125 (exact in e5m2), -448 -> -448
    np.testing.assert_array_equal(
        float8_bits_to_float(e5.numpy_storage(), "float8_e5m2"), [1.0, 0.3125, -448.0]
    )
    f32 = relaxvm.empty((3,), "float32")
    f32.copyfrom(e5)
    np.testing.assert_array_equal(f32.numpy(), [1.0, 0.3125, -448.0])
    assert (
        e4.numpy_storage().tolist()
        == float_to_float8_bits([1.0, 0.3, -448.0], "float8_e4m3fn").tolist()
    )
