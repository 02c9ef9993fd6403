"""Exact float ``fmod`` (TIR ``Mod``) and numpy's float ``remainder`` (TIR ``FloorMod``) for
NVPTX.

LLVM's ``frem`` is a libm call on a CPU but NVPTX expands it as ``x - trunc(x / y) * y``,
which is wrong once the quotient is large (``1.5 % -3e-42`` gave ``-inf``) and for
infinities (``fmod(-inf, inf)`` gave ``-inf``). This module computes the remainder exactly
from the bits instead:

``|x| = mx * 2**ex`` and ``|y| = my * 2**ey`` with integer mantissas (subnormals included),
and for ``|x| >= |y|`` the remainder is ``((mx * 2**(ex - ey)) mod my) * 2**ey``, reduced in
64-bit integers by shifting the partial remainder left a few bits at a time (``r < my``, so
``r << s`` fits while ``s <= 63 - mantissa bits``): 7 unrolled steps cover every float32
exponent difference; float64 (11 bits a step, up to 186 steps) uses a loop in the IR. The
result ``r * 2**ey`` is exact, built in float64 with the scale in two normal halves.

Special cases follow C and numpy: ``x`` infinite, ``y`` zero or either NaN give NaN; ``|x| <
|y|`` (``y`` infinite included) gives ``x``; the remainder has ``x``'s sign. ``floor_mod``
adds ``y`` to a nonzero remainder whose sign differs from ``y``'s, and a zero remainder takes
``y``'s sign (numpy's ``npy_divmod``). Float16 is computed in float32 (exact: the remainder
is representable in the operands' type).
"""

from __future__ import annotations

from typing import Any

import llvmlite.ir as ir

from relaxvm_llvm.lltypes import I32, I64

__all__ = ["emit_float_mod"]

_F64 = ir.DoubleType()
#: Mantissa bits and exponent bias by width.
_LAYOUT = {32: (23, 127), 64: (52, 1023)}


def emit_float_mod(gen: Any, x: ir.Value, y: ir.Value, floor: bool) -> ir.Value:
    """``fmod(x, y)`` (``floor`` false) or numpy's ``remainder(x, y)`` (``floor`` true).

    Parameters
    ----------
    gen : PTXFunctionCodegen
        The function generator (its ``builder`` is used).
    x, y : ir.Value
        Scalars or vectors of half, float or double.
    floor : bool
        Whether the result takes the divisor's sign (``FloorMod``) instead of the
        dividend's (``Mod``).

    Returns
    -------
    ir.Value
        The remainder, of ``x``'s type.
    """
    b: ir.IRBuilder = gen.builder
    ty = x.type
    if isinstance(ty, ir.VectorType):  # element by element
        out: ir.Value = ir.Constant(ty, ir.Undefined)
        for k in range(ty.count):
            lane = emit_float_mod(
                gen, b.extract_element(x, I32(k)), b.extract_element(y, I32(k)), floor
            )
            out = b.insert_element(out, lane, I32(k))
        return out
    if isinstance(ty, ir.HalfType):
        wide = ir.FloatType()
        result = emit_float_mod(gen, b.fpext(x, wide), b.fpext(y, wide), floor)
        return b.fptrunc(result, ty)
    rem = _fmod(b, x, y)
    if not floor:
        return rem
    zero = ir.Constant(ty, 0.0)
    nonzero = b.fcmp_unordered("!=", rem, zero)
    differ = b.xor(b.fcmp_ordered("<", rem, zero), b.fcmp_ordered("<", y, zero))
    adjusted = b.select(b.and_(nonzero, differ), b.fadd(rem, y), rem)
    # A zero remainder takes the divisor's sign (numpy: copysign(0, y)).
    signed_zero = _with_sign(b, zero, y)
    is_zero = b.fcmp_ordered("==", rem, zero)
    return b.select(is_zero, signed_zero, adjusted)


def _with_sign(b: ir.IRBuilder, magnitude: ir.Value, sign_of: ir.Value) -> ir.Value:
    """``magnitude`` (non-negative) with the sign bit of ``sign_of``, by bits."""
    bits = 64 if isinstance(magnitude.type, ir.DoubleType) else 32
    it = ir.IntType(bits)
    sign = b.and_(b.bitcast(sign_of, it), ir.Constant(it, 1 << (bits - 1)))
    return b.bitcast(b.or_(b.bitcast(magnitude, it), sign), magnitude.type)


def _fmod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    ty = x.type
    bits = 64 if isinstance(ty, ir.DoubleType) else 32
    mant, bias = _LAYOUT[bits]
    it = ir.IntType(bits)
    inf_bits = ((1 << (bits - mant - 1)) - 1) << mant
    ax = b.and_(b.bitcast(x, it), ir.Constant(it, (1 << (bits - 1)) - 1))
    ay = b.and_(b.bitcast(y, it), ir.Constant(it, (1 << (bits - 1)) - 1))

    def split(word: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Integer mantissa and biased exponent (1 for subnormals), both as i64."""
        expo = b.lshr(word, ir.Constant(it, mant))
        frac = b.and_(word, ir.Constant(it, (1 << mant) - 1))
        normal = b.icmp_unsigned("!=", expo, ir.Constant(it, 0))
        m = b.select(normal, b.or_(frac, ir.Constant(it, 1 << mant)), frac)
        e = b.select(normal, expo, ir.Constant(it, 1))
        if bits < 64:
            m, e = b.zext(m, I64), b.zext(e, I64)
        return m, e

    mx, ex = split(ax)
    my, ey = split(ay)
    # y == 0, inf or NaN never reach the result; keep the urem defined anyway.
    my = b.select(b.icmp_unsigned("==", my, I64(0)), I64(1), my)
    shift = b.sub(ex, ey)
    shift = b.select(b.icmp_signed("<", shift, I64(0)), I64(0), shift)
    r = b.urem(mx, my)
    step = 63 - mant  # r < my < 2**(mant + 1), so r << step < 2**64
    if bits == 32:
        for _ in range(-(-253 // step)):  # exponent differences reach 254 - 1
            r, shift = _reduce(b, r, shift, my, step)
    else:
        r = _reduce_loop(b, r, shift, my, step)
    # r * 2**(ey - bias - mant), exact: the scale in two normal float64 halves.
    k = b.sub(ey, I64(bias + mant))
    half = b.ashr(k, I64(1))
    magnitude = b.uitofp(r, _F64)
    for part in (half, b.sub(k, half)):
        word = b.shl(b.add(part, I64(1023)), I64(52))
        magnitude = b.fmul(magnitude, b.bitcast(word, _F64))
    if bits == 32:
        magnitude = b.fptrunc(magnitude, ty)
    result = _with_sign(b, magnitude, x)
    invalid = b.or_(
        b.icmp_unsigned(">=", ax, ir.Constant(it, inf_bits)),  # x inf or NaN
        b.or_(
            b.icmp_unsigned(">", ay, ir.Constant(it, inf_bits)),  # y NaN
            b.icmp_unsigned("==", ay, ir.Constant(it, 0)),
        ),
    )
    result = b.select(b.icmp_unsigned("<", ax, ay), x, result)
    return b.select(invalid, ir.Constant(ty, float("nan")), result)


def _reduce(
    b: ir.IRBuilder, r: ir.Value, shift: ir.Value, my: ir.Value, step: int
) -> tuple[ir.Value, ir.Value]:
    """One step: ``r = (r << s) mod my`` with ``s = min(shift, step)``; ``shift -= s``."""
    s = b.select(b.icmp_unsigned(">", shift, I64(step)), I64(step), shift)
    return b.urem(b.shl(r, s), my), b.sub(shift, s)


def _reduce_loop(b: ir.IRBuilder, r: ir.Value, shift: ir.Value, my: ir.Value, step: int) -> Any:
    """:func:`_reduce` until ``shift`` is 0, as a loop (float64 needs up to 186 steps)."""
    before = b.block
    header = b.append_basic_block("fmod.loop")
    body = b.append_basic_block("fmod.step")
    done = b.append_basic_block("fmod.done")
    b.branch(header)
    b.position_at_end(header)
    r_phi = b.phi(I64)
    shift_phi = b.phi(I64)
    r_phi.add_incoming(r, before)
    shift_phi.add_incoming(shift, before)
    b.cbranch(b.icmp_unsigned(">", shift_phi, I64(0)), body, done)
    b.position_at_end(body)
    r_next, shift_next = _reduce(b, r_phi, shift_phi, my, step)
    r_phi.add_incoming(r_next, body)
    shift_phi.add_incoming(shift_next, body)
    b.branch(header)
    b.position_at_end(done)
    return r_phi
