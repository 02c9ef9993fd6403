"""Intrinsic calls: LLVM intrinsics, libm functions (``tanh``, ``erf`` and the trigonometric
and hyperbolic functions outside vector code, and in float64), vectorizable float32 ``exp``
and ``erf`` (here) and ``tanh``, ``sin`` ... ``atanh`` (:mod:`.codegen_math_f64`), and the
integer bitwise and shift intrinsics (with numpy's result for shift counts outside ``[0,
bits)``).

LLVM has no vector math library here, so ``llvm.exp.v16f32`` becomes 16 scalar ``expf``
calls. Inside explicitly vectorized loops (and everywhere with the ``afn`` fast-math flag)
float32 ``exp`` is computed instead as ``2**n * p(r)``: ``n = round(x * log2(e))``, ``r = x -
n * ln(2)`` in two FMA steps (Cody-Waite), ``p`` the degree-7 Taylor polynomial of ``e**r`` on
``|r| <= ln(2) / 2`` (truncation error below 1e-8, so about 1-2 ulp overall), and ``2**n`` built
from exponent bits in two halves so that subnormal results come out right. Inputs are clamped
to ``[-104, 89]`` (beyond them the result is 0 or inf), NaN is passed through.

Float32 ``erf`` in the same places (the GELU epilogue of a transformer's FFN matmul) is also
vector arithmetic, about 3 ulp at worst (measured against ``math.erf``): below ``|x| = 1.25``
``x * P(x**2)``, above it ``1 - exp(-x**2) * R(1 / |x|)``, with ``x**2`` split into a rounded
part and its exact FMA remainder so the exponent loses nothing; ``P`` and ``R`` are
least-squares fits (degrees 9 and 11) made for this module. ``|x|`` is clamped to 4, where
float32 ``erf`` is already 1; NaN is passed through, the sign (and -0.0) is kept.
"""

from __future__ import annotations

import math
from typing import Any

import llvmlite.ir as ir

from relaxvm.ir.tir import Call
from relaxvm.ir.tir.intrin import BitwiseCall
from relaxvm.runtime.dtype import DataType, DataTypeCode

from .codegen_math_f64 import VECTOR_FUNCS, vector_math_f32
from .lltypes import I32, Lane, llvm_type

__all__ = ["emit_math_call", "erf_f32", "exp_f32", "float_max", "float_min"]

_LN2_HI = 0.693359375  # few significant bits: n * _LN2_HI is exact
_LN2_LO = math.log(2.0) - _LN2_HI
_COEFFS = [1.0 / math.factorial(k) for k in range(7, -1, -1)]  # Horner order
# erf(x) / x as a polynomial in x**2 on [0, 1.25], Horner order (relative error 2e-12).
_ERF_SMALL = (
    -8.1894644884509734e-08, 1.4077339308068981e-06, -1.4515661061692864e-05,
    0.00012011667640003376, -0.00085454180974993952, 0.0052238593287129405,
    -0.026866143143453858, 0.11283791352010737, -0.37612638889660754, 1.1283791670949201,
)  # fmt: skip
# erfc(u) * exp(u**2) as a polynomial in 1 / u on [1 / 4, 1 / 1.25] (relative error 2e-11).
_ERF_LARGE = (
    0.035147853501271906, -0.27308996445526385, 0.96413810892719809, -2.0350753410828486,
    2.8228211129163827, -2.6181260938664201, 1.4968626345823255, -0.29681892534633647,
    -0.22595811108437075, -0.0070134659483101994, 0.56471332136063301,
    -1.7740036755098097e-05,
)  # fmt: skip
_ERF_SPLIT = 1.25


def _const(ty: ir.Type, value: float) -> Any:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [value] * ty.count)
    return ir.Constant(ty, value)


def float_max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """numpy's ``maximum(x, y)`` on float scalars or vectors: NaN when either is NaN.

    LLVM's ``maxnum`` drops NaN, and ``llvm.maximum`` has no x86 lowering in llvmlite's LLVM
    for every type (see reference/llvmlite_notes.md), so this is a compare and two selects:
    ``y`` when it is NaN or larger, else ``x`` (``x`` on ties: ``max(-0.0, 0.0)`` is -0.0 as
    in numpy). x86 turns the inner select into ``maxps`` and the outer into a blend, in
    vectorized loops too. A reduction's ``acc = max(acc, v)`` keeps a NaN once it holds one.
    """
    larger = b.select(b.fcmp_ordered(">", y, x), y, x)
    return b.select(b.fcmp_unordered("uno", y, y), y, larger)


def float_min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """numpy's ``minimum(x, y)``: NaN when either is NaN (see :func:`float_max`)."""
    smaller = b.select(b.fcmp_ordered("<", y, x), y, x)
    return b.select(b.fcmp_unordered("uno", y, y), y, smaller)


def exp_f32(gen: Any, x: ir.Value) -> ir.Value:
    """``exp(x)`` for a float32 scalar or vector ``x`` (``gen`` is the expression generator)."""
    b: ir.IRBuilder = gen.builder
    ty = x.type
    is_nan = b.fcmp_unordered("uno", x, x)
    clamped = b.select(b.fcmp_ordered(">", x, _const(ty, 89.0)), _const(ty, 89.0), x)
    clamped = b.select(
        b.fcmp_ordered("<", clamped, _const(ty, -104.0)), _const(ty, -104.0), clamped
    )
    clamped = b.select(is_nan, _const(ty, 0.0), clamped)  # keep NaN out of the integer part
    n = gen.intrinsic("roundeven", [b.fmul(clamped, _const(ty, 1.0 / math.log(2.0)))])
    r = gen.intrinsic("fma", [n, _const(ty, -_LN2_HI), clamped])
    r = gen.intrinsic("fma", [n, _const(ty, -_LN2_LO), r])
    poly = _const(ty, _COEFFS[0])
    for coeff in _COEFFS[1:]:
        poly = gen.intrinsic("fma", [poly, r, _const(ty, coeff)])
    int_type = ir.VectorType(I32, ty.count) if isinstance(ty, ir.VectorType) else I32
    k = b.fptosi(n, int_type)
    half = b.ashr(k, _const(int_type, 1))
    rest = b.sub(k, half)
    scales = []
    for part in (half, rest):
        bits = b.shl(b.add(part, _const(int_type, 127)), _const(int_type, 23))
        scales.append(b.bitcast(bits, ty))
    result = b.fmul(b.fmul(poly, scales[0]), scales[1])
    return b.select(is_nan, x, result)


def _horner(gen: Any, coeffs: tuple[float, ...], x: ir.Value) -> ir.Value:
    poly = _const(x.type, coeffs[0])
    for coeff in coeffs[1:]:
        poly = gen.intrinsic("fma", [poly, x, _const(x.type, coeff)])
    return poly


def erf_f32(gen: Any, x: ir.Value) -> ir.Value:
    """``erf(x)`` for a float32 scalar or vector ``x`` (see the module docstring); both
    branches are computed and one is selected per lane."""
    b: ir.IRBuilder = gen.builder
    ty = x.type
    u = gen.intrinsic("fabs", [x])
    small = b.fmul(x, _horner(gen, _ERF_SMALL, b.fmul(x, x)))
    big_u = b.select(b.fcmp_ordered(">", u, _const(ty, 4.0)), _const(ty, 4.0), u)
    big_u = b.select(b.fcmp_ordered("<", big_u, _const(ty, _ERF_SPLIT)), _const(ty, 4.0), big_u)
    ratio = _horner(gen, _ERF_LARGE, b.fdiv(_const(ty, 1.0), big_u))
    square = b.fmul(big_u, big_u)
    rest = gen.intrinsic("fma", [big_u, big_u, b.fneg(square)])  # exact: u*u - square
    decay = exp_f32(gen, b.fneg(square))
    decay = b.fmul(decay, b.fsub(_const(ty, 1.0), rest))  # exp(-rest) to first order
    magnitude = b.fsub(_const(ty, 1.0), b.fmul(decay, ratio))
    # copysign: the large branch takes x's sign bit
    int_type = ir.VectorType(I32, ty.count) if isinstance(ty, ir.VectorType) else I32
    sign = b.and_(b.bitcast(x, int_type), _int_const(int_type, -(1 << 31)))
    large = b.bitcast(b.or_(b.bitcast(magnitude, int_type), sign), ty)
    result = b.select(b.fcmp_ordered("<", u, _const(ty, _ERF_SPLIT)), small, large)
    return b.select(b.fcmp_unordered("uno", x, x), x, result)


_LLVM_UNARY = {
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log2": "log2",
    "sqrt": "sqrt",
    "fabs": "fabs",
    "floor": "floor",
    "ceil": "ceil",
    "round": "roundeven",
    "trunc": "trunc",
}
# No LLVM intrinsic lowers these without a libm call anyway (llvm.sin/llvm.cos become sinf/
# cosf), so call libm directly: one scalar call per lane in vector code, where only float64
# (and float32 outside explicitly vectorized loops without `afn`) still gets here.
_LIBM = {
    name: name
    for name in (
        "tanh", "erf", "sin", "cos", "tan", "asin", "acos", "atan",
        "sinh", "cosh", "asinh", "acosh", "atanh",
    )
}  # fmt: skip


def emit_math_call(gen: Any, expr: Call) -> Lane:
    """Lower an intrinsic call (every intrinsic but ``if_then_else``); ``gen`` is the
    expression generator."""
    short = expr.op.removeprefix("tir.")
    args = [gen.emit(arg) for arg in expr.args]
    if any(arg.kind != Lane.SCALAR for arg in args):
        values = [gen.materialize(arg) for arg in args]
    else:
        values = [arg.value for arg in args]
    dtype = expr.dtype
    if isinstance(expr, BitwiseCall):
        return Lane.of(_bitwise(gen.builder, short, values, dtype))
    if dtype.bits == 16 and short != "fabs":
        # Compute half-precision math in float and round once, as numpy does.
        f32, f16 = DataType("float32"), dtype
        wide = [gen.cast_value(v, f16, f32) for v in values]
        return Lane.of(gen.cast_value(_math(gen, short, wide, f32), f32, f16))
    return Lane.of(_math(gen, short, values, dtype))


def _int_const(ty: ir.Type, value: int) -> Any:
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [value] * ty.count)
    return ir.Constant(ty, value)


def _bitwise(b: ir.IRBuilder, short: str, values: list[ir.Value], dtype: DataType) -> ir.Value:
    """The integer intrinsics. A shift count outside ``[0, bits)`` (poison in LLVM, undefined
    in C) gives numpy's result: 0 for a left shift, the sign fill for a right shift; the count
    is clamped first so the shift instruction itself is always defined."""
    x = values[0]
    if short == "bitwise_not":
        return b.not_(x)
    y = values[1]
    if short in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return {"bitwise_and": b.and_, "bitwise_or": b.or_, "bitwise_xor": b.xor}[short](x, y)
    ty = x.type
    signed = dtype.code != DataTypeCode.UINT
    in_range = b.icmp_unsigned("<", y, _int_const(ty, dtype.bits))  # negative counts are huge
    count = b.select(in_range, y, _int_const(ty, 0))
    if short == "shift_left":
        return b.select(in_range, b.shl(x, count), _int_const(ty, 0))
    if signed:
        fill = b.ashr(x, _int_const(ty, dtype.bits - 1))
        return b.select(in_range, b.ashr(x, count), fill)
    return b.select(in_range, b.lshr(x, count), _int_const(ty, 0))


def _math(gen: Any, short: str, values: list[ir.Value], dtype: DataType) -> ir.Value:
    b = gen.builder
    x = values[0]
    one = _const(x.type, 1.0)
    if (
        short in ("exp", "sigmoid")
        and dtype.bits == 32
        and (gen.lanes > 1 or "afn" in gen.fastmath)
    ):
        if short == "exp":
            return exp_f32(gen, x)
        denom = b.fadd(one, exp_f32(gen, b.fneg(x)), flags=gen.fastmath)
        return b.fdiv(one, denom, flags=gen.fastmath)
    if dtype.bits == 32 and (gen.lanes > 1 or "afn" in gen.fastmath):
        if short == "erf":
            return erf_f32(gen, x)
        if short in VECTOR_FUNCS:
            return vector_math_f32(gen, short, x)
    if short in _LLVM_UNARY:
        return gen.intrinsic(_LLVM_UNARY[short], [x])
    if short == "pow":
        return gen.intrinsic("pow", values)
    if short == "rsqrt":
        return b.fdiv(one, gen.intrinsic("sqrt", [x]), flags=gen.fastmath)
    if short == "sigmoid":
        denom = b.fadd(one, gen.intrinsic("exp", [b.fneg(x)]), flags=gen.fastmath)
        return b.fdiv(one, denom, flags=gen.fastmath)
    if short in _LIBM:
        name = _LIBM[short] + ("f" if dtype.bits == 32 else "")
        scalar_type = llvm_type(dtype)
        fn = gen.declare(name, scalar_type, [scalar_type])
        if not isinstance(x.type, ir.VectorType):
            return b.call(fn, [x])
        out = ir.Constant(x.type, None)
        for lane in range(x.type.count):
            item = b.call(fn, [b.extract_element(x, I32(lane))])
            out = b.insert_element(out, item, I32(lane))
        return out
    raise gen.error(f"intrinsic {short!r} is not supported")
