"""StructInfo: what the compiler knows statically about a Relax value.

Each class describes a set of run-time values, from the widest (:class:`ObjectStructInfo`, any
value) down to precise ones (``R.Tensor((n, 4), "float32")``: float32 tensors of rank 2 whose
second dimension is 4 and whose first is whatever ``n`` is bound to). Unknown parts are left
out: ``dtype=None`` is TVM's ``void`` (unknown element type), ``ndim=-1`` is an unknown rank, and
``shape=None`` / ``values=None`` means the extents are unknown.

Two StructInfo objects compare equal (``==``) when they describe the same thing with the same
symbolic variables; variables compare by identity. :func:`relaxvm.ir.relax.structural_equal`
additionally maps variables between two functions. ``str()`` gives the TVMScript spelling.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import VMTypeError, VMValueError
from ...runtime.device import Device
from ...runtime.dtype import DataType, DataTypeCode
from ..dtype import parse_dtype
from ..expr import PrimExpr
from ..op import convert
from ._base import RelaxExpr, RelaxNode, Span

if TYPE_CHECKING:
    from .expr import ShapeExpr, Var

__all__ = [
    "FuncStructInfo",
    "ObjectStructInfo",
    "PrimStructInfo",
    "ShapeStructInfo",
    "StructInfo",
    "TensorStructInfo",
    "TupleStructInfo",
    "as_dtype_or_unknown",
    "as_shape_values",
]


def as_dtype_or_unknown(dtype: Any, where: str) -> DataType | None:
    """Parse a dtype where ``None``, ``""`` and ``"void"`` all mean "unknown" (returns None)."""
    if dtype is None or (isinstance(dtype, str) and dtype in ("", "void")):
        return None
    # Misspelt annotation dtypes ("flaot32") get a "did you mean" from parse_dtype.
    return parse_dtype(dtype, where)


def as_shape_values(values: Sequence[Any], where: str) -> tuple[PrimExpr, ...]:
    """Convert a sequence of ints / integer PrimExprs into a tuple of PrimExprs (int -> int64).

    Raises
    ------
    VMTypeError
        If an entry is not an integer expression; the message names its position.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise VMTypeError(f"{where}: expected a list or tuple of dimensions, got {values!r}")
    result = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, PrimExpr)):
            try:
                value = operator.index(value)  # numpy integers
            except TypeError:
                raise VMTypeError(
                    f"{where}: dimension {index} must be an int or an integer PrimExpr, "
                    f"got {value!r}"
                ) from None
        expr = convert(value)
        if expr.dtype.code not in (DataTypeCode.INT, DataTypeCode.UINT) or expr.dtype.lanes != 1:
            raise VMTypeError(
                f"{where}: dimension {index} must be an integer expression, got `{expr}` of "
                f"type {expr.dtype}"
            )
        result.append(expr)
    return tuple(result)


def _prim_text(expr: PrimExpr) -> str:
    return str(expr)


def _tuple_text(values: Sequence[PrimExpr]) -> str:
    inner = ", ".join(_prim_text(v) for v in values)
    return f"({inner},)" if len(values) == 1 else f"({inner})"


class StructInfo(RelaxNode):
    """Base class of all struct info.

    Attributes
    ----------
    span : Span or None
        Where the annotation was written.
    """

    __slots__ = ("span",)
    span: Span | None

    def _key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, StructInfo):
            return NotImplemented
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __str__(self) -> str:
        return self._script()

    def __repr__(self) -> str:
        return self._script()

    def _script(self) -> str:
        """The TVMScript spelling, e.g. ``R.Tensor((n, 4), dtype="float32")``."""
        raise NotImplementedError

    def is_base_of(self, derived: StructInfo) -> bool:
        """True when every value described by ``derived`` is also described by ``self``.

        A convenience over :func:`relaxvm.ir.relax.is_base_of` that only answers a proved yes.
        """
        from .subtype import BaseCheckResult, struct_info_base_check

        return struct_info_base_check(self, derived) == BaseCheckResult.PASS


class ObjectStructInfo(StructInfo):
    """Any value at all (``R.Object``): the top of the StructInfo lattice."""

    __slots__ = ()

    def __init__(self, span: Span | None = None) -> None:
        self._init_field("span", span)

    def _key(self) -> tuple[Any, ...]:
        return ()

    def _script(self) -> str:
        return "R.Object"


class PrimStructInfo(StructInfo):
    """A scalar of a primitive type (``R.Prim("int64")``), optionally with a known value.

    Parameters
    ----------
    dtype : str or DataType, optional
        The scalar type; taken from ``value`` when omitted.
    value : PrimExpr or int or float, optional
        The value, when known (``R.Prim(value=n)``).
    """

    __slots__ = ("dtype", "value")
    dtype: DataType
    value: PrimExpr | None

    def __init__(
        self,
        dtype: str | DataType | None = None,
        value: PrimExpr | int | float | None = None,
        span: Span | None = None,
    ) -> None:
        value_expr = None if value is None else convert(value)
        parsed = as_dtype_or_unknown(dtype, "PrimStructInfo")
        if parsed is None:
            if value_expr is None:
                raise VMValueError("PrimStructInfo: give a dtype, a value, or both")
            parsed = value_expr.dtype
        elif value_expr is not None and value_expr.dtype != parsed:
            raise VMTypeError(
                f"PrimStructInfo: value `{value_expr}` has type {value_expr.dtype}, but dtype "
                f"{parsed} was given"
            )
        self._init_field("dtype", parsed)
        self._init_field("value", value_expr)
        self._init_field("span", span)

    def _key(self) -> tuple[Any, ...]:
        return (self.dtype, self.value)

    def _script(self) -> str:
        if self.value is None:
            return f'R.Prim("{self.dtype}")'
        return f"R.Prim(value={_prim_text(self.value)})"


class ShapeStructInfo(StructInfo):
    """A shape value (``R.Shape([n, 4])``), with known extents or only a known rank.

    Parameters
    ----------
    values : sequence of PrimExpr or int, optional
        The extents; ``ndim`` follows from them.
    ndim : int
        The rank when ``values`` is unknown; ``-1`` means unknown rank.
    """

    __slots__ = ("ndim", "values")
    values: tuple[PrimExpr, ...] | None
    ndim: int

    def __init__(
        self,
        values: Sequence[PrimExpr | int] | None = None,
        ndim: int = -1,
        span: Span | None = None,
    ) -> None:
        ndim = _check_ndim(ndim, "ShapeStructInfo")
        parsed = None if values is None else as_shape_values(values, "ShapeStructInfo")
        if parsed is not None:
            if ndim not in (-1, len(parsed)):
                raise VMValueError(
                    f"ShapeStructInfo: ndim={ndim} contradicts the {len(parsed)} values given"
                )
            ndim = len(parsed)
        self._init_field("values", parsed)
        self._init_field("ndim", ndim)
        self._init_field("span", span)

    def _key(self) -> tuple[Any, ...]:
        return (self.values, self.ndim)

    def _script(self) -> str:
        if self.values is not None:
            return f"R.Shape([{', '.join(_prim_text(v) for v in self.values)}])"
        return f"R.Shape(ndim={self.ndim})"


def _check_ndim(ndim: Any, where: str) -> int:
    if isinstance(ndim, bool) or not isinstance(ndim, int):
        raise VMTypeError(f"{where}: ndim must be an int, got {ndim!r}")
    if ndim < -1:
        raise VMValueError(f"{where}: ndim must be -1 (unknown) or >= 0, got {ndim}")
    return ndim


class TensorStructInfo(StructInfo):
    """A tensor (``R.Tensor((n, 4), dtype="float32")``).

    Parameters
    ----------
    shape : sequence of PrimExpr/int, ShapeExpr, or Relax Var of shape type, optional
        The shape. A list becomes a :class:`~relaxvm.ir.relax.ShapeExpr`; a Var stands for a
        shape computed at run time. None means unknown extents.
    dtype : str or DataType or None
        The element type, ``"float32"`` by default as in TVM's constructor; None, ``""`` or
        ``"void"`` means unknown (``R.Tensor(...)`` without a dtype in a script is unknown).
    vdevice : Device, optional
        The device the tensor lives on, when it is fixed.
    ndim : int
        The rank when the shape does not tell it; ``-1`` is unknown.
    span : Span, optional
        Where the annotation was written.

    The parameters are in TVM's order (``shape, dtype, vdevice, ndim, span``): pass ``ndim`` by
    keyword.

    Attributes
    ----------
    shape : ShapeExpr or Var or None
    dtype : DataType or None
    ndim : int
    vdevice : Device or None
    """

    __slots__ = ("dtype", "ndim", "shape", "vdevice")
    shape: ShapeExpr | Var | None
    dtype: DataType | None
    ndim: int
    vdevice: Device | None

    def __init__(
        self,
        shape: Sequence[PrimExpr | int] | RelaxExpr | None = None,
        dtype: str | DataType | None = "float32",
        vdevice: Device | None = None,
        ndim: int = -1,
        span: Span | None = None,
    ) -> None:
        from .expr import ShapeExpr, Var

        ndim = _check_ndim(ndim, "TensorStructInfo")
        shape_node: ShapeExpr | Var | None
        if shape is None:
            shape_node = None
        elif isinstance(shape, (ShapeExpr, Var)):
            shape_node = shape
        elif isinstance(shape, RelaxExpr):
            raise VMTypeError(
                f"TensorStructInfo: shape must be a list of dimensions, a ShapeExpr or a Var, "
                f"got {type(shape).__name__}"
            )
        else:
            shape_node = ShapeExpr(as_shape_values(shape, "TensorStructInfo: shape"))
        shape_ndim = _shape_ndim(shape_node)
        if shape_node is not None and not isinstance(shape_node.struct_info, ShapeStructInfo):
            raise VMTypeError(
                f"TensorStructInfo: the shape variable {shape_node} must have ShapeStructInfo, "
                f"got {shape_node.struct_info}"
            )
        if shape_ndim != -1:
            if ndim not in (-1, shape_ndim):
                raise VMValueError(
                    f"TensorStructInfo: ndim={ndim} contradicts the shape {shape_node}, which "
                    f"has {shape_ndim} dimensions"
                )
            ndim = shape_ndim
        if vdevice is not None and not isinstance(vdevice, Device):
            # The third parameter was ``ndim`` before it took TVM's order: say so.
            hint = " (pass ndim by keyword: ndim=...)" if isinstance(vdevice, int) else ""
            raise VMTypeError(
                f"TensorStructInfo: vdevice must be a Device, got {type(vdevice).__name__}{hint}"
            )
        self._init_field("shape", shape_node)
        self._init_field("dtype", as_dtype_or_unknown(dtype, "TensorStructInfo"))
        self._init_field("ndim", ndim)
        self._init_field("vdevice", vdevice)
        self._init_field("span", span)

    @property
    def is_unknown_ndim(self) -> bool:
        """True when the rank is unknown."""
        return self.ndim == -1

    @property
    def is_unknown_dtype(self) -> bool:
        """True when the element type is unknown (TVM's ``void``)."""
        return self.dtype is None

    @property
    def shape_values(self) -> tuple[PrimExpr, ...] | None:
        """The extents when the shape is a literal ShapeExpr, else None."""
        from .expr import ShapeExpr

        return self.shape.values if isinstance(self.shape, ShapeExpr) else None

    def _key(self) -> tuple[Any, ...]:
        values = self.shape_values
        shape_key: Any = ("values", values) if values is not None else self.shape
        return (shape_key, self.dtype, self.ndim, self.vdevice)

    def _script(self) -> str:
        parts = []
        values = self.shape_values
        if values is not None:
            parts.append(_tuple_text(values))
        elif self.shape is not None:
            parts.append(self.shape.name_hint)  # type: ignore[union-attr]
        if self.dtype is not None:
            parts.append(f'dtype="{self.dtype}"')
        if self.shape is None and self.ndim != -1:
            parts.append(f"ndim={self.ndim}")
        if self.vdevice is not None:
            parts.append(f'vdevice="{self.vdevice.kind}:{self.vdevice.device_id}"')
        return f"R.Tensor({', '.join(parts)})" if parts else "R.Tensor"


def _shape_ndim(shape: ShapeExpr | Var | None) -> int:
    if shape is None:
        return -1
    sinfo = shape.struct_info
    return sinfo.ndim if isinstance(sinfo, ShapeStructInfo) else -1


def _as_struct_info(value: Any, where: str) -> StructInfo:
    if not isinstance(value, StructInfo):
        raise VMTypeError(f"{where}: expected a StructInfo, got {type(value).__name__}")
    return value


class TupleStructInfo(StructInfo):
    """A tuple whose fields have the given struct info (``R.Tuple(R.Tensor, R.Shape)``)."""

    __slots__ = ("fields",)
    fields: tuple[StructInfo, ...]

    def __init__(self, fields: Sequence[StructInfo], span: Span | None = None) -> None:
        if isinstance(fields, (str, bytes)) or not isinstance(fields, Iterable):
            raise VMTypeError(
                f"TupleStructInfo: fields must be a list of StructInfo, got {fields!r}"
            )
        checked = tuple(
            _as_struct_info(field, f"TupleStructInfo: field {index}")
            for index, field in enumerate(fields)
        )
        self._init_field("fields", checked)
        self._init_field("span", span)

    def _key(self) -> tuple[Any, ...]:
        return self.fields

    def _script(self) -> str:
        if not self.fields:
            return "R.Tuple"  # TVM's spelling of the empty (void) tuple
        return f"R.Tuple({', '.join(field._script() for field in self.fields)})"


class FuncStructInfo(StructInfo):
    """A callable (``R.Callable((R.Tensor, ...), R.Tensor, True)``).

    Parameters
    ----------
    params : sequence of StructInfo, optional
        The parameters' struct info; None makes an *opaque* callable whose parameters are
        unknown (a packed function, say).
    ret : StructInfo
        What a call returns.
    purity : bool
        Whether calling it has no visible side effects.
    """

    __slots__ = ("params", "purity", "ret")
    params: tuple[StructInfo, ...] | None
    ret: StructInfo
    purity: bool

    def __init__(
        self,
        params: Sequence[StructInfo] | None,
        ret: StructInfo,
        purity: bool = True,
        span: Span | None = None,
    ) -> None:
        checked = (
            None
            if params is None
            else tuple(
                _as_struct_info(param, f"FuncStructInfo: parameter {index}")
                for index, param in enumerate(params)
            )
        )
        self._init_field("params", checked)
        self._init_field("ret", _as_struct_info(ret, "FuncStructInfo: ret"))
        self._init_field("purity", bool(purity))
        self._init_field("span", span)

    @staticmethod
    def opaque_func(
        ret: StructInfo | None = None, purity: bool = False, span: Span | None = None
    ) -> FuncStructInfo:
        """A callable with unknown parameters (TVM's spelling); returns ``R.Object`` by default."""
        return FuncStructInfo(None, ret if ret is not None else ObjectStructInfo(), purity, span)

    @property
    def is_opaque(self) -> bool:
        """True when the parameters are unknown."""
        return self.params is None

    @property
    def derive_func(self) -> None:
        """TVM's custom derivation function of an opaque callable: relaxvm has none."""
        return None

    def _key(self) -> tuple[Any, ...]:
        return (self.params, self.ret, self.purity)

    def __eq__(self, other: object) -> bool:
        # As TVM's StructInfo ``==``: structural equality, under which the symbolic variables
        # that parameters introduce are bound there, so two separately built signatures
        # ``(R.Tensor((n,)),) -> R.Tensor((n,))`` are equal although their ``n`` differ.
        if self is other:
            return True
        if not isinstance(other, StructInfo):
            return NotImplemented
        if not isinstance(other, FuncStructInfo):
            return False
        from ..structural import structural_equal

        return structural_equal(self, other)

    def __hash__(self) -> int:
        # Consistent with __eq__ above (equal signatures hash alike).
        from ..structural import structural_hash

        return structural_hash(self)

    def _script(self) -> str:
        if self.params is None:
            return f"R.Callable(ret={self.ret._script()}, purity={self.purity})"
        params = ", ".join(param._script() for param in self.params)
        if len(self.params) == 1:
            params += ","
        return f"R.Callable(({params}), {self.ret._script()}, {self.purity})"
