"""Math intrinsics for NVPTX, built only from operations NVPTX lowers.

An LLVM intrinsic with no NVPTX lowering (``llvm.exp.f32``, ``llvm.log2.f32``,
``llvm.sin.f64``...) is a *fatal* LLVM error that ends the process, so every call goes through
:data:`LLVM_INTRINSICS`, an explicit whitelist (each entry checked by generating PTX in a
subprocess; see ``reference/llvmlite_notes.md`` section 5), and everything else is arithmetic:

* ``exp``/``exp2``: ``2**n * p(r)`` with ``n`` rounded, ``r`` reduced (Cody-Waite for
  ``exp``, exact for ``exp2``), ``p`` a Taylor polynomial (degree 7 in float32, 13 in
  float64) and ``2**n`` built from exponent bits in two halves (subnormal results stay right);
* ``log``/``log2``: exponent and mantissa from the bits (subnormals scaled first), the
  mantissa in ``[sqrt(1/2), sqrt(2))`` through ``2 * atanh(s)`` as an odd series;
* ``tanh``, ``sigmoid``, ``sinh``, ``cosh``: from ``exp`` (series near 0 where the formula
  cancels); ``erf``: float32 as the LLVM target's vector ``erf``, float64 as a series below 2
  and a continued fraction of ``erfc`` above;
* ``sin``/``cos``/``tan``: reduction by ``pi/2`` in two parts (FMA) and Taylor polynomials on
  ``[-pi/4, pi/4]``; inverse and hyperbolic functions through ``atan``, ``log`` and
  ``log1p``; ``pow`` by binary powering for integral exponents below 2048 when every
  product is exact (so integral results are exact), else as ``exp(y * log|x|)``, with C99's
  (numpy's) signs and special cases.

Float16 is computed in float32 and rounded once; float32 functions other than ``exp``,
``exp2``, ``log``, ``log2``, ``tanh``, ``sigmoid`` and ``erf`` are computed in float64.
Accuracy is a few ulps, except that trigonometric arguments beyond about ``1e9`` lose
precision (the reduction uses a 2-part ``pi/2``, not Payne-Hanek).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import llvmlite.ir as ir

from relaxvm.ir.tir import Call
from relaxvm.ir.tir.intrin import BitwiseCall
from relaxvm.runtime.dtype import DataType
from relaxvm_llvm import codegen_math as cpu_math
from relaxvm_llvm.lltypes import I32, I64, Lane

__all__ = ["LLVM_INTRINSICS", "compute_type", "emit_math_call"]

#: The LLVM intrinsics this target emits, by name and type suffix (all lower on NVPTX).
#: ``llvm.exp2.f64``, ``llvm.log2.*``, ``llvm.exp.*``, ``llvm.log.*``, ``llvm.pow.*``,
#: ``llvm.sin.*``, ``llvm.cos.*`` abort the process and are absent on purpose.
LLVM_INTRINSICS: dict[str, frozenset[str]] = {
    name: frozenset({"f16", "f32", "f64"})
    for name in (
        "fma", "sqrt", "fabs", "floor", "ceil", "trunc", "roundeven", "rint",
        "copysign", "minnum", "maxnum",
    )
}  # fmt: skip
LLVM_INTRINSICS["exp2"] = frozenset({"f16", "f32"})

_F32 = DataType("float32")
_F64 = DataType("float64")
_LN2 = math.log(2.0)
_LOG2E = 1.0 / _LN2
# ln 2 in two parts: n * _LN2_HI is exact for |n| < 2**11 (float64) / 2**9 (float32).
_LN2_HI = {32: 0.693359375, 64: 0.6931471803691238}
_LN2_LO = {32: _LN2 - 0.693359375, 64: 1.9082149292705877e-10}
# pi / 2 as a 33-bit head (k * head is exact) and its tail (fdlibm's pio2_1, pio2_1t).
_PIO2 = (1.5707963267341256, 6.077100506506192e-11)


def _c(ty: ir.Type, value: float) -> Any:
    return ir.Constant(ty, value)


def _int_type(ty: ir.Type) -> ir.IntType:
    return I64 if isinstance(ty, ir.DoubleType) else I32


def _bits(ty: ir.Type) -> int:
    return 64 if isinstance(ty, ir.DoubleType) else 32


class _Math:
    """Scalar math on one float type, emitting through ``gen`` (the function generator)."""

    def __init__(self, gen: Any, ty: ir.Type) -> None:
        self.gen = gen
        self.b: ir.IRBuilder = gen.builder
        self.ty = ty
        self.bits = _bits(ty)

    def k(self, value: float) -> Any:
        return _c(self.ty, value)

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        return self.gen.intrinsic(name, list(args))

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.call("fma", a, b, c)

    def poly(self, coeffs: list[float], x: ir.Value) -> ir.Value:
        """Horner's rule, highest degree first."""
        acc = self.k(coeffs[0])
        for coeff in coeffs[1:]:
            acc = self.fma(acc, x, self.k(coeff))
        return acc

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", a, b)

    def is_nan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    # ---- exp ------------------------------------------------------------------------------
    def scale(self, poly: ir.Value, n: ir.Value) -> ir.Value:
        """``poly * 2**n`` for an integral float ``n`` (clamped by the caller), in two
        halves so that neither factor over- or underflows on its own."""
        b, it = self.b, _int_type(self.ty)
        k = b.fptosi(n, it)
        half = b.ashr(k, ir.Constant(it, 1))
        rest = b.sub(k, half)
        bias, shift = (1023, 52) if self.bits == 64 else (127, 23)
        out = poly
        for part in (half, rest):
            word = b.shl(b.add(part, ir.Constant(it, bias)), ir.Constant(it, shift))
            out = b.fmul(out, b.bitcast(word, self.ty))
        return out

    def exp_poly(self, r: ir.Value) -> ir.Value:
        degree = 13 if self.bits == 64 else 7
        return self.poly([1.0 / math.factorial(d) for d in range(degree, -1, -1)], r)

    def clamp_input(self, x: ir.Value, low: float, high: float) -> ir.Value:
        x = self.select(self.b.fcmp_ordered(">", x, self.k(high)), self.k(high), x)
        x = self.select(self.lt(x, self.k(low)), self.k(low), x)
        return self.select(self.is_nan(x), self.k(0.0), x)

    def exp(self, x: ir.Value) -> ir.Value:
        if self.bits == 32:
            return cpu_math.exp_f32(self.gen, x)
        clamped = self.clamp_input(x, -746.0, 710.0)
        n = self.call("roundeven", self.b.fmul(clamped, self.k(_LOG2E)))
        r = self.fma(n, self.k(-_LN2_HI[64]), clamped)
        r = self.fma(n, self.k(-_LN2_LO[64]), r)
        return self.select(self.is_nan(x), x, self.scale(self.exp_poly(r), n))

    def exp2(self, x: ir.Value) -> ir.Value:
        high = 1024.0 if self.bits == 64 else 128.0
        low = -1075.0 if self.bits == 64 else -150.0
        clamped = self.clamp_input(x, low, high)
        n = self.call("roundeven", clamped)
        r = self.b.fmul(self.b.fsub(clamped, n), self.k(_LN2))  # x - n is exact
        return self.select(self.is_nan(x), x, self.scale(self.exp_poly(r), n))

    # ---- log ------------------------------------------------------------------------------
    def log_parts(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """``(e, log(m))`` with ``x = m * 2**e``, ``m`` in ``[sqrt(1/2), sqrt(2))``, for
        finite positive ``x`` (the callers patch the special cases)."""
        b, it = self.b, _int_type(self.ty)
        mant_bits, bias = (52, 1023) if self.bits == 64 else (23, 127)
        tiny = 2.0 ** -(bias - 1)  # smallest normal
        sub = self.lt(x, self.k(tiny))
        x = self.select(sub, b.fmul(x, self.k(2.0**mant_bits)), x)
        word = b.bitcast(x, it)
        expo = b.sub(b.lshr(word, ir.Constant(it, mant_bits)), ir.Constant(it, bias))
        mask = (1 << mant_bits) - 1
        mant_word = b.or_(b.and_(word, ir.Constant(it, mask)), ir.Constant(it, bias << mant_bits))
        m = b.bitcast(mant_word, self.ty)  # in [1, 2)
        big = b.fcmp_ordered(">", m, self.k(math.sqrt(2.0)))
        m = self.select(big, b.fmul(m, self.k(0.5)), m)
        e = b.sitofp(expo, self.ty)
        e = self.select(big, b.fadd(e, self.k(1.0)), e)
        e = self.select(sub, b.fsub(e, self.k(float(mant_bits))), e)
        f = b.fsub(m, self.k(1.0))
        s = b.fdiv(f, b.fadd(f, self.k(2.0)))
        s2 = b.fmul(s, s)
        terms = 11 if self.bits == 64 else 5
        series = self.poly([2.0 / (2 * j + 1) for j in range(terms, -1, -1)], s2)
        return e, b.fmul(s, series)

    def log_special(self, x: ir.Value, finite: ir.Value) -> ir.Value:
        """numpy's log at 0 (-inf), negatives (NaN), +inf and NaN (themselves)."""
        b = self.b
        out = self.select(b.fcmp_ordered("==", x, self.k(math.inf)), x, finite)
        out = self.select(self.lt(x, self.k(0.0)), self.k(math.nan), out)
        out = self.select(b.fcmp_ordered("==", x, self.k(0.0)), self.k(-math.inf), out)
        return self.select(self.is_nan(x), x, out)

    def log(self, x: ir.Value) -> ir.Value:
        e, lm = self.log_parts(x)
        hi = self.fma(e, self.k(_LN2_HI[self.bits]), lm)
        return self.log_special(x, self.fma(e, self.k(_LN2_LO[self.bits]), hi))

    def log2(self, x: ir.Value) -> ir.Value:
        e, lm = self.log_parts(x)
        return self.log_special(x, self.fma(lm, self.k(_LOG2E), e))

    def log1p(self, u: ir.Value) -> ir.Value:
        """``log(1 + u)`` without losing ``u`` (Goldberg: scale by ``u / ((1 + u) - 1)``)."""
        b = self.b
        w = b.fadd(self.k(1.0), u)
        d = b.fsub(w, self.k(1.0))
        exact = b.fcmp_ordered("==", d, self.k(0.0))
        safe_d = self.select(exact, self.k(1.0), d)
        scaled = b.fmul(self.log(w), b.fdiv(u, safe_d))
        out = self.select(exact, u, scaled)
        return self.select(b.fcmp_ordered("==", w, self.k(math.inf)), w, out)

    # ---- hyperbolic -----------------------------------------------------------------------
    def tanh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.call("fabs", x)
        terms = 20 if self.bits == 64 else 10
        x2 = b.fmul(x, x)
        small = b.fmul(x, self.poly(_tanh_coeffs(terms), x2))
        e = self.exp(b.fmul(a, self.k(2.0)))
        big = b.fsub(self.k(1.0), b.fdiv(self.k(2.0), b.fadd(e, self.k(1.0))))
        return self.select(self.lt(a, self.k(0.5)), small, self.call("copysign", big, x))

    def sigmoid(self, x: ir.Value) -> ir.Value:
        one = self.k(1.0)
        return self.b.fdiv(one, self.b.fadd(one, self.exp(self.b.fneg(x))))

    def sinh(self, x: ir.Value) -> ir.Value:
        b = self.b
        e = self.exp(self.call("fabs", x))
        big = b.fmul(b.fsub(e, b.fdiv(self.k(1.0), e)), self.k(0.5))
        coeffs = [1.0 / math.factorial(2 * j + 1) for j in range(10, -1, -1)]
        small = b.fmul(x, self.poly(coeffs, b.fmul(x, x)))
        small_x = self.lt(self.call("fabs", x), self.k(0.5))
        return self.select(small_x, small, self.call("copysign", big, x))

    def cosh(self, x: ir.Value) -> ir.Value:
        e = self.exp(self.call("fabs", x))
        return self.b.fmul(self.b.fadd(e, self.b.fdiv(self.k(1.0), e)), self.k(0.5))

    def asinh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.call("fabs", x)
        a2 = b.fmul(a, a)
        root = self.call("sqrt", b.fadd(a2, self.k(1.0)))
        near = self.log1p(b.fadd(a, b.fdiv(a2, b.fadd(root, self.k(1.0)))))
        far = b.fadd(self.log(a), self.k(_LN2))
        out = self.select(b.fcmp_ordered(">", a, self.k(1e8)), far, near)
        return self.call("copysign", out, x)

    def acosh(self, x: ir.Value) -> ir.Value:
        b = self.b
        t = b.fsub(x, self.k(1.0))
        near = self.log1p(b.fadd(t, self.call("sqrt", b.fmul(t, b.fadd(x, self.k(1.0))))))
        far = b.fadd(self.log(x), self.k(_LN2))
        return self.select(b.fcmp_ordered(">", x, self.k(1e8)), far, near)

    def atanh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.call("fabs", x)
        inner = self.log1p(b.fdiv(b.fmul(a, self.k(2.0)), b.fsub(self.k(1.0), a)))
        return self.call("copysign", b.fmul(inner, self.k(0.5)), x)

    # ---- trigonometric --------------------------------------------------------------------
    def sin_cos(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        b = self.b
        k = self.call("roundeven", b.fmul(x, self.k(2.0 / math.pi)))
        r = x
        for part in _PIO2:
            r = self.fma(b.fneg(k), self.k(part), r)
        r2 = b.fmul(r, r)
        sin_r = b.fmul(r, self.poly([(-1) ** j / math.factorial(2 * j + 1)
                                     for j in range(9, -1, -1)], r2))  # fmt: skip
        cos_r = self.poly([(-1) ** j / math.factorial(2 * j) for j in range(9, -1, -1)], r2)
        quarter = b.fmul(k, self.k(0.25))
        q = b.fsub(k, b.fmul(self.call("floor", quarter), self.k(4.0)))  # k mod 4, exact

        def quadrant(value: float) -> ir.Value:
            return b.fcmp_ordered("==", q, self.k(value))

        sin = self.select(quadrant(0.0), sin_r, b.fneg(sin_r))
        sin = self.select(quadrant(1.0), cos_r, sin)
        sin = self.select(quadrant(3.0), b.fneg(cos_r), sin)
        cos = self.select(quadrant(0.0), cos_r, b.fneg(cos_r))
        cos = self.select(quadrant(1.0), b.fneg(sin_r), cos)
        cos = self.select(quadrant(3.0), sin_r, cos)
        return sin, cos

    def atan(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.call("fabs", x)
        inverted = b.fcmp_ordered(">", a, self.k(1.0))
        a = self.select(inverted, b.fdiv(self.k(1.0), a), a)
        shifted = b.fcmp_ordered(">", a, self.k(math.sqrt(2.0) - 1.0))
        a = self.select(shifted, b.fdiv(b.fsub(a, self.k(1.0)), b.fadd(a, self.k(1.0))), a)
        terms = 24 if self.bits == 64 else 10
        a2 = b.fmul(a, a)
        value = b.fmul(a, self.poly([(-1) ** j / (2 * j + 1) for j in range(terms, -1, -1)], a2))
        value = self.select(shifted, b.fadd(value, self.k(math.pi / 4)), value)
        value = self.select(inverted, b.fsub(self.k(math.pi / 2), value), value)
        return self.call("copysign", value, x)

    def asin(self, x: ir.Value) -> ir.Value:
        b = self.b
        root = self.call("sqrt", b.fmul(b.fsub(self.k(1.0), x), b.fadd(self.k(1.0), x)))
        return self.atan(b.fdiv(x, root))

    def acos(self, x: ir.Value) -> ir.Value:
        b = self.b
        ratio = b.fdiv(b.fsub(self.k(1.0), x), b.fadd(self.k(1.0), x))
        return b.fmul(self.atan(self.call("sqrt", ratio)), self.k(2.0))

    # ---- erf and pow ----------------------------------------------------------------------
    def erf(self, x: ir.Value) -> ir.Value:
        if self.bits == 32:
            return cpu_math.erf_f32(self.gen, x)
        b = self.b
        a = self.call("fabs", x)
        x2 = b.fmul(x, x)
        coeffs = [
            (-1) ** j / (math.factorial(j) * (2 * j + 1)) * 2 / math.sqrt(math.pi)
            for j in range(60, -1, -1)
        ]
        small = b.fmul(x, self.poly(coeffs, x2))
        big_a = self.select(self.lt(a, self.k(2.0)), self.k(2.0), a)
        big_a = self.select(b.fcmp_ordered(">", big_a, self.k(6.0)), self.k(6.0), big_a)
        t = big_a
        for j in range(60, 0, -1):
            t = b.fadd(big_a, b.fdiv(self.k(j / 2), t))
        erfc = b.fdiv(self.exp(b.fneg(b.fmul(big_a, big_a))), b.fmul(t, self.k(math.sqrt(math.pi))))
        big = self.call("copysign", b.fsub(self.k(1.0), erfc), x)
        out = self.select(self.lt(a, self.k(2.0)), small, big)
        return self.select(self.is_nan(x), x, out)

    def pow(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """C99's (and numpy's) ``pow``: ``|x|**y`` by binary powering where ``y`` is a small
        integer and every product is exact, else ``exp(y * log|x|)``; then the signs and
        special cases (``-0`` counts as negative through the sign bit)."""
        b = self.b
        ax, ay = self.call("fabs", x), self.call("fabs", y)
        inf, one = self.k(math.inf), self.k(1.0)
        integral = b.fcmp_ordered("==", self.call("floor", y), y)  # true for +-inf
        small = b.and_(integral, self.lt(ay, self.k(float(1 << _POW_BITS))))
        # A negative power: of 1/|x| when that is exact (2**-1023 is subnormal but 0.5**-1023
        # is not), else the reciprocal of the power (one rounding).
        recip = b.fdiv(one, ax)
        by_recip = b.and_(self.lt(y, self.k(0.0)), self.exact_product(recip, ax, one))
        base = self.select(by_recip, recip, ax)
        power, exact = self.int_power(base, self.select(small, ay, self.k(0.0)))
        divide = b.and_(self.lt(y, self.k(0.0)), b.not_(by_recip))
        power = self.select(divide, b.fdiv(one, power), power)
        magnitude = self.exp(b.fmul(y, self.log(ax)))
        magnitude = self.select(b.and_(small, exact), power, magnitude)
        negate = b.and_(self.sign_bit(x), self.is_odd(y, integral))
        out = self.select(negate, b.fneg(magnitude), magnitude)
        # A negative finite base to a non-integral (finite or NaN) power has no real value.
        finite_negative = b.and_(self.lt(x, self.k(0.0)), b.fcmp_ordered("!=", ax, inf))
        out = self.select(b.and_(finite_negative, b.not_(integral)), self.k(math.nan), out)
        # (-1) ** +-inf = 1 (exp/log would give NaN from inf * 0).
        unit = b.and_(b.fcmp_ordered("==", ax, one), b.fcmp_ordered("==", ay, inf))
        out = self.select(unit, one, out)
        out = self.select(b.fcmp_ordered("==", x, one), one, out)  # even for a NaN y
        return self.select(b.fcmp_ordered("==", y, self.k(0.0)), one, out)  # even for NaN x

    def sign_bit(self, x: ir.Value) -> ir.Value:
        it = _int_type(self.ty)
        return self.b.icmp_signed("<", self.b.bitcast(x, it), ir.Constant(it, 0))

    def is_odd(self, y: ir.Value, integral: ir.Value) -> ir.Value:
        """Whether ``y`` is an odd integer, exactly: integers from ``2**53`` on are even."""
        b = self.b
        fits = b.and_(integral, self.lt(self.call("fabs", y), self.k(2.0**53)))
        n = b.fptosi(self.select(fits, y, self.k(0.0)), I64)
        low = b.trunc(n, ir.IntType(1))
        return b.and_(fits, low)

    def exact_product(self, a: ir.Value, c: ir.Value, p: ir.Value) -> ir.Value:
        """Whether ``p`` is exactly ``a * c``: the FMA residual is 0 and ``p`` is normal (the
        residual of a product rounded to a subnormal can round to 0, so those count as
        inexact; infinities and NaN give a nonzero or NaN residual)."""
        b = self.b
        residual = self.fma(a, c, b.fneg(p))
        tiny = self.k(2.0 ** (-1022 if self.bits == 64 else -126))
        normal = b.fcmp_ordered(">=", self.call("fabs", p), tiny)
        return b.and_(b.fcmp_ordered("==", residual, self.k(0.0)), normal)

    def int_power(self, ax: ir.Value, n: ir.Value) -> tuple[ir.Value, ir.Value]:
        """``(ax**n, exact)`` for an integral float ``0 <= n < 2**_POW_BITS``: left-to-right
        square-and-multiply, and whether every product was exact (checked with an FMA; a
        product below the smallest normal counts as inexact unless a factor is 1, since the
        FMA cannot see its rounding error). Exact products give the exact (representable)
        power; the caller falls back to exp/log otherwise."""
        b = self.b
        count = b.fptosi(n, I32)
        one = self.k(1.0)

        def product(a: ir.Value, c: ir.Value) -> tuple[ir.Value, ir.Value]:
            p = b.fmul(a, c)
            return p, b.or_(self.exact_product(a, c, p), b.fcmp_ordered("==", a, one))

        result: ir.Value = one
        exact: ir.Value = ir.Constant(ir.IntType(1), 1)
        for bit in range(_POW_BITS - 1, -1, -1):
            result, ok = product(result, result)
            exact = b.and_(exact, ok)
            stepped, ok = product(result, ax)
            taken = b.icmp_unsigned("!=", b.and_(count, I32(1 << bit)), I32(0))
            result = self.select(taken, stepped, result)
            exact = self.select(taken, b.and_(exact, ok), exact)
        return result, exact


#: Integral exponents below ``2**_POW_BITS`` are tried by binary powering.
_POW_BITS = 11


def _tanh_coeffs(terms: int) -> list[float]:
    """Taylor coefficients of ``tanh(x) / x`` in ``x**2``, highest degree first."""
    bern: list[Fraction] = [Fraction(1)]
    for m in range(1, 2 * terms + 3):
        total = sum((math.comb(m + 1, j) * bern[j] for j in range(m)), Fraction(0))
        bern.append(-total / (m + 1))
    coeffs = []
    for n in range(1, terms + 2):
        value = Fraction(4**n * (4**n - 1)) * bern[2 * n] / math.factorial(2 * n)
        coeffs.append(float(value))  # coefficient of x**(2n - 1)
    return list(reversed(coeffs))


#: Functions computed in their own type for float32 (the rest go through float64).
_NATIVE_F32 = frozenset({"exp", "exp2", "log", "log2", "tanh", "sigmoid", "erf"})

_UNARY: dict[str, Callable[[_Math, ir.Value], ir.Value]] = {
    "exp": _Math.exp,
    "exp2": _Math.exp2,
    "log": _Math.log,
    "log2": _Math.log2,
    "tanh": _Math.tanh,
    "sigmoid": _Math.sigmoid,
    "erf": _Math.erf,
    "sinh": _Math.sinh,
    "cosh": _Math.cosh,
    "asinh": _Math.asinh,
    "acosh": _Math.acosh,
    "atanh": _Math.atanh,
    "atan": _Math.atan,
    "asin": _Math.asin,
    "acos": _Math.acos,
    "sin": lambda m, x: m.sin_cos(x)[0],
    "cos": lambda m, x: m.sin_cos(x)[1],
    "tan": lambda m, x: m.b.fdiv(*m.sin_cos(x)),
}
_DIRECT = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
           "round": "roundeven"}  # fmt: skip


def emit_math_call(gen: Any, expr: Call) -> Lane:
    """Lower an intrinsic call (every intrinsic but ``if_then_else`` and ``check_index``) in
    the scalar code of a GPU thread; an unknown one raises the generator's error naming it."""
    if isinstance(expr, BitwiseCall):
        return cpu_math.emit_math_call(gen, expr)  # integer ops: no intrinsic involved
    short = expr.op.removeprefix("tir.")
    dtype = expr.dtype
    if short not in _UNARY and short not in _DIRECT and short not in ("pow", "rsqrt"):
        raise gen.error(f"intrinsic {expr.op!r} is not supported by the cuda target")
    values = [gen.scalar(arg) for arg in expr.args]
    compute = compute_type(short, dtype)
    if compute != dtype:
        values = [gen.cast_value(v, dtype, compute) for v in values]
    result = _compute(gen, short, values, compute)
    if compute != dtype:
        result = gen.cast_value(result, compute, dtype)
    return Lane(Lane.SCALAR, result)


def compute_type(short: str, dtype: DataType) -> DataType:
    """The type the intrinsic ``short`` is computed in for a ``dtype`` result."""
    if short == "pow" and dtype.bits <= 32:
        return _F64
    if dtype.bits == 16:
        return _F32
    if dtype.bits == 32 and short in _UNARY and short not in _NATIVE_F32:
        return _F64
    return dtype


def _compute(gen: Any, short: str, values: list[ir.Value], dtype: DataType) -> ir.Value:
    x = values[0]
    if short in _DIRECT:
        return gen.intrinsic(_DIRECT[short], [x])
    m = _Math(gen, x.type)
    if short == "rsqrt":
        return gen.builder.fdiv(m.k(1.0), gen.intrinsic("sqrt", [x]))
    if short == "pow":
        return m.pow(x, values[1])
    return _UNARY[short](m, x)
