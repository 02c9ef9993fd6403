"""Intrinsic calls: ``T.exp(x)``, ``T.pow(x, y)``, ``T.if_then_else(c, a, b)``.

``Call(dtype, op, args)`` builds an instance of a per-intrinsic subclass of :class:`Call`
(``Call("float32", "tir.exp", [x])`` is an ``exp`` node). Making the operation part of the
node *type* lets the generic expression machinery of :mod:`relaxvm.ir` (whose structural
equality compares node types, dtypes and operands) tell ``exp(x)`` from ``log(x)`` without
knowing about calls.

Each intrinsic knows its value on a Python scalar, so :func:`relaxvm.ir.evaluate` and the
simplifier's constant folding work on calls too. ``if_then_else`` evaluates only the chosen
branch (unlike ``Select``), which is what guarded loads such as padding need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ...errors import VMIndexError, VMTypeError, VMValueError
from ...runtime.dtype import DataType
from .._scalar import cast_scalar, is_bool_dtype, is_float_dtype, is_int_dtype
from ..expr import ExprLike, IntImm, PrimExpr, as_dtype
from ..op import _operands, _promote, cast, convert
from ._intrin_scalar import (
    BITWISE_FNS,
    FLOAT_INTRINSICS,
    float_max,
    float_min,
    shift_result,
)

__all__ = [
    "INDEX_CHECK_OPS",
    "INTRINSICS",
    "BitwiseCall",
    "Call",
    "CheckIndex",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "check_index",
    "cos",
    "cosh",
    "erf",
    "exp",
    "exp2",
    "fabs",
    "float_max",
    "float_min",
    "floor",
    "if_then_else",
    "log",
    "log2",
    "pow",
    "round",
    "rsqrt",
    "shift_left",
    "shift_right",
    "sigmoid",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
]


#: Every intrinsic name (without the ``tir.`` prefix).
INTRINSICS = (
    *sorted(FLOAT_INTRINSICS),
    *("bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"),
    "check_index",
    "if_then_else",
)


class Call(PrimExpr):
    """A call of a TIR intrinsic (TVM's ``tir.Call`` with an ``Op``).

    Parameters
    ----------
    dtype : str or DataType
        The result type.
    op : str
        The intrinsic, ``"tir.exp"`` or just ``"exp"``; see :data:`INTRINSICS`.
    args : sequence of PrimExpr
        The arguments.
    """

    __slots__ = ("_operands",)
    #: The intrinsic's full name, ``"tir.exp"``; set on each subclass.
    op: ClassVar[str] = ""
    arity: ClassVar[int] = 0
    _operands: tuple[PrimExpr, ...]
    _by_name: ClassVar[dict[str, type[Call]]] = {}

    def __new__(cls, dtype: str | DataType, op: str, args: Sequence[ExprLike]) -> Call:
        if cls is Call:
            if not isinstance(op, str):
                raise VMTypeError(f"Call: op must be an intrinsic name, got {op!r}")
            short = op.removeprefix("tir.")
            node_type = Call._by_name.get(short)
            if node_type is None:
                raise VMValueError(
                    f"Call: unknown intrinsic {op!r}; known: {', '.join(INTRINSICS)}"
                )
            cls = node_type
        return object.__new__(cls)

    def __init__(self, dtype: str | DataType, op: str, args: Sequence[ExprLike]) -> None:
        name = type(self).op
        dtype = as_dtype(dtype, name)
        exprs = tuple(convert(arg) for arg in args)
        if len(exprs) != self.arity:
            raise VMTypeError(f"{name}: expected {self.arity} arguments, got {len(exprs)}")
        self._check_types(dtype, exprs)
        object.__setattr__(self, "_operands", exprs)
        self._finish(dtype)

    def _check_types(self, dtype: DataType, args: tuple[PrimExpr, ...]) -> None:
        if not is_float_dtype(dtype):
            raise VMTypeError(f"{self.op}: needs a float type, got {dtype}")
        for position, arg in enumerate(args):
            if arg.dtype != dtype:
                raise VMTypeError(
                    f"{self.op}: argument {position} `{arg}` has type {arg.dtype}, expected {dtype}"
                )

    @property
    def args(self) -> tuple[PrimExpr, ...]:
        """The arguments (TVM's name for the operands)."""
        return self._operands

    @property
    def operands(self) -> tuple[PrimExpr, ...]:
        """The arguments, in order."""
        return self._operands

    def with_operands(self, *operands: PrimExpr) -> PrimExpr:
        """The same call with new arguments; ``self`` when unchanged."""
        same_count = len(operands) == len(self._operands)
        if same_count and all(a is b for a, b in zip(operands, self._operands, strict=True)):
            return self
        return Call(self.dtype, self.op, operands)

    def _ctor_args(self) -> tuple[Any, ...]:
        return (str(self.dtype), self.op, self._operands)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Call, self._ctor_args())

    def _script_render(self, render: Callable[[PrimExpr], str]) -> str:
        short = self.op.removeprefix("tir.")
        return f"T.{short}({', '.join(render(arg) for arg in self._operands)})"

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        values = [float(evaluate_child(arg)) for arg in self._operands]
        return float(type(self)._scalar_fn(*values))  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Call[{self.dtype}]({self})"


class IfThenElse(Call):
    """``T.if_then_else(cond, a, b)``: only the chosen branch is evaluated."""

    __slots__ = ()
    op = "tir.if_then_else"
    arity = 3

    def _check_types(self, dtype: DataType, args: tuple[PrimExpr, ...]) -> None:
        if not is_bool_dtype(args[0].dtype):
            raise VMTypeError(f"tir.if_then_else: condition must be bool, got {args[0].dtype}")
        for position in (1, 2):
            if args[position].dtype != dtype:
                raise VMTypeError(
                    f"tir.if_then_else: branch {position} `{args[position]}` has type "
                    f"{args[position].dtype}, expected {dtype}"
                )

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        condition, then_value, else_value = self._operands
        return evaluate_child(then_value if evaluate_child(condition) else else_value)


Call._by_name["if_then_else"] = IfThenElse


def _make_intrinsic(name: str, arity: int, fn: Callable[..., float]) -> type[Call]:
    node_type = type(
        name, (Call,), {"__slots__": (), "op": f"tir.{name}", "arity": arity, "__doc__": None}
    )
    node_type._scalar_fn = staticmethod(fn)  # type: ignore[attr-defined]
    node_type.__doc__ = f"``T.{name}``: the {name} intrinsic on floats."
    Call._by_name[name] = node_type
    return node_type


for _name, (_arity, _fn) in FLOAT_INTRINSICS.items():
    _make_intrinsic(_name, _arity, _fn)


def _float_operand(name: str, value: ExprLike) -> PrimExpr:
    expr = convert(value)
    if not is_float_dtype(expr.dtype):
        raise VMTypeError(
            f"T.{name}: needs a float argument, got `{expr}` of type {expr.dtype}; cast it first"
        )
    return expr


def _unary(name: str) -> Callable[[ExprLike], PrimExpr]:
    def build(x: ExprLike) -> PrimExpr:
        expr = _float_operand(name, x)
        return Call(expr.dtype, f"tir.{name}", [expr])

    build.__name__ = name
    build.__qualname__ = name
    build.__doc__ = f"``T.{name}(x)`` on a float expression."
    return build


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
fabs = _unary("fabs")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")
trunc = _unary("trunc")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")


def pow(x: ExprLike, y: ExprLike) -> PrimExpr:
    """``T.pow(x, y)``; the operands are promoted to one float type."""
    a, b = _promote(convert(x), convert(y), "pow")
    a = _float_operand("pow", a)
    return Call(a.dtype, "tir.pow", [a, cast(b, a.dtype)])


def if_then_else(cond: ExprLike, t: ExprLike, f: ExprLike) -> PrimExpr:
    """``T.if_then_else(cond, t, f)``: like ``Select`` but only the chosen branch runs."""
    condition = convert(cond)
    if not is_bool_dtype(condition.dtype):
        raise VMTypeError(
            f"T.if_then_else: condition must be bool, got `{condition}` of type {condition.dtype}"
        )
    then_value, else_value = _promote(convert(t), convert(f), "if_then_else")
    return Call(then_value.dtype, "tir.if_then_else", [condition, then_value, else_value])


# ---- bitwise and shifts on integers ---------------------------------------------------------
class BitwiseCall(Call):
    """An intrinsic on integers (TVM's ``tir.bitwise_*``, ``tir.shift_left``/``shift_right``):
    the operands and the result share one integer type; :meth:`int_value` is its value."""

    __slots__ = ()

    def _check_types(self, dtype: DataType, args: tuple[PrimExpr, ...]) -> None:
        if not is_int_dtype(dtype):
            raise VMTypeError(f"{self.op}: needs an integer type, got {dtype}")
        for position, arg in enumerate(args):
            if arg.dtype != dtype:
                raise VMTypeError(
                    f"{self.op}: argument {position} `{arg}` has type {arg.dtype}, expected {dtype}"
                )

    def int_value(self, *values: int) -> int:
        """The result on Python int operands, wrapped to the result type."""
        short = self.op.removeprefix("tir.")
        if short in BITWISE_FNS:
            return int(cast_scalar(BITWISE_FNS[short](*values), self.dtype))
        return shift_result(short, values[0], values[1], self.dtype)

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        return self.int_value(*(int(evaluate_child(arg)) for arg in self._operands))


for _name in (*BITWISE_FNS, "shift_left", "shift_right"):
    Call._by_name[_name] = type(
        _name,
        (BitwiseCall,),
        {
            "__slots__": (),
            "op": f"tir.{_name}",
            "arity": 1 if _name == "bitwise_not" else 2,
            "__doc__": f"``T.{_name}``: the {_name} intrinsic on integers.",
        },
    )


def _int_operand(name: str, value: ExprLike) -> PrimExpr:
    expr = convert(value)
    if not is_int_dtype(expr.dtype):
        raise VMTypeError(f"T.{name}: needs an integer argument, got `{expr}` of type {expr.dtype}")
    return expr


def _bitwise_binary(name: str) -> Callable[[ExprLike, ExprLike], PrimExpr]:
    def build(x: ExprLike, y: ExprLike) -> PrimExpr:
        a, b = _operands(x, y, name)  # a Python int takes the other operand's type
        a, b = _int_operand(name, a), _int_operand(name, b)
        return Call(a.dtype, f"tir.{name}", [a, b])

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"``T.{name}(x, y)`` on integer expressions (promoted to one type)."
    return build


bitwise_and = _bitwise_binary("bitwise_and")
bitwise_or = _bitwise_binary("bitwise_or")
bitwise_xor = _bitwise_binary("bitwise_xor")
shift_left = _bitwise_binary("shift_left")
shift_right = _bitwise_binary("shift_right")


def bitwise_not(x: ExprLike) -> PrimExpr:
    """``T.bitwise_not(x)``: ``~x`` on an integer expression."""
    expr = _int_operand("bitwise_not", x)
    return Call(expr.dtype, "tir.bitwise_not", [expr])


# ---- index checks ----------------------------------------------------------------------------
#: The ops a ``check_index`` names in its message, by code (the code is an operand, so a
#: serialized kernel stays plain data). Append new names; never renumber.
INDEX_CHECK_OPS = ("take", "gather", "scatter", "embedding", "one_hot", "untrusted kernel")

#: The axis operand of a check on a flattened tensor (``take`` with ``axis=None``).
FLAT_AXIS = -1


def index_error_message(op_code: int, axis: int, index: int, extent: int) -> str:
    """The message of a failed ``check_index``; every target reports exactly this text."""
    op = INDEX_CHECK_OPS[op_code] if 0 <= op_code < len(INDEX_CHECK_OPS) else f"op {op_code}"
    where = "the flattened input" if axis == FLAT_AXIS else f"axis {axis}"
    valid = f"{-extent}..{extent - 1}" if extent > 0 else "none: the axis is empty"
    return (
        f"{op}: index {index} is out of range for {where} with size {extent} (valid range {valid})"
    )


class CheckIndex(Call):
    """``T.check_index(index, extent, axis, op)``: a user-supplied index, checked and wrapped.

    The value is ``index`` if ``0 <= index < extent`` and ``index + extent`` if
    ``-extent <= index < 0`` (numpy's negative indices), as int64. Any other index stops the
    kernel with :class:`~relaxvm.errors.VMIndexError` naming the op (``INDEX_CHECK_OPS[op]``),
    the axis and the index (:func:`index_error_message`). ``axis`` and ``op`` are int64
    constants. The interpreter raises; compiled targets leave the kernel early with a non-zero
    status (the llvm target reports the message through its runtime), so a kernel never reads
    outside a buffer.
    """

    __slots__ = ()
    op = "tir.check_index"
    arity = 4

    def _check_types(self, dtype: DataType, args: tuple[PrimExpr, ...]) -> None:
        if dtype != DataType("int64"):
            raise VMTypeError(f"tir.check_index: the result is int64, got {dtype}")
        for position, arg in enumerate(args):
            if not is_int_dtype(arg.dtype):
                raise VMTypeError(
                    f"tir.check_index: argument {position} `{arg}` must be an integer, "
                    f"got {arg.dtype}"
                )
        for position in (2, 3):
            if not isinstance(args[position], IntImm):
                raise VMTypeError(f"tir.check_index: argument {position} must be a constant")

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        index, extent, axis, op_code = (int(evaluate_child(arg)) for arg in self._operands)
        return checked_index(index, extent, axis, op_code)


def checked_index(index: int, extent: int, axis: int, op_code: int) -> int:
    """``check_index`` on Python ints (the interpreter's and constant folding's version)."""
    if -extent <= index < extent:
        return index + extent if index < 0 else index
    raise VMIndexError(index_error_message(op_code, axis, index, extent))


Call._by_name["check_index"] = CheckIndex


def check_index(
    index: ExprLike, extent: ExprLike, axis: int | IntImm, op: str | int | IntImm
) -> PrimExpr:
    """``T.check_index``: ``index`` checked against ``extent`` and wrapped like numpy's.

    Parameters
    ----------
    index : PrimExpr
        The user-supplied index (any integer type).
    extent : PrimExpr
        The size of the indexed axis.
    axis : int
        The axis, for the message (:data:`FLAT_AXIS` for a flattened input).
    op : str or int
        The op, one of :data:`INDEX_CHECK_OPS` or its position there (the printed form).
    """
    # The printed form spells the constants T.int64(k): accept them back.
    axis = int(axis.value) if isinstance(axis, IntImm) else axis
    op = int(op.value) if isinstance(op, IntImm) else op
    names = dict(enumerate(INDEX_CHECK_OPS))
    code = op if isinstance(op, int) and op in names else None
    if isinstance(op, str) and op in INDEX_CHECK_OPS:
        code = INDEX_CHECK_OPS.index(op)
    if code is None:
        raise VMValueError(f"T.check_index: op must be one of {INDEX_CHECK_OPS}, got {op!r}")
    args = [convert(index), cast(extent, "int64"), IntImm("int64", axis), IntImm("int64", code)]
    return Call("int64", "tir.check_index", args)
