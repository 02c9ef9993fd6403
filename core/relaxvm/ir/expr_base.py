"""Symbolic scalar expressions: the ``PrimExpr`` family of TVM's TIR.

Shapes in Relax are tuples of these expressions (``R.Tensor((n, 4))``), and TIR kernels compute
with them. Every node is immutable, carries a :class:`~relaxvm.runtime.DataType`, and is hashable.

Equality is **structural** and returns a plain ``bool``: ``(n + 1) == (n + 1)`` is ``True`` even
for two separately built trees, so expressions work as dict keys and set members. Variables are
the exception: a :class:`Var` is equal only to itself (two ``Var("n")`` are different variables,
as in TVM). Integer immediates also compare equal to the Python number they hold
(``IntImm("int64", 4) == 4``). To *build* an equality node use :meth:`PrimExpr.equal` or
``EQ(a, b)``; TVM makes ``==`` build the node instead, which stops expressions from being usable
as dict keys, so we deliberately differ there. The ordering operators (``<``, ``<=``, ``>``,
``>=``) build nodes, and a symbolic node refuses to act as a Python ``bool``.

The arithmetic operators (``+ - * // %``, unary ``-``) build nodes through
:mod:`relaxvm.ir.op`, which wraps Python numbers, promotes mismatched types and folds constants;
the node constructors themselves never fold, so ``Add(IntImm(1), IntImm(2))`` stays an ``Add``.
``//`` and ``%`` are floor division and floor modulo, as in Python and TVM's shape arithmetic.

This module holds the base class, the leaves (variables and immediates) and the helpers the
operator nodes of :mod:`relaxvm.ir.expr_nodes` share; :mod:`relaxvm.ir.expr` re-exports all of
them, and is the module to import from.
"""

from __future__ import annotations

import itertools
import numbers
import operator
from types import ModuleType
from typing import Any, ClassVar, Union

from ..errors import VMTypeError, VMValueError
from ..runtime.dtype import DataType
from .dtype import dtype_int_range, is_bool_dtype, is_float_dtype, is_int_dtype

__all__ = [
    "ExprLike",
    "FloatImm",
    "IntImm",
    "PrimExpr",
    "SizeVar",
    "Var",
    "as_dtype",
]

# relaxvm.ir.op (wrapping, promotion, folding) and relaxvm.ir.printer build on the classes of
# this module, so importing them here at load time would be a cycle. The operators and
# ``__str__`` only need them when called, so they are fetched on first use and cached.
_op_module: ModuleType | None = None
_printer_module: ModuleType | None = None


def _op() -> ModuleType:
    global _op_module
    if _op_module is None:
        from . import op

        _op_module = op
    return _op_module


def _printer() -> ModuleType:
    global _printer_module
    if _printer_module is None:
        from . import printer

        _printer_module = printer
    return _printer_module


#: What the builders accept where an expression is expected.
ExprLike = Union["PrimExpr", int, float, bool]

# Creation order of variables: a deterministic tie-break when two variables share a name.
_var_serial = itertools.count()

_INT64 = DataType("int64")
_FLOAT32 = DataType("float32")
_BOOL = DataType("bool")


class PrimExpr:
    """Base class of every symbolic scalar expression.

    Attributes
    ----------
    dtype : DataType
        The type of the value the expression computes.
    """

    __slots__ = ("_hash", "_sort_key", "dtype")
    dtype: DataType
    _hash: int
    #: Cached ordering key of the simplifier (relaxvm.ir.arith.poly.order_key).
    _sort_key: tuple[Any, ...] | None
    #: Names of the child-expression fields, in printing and traversal order.
    _operand_names: ClassVar[tuple[str, ...]] = ()

    def _finish(self, dtype: DataType) -> None:
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "_sort_key", None)
        object.__setattr__(self, "_hash", self._compute_hash())

    def _compute_hash(self) -> int:
        # Children cache their own hashes, so this is O(1) per node and never recurses.
        return hash((type(self).__name__, self.dtype, *(hash(op) for op in self.operands)))

    def _ctor_args(self) -> tuple[Any, ...]:
        return self.operands

    # ---- structure ------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[PrimExpr, ...]:
        """The child expressions, in order (empty for variables and immediates)."""
        names = self._operand_names
        # Unrolled for the common arities: substitution and visitors read this for every
        # node they pass, so it is one of the compiler's hottest lines.
        if len(names) == 2:
            return (getattr(self, names[0]), getattr(self, names[1]))
        if not names:
            return ()
        if len(names) == 1:
            return (getattr(self, names[0]),)
        return tuple(getattr(self, name) for name in names)

    def with_operands(self, *operands: PrimExpr) -> PrimExpr:
        """A node of the same kind with new children (no folding); ``self`` if unchanged."""
        if len(operands) != len(self._operand_names):
            raise VMTypeError(
                f"{type(self).__name__}.with_operands: expected {len(self._operand_names)} "
                f"operands, got {len(operands)}"
            )
        if all(new is old for new, old in zip(operands, self.operands, strict=True)):
            return self
        return self._rebuild(operands)

    def _rebuild(self, operands: tuple[PrimExpr, ...]) -> PrimExpr:
        return type(self)(*operands)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new expression")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new expression")

    def __copy__(self) -> PrimExpr:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> PrimExpr:
        # Immutable, and copying a Var would create a different variable.
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._ctor_args())

    # ---- equality, hashing, truth ---------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, PrimExpr):
            return _same_structure(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        raise VMTypeError(
            f"cannot use the symbolic expression `{self}` as a Python bool; use "
            "relaxvm.ir.Analyzer().can_prove(...) or relaxvm.ir.evaluate(...) to decide it"
        )

    def __int__(self) -> int:
        raise VMTypeError(f"cannot convert the symbolic expression `{self}` to a Python int")

    def __float__(self) -> float:
        raise VMTypeError(f"cannot convert the symbolic expression `{self}` to a Python float")

    def __str__(self) -> str:
        return _printer().expr_to_str(self)

    def script(self, **options: Any) -> str:
        """The script text of this expression (TVM's ``Object.script``); with
        ``verbose_expr=True`` each free variable's declaration (``n = T.int64()``) comes first.
        The options are those of :meth:`relaxvm.ir.relax.Var.script`."""
        from .expr_functor import free_vars
        from .relax.text_options import apply_layout, script_options

        opts = script_options(type(self).__name__, **options)
        lines = [f"{v.name} = T.{v.dtype}()" for v in free_vars(self)] if opts.verbose_expr else []
        return apply_layout("\n".join([*lines, str(self)]), opts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}[{self.dtype}]({self})"

    # ---- operators: delegate to relaxvm.ir.op, which wraps numbers and folds constants ----
    def __add__(self, other: ExprLike) -> PrimExpr:
        return _op().add(self, other)

    def __radd__(self, other: ExprLike) -> PrimExpr:
        return _op().add(other, self)

    def __sub__(self, other: ExprLike) -> PrimExpr:
        return _op().sub(self, other)

    def __rsub__(self, other: ExprLike) -> PrimExpr:
        return _op().sub(other, self)

    def __mul__(self, other: ExprLike) -> PrimExpr:
        return _op().mul(self, other)

    def __rmul__(self, other: ExprLike) -> PrimExpr:
        return _op().mul(other, self)

    def __floordiv__(self, other: ExprLike) -> PrimExpr:
        return _op().floordiv(self, other)

    def __rfloordiv__(self, other: ExprLike) -> PrimExpr:
        return _op().floordiv(other, self)

    def __mod__(self, other: ExprLike) -> PrimExpr:
        return _op().floormod(self, other)

    def __rmod__(self, other: ExprLike) -> PrimExpr:
        return _op().floormod(other, self)

    def __truediv__(self, other: ExprLike) -> PrimExpr:
        return _op().true_div(self, other)

    def __rtruediv__(self, other: ExprLike) -> PrimExpr:
        return _op().true_div(other, self)

    def __neg__(self) -> PrimExpr:
        return _op().neg(self)

    def __lt__(self, other: ExprLike) -> PrimExpr:
        return _op().less(self, other)

    def __le__(self, other: ExprLike) -> PrimExpr:
        return _op().less_equal(self, other)

    def __gt__(self, other: ExprLike) -> PrimExpr:
        return _op().greater(self, other)

    def __ge__(self, other: ExprLike) -> PrimExpr:
        return _op().greater_equal(self, other)

    def __and__(self, other: ExprLike) -> PrimExpr:
        return _op().logical_and(self, other)

    def __rand__(self, other: ExprLike) -> PrimExpr:
        return _op().logical_and(other, self)

    def __or__(self, other: ExprLike) -> PrimExpr:
        return _op().logical_or(self, other)

    def __ror__(self, other: ExprLike) -> PrimExpr:
        return _op().logical_or(other, self)

    def __invert__(self) -> PrimExpr:
        return _op().logical_not(self)

    def equal(self, other: ExprLike) -> PrimExpr:
        """Build ``self == other`` as an :class:`EQ` node (``==`` itself compares structure)."""
        return _op().equal(self, other)

    def not_equal(self, other: ExprLike) -> PrimExpr:
        """Build ``self != other`` as an :class:`NE` node."""
        return _op().not_equal(self, other)

    def astype(self, dtype: str | DataType) -> PrimExpr:
        """Cast to ``dtype`` (no node when the type already matches)."""
        return _op().cast(self, dtype)


def _same_structure(a: PrimExpr, b: PrimExpr) -> bool:
    """Structural equality with variables compared by identity (the ``==`` of expressions)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x is y:
            continue
        if x._hash != y._hash or type(x) is not type(y) or x.dtype != y.dtype:
            return False
        if isinstance(x, Var):
            return False  # distinct variables, whatever their names
        if isinstance(x, (IntImm, FloatImm)):
            if not _same_number(x.value, y.value):  # type: ignore[attr-defined]
                return False
            continue
        pending.extend(zip(x.operands, y.operands, strict=True))
    return True


def _same_number(x: float, y: float) -> bool:
    # NaN is structurally equal to NaN: a constant is the same constant.
    return x == y or (x != x and y != y)


def as_dtype(dtype: str | DataType, where: str = "dtype") -> DataType:
    """Parse ``dtype`` (a string or :class:`DataType`), naming ``where`` in the error."""
    try:
        return DataType(dtype)
    except (VMTypeError, VMValueError) as err:
        raise VMTypeError(f"{where}: {err}") from None


# ---- leaves ---------------------------------------------------------------------------------
class Var(PrimExpr):
    """A symbolic variable, equal only to itself.

    Parameters
    ----------
    name : str
        The name used when printing; two variables may share a name and stay distinct.
    dtype : str or DataType
        Its type, ``"int64"`` by default (the type of shape arithmetic).
    """

    __slots__ = ("_serial", "name")
    name: str
    _serial: int

    def __init__(self, name: str, dtype: str | DataType = "int64") -> None:
        if not isinstance(name, str):
            raise VMTypeError(f"{type(self).__name__}: name must be a str, got {name!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_serial", next(_var_serial))
        self._finish(as_dtype(dtype, type(self).__name__))

    @property
    def name_hint(self) -> str:
        """TVM's spelling of :attr:`name`."""
        return self.name

    def _compute_hash(self) -> int:
        return object.__hash__(self)

    def _ctor_args(self) -> tuple[Any, ...]:
        return (self.name, str(self.dtype))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {str(self.dtype)!r})"


class SizeVar(Var):
    """A variable known to be non-negative (a size or extent); the analyzer uses the fact."""

    __slots__ = ()


def _split_dtype_value(cls_name: str, first: Any, second: Any, default: DataType) -> tuple:
    # TVM spells IntImm(dtype, value); IntImm(value) and IntImm(value, dtype) are accepted too.
    if isinstance(first, (str, DataType)):
        return as_dtype(first, cls_name), second
    if second is None:
        return default, first
    return as_dtype(second, cls_name), first


class IntImm(PrimExpr):
    """An integer (or ``bool``) constant.

    Parameters
    ----------
    dtype : str or DataType
        ``"int64"`` when omitted; ``IntImm(4)``, ``IntImm("int32", 4)`` and ``IntImm(4, "int32")``
        are all accepted (TVM's order is dtype first).
    value : int
        Must be representable in ``dtype``.
    """

    __slots__ = ("value",)
    value: int

    def __init__(self, dtype: Any, value: Any = None) -> None:
        default = _BOOL if isinstance(dtype, bool) else _INT64
        dtype, value = _split_dtype_value("IntImm", dtype, value, default)
        if not (is_int_dtype(dtype) or is_bool_dtype(dtype)):
            raise VMTypeError(f"IntImm: dtype must be an integer or bool type, got {dtype}")
        try:
            number = operator.index(value)
        except TypeError:
            raise VMTypeError(f"IntImm: value must be an int, got {value!r}") from None
        low, high = dtype_int_range(dtype)
        if not low <= number <= high:
            raise VMValueError(
                f"IntImm: value {number} does not fit in {dtype} (range {low}..{high})"
            )
        object.__setattr__(self, "value", int(number))
        self._finish(dtype)

    def _compute_hash(self) -> int:
        # Equal to the hash of the Python int, so `IntImm(4) == 4` keeps dict semantics.
        return hash(self.value)

    def _ctor_args(self) -> tuple[Any, ...]:
        return (str(self.dtype), self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, numbers.Number):  # Python and numpy numbers alike
            return bool(self.value == other)
        return super().__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return self.value != 0

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        return f"IntImm({str(self.dtype)!r}, {self.value})"


class FloatImm(PrimExpr):
    """A floating point constant; ``FloatImm(1.5)`` is ``float32`` like a TVMScript literal."""

    __slots__ = ("value",)
    value: float

    def __init__(self, dtype: Any, value: Any = None) -> None:
        dtype, value = _split_dtype_value("FloatImm", dtype, value, _FLOAT32)
        if not is_float_dtype(dtype):
            raise VMTypeError(f"FloatImm: dtype must be a float type, got {dtype}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)  # numpy floats and the like
            except (TypeError, ValueError):
                raise VMTypeError(f"FloatImm: value must be a number, got {value!r}") from None
        object.__setattr__(self, "value", float(value))
        self._finish(dtype)

    def _compute_hash(self) -> int:
        # Python hashes each NaN object differently; a NaN constant is one structure.
        return hash(self.value) if self.value == self.value else hash("FloatImm.nan")

    def _ctor_args(self) -> tuple[Any, ...]:
        return (str(self.dtype), self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, numbers.Number):  # Python and numpy numbers alike
            return bool(self.value == other)
        return super().__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return self.value != 0.0

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"FloatImm({str(self.dtype)!r}, {self.value!r})"


# ---- helpers for the operator nodes (in expr_nodes.py) ---------------------------
def _coerce_operand(node: str, value: Any, like: DataType | None) -> PrimExpr:
    """Wrap a Python number as a constant of type ``like`` (the other operand's type)."""
    if isinstance(value, PrimExpr):
        return value
    if not isinstance(value, (int, float)):
        raise VMTypeError(f"{node}: expected a PrimExpr or a number, got {type(value).__name__}")
    if like is None:
        return _op().const(value)
    if isinstance(value, float) and not is_float_dtype(like):
        raise VMTypeError(f"{node}: cannot combine the float {value} with a {like} operand")
    if is_float_dtype(like):
        return FloatImm(like, float(value))
    return IntImm(like, value)


def _coerce_pair(node: str, a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    like_a = a.dtype if isinstance(a, PrimExpr) else None
    like_b = b.dtype if isinstance(b, PrimExpr) else None
    return _coerce_operand(node, a, like_b), _coerce_operand(node, b, like_a)
