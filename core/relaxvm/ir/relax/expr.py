"""Relax expressions, bindings, blocks and functions (TVM's ``relax.Expr`` family).

Every node is immutable and compares by identity, as in TVM: two ``Var("x")`` are different
variables, and two separately built calls are different nodes. Structural comparison is
:func:`relaxvm.ir.relax.structural_equal`.

Leaves derive their struct info when built (a :class:`Constant` knows its static shape and
dtype, a :class:`ShapeExpr` its values). Bindings, blocks and functions are in :mod:`.block`. A :class:`Call` gets
its struct info from operator inference in the normalizer, a later layer, so it is None until
then unless given explicitly.
"""

from __future__ import annotations

import operator
import threading
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ...errors import VMTypeError, VMValueError
from ...runtime.creation import tensor as make_tensor
from ...runtime.dtype import DataType
from ...runtime.tensor import Tensor
from ..expr import PrimExpr
from ..op import convert
from ._base import RelaxExpr, Span, check_expr, check_name, frozen_attrs
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    as_shape_values,
)

__all__ = [
    "Call",
    "Constant",
    "DataTypeImm",
    "DataflowVar",
    "ExternFunc",
    "GlobalVar",
    "If",
    "Op",
    "PrimValue",
    "ShapeExpr",
    "StringImm",
    "Tuple",
    "TupleGetItem",
    "Var",
    "const",
]


# ---- variables and global references ---------------------------------------------------------
#: The (empty, read-only) attributes of an :class:`ExternFunc`.
_NO_ATTRS: Mapping[str, Any] = types.MappingProxyType({})


class Var(RelaxExpr):
    """A Relax variable: a function parameter or the target of a binding.

    Parameters
    ----------
    name_hint : str
        Its name for printing; two variables may share a name and stay distinct.
    struct_info : StructInfo, optional
        What is known about its value (the annotation ``x: R.Tensor(...)``).
    """

    __slots__ = ("name_hint",)
    name_hint: str

    def __init__(
        self, name_hint: str, struct_info: StructInfo | None = None, span: Span | None = None
    ) -> None:
        self._init_field("name_hint", check_name(type(self).__name__, name_hint))
        self._init_expr(struct_info, span)

    def __getitem__(self, index: int) -> TupleGetItem:
        """``t[i]``: field ``i`` of a tuple-valued variable, as ``TupleGetItem(t, i)`` (TVM's
        spelling); an index past the last field is an ``IndexError``."""
        sinfo = self.struct_info
        if isinstance(sinfo, TupleStructInfo) and not 0 <= index < len(sinfo.fields):
            raise IndexError(
                f"{self.name_hint}[{index}]: index out of range for {sinfo}, which has "
                f"{len(sinfo.fields)} fields"
            )
        return TupleGetItem(self, index)

    def __iter__(self) -> Iterator[TupleGetItem]:
        """``a, b = t`` for a variable with a TupleStructInfo (its fields, as TupleGetItem)."""
        sinfo = self.struct_info
        if not isinstance(sinfo, TupleStructInfo):
            raise VMTypeError(
                f"cannot unpack {self.name_hint}: only a variable with a TupleStructInfo can be "
                f"unpacked, it has {sinfo}"
            )
        return (TupleGetItem(self, i) for i in range(len(sinfo.fields)))


class DataflowVar(Var):
    """A variable local to a dataflow block; it must not be used after the block."""

    __slots__ = ()


class GlobalVar(RelaxExpr):
    """A reference to a function of an :class:`~relaxvm.ir.relax.IRModule`, by name."""

    __slots__ = ("name_hint",)
    name_hint: str

    def __init__(
        self, name_hint: str, struct_info: StructInfo | None = None, span: Span | None = None
    ) -> None:
        self._init_field("name_hint", check_name("GlobalVar", name_hint))
        self._init_expr(struct_info, span)


class ExternFunc(RelaxExpr):
    """A packed function called by its global symbol (``R.ExternFunc("vm.builtin.alloc")``).

    Its struct info is an opaque, impure callable unless given: nothing is known about a
    function found by name at run time.
    """

    __slots__ = ("global_symbol",)
    global_symbol: str

    def __init__(
        self, global_symbol: str, struct_info: StructInfo | None = None, span: Span | None = None
    ) -> None:
        self._init_field("global_symbol", check_name("ExternFunc", global_symbol))
        self._init_expr(struct_info or FuncStructInfo.opaque_func(purity=False), span)

    @property
    def attrs(self) -> Mapping[str, Any]:
        """Function attributes (TVM's ``BaseFunc.attrs``): an extern function has none."""
        return _NO_ATTRS


class Op(RelaxExpr):
    """An operator, by name (``Op.get("relax.add")``); one object per name.

    This is only the reference used as a call's callee; shape and dtype inference come from
    the operator registry, which builds on it.
    """

    __slots__ = ("name",)
    name: str
    _interned: ClassVar[dict[str, Op]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __new__(cls, name: str) -> Op:
        check_name("Op", name)
        with cls._lock:
            found = cls._interned.get(name)
            if found is None:
                found = super().__new__(cls)
                found._init_field("name", name)
                found._init_expr(None, None)
                cls._interned[name] = found
        return found

    def __init__(self, name: str) -> None:
        pass  # everything happens once, in __new__

    @classmethod
    def get(cls, name: str) -> Op:
        """The operator named ``name`` (the same object on every call)."""
        return cls(name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Op.get, (self.name,))


# ---- leaves -----------------------------------------------------------------------------------
class Constant(RelaxExpr):
    """A constant tensor; its struct info is the static shape and dtype of ``data``."""

    __slots__ = ("data",)
    data: Tensor

    def __init__(
        self, data: Tensor, struct_info: StructInfo | None = None, span: Span | None = None
    ) -> None:
        if not isinstance(data, Tensor):
            raise VMTypeError(
                f"Constant: data must be a relaxvm Tensor, got {type(data).__name__} "
                "(use relaxvm.ir.relax.const(...) to wrap numpy arrays and numbers)"
            )
        self._init_field("data", data)
        derived = TensorStructInfo(list(data.shape), data.dtype)
        self._init_expr(struct_info or derived, span)


def const(value: Any, dtype: str | DataType | None = None, span: Span | None = None) -> Constant:
    """A :class:`Constant` from a Tensor, numpy array or Python number/list (TVM's ``relax.const``).

    Python ints become ``int64`` and floats ``float32`` unless ``dtype`` says otherwise.
    """
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != DataType(dtype):
            raise VMTypeError(f"const: the tensor has dtype {value.dtype}, not {dtype}")
        return Constant(value, span=span)
    if dtype is not None and DataType(dtype).is_float8:
        # numpy has no float8: tensor() rounds the values (or keeps an ml_dtypes array's bits).
        return Constant(make_tensor(value, dtype=dtype), span=span)
    if dtype is None and not isinstance(value, np.ndarray):
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype("float32")
    else:
        array = np.asarray(value, dtype=None if dtype is None else DataType(dtype).numpy_dtype())
    return Constant(make_tensor(array), span=span)


class ShapeExpr(RelaxExpr):
    """A shape value built from integer expressions (``R.shape([n, 4])``)."""

    __slots__ = ("values",)
    values: tuple[PrimExpr, ...]

    def __init__(self, values: Sequence[PrimExpr | int], span: Span | None = None) -> None:
        parsed = as_shape_values(values, "ShapeExpr")
        self._init_field("values", parsed)
        self._init_expr(ShapeStructInfo(parsed), span)

    def __len__(self) -> int:
        return len(self.values)

    def __bool__(self) -> bool:
        # An expression is always truthy (``if shape_expr:`` tests presence, not rank), even
        # the 0-d shape ``()`` that ``__len__`` would make falsy.
        return True

    def __getitem__(self, index: int) -> PrimExpr:
        """Extent ``index`` (a PrimExpr), as TVM's ``ShapeExpr[i]``."""
        return self.values[index]


class PrimValue(RelaxExpr):
    """A scalar value given by a PrimExpr (``R.prim_value(n + 1)``)."""

    __slots__ = ("value",)
    value: PrimExpr

    def __init__(self, value: PrimExpr | int | float, span: Span | None = None) -> None:
        if not isinstance(value, (PrimExpr, int, float)):
            raise VMTypeError(f"PrimValue: expected a PrimExpr or number, got {value!r}")
        expr = convert(value)
        self._init_field("value", expr)
        self._init_expr(PrimStructInfo(value=expr), span)


class StringImm(RelaxExpr):
    """A string constant (``R.str("hello")``)."""

    __slots__ = ("value",)
    value: str

    def __init__(self, value: str, span: Span | None = None) -> None:
        if not isinstance(value, str):
            raise VMTypeError(f"StringImm: expected a str, got {type(value).__name__}")
        self._init_field("value", value)
        self._init_expr(ObjectStructInfo(), span)


class DataTypeImm(RelaxExpr):
    """A data type as a value (``R.dtype("float32")``), e.g. for an allocation builtin."""

    __slots__ = ("value",)
    value: DataType

    def __init__(self, value: str | DataType, span: Span | None = None) -> None:
        try:
            parsed = DataType(value)
        except (VMTypeError, VMValueError) as err:
            raise VMTypeError(f"DataTypeImm: {err}") from None
        self._init_field("value", parsed)
        self._init_expr(ObjectStructInfo(), span)


# ---- compound expressions ---------------------------------------------------------------------
class Tuple(RelaxExpr):
    """A tuple of values; its struct info is known when every field's is."""

    __slots__ = ("fields",)
    fields: tuple[RelaxExpr, ...]

    def __init__(self, fields: Sequence[RelaxExpr], span: Span | None = None) -> None:
        checked = tuple(check_expr(f"Tuple: field {i}", field) for i, field in enumerate(fields))
        self._init_field("fields", checked)
        infos = [field.struct_info for field in checked]
        derived = None
        if all(info is not None for info in infos):
            derived = TupleStructInfo(infos)  # type: ignore[arg-type]
        self._init_expr(derived, span)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, index: int) -> RelaxExpr:
        return self.fields[index]


class TupleGetItem(RelaxExpr):
    """Field ``index`` of a tuple value (``t[0]``)."""

    __slots__ = ("index", "tuple_value")
    tuple_value: RelaxExpr
    index: int

    def __init__(self, tuple_value: RelaxExpr, index: int, span: Span | None = None) -> None:
        check_expr("TupleGetItem: tuple_value", tuple_value)
        try:
            index = operator.index(index)
        except TypeError:
            raise VMTypeError(f"TupleGetItem: index must be an int, got {index!r}") from None
        tuple_info = tuple_value.struct_info
        derived = None
        if isinstance(tuple_info, TupleStructInfo):
            if not 0 <= index < len(tuple_info.fields):
                raise VMValueError(
                    f"TupleGetItem: index {index} is out of range for {tuple_info}, which has "
                    f"{len(tuple_info.fields)} fields"
                )
            derived = tuple_info.fields[index]
        elif tuple_info is not None and not isinstance(tuple_info, ObjectStructInfo):
            raise VMTypeError(f"TupleGetItem: the value indexed is not a tuple, it is {tuple_info}")
        elif index < 0:
            raise VMValueError(f"TupleGetItem: index must be >= 0, got {index}")
        self._init_field("tuple_value", tuple_value)
        self._init_field("index", index)
        self._init_expr(derived, span)


class Call(RelaxExpr):
    """A call of an operator, a module function, a packed function or a closure.

    Parameters
    ----------
    op : Op, GlobalVar, ExternFunc or Var
        What is called.
    args : sequence of Relax expressions
    attrs : mapping, optional
        Operator attributes (``axis``, ``keepdims`` ...).
    sinfo_args : sequence of StructInfo
        Struct info arguments, e.g. the output of ``R.call_tir`` or ``R.call_packed``.
    struct_info : StructInfo, optional
        The result's struct info when already known; otherwise the normalizer fills it in.
    """

    __slots__ = ("args", "attrs", "op", "sinfo_args")
    op: RelaxExpr
    args: tuple[RelaxExpr, ...]
    attrs: Mapping[str, Any] | None
    sinfo_args: tuple[StructInfo, ...]

    def __init__(
        self,
        op: RelaxExpr,
        args: Sequence[RelaxExpr],
        attrs: Mapping[str, Any] | None = None,
        sinfo_args: Sequence[StructInfo] = (),
        struct_info: StructInfo | None = None,
        span: Span | None = None,
    ) -> None:
        if not isinstance(op, (Op, GlobalVar, ExternFunc, Var)):
            raise VMTypeError(
                f"Call: op must be an Op, GlobalVar, ExternFunc or Var, got {type(op).__name__}"
            )
        checked = tuple(check_expr(f"Call: argument {i}", arg) for i, arg in enumerate(args))
        for index, sinfo in enumerate(sinfo_args):
            if not isinstance(sinfo, StructInfo):
                raise VMTypeError(f"Call: sinfo_args[{index}] must be a StructInfo, got {sinfo!r}")
        self._init_field("op", op)
        self._init_field("args", checked)
        self._init_field("attrs", frozen_attrs("Call", attrs))
        self._init_field("sinfo_args", tuple(sinfo_args))
        self._init_expr(struct_info, span)


class If(RelaxExpr):
    """``if cond: true_branch else: false_branch``; branches are usually :class:`SeqExpr`."""

    __slots__ = ("cond", "false_branch", "true_branch")
    cond: RelaxExpr
    true_branch: RelaxExpr
    false_branch: RelaxExpr

    def __init__(
        self,
        cond: RelaxExpr,
        true_branch: RelaxExpr,
        false_branch: RelaxExpr,
        struct_info: StructInfo | None = None,
        span: Span | None = None,
    ) -> None:
        self._init_field("cond", check_expr("If: cond", cond))
        self._init_field("true_branch", check_expr("If: true_branch", true_branch))
        self._init_field("false_branch", check_expr("If: false_branch", false_branch))
        self._init_expr(struct_info, span)
