"""Polynomial coefficients for the vector math of :mod:`.codegen_math_f64`: a long Taylor
series shortened by Chebyshev economization, in exact rational arithmetic.

Economization removes the highest power ``t**k`` of a polynomial on ``[lo, hi]`` by
subtracting the multiple of the Chebyshev polynomial ``T_k`` (mapped onto the interval) that
has the same leading term; ``|T_k| <= 1`` there, so the error this adds is the removed
coefficient times ``((hi - lo) / 2)**k / 2**(k - 1)``, far less than cutting the Taylor series
at the same degree (for ``atan`` on ``|v| <= tan(pi/8)``: 6 coefficients instead of 12 for the
same accuracy). Everything is exact (``Fraction``), so the float coefficients, and with them
the generated IR and the compile cache keys, are the same on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

__all__ = ["COEFFS", "RECIPES", "economized"]

Poly = list[Fraction]  # ascending coefficients


def _mul(p: Poly, q: Poly) -> Poly:
    out = [Fraction(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


def _add(p: Poly, q: Poly) -> Poly:
    size = max(len(p), len(q))
    p, q = p + [Fraction(0)] * (size - len(p)), q + [Fraction(0)] * (size - len(q))
    return [a + b for a, b in zip(p, q, strict=True)]


def _substitute(p: Poly, scale: Fraction, shift: Fraction) -> Poly:
    """``p(scale * u + shift)`` as a polynomial in ``u``."""
    out: Poly = [Fraction(0)]
    power: Poly = [Fraction(1)]
    for coeff in p:
        out = _add(out, [coeff * c for c in power])
        power = _mul(power, [shift, scale])
    return out


def _chebyshev(k: int) -> Poly:
    previous, current = [Fraction(1)], [Fraction(0), Fraction(1)]
    if k == 0:
        return previous
    for _ in range(k - 1):
        doubled = [Fraction(0)] + [2 * c for c in current]
        previous, current = current, _add(doubled, [-c for c in previous])
    return current


def economized(
    term: Callable[[int], Fraction],
    count: int,
    lo: Fraction | int | str,
    hi: Fraction | int | str,
    terms: int = 20,
) -> tuple[float, ...]:
    """``count`` coefficients (highest power first, for Horner) of a polynomial close to
    ``sum(term(k) * t**k for k < terms)`` on ``[lo, hi]``: the Taylor polynomial of
    ``terms`` terms, economized down to degree ``count - 1``. Short decimal bounds keep the
    rational arithmetic fast (a float bound has a 2**52 denominator, raised to every power)."""
    low, high = Fraction(lo), Fraction(hi)
    half, middle = (high - low) / 2, (high + low) / 2
    # On u in [-1, 1]: t = half * u + middle.
    p = _substitute([term(k) for k in range(terms)], half, middle)
    for k in range(len(p) - 1, count - 1, -1):
        chebyshev = _chebyshev(k)
        factor = p[k] / chebyshev[k]
        p = _add(p, [-factor * c for c in chebyshev])[:k]
    back = _substitute(p, 1 / half, -middle / half)
    return tuple(float(c) for c in reversed(back[:count]))


def _asin_term(k: int, sign: int = 1) -> Fraction:
    """The series of ``(asin(t) - t) / t**3`` (``sign=-1``: ``asinh``) in ``t**2``."""
    top = math.factorial(2 * k + 2)
    return Fraction(sign ** (k + 1) * top, 4 ** (k + 1) * math.factorial(k + 1) ** 2 * (2 * k + 3))


#: How each polynomial of :data:`COEFFS` is made: ``economized(*RECIPES[name])``. Each has a
#: relative error below 3e-10 on its range (0.005 float32 ulp). ``z`` is the square of the
#: reduced argument for the odd and even series.
RECIPES: dict[str, tuple[Callable[[int], Fraction], int, str, str, int]] = {
    # sin(r) = r + r * z * S(z), cos(r) = 1 + z * C(z), |r| <= pi/4
    "sin": (lambda k: Fraction((-1) ** (k + 1), math.factorial(2 * k + 3)), 4, "0", "0.6169", 20),
    "cos": (lambda k: Fraction((-1) ** (k + 1), math.factorial(2 * k + 2)), 4, "0", "0.6169", 20),
    # e**r - 1 = r * E(r) on |r| <= ln(2) / 2; expm1_2x: e**(2r) - 1 = r * E2(r), |r| <= ln(2) / 4
    "expm1": (lambda k: Fraction(1, math.factorial(k + 1)), 7, "-0.3466", "0.3466", 20),
    "expm1_2x": (lambda k: Fraction(2 ** (k + 1), math.factorial(k + 1)), 7, "-0.1733", "0.1733", 20),
    # asin(t) = t + t * z * P(z), z <= 1/4
    "asin": (_asin_term, 7, "0", "0.25", 28),
    # atan(v) = v + v * z * A(z), |v| <= tan(pi/8)
    "atan": (lambda k: Fraction((-1) ** (k + 1), 2 * k + 3), 6, "0", "0.1716", 28),
    # asinh(a) = a + a * z * S(z) and atanh(a) = a + a * z * A(z), |a| <= 1/8
    "asinh": (lambda k: _asin_term(k, -1), 3, "0", "0.015625", 12),
    "atanh": (lambda k: Fraction(1, 2 * k + 3), 4, "0", "0.015625", 12),
    # log(m) = 2f + 2f * s * L(s), f = (m - 1) / (m + 1), s = f**2 <= 0.1716**2
    "log": (lambda k: Fraction(1, 2 * k + 3), 4, "0", "0.02945", 12),
}  # fmt: skip

#: The results of :data:`RECIPES` (highest power first), written out because the rational
#: arithmetic takes about 0.2 s; tests/targets/llvm/test_vector_math.py checks that they match.
COEFFS: dict[str, tuple[float, ...]] = {
    "sin": (2.7249939020111455e-06, -0.0001984008689571018, 0.008333331875169119,
            -0.16666666663857166),
    "cos": (2.446381039126176e-05, -0.0013887589401834794, 0.04166665065118011,
            -0.4999999996914547),
    "expm1": (0.0001990758169562401, 0.0013941118897891022, 0.008333283519432912,
              0.041666352763603774, 0.16666666786381723, 0.5000000047150558, 0.999999999995505),
    "expm1_2x": (0.025481704570398733, 0.08922316094650254, 0.2666650726218532,
                 0.6666616442176604, 1.3333333429105378, 2.000000018860223, 1.99999999999101),
    "asin": (0.031085696848307125, 0.01049147567264349, 0.023634998550327867,
             0.03026615691537101, 0.044647836889222234, 0.07499992038455655,
             0.16666666687333978),
    "atan": (0.05053893211827293, -0.08627167317264733, 0.1107174284494679,
             -0.14284174618322187, 0.19999977768276744, -0.3333333328103662),
    "asinh": (-0.04394021620958271, 0.07499590127402021, -0.16666666311666142),
    "atanh": (0.1140057272105855, 0.14282869883504604, 0.2000000891643938, 0.33333333328971465),
    "log": (0.1166593256485237, 0.1427538139555533, 0.20000061219575904, 0.33333333276792787),
}  # fmt: skip
