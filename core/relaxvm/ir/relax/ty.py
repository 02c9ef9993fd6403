"""Relax types (TVM's ``relax.ShapeType``, ``TensorType``, ``ObjectType``...): the coarse kind of a
value, without the shapes and dtypes StructInfo carries.

relaxvm's IR annotates values with StructInfo only; these classes exist for code written against
TVM's Python API, which still builds and prints them. They are immutable values compared by
their fields and printed in the script format (``R.Shape(ndim=3)``, ``R.Object``...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "FuncType",
    "ObjectType",
    "PackedFuncType",
    "ShapeType",
    "TensorType",
    "TupleType",
    "Type",
]


class Type:
    """Base class of the Relax types; equal when of the same class with equal fields."""

    __slots__ = ()

    def _fields(self) -> tuple[Any, ...]:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._fields()))

    def _relax_script(self) -> str:
        raise NotImplementedError

    def script(self, **options: Any) -> str:
        """The script text (``R.Shape(ndim=3)``); printer options are accepted and ignored."""
        return self._relax_script()

    def __str__(self) -> str:
        return self._relax_script()

    __repr__ = __str__


class ShapeType(Type):
    """The type of a shape value of ``ndim`` dimensions (``-1``: unknown)."""

    __slots__ = ("ndim",)

    def __init__(self, ndim: int = -1, span: Any = None) -> None:
        self.ndim = int(ndim)

    def _fields(self) -> tuple[Any, ...]:
        return (self.ndim,)

    def _relax_script(self) -> str:
        return f"R.Shape(ndim={self.ndim})"


class ObjectType(Type):
    """The type of any value."""

    __slots__ = ()

    def __init__(self, span: Any = None) -> None:
        pass

    def _relax_script(self) -> str:
        return "R.Object"


class PackedFuncType(Type):
    """The type of a packed function."""

    __slots__ = ()

    def __init__(self, span: Any = None) -> None:
        pass

    def _relax_script(self) -> str:
        return "R.PackedFunc"


class TensorType(Type):
    """The type of a tensor of rank ``ndim`` (``-1``: unknown) and element type ``dtype``
    (``""``: unknown), TVM's ``DynTensorType``."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, ndim: int = -1, dtype: str = "float32", span: Any = None) -> None:
        self.ndim = int(ndim)
        self.dtype = str(dtype) if dtype is not None else ""

    def _fields(self) -> tuple[Any, ...]:
        return (self.ndim, self.dtype)

    def _relax_script(self) -> str:
        dtype = f', dtype="{self.dtype}"' if self.dtype else ""
        return f"R.Tensor(ndim={self.ndim}{dtype})"


class TupleType(Type):
    """The type of a tuple whose fields have types ``fields``."""

    __slots__ = ("fields",)

    def __init__(self, fields: Sequence[Type], span: Any = None) -> None:
        self.fields = tuple(fields)

    def _fields(self) -> tuple[Any, ...]:
        return self.fields

    def _relax_script(self) -> str:
        return f"R.Tuple({', '.join(f._relax_script() for f in self.fields)})"


class FuncType(Type):
    """The type of a function from ``arg_types`` to ``ret_type``."""

    __slots__ = ("arg_types", "ret_type")

    def __init__(self, arg_types: Sequence[Type], ret_type: Type, span: Any = None) -> None:
        self.arg_types = tuple(arg_types)
        self.ret_type = ret_type

    def _fields(self) -> tuple[Any, ...]:
        return (self.arg_types, self.ret_type)

    def _relax_script(self) -> str:
        args = ", ".join(a._relax_script() for a in self.arg_types)
        if len(self.arg_types) == 1:
            args += ","
        return f"R.Callable(({args}), {self.ret_type._relax_script()})"
