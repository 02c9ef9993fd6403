"""TIR expressions to LLVM IR, in scalar code and inside vectorized loops.

Inside a loop lowered to explicit vectors (:mod:`.codegen_stmt`), each expression value is a
:class:`Lane`: a *scalar* (the same for every lane), a *ramp* (``base + stride * lane`` with a
Python int stride, what index arithmetic on the vectorized loop variable produces), or a full
*vector*. Ramps let a load or store whose flattened index is ``base + lane`` become one
contiguous vector access; anything else becomes a gather or scatter. Outside vectorized loops
every value is a scalar.

Semantics follow the reference interpreter: ``//`` and ``%`` round toward negative infinity
(signed ints and floats), ``Div``/``Mod`` truncate, float ``min``/``max`` are numpy's (NaN in
either operand wins; see :func:`.codegen_math.float_max`), a float
cast to ``bool`` is true for NaN, and ``if_then_else`` evaluates only the chosen branch.
"""

from __future__ import annotations

import llvmlite.ir as ir

from relaxvm.ir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOpExpr,
    Cast,
    CmpExpr,
    FloatImm,
    IntImm,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
)
from relaxvm.ir.tir import BufferLoad, Call
from relaxvm.ir.tir.intrin import CheckIndex
from relaxvm.ir.tir.intrin import IfThenElse as IfThenElseCall
from relaxvm.runtime.dtype import DataType, DataTypeCode

from .codegen_arith import ArithCodegen
from .codegen_float8 import cast_float8
from .codegen_math import emit_math_call
from .codegen_memory import MemoryCodegen
from .errors import LLVMBuildError
from .lltypes import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    Lane,
    has_load,
    is_float,
    is_int,
    is_signed,
    llvm_type,
    mem_type,
    needs_branch,
)

_INT64 = DataType("int64")

__all__ = [
    "I1",
    "I8",
    "I32",
    "I64",
    "PTR",
    "ExprCodegen",
    "Lane",
    "has_load",
    "llvm_type",
    "mem_type",
    "needs_branch",
]

_INT64 = DataType("int64")
_FLOAT32 = DataType("float32")
_FLOAT_CMP = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}


class ExprCodegen(ArithCodegen, MemoryCodegen):
    """Expression lowering (arithmetic in :class:`~.codegen_arith.ArithCodegen`, memory
    accesses in :class:`~.codegen_memory.MemoryCodegen`); the statement generator subclasses
    it and provides the state.

    Required attributes: ``builder`` (ir.IRBuilder), ``module`` (ir.Module), ``env`` (Var ->
    Lane), ``lanes`` (1 outside vectorized loops), ``fastmath`` (flags tuple), ``kernel``
    (name for messages) and :meth:`buffer_ptr`.
    """

    builder: ir.IRBuilder
    module: ir.Module
    env: dict[Var, Lane]
    lanes: int
    fastmath: tuple[str, ...]
    kernel: str

    def error(self, message: str) -> LLVMBuildError:
        return LLVMBuildError(f"llvm target: kernel {self.kernel!r}: {message}")

    # ---- vector helpers -------------------------------------------------------------------
    def vtype(self, scalar: ir.Type) -> ir.Type:
        return ir.VectorType(scalar, self.lanes)

    def splat(self, value: ir.Value) -> ir.Value:
        vec_type = self.vtype(value.type)
        undef = ir.Constant(vec_type, ir.Undefined)
        first = self.builder.insert_element(undef, value, I32(0))
        mask = ir.Constant(ir.VectorType(I32, self.lanes), [0] * self.lanes)
        return self.builder.shuffle_vector(first, undef, mask)

    def materialize(self, lane: Lane) -> ir.Value:
        """``lane`` as a full vector value."""
        if lane.kind == Lane.VEC:
            return lane.value
        base = self.splat(lane.value)
        if lane.kind == Lane.SCALAR:
            return base
        steps = ir.Constant(
            self.vtype(lane.value.type), [lane.stride * k for k in range(self.lanes)]
        )
        return self.builder.add(base, steps)

    def scalar(self, expr: PrimExpr) -> ir.Value:
        """Emit ``expr``, which must be the same for every lane."""
        lane = self.emit(expr)
        if lane.kind != Lane.SCALAR:
            raise self.error(f"`{expr}` varies across the lanes of a vectorized loop here")
        return lane.value

    def _pair(self, a: Lane, b: Lane) -> tuple[ir.Value, ir.Value]:
        if a.kind == Lane.SCALAR and b.kind == Lane.SCALAR:
            return a.value, b.value
        return self.materialize(a), self.materialize(b)

    # ---- dispatch -------------------------------------------------------------------------
    def emit(self, expr: PrimExpr) -> Lane:
        """Lower ``expr``; returns its :class:`Lane`."""
        if isinstance(expr, Var):
            lane = self.env.get(expr)
            if lane is None:
                raise self.error(f"variable {expr.name!r} is used but not defined")
            return lane
        if isinstance(expr, IntImm):
            return Lane(Lane.SCALAR, ir.Constant(llvm_type(expr.dtype), int(expr.value)))
        if isinstance(expr, FloatImm):
            return Lane(Lane.SCALAR, ir.Constant(llvm_type(expr.dtype), float(expr.value)))
        if isinstance(expr, BufferLoad):
            return self.emit_load(expr)
        if isinstance(expr, IfThenElseCall):
            return self._if_then_else(expr)
        if isinstance(expr, CheckIndex):
            return self._check_index(expr)
        if isinstance(expr, Call):
            return self._call(expr)
        if isinstance(expr, Select):
            cond = self.emit(expr.condition)
            t, f = self._pair(self.emit(expr.true_value), self.emit(expr.false_value))
            if cond.kind != Lane.SCALAR and not isinstance(t.type, ir.VectorType):
                t, f = self.splat(t), self.splat(f)
            c = cond.value if cond.kind == Lane.SCALAR else self.materialize(cond)
            return Lane.of(self.builder.select(c, t, f))
        if isinstance(expr, Cast):
            return self._cast(self.emit(expr.value), expr.value.dtype, expr.dtype)
        if isinstance(expr, Not):
            a = self.emit(expr.a)
            value = a.value if a.kind == Lane.SCALAR else self.materialize(a)
            return Lane.of(self.builder.not_(value))
        if isinstance(expr, (And, Or)):
            return self._logical(expr)
        if isinstance(expr, CmpExpr):
            return self._compare(expr)
        if isinstance(expr, BinaryOpExpr):
            return self._binary(expr)
        raise self.error(f"cannot compile a {type(expr).__name__} expression (`{expr}`)")

    # ---- arithmetic -----------------------------------------------------------------------
    def _binary(self, expr: BinaryOpExpr) -> Lane:
        dtype = expr.a.dtype
        a, b = self.emit(expr.a), self.emit(expr.b)
        if is_int(dtype) and isinstance(expr, (Add, Sub, Mul)):
            ramp = self._ramp_arith(expr, a, b, dtype)
            if ramp is not None:
                return ramp
        x, y = self._pair(a, b)
        return Lane.of(self.arith(type(expr), dtype, x, y))

    def _ramp_arith(self, expr: BinaryOpExpr, a: Lane, b: Lane, dtype: DataType) -> Lane | None:
        if a.kind != Lane.RAMP and b.kind != Lane.RAMP:
            return None
        if a.kind == Lane.VEC or b.kind == Lane.VEC:
            return None
        op = type(expr)
        if op is Mul:
            ramp, other, const = (a, b, expr.b) if a.kind == Lane.RAMP else (b, a, expr.a)
            if other.kind != Lane.SCALAR or not isinstance(const, IntImm):
                return None
            base = self.arith(Mul, dtype, ramp.value, other.value)
            return Lane(Lane.RAMP, base, ramp.stride * int(const.value))
        base = self.arith(op, dtype, a.value, b.value)
        sign = 1 if op is Add else -1
        stride = (a.stride if a.kind == Lane.RAMP else 0) + sign * (
            b.stride if b.kind == Lane.RAMP else 0
        )
        return Lane(Lane.RAMP, base, stride)

    def _compare(self, expr: CmpExpr) -> Lane:
        dtype = expr.a.dtype
        if dtype.is_float8:
            raise self.error(f"cannot compare {dtype} values (`{expr}`): cast to float32 first")
        x, y = self._pair(self.emit(expr.a), self.emit(expr.b))
        op = _FLOAT_CMP[type(expr)]
        b = self.builder
        if is_float(dtype):
            # Python semantics: every comparison with NaN is false except `!=`.
            if op == "!=":
                return Lane.of(b.fcmp_unordered(op, x, y))
            return Lane.of(b.fcmp_ordered(op, x, y))
        if is_signed(dtype):
            return Lane.of(b.icmp_signed(op, x, y))
        return Lane.of(b.icmp_unsigned(op, x, y))

    def _logical(self, expr: And | Or) -> Lane:
        b = self.builder
        if self.lanes == 1 and has_load(expr.b):
            # Short-circuit: the right operand may read memory the left one guards.
            lhs = self.scalar(expr.a)
            start = b.block
            with b.if_then(lhs if isinstance(expr, And) else b.not_(lhs)):
                rhs = self.scalar(expr.b)
                rhs_block = b.block
            phi = b.phi(I1)
            phi.add_incoming(ir.Constant(I1, 0 if isinstance(expr, And) else 1), start)
            phi.add_incoming(rhs, rhs_block)
            return Lane(Lane.SCALAR, phi)
        x, y = self._pair(self.emit(expr.a), self.emit(expr.b))
        return Lane.of(b.and_(x, y) if isinstance(expr, And) else b.or_(x, y))

    # ---- casts ----------------------------------------------------------------------------
    def _cast(self, lane: Lane, src: DataType, dst: DataType) -> Lane:
        if src == dst:
            return lane
        if lane.kind == Lane.RAMP and is_int(dst):
            return Lane(Lane.RAMP, self.cast_value(lane.value, src, dst), lane.stride)
        value = lane.value if lane.kind == Lane.SCALAR else self.materialize(lane)
        return Lane.of(self.cast_value(value, src, dst))

    def cast_value(self, value: ir.Value, src: DataType, dst: DataType) -> ir.Value:
        """Convert a scalar or vector value from ``src`` to ``dst``."""
        b = self.builder
        target = llvm_type(dst)
        vector = isinstance(value.type, ir.VectorType)
        if vector:
            target = ir.VectorType(target, value.type.count)
        zero = ir.Constant(value.type, None)
        if src.is_float8 or dst.is_float8:
            return cast_float8(self, value, src, dst)
        if dst.code == DataTypeCode.BOOL:
            if is_float(src):
                return b.fcmp_unordered("!=", value, zero)
            return b.icmp_unsigned("!=", value, zero)
        if src.code == DataTypeCode.BOOL:
            return b.uitofp(value, target) if is_float(dst) else b.zext(value, target)
        # LLVM lowers conversions between half and double or integers to compiler-rt calls
        # (__truncdfhf2, __floatdihf...) that the JIT does not link: a call to an unresolved
        # symbol would crash the process. Go through float32 instead (exactly, or by
        # round-to-odd, which keeps the final rounding to half correct).
        if is_float(dst) and dst.bits == 16 and (is_int(src) or src.bits == 64):
            if is_int(src):
                wide = _vector_like(ir.DoubleType(), value)
                value = b.sitofp(value, wide) if is_signed(src) else b.uitofp(value, wide)
            return b.fptrunc(self._double_to_float_round_to_odd(value), target)
        if is_float(src) and src.bits == 16 and (is_int(dst) or dst.bits == 64):
            value = b.fpext(value, _vector_like(ir.FloatType(), value))
            return self.cast_value(value, _FLOAT32, dst)
        if is_int(src) and is_int(dst):
            if dst.bits > src.bits:
                return b.sext(value, target) if is_signed(src) else b.zext(value, target)
            if dst.bits < src.bits:
                return b.trunc(value, target)
            return value
        if is_int(src):
            return b.sitofp(value, target) if is_signed(src) else b.uitofp(value, target)
        if is_int(dst):
            return b.fptosi(value, target) if is_signed(dst) else b.fptoui(value, target)
        if dst.bits > src.bits:
            return b.fpext(value, target)
        return b.fptrunc(value, target)

    def _double_to_float_round_to_odd(self, value: ir.Value) -> ir.Value:
        """``value`` (double) rounded to float32 toward zero, with the last bit set when the
        result is inexact: rounding that to half then equals rounding the double directly."""
        b = self.builder
        nearest = b.fptrunc(value, _vector_like(ir.FloatType(), value))
        back = b.fpext(nearest, value.type)
        bits = b.bitcast(nearest, _vector_like(ir.IntType(32), value))
        rounded_up = b.fcmp_ordered(
            ">", self.intrinsic("fabs", [back]), self.intrinsic("fabs", [value])
        )
        count = bits.type.count if isinstance(bits.type, ir.VectorType) else 0
        one = ir.Constant(bits.type, [1] * count if count else 1)
        toward_zero = b.select(rounded_up, b.sub(bits, one), bits)
        inexact = b.fcmp_ordered("!=", back, value)
        odd = b.select(inexact, b.or_(toward_zero, one), toward_zero)
        return b.bitcast(odd, nearest.type)

    def to_index(self, expr: PrimExpr) -> Lane:
        """``expr`` as an int64 lane (indices are computed in 64 bits)."""
        return self._cast(self.emit(expr), expr.dtype, _INT64)

    # ---- intrinsics -----------------------------------------------------------------------
    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """The function ``name`` of the module, declared on first use."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing  # type: ignore[no-any-return]
        return ir.Function(self.module, ir.FunctionType(ret, args), name=name)

    def intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        """Call ``llvm.<name>`` overloaded on the type of the first argument."""
        ty = args[0].type
        if isinstance(ty, ir.VectorType):
            suffix = f"v{ty.count}{_type_suffix(ty.element)}"
        else:
            suffix = _type_suffix(ty)
        fn = self.declare(f"llvm.{name}.{suffix}", ty, [a.type for a in args])
        return self.builder.call(fn, args)

    def _call(self, expr: Call) -> Lane:
        return emit_math_call(self, expr)

    def _check_index(self, expr: CheckIndex) -> Lane:
        """The wrapped index, or an early ``return CHECK_FAILED_STATUS`` after reporting the
        op, axis, index and extent through the runtime callback (a cold branch)."""
        from .checks import CHECK_FAILED_STATUS, INDEX_ERROR_SYMBOL, UNSIGNED_INDEX_FLAG

        returns_status = self.builder.function.function_type.return_type == I32
        if self.lanes != 1 or not returns_status:
            raise self.error(
                f"`{expr}` must run in the kernel's own serial code (not in a vectorized or "
                "parallel loop): a failed check returns the kernel's status"
            )
        index_expr, extent_expr, axis, op_code = expr.args
        b = self.builder
        index = self.cast_value(self.scalar(index_expr), index_expr.dtype, _INT64)
        extent = self.scalar(extent_expr)
        zero = ir.Constant(I64, 0)
        code = int(op_code.value)  # type: ignore[attr-defined]
        if is_signed(index_expr.dtype):
            negative = b.icmp_signed("<", index, zero)
            wrapped = b.select(negative, b.add(index, extent), index)
        else:
            wrapped, code = index, code | UNSIGNED_INDEX_FLAG
        # One unsigned compare covers both ends: a wrapped index still below 0 is huge.
        in_range = b.icmp_unsigned("<", wrapped, extent)
        with b.if_then(b.not_(in_range), likely=False):
            report = self.declare(INDEX_ERROR_SYMBOL, ir.VoidType(), [I64] * 4)
            op_value = ir.Constant(I64, code)
            axis_value = ir.Constant(I64, int(axis.value))  # type: ignore[attr-defined]
            b.call(report, [op_value, axis_value, index, extent])
            b.ret(ir.Constant(I32, CHECK_FAILED_STATUS))
        return Lane(Lane.SCALAR, wrapped)

    def _if_then_else(self, expr: Call) -> Lane:
        cond_expr, then_expr, else_expr = expr.args
        b = self.builder
        lazy = needs_branch(expr)
        cond = self.emit(cond_expr)
        if not lazy or cond.kind != Lane.SCALAR:
            if lazy and cond.kind != Lane.SCALAR:
                raise self.error(
                    f"`{expr}`: a lane-dependent if_then_else that reads memory cannot be "
                    "vectorized"
                )
            t, f = self._pair(self.emit(then_expr), self.emit(else_expr))
            if cond.kind != Lane.SCALAR and not isinstance(t.type, ir.VectorType):
                t, f = self.splat(t), self.splat(f)
            c = cond.value if cond.kind == Lane.SCALAR else self.materialize(cond)
            return Lane.of(b.select(c, t, f))
        results: list[tuple[ir.Value, ir.Block]] = []
        with b.if_else(cond.value) as (then_block, else_block):
            for block, branch in ((then_block, then_expr), (else_block, else_expr)):
                with block:
                    lane = self.emit(branch)
                    value = lane.value if self.lanes == 1 else self.materialize(lane)
                    results.append((value, b.block))
        phi = b.phi(results[0][0].type)
        for value, block in results:
            phi.add_incoming(value, block)
        return Lane.of(phi)

    # ---- memory ---------------------------------------------------------------------------


def _type_suffix(ty: ir.Type) -> str:
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    raise LLVMBuildError(f"llvm target: no intrinsic suffix for type {ty}")


def _vector_like(element: ir.Type, value: ir.Value) -> ir.Type:
    """``element``, or a vector of it as wide as ``value``'s vector type."""
    if isinstance(value.type, ir.VectorType):
        return ir.VectorType(element, value.type.count)
    return element
