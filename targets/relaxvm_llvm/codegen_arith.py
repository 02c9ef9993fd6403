"""Binary arithmetic of the LLVM code generator, with the reference interpreter's semantics:
``//`` and ``%`` round toward negative infinity (signed ints and floats), ``Div``/``Mod``
truncate, an integer division never traps (a zero divisor gives 0, ``INT_MIN / -1`` wraps),
and float ``min``/``max`` are numpy's (NaN in either operand wins; see
:func:`.codegen_math.float_max`)."""

from __future__ import annotations

from typing import Any

import llvmlite.ir as ir

from relaxvm.ir import Add, Div, FloorDiv, FloorMod, Max, Min, Mod, Mul, Sub
from relaxvm.runtime.dtype import DataType

from .codegen_math import float_max, float_min
from .errors import LLVMBuildError
from .lltypes import is_float, is_int, is_signed

__all__ = ["ArithCodegen"]


class ArithCodegen:
    """Arithmetic lowering; mixed into :class:`~.codegen_expr.ExprCodegen`, which provides
    ``builder``, ``fastmath``, :meth:`error` and :meth:`intrinsic`."""

    builder: ir.IRBuilder
    fastmath: tuple[str, ...]

    # Provided by the expression generator.
    def error(self, message: str) -> LLVMBuildError:  # pragma: no cover - abstract
        raise NotImplementedError

    def intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:  # pragma: no cover
        raise NotImplementedError

    def arith(self, op: type, dtype: DataType, x: ir.Value, y: ir.Value) -> ir.Value:
        """``x op y`` on scalars or vectors of ``dtype``."""
        b = self.builder
        if is_float(dtype):
            flags = self.fastmath
            if op is Add:
                return b.fadd(x, y, flags=flags)
            if op is Sub:
                return b.fsub(x, y, flags=flags)
            if op is Mul:
                return b.fmul(x, y, flags=flags)
            if op is Div:
                return b.fdiv(x, y, flags=flags)
            if op is Mod:
                return b.frem(x, y)
            if op is FloorDiv:
                return self.intrinsic("floor", [b.fdiv(x, y)])
            if op is FloorMod:
                rem = b.frem(x, y)
                zero = ir.Constant(x.type, None)
                nonzero = b.fcmp_unordered("!=", rem, zero)
                y_negative = b.fcmp_ordered("<", y, zero)
                differ = b.xor(b.fcmp_ordered("<", rem, zero), y_negative)
                adjusted = b.select(b.and_(nonzero, differ), b.fadd(rem, y), rem)
                # A zero remainder takes the divisor's sign, as numpy's remainder (3 % -3 is
                # -0.0) and the CUDA target: frem gives the dividend's.
                signed_zero = b.select(y_negative, ir.Constant(x.type, -0.0), zero)
                return b.select(b.fcmp_ordered("==", rem, zero), signed_zero, adjusted)
            if op is Min:
                return float_min(b, x, y)
            if op is Max:
                return float_max(b, x, y)
        elif is_int(dtype):
            signed = is_signed(dtype)
            # nsw on 64-bit index arithmetic lets LLVM reason about addresses; narrower types
            # hold data, whose overflow must wrap like the interpreter's stores.
            flags = ("nsw",) if signed and dtype.bits == 64 else ()
            if op is Add:
                return b.add(x, y, flags=flags)
            if op is Sub:
                return b.sub(x, y, flags=flags)
            if op is Mul:
                return b.mul(x, y, flags=flags)
            if op in (Div, Mod, FloorDiv, FloorMod):
                return self._int_division(op, x, y, signed)
            cmp = b.icmp_signed if signed else b.icmp_unsigned
            if op is Min:
                return b.select(cmp("<", y, x), y, x)
            if op is Max:
                return b.select(cmp(">", y, x), y, x)
        raise self.error(f"{op.__name__} is not supported on {dtype}")

    def _int_division(self, op: type, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
        """Integer division and remainders that never trap.

        Hardware traps on a zero divisor (and on INT_MIN / -1), which would kill the process.
        Unless the divisor is a safe constant, a zero divisor gives 0 (like numpy) and -1 is
        computed as a negation (wrapping).
        """
        b = self.builder
        safe = isinstance(y, ir.Constant) and not isinstance(y.type, ir.VectorType)
        safe = safe and y.constant not in (0, -1, None)
        if safe:
            return self._divide(op, x, y, signed)
        zero, one = ir.Constant(y.type, None), _const_int_like(y, 1)
        is_zero = b.icmp_unsigned("==", y, zero)
        if not signed:
            result = self._divide(op, x, b.select(is_zero, one, y), signed)
            return b.select(is_zero, ir.Constant(x.type, None), result)
        is_minus_one = b.icmp_signed("==", y, _const_int_like(y, -1))
        result = self._divide(op, x, b.select(b.or_(is_zero, is_minus_one), one, y), signed)
        if op in (Div, FloorDiv):
            result = b.select(is_minus_one, b.sub(ir.Constant(x.type, None), x), result)
        else:
            result = b.select(is_minus_one, ir.Constant(x.type, None), result)
        return b.select(is_zero, ir.Constant(x.type, None), result)

    def _divide(self, op: type, x: ir.Value, y: ir.Value, signed: bool) -> ir.Value:
        b = self.builder
        if op is Div:
            return b.sdiv(x, y) if signed else b.udiv(x, y)
        if op is Mod:
            return b.srem(x, y) if signed else b.urem(x, y)
        if op is FloorDiv:
            if not signed:
                return b.udiv(x, y)
            quot, rem = b.sdiv(x, y), b.srem(x, y)
            return b.sub(quot, b.zext(self._floor_adjust(rem, y), x.type))
        if not signed:
            return b.urem(x, y)
        rem = b.srem(x, y)
        return b.select(self._floor_adjust(rem, y), b.add(rem, y), rem)

    def _floor_adjust(self, rem: ir.Value, divisor: ir.Value) -> ir.Value:
        """True where a truncated remainder needs flooring: nonzero, sign unlike the divisor's."""
        b = self.builder
        zero = ir.Constant(rem.type, None)
        nonzero = b.icmp_signed("!=", rem, zero)
        differ = b.xor(b.icmp_signed("<", rem, zero), b.icmp_signed("<", divisor, zero))
        return b.and_(nonzero, differ)


def _const_int_like(value: ir.Value, number: int) -> Any:
    ty = value.type
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [number] * ty.count)
    return ir.Constant(ty, number)
