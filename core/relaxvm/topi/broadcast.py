"""Binary elementwise operators with numpy broadcasting (TVM's ``topi.add`` and friends).

Each operand is a :class:`~relaxvm.ir.tir.te.Tensor`, a scalar ``PrimExpr`` or a Python
number. A Python number takes the dtype of the other operand (``topi.add(x, 1)`` on a float32
``x`` is float32), as TVM's ``tir.const(b, a.dtype)``; a PrimExpr operand is promoted with the
tensor's element as TIR arithmetic promotes. When neither operand is a tensor the result is
the scalar expression itself, as in TVM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import VMTypeError, VMValueError
from ..ir import FloatImm, IntImm, PrimExpr, structural_equal
from ..ir import op as sop
from ..ir.dtype import is_bool_dtype, is_float_dtype
from ..ir.tir import intrin as T
from ..ir.tir import te
from ..runtime.dtype import DataType
from ._util import Operand, as_index, broadcast_index, broadcast_shape, cast_to, require_tensor

__all__ = [
    "add",
    "broadcast_to",
    "divide",
    "equal",
    "floor_divide",
    "floor_mod",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "not_equal",
    "power",
    "subtract",
    "where",
]


def _scalar(value: Any, like: DataType | None, where: str) -> PrimExpr:
    """A non-tensor operand as a PrimExpr; a Python number takes the dtype ``like``."""
    if isinstance(value, PrimExpr):
        return value
    if not isinstance(value, (int, float)):
        raise VMTypeError(
            f"{where}: operands must be te.Tensor, PrimExpr or numbers, got {type(value).__name__}"
        )
    if like is None:
        return sop.convert(value)
    if is_float_dtype(like):
        return FloatImm(like, float(value))
    if isinstance(value, float):
        return FloatImm(DataType("float32"), value)  # 1.5 with an int tensor: float math
    if is_bool_dtype(like) and not isinstance(value, bool):
        return IntImm(DataType("int64"), value)  # bool op int computes in int64, as TIR
    return IntImm(like, int(value))


def _dtype_of(value: Any) -> DataType | None:
    return value.dtype if isinstance(value, (te.Tensor, PrimExpr)) else None


def _binary(
    name: str, fn: Callable[[PrimExpr, PrimExpr], PrimExpr]
) -> Callable[[Operand, Operand], Any]:
    where = f"topi.{name}"

    def op(lhs: Operand, rhs: Operand) -> Any:
        ldt, rdt = _dtype_of(lhs), _dtype_of(rhs)
        a = lhs if isinstance(lhs, te.Tensor) else _scalar(lhs, rdt, where)
        b = rhs if isinstance(rhs, te.Tensor) else _scalar(rhs, ldt, where)
        if not isinstance(a, te.Tensor) and not isinstance(b, te.Tensor):
            return fn(a, b)
        shapes = [t.shape for t in (a, b) if isinstance(t, te.Tensor)]
        shape = broadcast_shape(where, *shapes)

        def body(*idx: PrimExpr) -> PrimExpr:
            x = a[tuple(broadcast_index(a, shape, idx))] if isinstance(a, te.Tensor) else a
            y = b[tuple(broadcast_index(b, shape, idx))] if isinstance(b, te.Tensor) else b
            return fn(x, y)

        try:
            return te.compute(shape, body, name=f"T_{name}")
        except VMTypeError as err:  # e.g. arithmetic on bools: say which topi call it was
            raise VMTypeError(f"{where}: {err}") from err

    op.__name__ = name
    return op


def _divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    # Integers round toward zero (C and TVM's ``tir.div``); floats are IEEE division.
    if is_float_dtype(a.dtype) or is_float_dtype(b.dtype):
        return sop.true_div(a, b)
    return sop.truncdiv(a, b)


def _floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float_dtype(a.dtype) or is_float_dtype(b.dtype):
        return _float_floor_divide(*_same(a, b))
    return sop.floordiv(a, b)


def _floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float_dtype(a.dtype) or is_float_dtype(b.dtype):
        return _float_floor_mod(*_same(a, b))
    return sop.floormod(a, b)


def _same(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """Both operands in the wider float type (an int operand becomes that float)."""
    if a.dtype == b.dtype:
        return a, b
    if is_float_dtype(a.dtype) and (not is_float_dtype(b.dtype) or a.dtype.bits >= b.dtype.bits):
        return a, sop.cast(b, a.dtype)
    return sop.cast(a, b.dtype), b


def _float_floor_divide(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """numpy's float ``a // b`` (its ``npy_divmod``): the quotient of ``a - fmod(a, b)``, which
    is exact where ``floor(a / b)`` is not (``inf // 2`` is NaN, ``-0.5 // inf`` is -1)."""
    zero, one, half = (sop.const(v, a.dtype) for v in (0.0, 1.0, 0.5))
    rem = sop.truncmod(a, b)  # a float Mod is C's fmod
    # A nonzero (or NaN) remainder whose sign differs from the divisor's: one less.
    adjust = sop.logical_and(
        sop.not_equal(rem, zero), sop.not_equal(sop.less(b, zero), sop.less(rem, zero))
    )
    exact = sop.true_div(sop.sub(a, rem), b)
    div = sop.select(adjust, sop.sub(exact, one), exact)
    floor = T.floor(div)
    floor = sop.select(sop.greater(sop.sub(div, floor), half), sop.add(floor, one), floor)
    # A zero quotient keeps the sign of a / b; a zero divisor gives a / b (inf or NaN).
    quotient = sop.true_div(a, b)
    result = sop.select(sop.equal(div, zero), sop.mul(quotient, zero), floor)
    return sop.select(sop.equal(b, zero), quotient, result)


def _float_floor_mod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """numpy's float ``a % b``: ``fmod`` moved to the divisor's sign (``-1.5 % inf`` is inf),
    a zero result taking the divisor's sign."""
    zero = sop.const(0.0, a.dtype)
    rem = sop.truncmod(a, b)
    adjust = sop.logical_and(
        sop.not_equal(rem, zero), sop.not_equal(sop.less(rem, zero), sop.less(b, zero))
    )
    result = sop.select(adjust, sop.add(rem, b), rem)
    signed_zero = sop.select(sop.less(b, zero), sop.const(-0.0, a.dtype), zero)
    return sop.select(sop.equal(result, zero), signed_zero, result)


def _power(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float_dtype(a.dtype) or is_float_dtype(b.dtype):
        return T.pow(a, b)
    # Integers go through float64, exact for every power an int32 can hold.
    out = a.dtype
    wide = DataType("float64")
    return sop.cast(T.pow(sop.cast(a, wide), sop.cast(b, wide)), out)


def _logical(fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Callable[..., PrimExpr]:
    def apply(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return fn(cast_to(a, DataType("bool")), cast_to(b, DataType("bool")))

    return apply


add = _binary("add", sop.add)
subtract = _binary("subtract", sop.sub)
multiply = _binary("multiply", sop.mul)
divide = _binary("divide", _divide)
floor_divide = _binary("floor_divide", _floor_divide)
mod = _binary("mod", sop.truncmod)
floor_mod = _binary("floor_mod", _floor_mod)
power = _binary("power", _power)
#: NaN in either operand gives NaN (TIR's Max/Min are numpy's ``maximum``/``minimum``).
maximum = _binary("maximum", sop.max_expr)
minimum = _binary("minimum", sop.min_expr)
equal = _binary("equal", sop.equal)
not_equal = _binary("not_equal", sop.not_equal)
less = _binary("less", sop.less)
less_equal = _binary("less_equal", sop.less_equal)
greater = _binary("greater", sop.greater)
greater_equal = _binary("greater_equal", sop.greater_equal)
logical_and = _binary("logical_and", _logical(sop.logical_and))
logical_or = _binary("logical_or", _logical(sop.logical_or))
logical_xor = _binary("logical_xor", _logical(sop.not_equal))

for _fn, _doc in (
    (add, "``lhs + rhs``"),
    (subtract, "``lhs - rhs``"),
    (multiply, "``lhs * rhs``"),
    (divide, "``lhs / rhs``; integers round toward zero, as C and TVM"),
    (floor_divide, "``floor(lhs / rhs)``, numpy's ``//`` on floats (inf and NaN included)"),
    (mod, "the remainder of truncated division (C's ``%`` and ``fmod``)"),
    (floor_mod, "the remainder of floor division (numpy's ``%``)"),
    (power, "``lhs ** rhs``"),
    (maximum, "the elementwise maximum; NaN in either operand gives NaN"),
    (minimum, "the elementwise minimum; NaN in either operand gives NaN"),
    (equal, "``lhs == rhs`` (bool)"),
    (not_equal, "``lhs != rhs`` (bool)"),
    (less, "``lhs < rhs`` (bool)"),
    (less_equal, "``lhs <= rhs`` (bool)"),
    (greater, "``lhs > rhs`` (bool)"),
    (greater_equal, "``lhs >= rhs`` (bool)"),
    (logical_and, "``lhs and rhs`` of the operands as bools"),
    (logical_or, "``lhs or rhs`` of the operands as bools"),
    (logical_xor, "``lhs xor rhs`` of the operands as bools"),
):
    _fn.__doc__ = f"""{_doc}, with numpy broadcasting.

    Parameters
    ----------
    lhs, rhs : te.Tensor, PrimExpr or number
        The operands; a Python number takes the other operand's dtype.

    Returns
    -------
    te.Tensor or PrimExpr
        A tensor of the broadcast shape, or an expression when neither operand is a tensor.

    Raises
    ------
    VMValueError
        Constant extents that do not broadcast.
    """


def where(condition: Operand, x: Operand, y: Operand) -> te.Tensor:
    """``x`` where ``condition`` holds, else ``y``, with numpy broadcasting of all three.

    Parameters
    ----------
    condition : te.Tensor or PrimExpr
        Read as bool (nonzero is true).
    x, y : te.Tensor, PrimExpr or number
        The values; they must have the same dtype (a number takes the other's dtype).
    """
    where_ = "topi.where"
    xdt, ydt = _dtype_of(x), _dtype_of(y)
    if xdt is None and ydt is None:
        raise VMTypeError(f"{where_}: x and y cannot both be Python numbers (no dtype)")
    if xdt is not None and ydt is not None and xdt != ydt:
        raise VMTypeError(f"{where_}: x and y must have the same dtype, got {xdt} and {ydt}")
    operands = [
        condition if isinstance(condition, te.Tensor) else _scalar(condition, None, where_),
        x if isinstance(x, te.Tensor) else _scalar(x, ydt, where_),
        y if isinstance(y, te.Tensor) else _scalar(y, xdt, where_),
    ]
    shape = broadcast_shape(where_, *(o.shape for o in operands if isinstance(o, te.Tensor)))

    def read(o: Any, idx: Sequence[PrimExpr]) -> PrimExpr:
        return o[tuple(broadcast_index(o, shape, idx))] if isinstance(o, te.Tensor) else o

    def body(*idx: PrimExpr) -> PrimExpr:
        c, a, b = (read(o, idx) for o in operands)
        return sop.select(cast_to(c, DataType("bool")), a, b)

    return te.compute(shape, body, name="T_where")


def broadcast_to(data: te.Tensor | PrimExpr, shape: Sequence[Any]) -> te.Tensor:
    """``data`` broadcast to ``shape`` (numpy's ``broadcast_to``).

    Raises
    ------
    VMValueError
        When ``data``'s shape does not broadcast to ``shape`` (constant extents).
    """
    target = [as_index(s, "topi.broadcast_to shape") for s in shape]
    if not isinstance(data, te.Tensor):
        value = _scalar(data, None, "topi.broadcast_to")
        return te.compute(target, lambda *idx: value, name="T_broadcast_to")
    require_tensor("topi.broadcast_to", data)
    if data.ndim > len(target):
        raise VMValueError(
            f"topi.broadcast_to: cannot broadcast a rank-{data.ndim} tensor to rank {len(target)}"
        )
    out = broadcast_shape("topi.broadcast_to", data.shape, target)
    for got, want in zip(out, target, strict=True):
        if not structural_equal(got, want):
            raise VMValueError(
                f"topi.broadcast_to: cannot broadcast shape {[str(s) for s in data.shape]} "
                f"to {[str(s) for s in target]}"
            )
    return te.compute(
        target, lambda *idx: data[tuple(broadcast_index(data, target, idx))], name="T_broadcast_to"
    )
