"""Elementwise legalizations: unary and binary math with numpy broadcasting, comparisons,
logical ops, clip, astype, where and the activations (relu, gelu, silu); the math family
(trigonometric functions, checks, remainders, bitwise ops, shifts) is at the end. The
broadcasting kernel they share is :mod:`.elementwise_broadcast` (its helpers are importable
from here too)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from relaxvm import topi
from relaxvm.ir import (
    FloatImm,
    IntImm,
    PrimExpr,
    Var,
    cast,
    floordiv,
    logical_and,
    logical_not,
    logical_or,
    select,
)
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_bool_dtype, is_float_dtype
from relaxvm.ir.relax import (
    BlockBuilder,
    Call,
    PrimStructInfo,
    PrimValue,
    RelaxExpr,
    TensorStructInfo,
)
from relaxvm.ir.tir import intrin as T
from relaxvm.runtime.dtype import DataType, DataTypeCode

from ._kernel import LegalizationError, OpPattern, attr, legalizes, op_name, out_dtype
from .elementwise_broadcast import (
    broadcast_load,
    broadcast_pattern,
    cast_to,
    checked_broadcast,
    elementwise_kernel,
    kernel_broadcast_shape,  # noqa: F401 (linalg imports it from here)
    same_type,
)
from .runtime import PRIM_ARITH

__all__ = ["broadcast_load", "cast_to", "checked_broadcast"]


def _binary(fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Callable[..., PrimExpr]:
    def apply(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return fn(*same_type(a, b))

    return apply


def _divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # Integer division rounds toward zero, as TVM's topi.divide (C semantics).
    return sop.true_div(a, b) if is_float_dtype(a.dtype) else sop.truncdiv(a, b)


def _floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return _float_floor_divide(a, b) if is_float_dtype(a.dtype) else floordiv(a, b)


def _float_floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """numpy's float ``a // b`` (``npy_divmod``): the quotient of ``a - fmod(a, b)``, exact
    where ``floor(a / b)`` is not (``-0.5 // inf`` is -1, ``inf // 2`` is NaN, ``-3e-42 // 1.5``
    is -1). Selects only, so it vectorizes."""
    zero, one, half = (sop.const(v, a.dtype) for v in (0.0, 1.0, 0.5))
    quotient = sop.true_div(a, b)
    mod = sop.truncmod(a, b)  # a float Mod is C's fmod
    # A nonzero (or NaN) remainder whose sign differs from the divisor's: one less.
    adjust = logical_and(
        sop.not_equal(mod, zero), sop.not_equal(sop.less(b, zero), sop.less(mod, zero))
    )
    exact = sop.true_div(sop.sub(a, mod), b)
    div = select(adjust, sop.sub(exact, one), exact)
    floor = T.floor(div)
    floor = select(sop.greater(sop.sub(div, floor), half), sop.add(floor, one), floor)
    # A zero quotient keeps the sign of a / b; a zero divisor gives a / b (inf or NaN).
    result = select(sop.equal(div, zero), sop.mul(quotient, zero), floor)
    return select(sop.equal(b, zero), quotient, result)


def _power(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float_dtype(a.dtype):
        return T.pow(a, b)
    # Integers: through float64, exact for the values an integer power can hold in 53 bits.
    wide = DataType("float64")
    return cast(T.pow(cast(a, wide), cast(b, wide)), a.dtype)


_ARITH: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "add": sop.add,
    "subtract": sop.sub,
    "multiply": sop.mul,
    "divide": _divide,
    "floor_divide": _floor_divide,
    "power": _power,
    "maximum": sop.max_expr,
    "minimum": sop.min_expr,
    "equal": sop.equal,
    "not_equal": sop.not_equal,
    "less": sop.less,
    "less_equal": sop.less_equal,
    "greater": sop.greater,
    "greater_equal": sop.greater_equal,
    "logical_and": logical_and,
    "logical_or": logical_or,
    "logical_xor": sop.not_equal,
    "mod": sop.truncmod,  # a float Mod is C's fmod; an integer x % 0 is 0 on every target
    "floor_mod": lambda a, b: (
        _float_floor_mod(a, b) if is_float_dtype(a.dtype) else sop.floormod(a, b)
    ),
    "bitwise_and": lambda a, b: _on_bools(a, logical_and, T.bitwise_and)(a, b),
    "bitwise_or": lambda a, b: _on_bools(a, logical_or, T.bitwise_or)(a, b),
    "bitwise_xor": lambda a, b: _on_bools(a, sop.not_equal, T.bitwise_xor)(a, b),
    "left_shift": T.shift_left,
    "right_shift": T.shift_right,
}


def _float_floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """numpy's float ``mod``: fmod moved to the divisor's sign (``-1.5 % inf`` is inf), and a
    zero result takes the divisor's sign (``-0.0 % 2`` is 0.0), so every target agrees."""
    zero = sop.const(0.0, a.dtype)
    rem = sop.truncmod(a, b)
    adjust = logical_and(
        sop.not_equal(rem, zero), sop.not_equal(sop.less(rem, zero), sop.less(b, zero))
    )
    result = select(adjust, sop.add(rem, b), rem)
    signed_zero = select(sop.less(b, zero), sop.const(-0.0, a.dtype), zero)
    return select(sop.equal(result, zero), signed_zero, result)


def _on_bools(
    a: PrimExpr, logical: Callable[..., PrimExpr], bitwise: Callable[..., PrimExpr]
) -> Callable[..., PrimExpr]:
    # numpy's bitwise ops on bools are the logical ones; TIR's bitwise intrinsics take ints.
    return logical if is_bool_dtype(a.dtype) else bitwise


def _scalar_operand(bb: BlockBuilder, call: Call, index: int) -> PrimExpr:
    """The value of the ``R.Prim`` operand ``index`` as a TIR expression.

    A literal or a scalar whose value is known symbolically is used as is; an integer scalar
    known only at run time is bound to a fresh symbolic variable with ``match_cast`` (the
    VM's shape heap then holds it), as a ``R.Prim(value=n)`` parameter would.
    """
    arg = call.args[index]
    if isinstance(arg, PrimValue):
        return arg.value
    sinfo = arg.struct_info
    assert isinstance(sinfo, PrimStructInfo)  # the caller checked every operand is a scalar
    if sinfo.value is not None:
        return sinfo.value
    if sinfo.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT):
        raise LegalizationError(
            f"{op_name(call)}: operand {index} is a run-time {sinfo.dtype} scalar, which "
            "this op cannot take on R.Prim values: use 0-d tensors"
        )
    var = Var(f"_{op_name(call).split('.')[-1]}_operand{index}", sinfo.dtype)
    bb.match_cast(arg, PrimStructInfo(value=var))
    return var


def _off_heap(arg: RelaxExpr) -> bool:
    """A scalar whose value is known only at run time and is not an integer (a float, or a
    bool such as a float comparison's result): the int64 shape heap cannot hold it."""
    if isinstance(arg, PrimValue):
        return False
    sinfo = arg.struct_info
    return (
        isinstance(sinfo, PrimStructInfo)
        and sinfo.value is None
        and sinfo.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT)
    )


def _scalar_binary(bb: BlockBuilder, call: Call, fn: Callable[..., PrimExpr]) -> RelaxExpr:
    """``R.Prim op R.Prim`` as a ``PrimValue`` of the TIR expression (computed by the VM), or,
    with a run-time float operand (the int64 shape heap cannot hold it), a call of
    ``relax.run.prim_arith``."""
    result = call.struct_info
    assert isinstance(result, PrimStructInfo)
    name = op_name(call).split(".")[-1]
    if name in _RUNTIME_ARITH and any(_off_heap(arg) for arg in call.args):
        from relaxvm.ir.relax import StringImm
        from relaxvm.ir.relax.op import call_pure_packed

        dtypes = [getattr(arg.struct_info, "dtype", result.dtype) for arg in call.args]
        # Comparisons of mixed operands compare after TIR's promotion: to the float one.
        compute = result.dtype if str(result.dtype) != "bool" else _promoted(dtypes)
        return call_pure_packed(
            "relax.run.prim_arith",
            StringImm(name),
            StringImm(str(compute)),
            StringImm(str(result.dtype)),
            *call.args,
            sinfo_args=PrimStructInfo(result.dtype),
        )
    a, b = (_scalar_operand(bb, call, index) for index in range(2))
    return PrimValue(cast_to(fn(a, b), result.dtype))


#: The ops ``relax.run.prim_arith`` computes for run-time float scalars.
_RUNTIME_ARITH = frozenset(PRIM_ARITH)


def _promoted(dtypes: list[Any]) -> Any:
    floats = [d for d in dtypes if d.code not in (DataTypeCode.INT, DataTypeCode.UINT)]
    return max(floats, key=lambda d: d.bits) if floats else dtypes[0]


def _make_binary(name: str) -> None:
    fn = _binary(_ARITH[name])

    @legalizes(f"relax.{name}")
    def legalize(bb: BlockBuilder, call: Call) -> RelaxExpr:
        if isinstance(call.struct_info, PrimStructInfo):
            # Both operands are scalars (TVM infers R.Prim): no kernel, a scalar expression.
            return _scalar_binary(bb, call, fn)
        return elementwise_kernel(bb, call, name, fn, call.args, broadcast_pattern(call))

    legalize.__name__ = f"legalize_{name}"


for _name in _ARITH:
    _make_binary(_name)


# ---- unary ------------------------------------------------------------------------------------
def _abs(x: PrimExpr) -> PrimExpr:
    if is_float_dtype(x.dtype):
        return T.fabs(x)
    if x.dtype.code == DataTypeCode.UINT:
        return x
    return select(sop.less(x, 0), sop.neg(x), x)


def _float_or_identity(fn: Callable[[PrimExpr], PrimExpr]) -> Callable[[PrimExpr], PrimExpr]:
    # Rounding an integer changes nothing.
    return lambda x: fn(x) if is_float_dtype(x.dtype) else x


_UNARY: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    "exp": T.exp,
    "log": T.log,
    "sqrt": T.sqrt,
    "rsqrt": T.rsqrt,
    "tanh": T.tanh,
    "sigmoid": T.sigmoid,
    "erf": T.erf,
    "abs": _abs,
    "negative": sop.neg,
    "round": _float_or_identity(T.round),
    "floor": _float_or_identity(T.floor),
    "ceil": _float_or_identity(T.ceil),
    "logical_not": logical_not,
    "sin": T.sin,
    "cos": T.cos,
    "tan": T.tan,
    "asin": T.asin,
    "acos": T.acos,
    "atan": T.atan,
    "sinh": T.sinh,
    "cosh": T.cosh,
    "asinh": T.asinh,
    "acosh": T.acosh,
    "atanh": T.atanh,
    "trunc": _float_or_identity(T.trunc),
    "square": lambda x: sop.mul(x, x),
    "sign": lambda x: _sign(x),
    "isnan": lambda x: _float_check(x, lambda v: sop.not_equal(v, v), False),
    "isinf": lambda x: _float_check(x, lambda v: sop.equal(T.fabs(v), _inf(v)), False),
    "isfinite": lambda x: _float_check(x, lambda v: sop.less(T.fabs(v), _inf(v)), True),
    "bitwise_not": lambda x: logical_not(x) if is_bool_dtype(x.dtype) else T.bitwise_not(x),
}


def _sign(x: PrimExpr) -> PrimExpr:
    """numpy's sign: 1, -1, or 0 for either zero; NaN stays NaN (no comparison holds)."""
    one, zero = sop.const(1, x.dtype), sop.const(0, x.dtype)
    if x.dtype.code == DataTypeCode.UINT:
        return select(sop.greater(x, zero), one, zero)
    rest = select(sop.equal(x, zero), zero, x) if is_float_dtype(x.dtype) else zero
    return select(
        sop.greater(x, zero), one, select(sop.less(x, zero), sop.const(-1, x.dtype), rest)
    )


def _inf(x: PrimExpr) -> PrimExpr:
    return sop.const(math.inf, x.dtype)


def _float_check(x: PrimExpr, check: Callable[[PrimExpr], PrimExpr], other: bool) -> PrimExpr:
    # An integer or bool is never NaN or inf: the check is a constant.
    return check(x) if is_float_dtype(x.dtype) else sop.const(other)


def _relu(x: PrimExpr) -> PrimExpr:
    return sop.max_expr(x, sop.const(0, x.dtype))


def _gelu(x: PrimExpr) -> PrimExpr:
    half = sop.const(0.5, x.dtype)
    return half * x * (sop.const(1.0, x.dtype) + T.erf(x * sop.const(1 / math.sqrt(2), x.dtype)))


def _gelu_tanh(x: PrimExpr) -> PrimExpr:
    c = sop.const(math.sqrt(2 / math.pi), x.dtype)
    inner = c * (x + sop.const(0.044715, x.dtype) * x * x * x)
    return sop.const(0.5, x.dtype) * x * (sop.const(1.0, x.dtype) + T.tanh(inner))


def _silu(x: PrimExpr) -> PrimExpr:
    return x * T.sigmoid(x)


_ACTIVATIONS: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    "relu": _relu,
    "gelu": _gelu,
    "silu": _silu,
}


#: The unary ops TVM's LegalizeOps turns into ``tir_<op>`` kernels of ``topi.<op>``, so that a
#: legalized module equals one written with ``R.emit_te(topi.<op>, x,
#: primfunc_name_hint="tir_<op>")``; the kernels are the same math as ``_UNARY``'s (relaxvm's
#: topi follows numpy), built by te in block form and fused after AnnotateTIROpPattern.
_TOPI_FLOAT = {
    name: getattr(topi, name)
    for name in (
        "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "sin", "cos", "tan", "asin", "acos",
        "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "isnan", "isinf", "isfinite",
    )
}  # fmt: skip
_TOPI_NUMERIC: dict[str, Callable[[Any], Any]] = {
    "abs": topi.abs,
    "negative": topi.negative,
    "round": topi.round,
    "floor": topi.floor,
    "ceil": topi.ceil,
    "sign": topi.sign,
    "square": lambda x: topi.multiply(x, x),
}


def _topi_unary(name: str, call: Call) -> Callable[[Any], Any] | None:
    """The topi function TVM legalizes ``call`` with, when its operand has a known shape and a
    dtype that function takes (None: relaxvm's own kernel)."""
    dtype = _te_operand_dtype(call)
    if dtype is None:
        return None
    if is_float_dtype(dtype) and name in _TOPI_FLOAT:
        return _TOPI_FLOAT[name]
    return _TOPI_NUMERIC.get(name)


def _te_operand_dtype(call: Call) -> DataType | None:
    """The dtype of the call's first operand when it is a non-bool tensor of known shape (what
    a topi kernel takes), else None."""
    sinfo = call.args[0].struct_info
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
        return None
    if sinfo.dtype is None or is_bool_dtype(sinfo.dtype):
        return None
    return sinfo.dtype


def _make_unary(op: str, name: str, fn: Callable[[PrimExpr], PrimExpr]) -> None:
    @legalizes(op)
    def legalize(bb: BlockBuilder, call: Call) -> RelaxExpr:
        topi_fn = _topi_unary(name, call) if op == f"relax.{name}" else None
        if topi_fn is not None:
            return bb.call_te(topi_fn, call.args[0], primfunc_name_hint=f"tir_{name}")
        chosen = fn
        if op == "relax.nn.gelu" and attr(call, "approximate", "none") == "tanh":
            chosen = _gelu_tanh
        return elementwise_kernel(bb, call, name, chosen, call.args[:1], OpPattern.ELEMWISE)

    legalize.__name__ = f"legalize_{name}"


for _name, _fn in _UNARY.items():
    _make_unary(f"relax.{_name}", _name, _fn)
for _name, _fn in _ACTIVATIONS.items():
    _make_unary(f"relax.nn.{_name}", _name, _fn)


def _constant_bound(arg: RelaxExpr) -> int | float | None:
    """The Python number of a constant ``R.prim_value`` bound, else None."""
    if isinstance(arg, PrimValue) and isinstance(arg.value, (IntImm, FloatImm)):
        return arg.value.value
    return None


@legalizes("relax.clip")
def legalize_clip(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``min(max(x, lo), hi)`` (numpy's order when ``lo > hi``).

    A float tensor of known shape clipped by constant bounds is TVM's ``tir_clip`` kernel of
    ``topi.clip(x, lo, hi)``; other forms (run-time bounds, integers) keep relaxvm's kernel.
    """
    bounds = [_constant_bound(arg) for arg in call.args[1:3]]
    dtype = _te_operand_dtype(call)
    if dtype is not None and is_float_dtype(dtype) and None not in bounds:
        lo, hi = bounds
        return bb.call_te(
            lambda x: topi.clip(x, lo, hi), call.args[0], primfunc_name_hint="tir_clip"
        )
    dtype = out_dtype(call)

    def clip(x: PrimExpr, lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
        return sop.min_expr(sop.max_expr(x, cast_to(lo, dtype)), cast_to(hi, dtype))

    return elementwise_kernel(bb, call, "clip", clip, call.args, OpPattern.ELEMWISE)


@legalizes("relax.astype")
def legalize_astype(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """An elementwise cast (to bool: ``!= 0``; float to int truncates)."""
    return elementwise_kernel(bb, call, "astype", lambda x: x, call.args[:1], OpPattern.ELEMWISE)


@legalizes("relax.where")
def legalize_where(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x1 if condition else x2`` with three-way broadcasting."""

    def where(cond: PrimExpr, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return select(cond, *same_type(a, b))

    return elementwise_kernel(bb, call, "where", where, call.args, broadcast_pattern(call))
