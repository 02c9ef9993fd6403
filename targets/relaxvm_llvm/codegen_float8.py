"""Casts to and from the 8-bit floats ``float8_e4m3fn`` and ``float8_e5m2``.

LLVM (through llvmlite 0.50) has no 8-bit float type, so a float8 value lives in an ``i8``
register as its bit pattern and every conversion is integer bit manipulation, bit-exact with
the numpy reference :mod:`relaxvm.runtime.float8` (round to nearest even from the exact
source value; overflow gives NaN in e4m3fn, infinity in e5m2; NaN gives the canonical NaN with
its sign). Only integer ops, ``bitcast``, ``uitofp``, ``fmul`` and ``fpext``/``fptrunc``
between half/float/double are used, so the same code compiles for NVPTX (no libcalls).

* float -> float8: float16 widens to float32 (exact), then the float32 (i32) or float64 (i64)
  bits are rounded; integers and bools convert to float64 first (exact up to 2**53).
* float8 -> x: decode to float32 (exact for every code), then the ordinary float32 cast.
* float8 -> float8: through float32 (exact), then rounded.

Every function works on scalars and on vectors (constants are splatted to the value's shape).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import llvmlite.ir as ir

from relaxvm.runtime.dtype import DataType, DataTypeCode
from relaxvm.runtime.float8 import Float8Format, float8_format

if TYPE_CHECKING:
    from .codegen_expr import ExprCodegen

__all__ = ["cast_float8"]

_FLOAT32 = DataType("float32")
_FLOAT64 = DataType("float64")
#: (integer width, mantissa bits, exponent bias) of the float types float8 rounds from.
_SOURCE = {32: (32, 23, 127), 64: (64, 52, 1023)}


def _like(value: ir.Value, element: ir.Type) -> ir.Type:
    if isinstance(value.type, ir.VectorType):
        return ir.VectorType(element, value.type.count)
    return element


def _const(ty: ir.Type, number: Any) -> ir.Constant:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [number] * ty.count)
    return ir.Constant(ty, number)


def cast_float8(cg: ExprCodegen, value: ir.Value, src: DataType, dst: DataType) -> ir.Value:
    """Convert ``value`` from ``src`` to ``dst`` where at least one of them is float8."""
    b = cg.builder
    if src.is_float8:
        wide = _decode(b, value, float8_format(src))
        if dst.is_float8:
            return _encode(b, wide, 32, float8_format(dst))
        return cg.cast_value(wide, _FLOAT32, dst)
    fmt = float8_format(dst)
    if src.code == DataTypeCode.FLOAT:
        if src.bits == 16:
            return _encode(b, b.fpext(value, _like(value, ir.FloatType())), 32, fmt)
        return _encode(b, value, src.bits, fmt)
    # Integers and bools: float64 holds every value up to 2**53 exactly.
    return _encode(b, cg.cast_value(value, src, _FLOAT64), 64, fmt)


def _encode(b: ir.IRBuilder, value: ir.Value, width: int, fmt: Float8Format) -> ir.Value:
    """Round a float32 (``width`` 32) or float64 (64) value to ``fmt``'s ``i8`` code."""
    width, man, bias = _SOURCE[width]
    ity = _like(value, ir.IntType(width))

    def c(number: int) -> ir.Constant:
        return _const(ity, number)

    m = fmt.man_bits
    bits = b.bitcast(value, ity)
    sign = b.and_(b.lshr(bits, c(width - 8)), c(0x80))
    mag = b.and_(bits, c((1 << (width - 1)) - 1))
    exp_field = b.lshr(mag, c(man))
    # Normal results: round half to even at the float8 mantissa width (a carry moves into
    # the exponent, as rounding wants), then rebias. Wraps for lanes the select discards.
    shift = man - m
    lsb = b.and_(b.lshr(mag, c(shift)), c(1))
    rounded = b.lshr(b.add(b.add(mag, c((1 << (shift - 1)) - 1)), lsb), c(shift))
    normal = b.sub(rounded, c((bias - fmt.bias) << m))
    # Subnormal results: the significand with its implicit bit, shifted so that one unit is
    # the smallest subnormal. The shift is clamped to width-1 (an LLVM shift by >= width is
    # poison); that far down every value rounds to 0 anyway.
    significand = b.or_(b.and_(mag, c((1 << man) - 1)), c(1 << man))
    raw_shift = b.sub(c(man - m + fmt.min_exponent + bias), exp_field)
    in_range = b.icmp_unsigned("<", raw_shift, c(width - 1))
    sub_shift = b.select(in_range, raw_shift, c(width - 1))
    sub_lsb = b.and_(b.lshr(significand, sub_shift), c(1))
    half = b.shl(c(1), b.sub(sub_shift, c(1)))
    sub = b.lshr(b.add(b.add(significand, b.sub(half, c(1))), sub_lsb), sub_shift)
    is_normal = b.icmp_unsigned(">=", exp_field, c(fmt.min_exponent + bias))
    code = b.select(is_normal, normal, sub)
    # Too large (infinities included): NaN for e4m3fn, infinity for e5m2.
    overflow = b.icmp_unsigned(">", code, c(fmt.overflow_code))
    code = b.select(overflow, c(fmt.overflow_code), code)
    is_nan = b.icmp_unsigned(">", mag, c(((1 << (width - 1 - man)) - 1) << man))
    code = b.select(is_nan, c(fmt.nan_code), code)
    i8 = _like(value, ir.IntType(8))
    return b.trunc(b.or_(code, sign), i8)


def _decode(b: ir.IRBuilder, value: ir.Value, fmt: Float8Format) -> ir.Value:
    """The float32 value of an ``i8`` float8 code (exact)."""
    ity = _like(value, ir.IntType(32))

    def c(number: int) -> ir.Constant:
        return _const(ity, number)

    m = fmt.man_bits
    e_mask, m_mask = (1 << fmt.exp_bits) - 1, (1 << m) - 1
    u = b.zext(value, ity)
    sign = b.shl(b.lshr(u, c(7)), c(31))
    exp_field = b.and_(b.lshr(u, c(m)), c(e_mask))
    man_field = b.and_(u, c(m_mask))
    normal = b.or_(
        b.or_(sign, b.shl(b.add(exp_field, c(127 - fmt.bias)), c(23))),
        b.shl(man_field, c(23 - m)),
    )
    fty = _like(value, ir.FloatType())
    # Subnormals: mantissa * 2**(min_exponent - man_bits), exact in float32.
    scaled = b.fmul(b.uitofp(man_field, fty), _const(fty, 2.0 ** (fmt.min_exponent - m)))
    sub = b.or_(b.bitcast(scaled, ity), sign)
    out = b.select(b.icmp_unsigned("==", exp_field, c(0)), sub, normal)
    if fmt.has_inf:
        top = b.icmp_unsigned("==", exp_field, c(e_mask))
        is_inf = b.icmp_unsigned("==", man_field, c(0))
        special = b.or_(b.select(is_inf, c(0x7F80_0000), c(0x7FC0_0000)), sign)
        out = b.select(top, special, out)
    else:
        is_nan = b.icmp_unsigned("==", b.and_(u, c(0x7F)), c(0x7F))
        out = b.select(is_nan, b.or_(c(0x7FC0_0000), sign), out)
    return b.bitcast(out, fty)
