"""Vectorizable float32 ``tanh``, ``sin``, ``cos``, ``tan``, ``sinh``, ``cosh``, ``atan``,
``asin``, ``acos``, ``asinh``, ``acosh`` and ``atanh``, computed in float64 lanes.

The libm calls these replace (``sinf`` and friends) are scalar: in a vectorized loop LLVM
emits one call per lane, several times slower than numpy's SIMD loops. Here each function is
plain vector arithmetic (``fma``, ``sqrt``, division, selects and integer bit
operations), so a ``<32 x float>`` lane group stays in vector registers.

Why float64 inside: every float32 input is exact in float64, and a float64 evaluation whose
relative error stays below ``3e-10`` (0.005 float32 ulp) rounds to within 1 ulp of the true
value, almost always to the correctly rounded one (measured over dense sweeps in
``tests/targets/llvm/test_vector_math.py``), without a float32 error analysis for each
function (extra-precise products, split constants). The cost is half the lanes per register
(a float32 SIMD library such as numpy's does about half the work), still far below a libm
call per lane. The polynomials are Taylor series shortened by Chebyshev economization on
their ranges (exact rational arithmetic, :mod:`.math_series`; no fitted constants):

* ``sin``/``cos``/``tan``: ``k = round(|x| * 2/pi)``, ``r = |x| - k * pi/2`` with ``pi/2``
  split in three float64 parts (the first with 33 bits, so ``k * part`` is exact for the
  ``k`` below the limit; ``k`` is rounded by adding ``1.5 * 2**52``, whose low bits then hold
  ``k mod 4``), then ``sin(r)`` and ``cos(r)`` on ``|r| <= pi/4`` picked by the
  quadrant ``k mod 4``; ``tan`` divides them. Lanes with ``|x| > 1e5`` (where ``r`` would start
  to lose bits), infinities and NaN take a cold branch, entered only when some lane needs it,
  that calls libm's float32 function for those lanes: exact results for huge arguments and
  libm's NaN for infinities.
* ``tanh``, ``sinh``, ``cosh``: from ``m = e**|x| - 1`` in float64 (``(2**n - 1) + 2**n *
  (e**r - 1)``, Cody-Waite with a split ``ln 2``, accurate relative to ``m`` even for tiny
  ``|x|``) and ``m' = e**-|x| - 1`` (``-n``, ``-r``): ``tanh = m / (m + 2)`` (of ``2|x|``),
  ``sinh = (m - m') / 2``, ``cosh = (m + m' + 2) / 2``, no cancellation anywhere. Arguments are clamped (``tanh`` at 20, the
  others at 100) where the float32 result is already ``+-1`` or overflows to infinity.
* ``atan``: ``atan(n / d)`` for ``0 <= n <= d`` (otherwise ``pi/2 - atan(d / n)``), reduced
  once more around ``tan(pi/8)`` by ``atan(u) = pi/4 + atan((u - 1) / (u + 1))``, all with one
  division.
* ``asin``, ``acos``: the ``asin`` series up to ``|x| = 1/2``, and above it ``asin(|x|) = pi/2 -
  2 asin(w)`` with ``w = sqrt((1 - |x|) / 2) <= 1/2`` (``1 - |x|`` is exact); ``acos`` is
  ``pi/2 - asin(x)``, ``2 asin(w)`` or ``pi - 2 asin(w)``.
* ``asinh``, ``acosh``, ``atanh``: ``log`` in float64 (exponent bits plus the ``atanh``
  series of the mantissa), a series below ``|x| = 1/8`` for ``asinh`` and ``atanh``.

Odd functions are evaluated on ``|x|`` and take ``x``'s sign bit, so ``-0.0`` stays ``-0.0``.
NaN inputs give back ``x`` (sanitized to 0 first, so the integer bit tricks only ever see
finite values).
"""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction
from typing import Any

import llvmlite.ir as ir

from .lltypes import I32, I64
from .math_series import COEFFS

__all__ = ["VECTOR_FUNCS", "vector_math_f32"]

F32 = ir.FloatType()
F64 = ir.DoubleType()

# pi to 60 digits (a well-known constant): math.pi alone is off by 1.2e-16, which k * pi/2
# would multiply by up to 1e5.
_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494")
_PIO2 = _PI / 2
_PIO2_HI = float(Fraction(round(_PIO2 * 2**32), 2**32))  # 33 bits: k * HI exact below 2**20
_PIO2_MID = float(_PIO2 - Fraction(_PIO2_HI))
_PIO2_LO = float(_PIO2 - Fraction(_PIO2_HI) - Fraction(_PIO2_MID))
#: Above this |x| the Cody-Waite reduction is no longer trusted: libm takes those lanes.
TRIG_LIMIT = 1e5

_SHIFTER = 1.5 * 2.0**52
_LN2 = Fraction(Context(prec=50).ln(Decimal(2)))
_LN2_HI = float(Fraction(round(_LN2 * 2**32), 2**32))
_LN2_LO = float(_LN2 - Fraction(_LN2_HI))

_TAN_PI_8 = math.tan(math.pi / 8)
_SIN, _COS, _ASIN, _ATAN = (COEFFS[name] for name in ("sin", "cos", "asin", "atan"))
_ASINH, _ATANH, _LOG = (COEFFS[name] for name in ("asinh", "atanh", "log"))
#: e**(s*r) - 1 = r * E_s(r): s = 2 gives tanh's e**(2|x|) with no multiplication.
_EXPM1 = {1: COEFFS["expm1"], 2: COEFFS["expm1_2x"]}

VECTOR_FUNCS = frozenset(
    ("tanh", "sin", "cos", "tan", "sinh", "cosh", "atan", "asin", "acos", "asinh", "acosh",
     "atanh")
)  # fmt: skip


class _Math:
    """Builders for one call: scalar or ``count``-lane vector float64 arithmetic."""

    def __init__(self, gen: Any, count: int) -> None:
        self.gen = gen
        self.b: ir.IRBuilder = gen.builder
        self.count = count
        self.f64 = ir.VectorType(F64, count) if count else F64
        self.i64 = ir.VectorType(I64, count) if count else I64
        self.i32 = ir.VectorType(I32, count) if count else I32

    def c(self, value: float) -> Any:
        return ir.Constant(self.f64, [value] * self.count if self.count else value)

    def ci(self, ty: ir.Type, value: int) -> Any:
        return ir.Constant(ty, [value] * self.count if self.count else value)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.gen.intrinsic("fma", [a, b, c])

    def horner(self, coeffs: tuple[float, ...], x: ir.Value) -> ir.Value:
        poly = self.c(coeffs[0])
        for coeff in coeffs[1:]:
            poly = self.fma(poly, x, self.c(coeff))
        return poly

    def odd_series(self, coeffs: tuple[float, ...], a: ir.Value) -> ir.Value:
        """``a + a * a**2 * P(a**2)``."""
        z = self.b.fmul(a, a)
        return self.fma(self.b.fmul(a, z), self.horner(coeffs, z), a)

    def lt(self, x: ir.Value, value: float) -> ir.Value:
        return self.b.fcmp_ordered("<", x, self.c(value))

    def gt(self, x: ir.Value, value: float) -> ir.Value:
        return self.b.fcmp_ordered(">", x, self.c(value))

    def min(self, x: ir.Value, value: float) -> ir.Value:
        return self.b.select(self.gt(x, value), self.c(value), x)

    def nearest(self, y: ir.Value, factor: float) -> tuple[ir.Value, ir.Value]:
        """``n = round(y * factor)`` (ties to even) as a float64 and, as an int64, a number
        congruent to ``n`` modulo ``2**51``, for ``|y * factor| < 2**50``: adding
        ``1.5 * 2**52`` rounds to an integer in the low mantissa bits (cheaper than
        ``roundeven`` plus a conversion)."""
        b = self.b
        shifted = self.fma(y, self.c(factor), self.c(_SHIFTER))
        return b.fsub(shifted, self.c(_SHIFTER)), b.bitcast(shifted, self.i64)

    def expm1(self, y: ir.Value, s: int = 1, both: bool = False) -> list[ir.Value]:
        """``[e**(s*y) - 1]`` for finite ``0 <= s*y < 700``, accurate relative to the result
        for small ``y`` too: ``(2**n - 1) + 2**n * (e**r - 1)``, with no cancellation for
        ``n >= 1`` (the sum is at least 0.4) and ``2**n - 1`` exact. ``both`` appends
        ``e**(-s*y) - 1`` from the same ``n`` and ``r`` negated: a second polynomial is much
        cheaper than the division ``1 / e**y`` (16 cycles per 8 lanes on some CPUs)."""
        b = self.b
        n, low = self.nearest(y, s / math.log(2.0))
        r = self.fma(n, self.c(-_LN2_HI / s), y)
        r = self.fma(n, self.c(-_LN2_LO / s), r)
        out = []
        for sign in (1, -1) if both else (1,):
            # (2**51 +- n + 1023) << 52 keeps only 1023 +- n: the biased exponent of 2**+-n
            biased = (
                b.add(low, self.ci(self.i64, 1023))
                if sign > 0
                else b.sub(self.ci(self.i64, 1023), low)
            )
            scale = b.bitcast(b.shl(biased, self.ci(self.i64, 52)), self.f64)
            arg = r if sign > 0 else b.fneg(r)
            small = b.fmul(arg, self.horner(_EXPM1[s], arg))
            out.append(self.fma(scale, small, b.fsub(scale, self.c(1.0))))
        return out

    def split(self, y: ir.Value) -> tuple[ir.Value, ir.Value]:
        """``y = m * 2**e`` for a positive normal ``y``: ``m`` in [1, 2) and ``e`` (int64)."""
        b, i64 = self.b, self.i64
        bits = b.bitcast(y, i64)
        exponent = b.sub(b.lshr(bits, self.ci(i64, 52)), self.ci(i64, 1023))
        mantissa = b.or_(b.and_(bits, self.ci(i64, (1 << 52) - 1)), self.ci(i64, 1023 << 52))
        return b.bitcast(mantissa, self.f64), exponent

    def log(self, num: ir.Value, den: ir.Value | None = None) -> ir.Value:
        """``log(num / den)`` (``den`` 1 by default) for finite ``num, den`` with ``num / den
        >= 1`` (other lanes give garbage, never poison), with one division: ``e * ln 2 +
        log(m)`` where ``m = m_num / m_den`` (mantissas, one of them doubled when needed) is
        in ``[sqrt(1/2), sqrt(2))``, and ``log(m) = 2 atanh(f)``, ``f = (m_num - m_den) /
        (m_num + m_den)`` (an exact difference)."""
        b, i64 = self.b, self.i64
        top, exponent = self.split(num)
        if den is None:
            bottom = self.c(1.0)
        else:
            bottom, den_exponent = self.split(den)
            exponent = b.sub(exponent, den_exponent)
            low = b.fcmp_ordered("<", top, b.fmul(bottom, self.c(math.sqrt(0.5))))
            top = b.select(low, b.fadd(top, top), top)
            exponent = b.sub(exponent, b.zext(low, i64))
        high = b.fcmp_ordered(">", top, b.fmul(bottom, self.c(math.sqrt(2.0))))
        bottom = b.select(high, b.fadd(bottom, bottom), bottom)
        exponent = b.add(exponent, b.zext(high, i64))
        f = b.fdiv(b.fsub(top, bottom), b.fadd(top, bottom))
        twice = b.fadd(f, f)
        log_m = self.fma(b.fmul(twice, b.fmul(f, f)), self.horner(_LOG, b.fmul(f, f)), twice)
        return self.fma(b.sitofp(exponent, self.f64), self.c(math.log(2.0)), log_m)

    def atan_ratio(self, num: ir.Value, den: ir.Value) -> ir.Value:
        """``atan(num / den)`` for ``num, den >= 0``, not both 0, with one division: for
        ``t = p / q <= 1`` (``p, q`` the smaller and larger), ``atan(t)`` is the series of ``t``
        up to ``tan(pi/8)`` and ``pi/4 + atan((p - q) / (p + q))`` above it; ``num > den``
        gives ``pi/2 - atan(den / num)``."""
        b = self.b
        below = b.fcmp_ordered("<=", num, den)
        p, q = b.select(below, num, den), b.select(below, den, num)
        mid = b.fcmp_ordered(">", p, b.fmul(q, self.c(_TAN_PI_8)))
        v = b.fdiv(b.select(mid, b.fsub(p, q), p), b.select(mid, b.fadd(p, q), q))
        angle = b.fadd(b.select(mid, self.c(math.pi / 4), self.c(0.0)), self.odd_series(_ATAN, v))
        return b.select(below, angle, b.fsub(self.c(math.pi / 2), angle))

    def sin_cos(self, a: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """``sin(r)``, ``cos(r)`` and the quadrant ``k mod 4`` (int32) for ``a = k*pi/2 + r``,
        ``0 <= a <= TRIG_LIMIT``."""
        b = self.b
        k, low = self.nearest(a, 2.0 / math.pi)
        r = self.fma(k, self.c(-_PIO2_HI), a)
        r = self.fma(k, self.c(-_PIO2_MID), r)
        r = self.fma(k, self.c(-_PIO2_LO), r)
        z = b.fmul(r, r)
        sin_r = self.fma(b.fmul(r, z), self.horner(_SIN, z), r)
        cos_r = self.fma(z, self.horner(_COS, z), self.c(1.0))
        quadrant = b.and_(b.trunc(low, self.i32), self.ci(self.i32, 3))  # 2**51 is 0 mod 4
        return sin_r, cos_r, quadrant


def vector_math_f32(gen: Any, short: str, x: ir.Value) -> ir.Value:
    """``short(x)`` (a name in :data:`VECTOR_FUNCS`) for a float32 scalar or vector ``x``
    (``gen`` is the expression generator); see the module docstring."""
    b: ir.IRBuilder = gen.builder
    count = x.type.count if isinstance(x.type, ir.VectorType) else 0
    m = _Math(gen, count)
    i32 = m.i32
    is_nan = b.fcmp_unordered("uno", x, x)
    wide = b.select(is_nan, m.c(0.0), b.fpext(x, m.f64))
    a = gen.intrinsic("fabs", [wide])
    odd = short not in ("cos", "cosh", "acos", "acosh")
    trig = short in ("sin", "cos", "tan")
    if trig:
        # The libm branch handles these lanes; 0 keeps the fast path free of poison.
        outside = b.not_(b.fcmp_ordered("<=", a, m.c(TRIG_LIMIT)))
        a = b.select(outside, m.c(0.0), a)
    value = _evaluate(m, short, a, wide)
    result = b.fptrunc(value, x.type)
    if odd:
        sign_mask = ir.Constant(i32, [1 << 31] * count if count else 1 << 31)
        sign = b.and_(b.bitcast(x, i32), sign_mask)
        result = b.bitcast(b.xor(b.bitcast(result, i32), sign), x.type)
    result = b.select(is_nan, x, result)
    if trig:
        result = _libm_lanes(gen, short, x, result, outside)
    return result


def _evaluate(m: _Math, short: str, a: ir.Value, wide: ir.Value) -> ir.Value:
    """``short`` of ``|x| = a`` (``wide`` is ``x`` in float64, needed by ``acos``/``acosh``),
    before the sign of odd functions is applied."""
    b = m.b
    if short in ("sin", "cos", "tan"):
        sin_r, cos_r, quadrant = m.sin_cos(a)
        bool_type = ir.VectorType(ir.IntType(1), m.count) if m.count else ir.IntType(1)
        swap = b.trunc(quadrant, bool_type)
        if short == "tan":
            num = b.select(swap, b.fneg(cos_r), sin_r)
            return b.fdiv(num, b.select(swap, sin_r, cos_r))
        if short == "sin":
            value = b.select(swap, cos_r, sin_r)
            negate = b.and_(quadrant, m.ci(m.i32, 2))
        else:
            value = b.select(swap, sin_r, cos_r)
            negate = b.and_(b.add(quadrant, m.ci(m.i32, 1)), m.ci(m.i32, 2))
        flip = b.icmp_unsigned("!=", negate, m.ci(m.i32, 0))
        return b.select(flip, b.fneg(value), value)
    if short == "tanh":
        (em1,) = m.expm1(m.min(a, 20.0), 2)
        return b.fdiv(em1, b.fadd(em1, m.c(2.0)))
    if short in ("sinh", "cosh"):
        # (e**a - 1) - (e**-a - 1): opposite signs, so no cancellation for small a
        up, down = m.expm1(m.min(a, 100.0), both=True)
        if short == "sinh":
            return b.fmul(b.fsub(up, down), m.c(0.5))
        return b.fmul(b.fadd(b.fadd(up, down), m.c(2.0)), m.c(0.5))
    if short == "atan":
        return m.atan_ratio(a, m.c(1.0))
    if short in ("asin", "acos"):
        # Above 1/2: asin(a) = pi/2 - 2 asin(w), w = sqrt((1 - a) / 2) <= 1/2 (exact argument).
        high = m.gt(a, 0.5)
        w = m.gen.intrinsic("sqrt", [b.fmul(b.fsub(m.c(1.0), a), m.c(0.5))])  # NaN above 1
        t = b.select(high, w, a)
        series = m.odd_series(_ASIN, t)
        if short == "asin":
            return b.select(high, m.fma(series, m.c(-2.0), m.c(math.pi / 2)), series)
        # acos(x) = pi/2 - asin(x) for |x| <= 1/2; 2 asin(w) or pi - 2 asin(w) above.
        negative = m.lt(wide, 0.0)
        signed = b.select(negative, b.fneg(series), series)
        low_value = b.fsub(m.c(math.pi / 2), signed)
        high_value = b.select(
            negative, m.fma(series, m.c(-2.0), m.c(math.pi)), b.fadd(series, series)
        )
        return b.select(high, high_value, low_value)
    if short == "asinh":
        root = m.gen.intrinsic("sqrt", [m.fma(a, a, m.c(1.0))])
        big = m.log(b.fadd(a, root))
        big = b.select(m.gt(a, 1e300), a, big)  # infinity
        return b.select(m.lt(a, 0.125), m.odd_series(_ASINH, a), big)
    if short == "acosh":
        root = m.gen.intrinsic("sqrt", [m.fma(wide, wide, m.c(-1.0))])
        value = m.log(b.fadd(wide, root))
        value = b.select(m.gt(wide, 1e300), wide, value)
        return b.select(b.fcmp_ordered(">=", wide, m.c(1.0)), value, m.c(math.nan))
    if short == "atanh":
        big = b.fmul(m.log(b.fadd(m.c(1.0), a), b.fsub(m.c(1.0), a)), m.c(0.5))
        value = b.select(m.lt(a, 0.125), m.odd_series(_ATANH, a), big)
        value = b.select(b.fcmp_ordered("==", a, m.c(1.0)), m.c(math.inf), value)
        return b.select(m.gt(a, 1.0), m.c(math.nan), value)
    raise m.gen.error(f"intrinsic {short!r} has no vector implementation")


def _libm_lanes(
    gen: Any,
    short: str,
    x: ir.Value,
    fast: ir.Value,
    outside: ir.Value,
) -> ir.Value:
    """``fast`` with the lanes in ``outside`` (|x| > TRIG_LIMIT, infinite or NaN) replaced by
    libm's float32 function, in a branch taken only when some lane is outside."""
    b: ir.IRBuilder = gen.builder
    fn = gen.declare(f"{short}f", F32, [F32])
    if isinstance(x.type, ir.VectorType):
        count = x.type.count
        reduce = gen.declare(f"llvm.vector.reduce.or.v{count}i1", ir.IntType(1), [outside.type])
        any_outside = b.call(reduce, [outside])
    else:
        any_outside = outside
    entry = b.block
    with b.if_then(any_outside, likely=False):
        if isinstance(x.type, ir.VectorType):
            slow = fast
            for lane in range(x.type.count):
                index = I32(lane)
                item = b.call(fn, [b.extract_element(x, index)])
                keep = b.extract_element(fast, index)
                item = b.select(b.extract_element(outside, index), item, keep)
                slow = b.insert_element(slow, item, index)
        else:
            slow = b.call(fn, [x])
        slow_block = b.block
    merged = b.phi(x.type)
    merged.add_incoming(fast, entry)
    merged.add_incoming(slow, slow_block)
    return merged
