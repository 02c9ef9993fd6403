"""TIR buffers and the ``BufferLoad`` expression.

A :class:`Buffer` describes a multi-dimensional array a kernel reads or writes: its element
type, a (possibly symbolic) shape, optional strides, an element offset and a memory scope.
Its storage is named by a handle variable, ``buffer.data``. Buffers compare by identity, as
in TVM: two buffers with the same shape are still different arrays.

``buffer[i, j]`` builds a :class:`BufferLoad`. Its operands are the handle variable followed
by the indices, so the expression machinery of :mod:`relaxvm.ir` (structural equality,
hashing, substitution, simplification) treats two loads of different buffers as different
without knowing about buffers: the handle variables differ, and variables compare by identity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import VMTypeError, VMValueError
from ...runtime.dtype import DataType
from .._scalar import is_int_dtype
from ..expr import ExprLike, PrimExpr, Var, as_dtype
from ..op import convert

__all__ = ["Buffer", "BufferLoad", "decl_buffer"]

#: The memory scopes a buffer may live in.
SCOPES = ("global", "shared", "local")


def as_index_list(where: str, values: Any) -> tuple[PrimExpr, ...]:
    """Convert a shape, stride or index list into integer expressions, naming ``where``."""
    if isinstance(values, (PrimExpr, int)):
        values = (values,)
    try:
        items = list(values)
    except TypeError:
        raise VMTypeError(
            f"{where}: expected a sequence of ints or PrimExprs, got {values!r}"
        ) from None
    result = []
    for position, value in enumerate(items):
        # A te.IterVar stands for its variable, as in TVM.
        if isinstance(getattr(value, "var", None), Var):
            value = value.var
        if not isinstance(value, (int, PrimExpr)) and not hasattr(value, "__index__"):
            raise VMTypeError(
                f"{where}: entry {position} must be an int or an integer PrimExpr, got {value!r}"
            )
        expr = convert(value)
        if not is_int_dtype(expr.dtype):
            raise VMTypeError(
                f"{where}: entry {position} (`{expr}`) must have an integer type, got {expr.dtype}"
            )
        result.append(expr)
    return tuple(result)


class Buffer:
    """A typed, shaped view of memory (TVM's ``tir.Buffer``).

    Parameters
    ----------
    name : str
        Printed name, also the name of the handle variable ``data``.
    shape : sequence of int or PrimExpr
        One extent per dimension; symbolic extents (``Var("n")``) are allowed.
    dtype : str or DataType
        Element type.
    strides : sequence of int or PrimExpr, optional
        Distance in elements between neighbours along each dimension; empty means compact
        row-major (C order).
    elem_offset : int or PrimExpr
        Offset in elements of the first element from ``data``.
    scope : str
        ``"global"`` (kernel arguments and global scratch), ``"shared"`` or ``"local"``.
    data : Var, optional
        The handle variable; a fresh ``Var(name, "handle")`` by default.
    """

    # Not a PrimExpr: a buffer is an object with identity (it also needs to be weakly
    # referenceable for relaxvm.ir.tir.te).
    __slots__ = ("__weakref__", "data", "dtype", "elem_offset", "name", "scope", "shape", "strides")
    name: str
    data: Var
    shape: tuple[PrimExpr, ...]
    dtype: DataType
    strides: tuple[PrimExpr, ...]
    elem_offset: PrimExpr
    scope: str

    def __init__(
        self,
        name: str,
        shape: Sequence[ExprLike] | ExprLike,
        dtype: str | DataType = "float32",
        strides: Sequence[ExprLike] | None = None,
        elem_offset: ExprLike = 0,
        scope: str = "global",
        data: Var | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise VMTypeError(f"Buffer: name must be a non-empty str, got {name!r}")
        where = f"Buffer {name!r}"
        shape_exprs = as_index_list(f"{where} shape", shape)
        stride_exprs = as_index_list(f"{where} strides", strides) if strides else ()
        if stride_exprs and len(stride_exprs) != len(shape_exprs):
            raise VMValueError(
                f"{where}: {len(stride_exprs)} strides given for {len(shape_exprs)} dimensions"
            )
        (offset,) = as_index_list(f"{where} elem_offset", [elem_offset])
        if scope not in SCOPES:
            raise VMValueError(f"{where}: scope must be one of {SCOPES}, got {scope!r}")
        if data is None:
            data = Var(name, "handle")
        elif not isinstance(data, Var) or str(data.dtype) != "handle":
            raise VMTypeError(f"{where}: data must be a Var of type handle, got {data!r}")
        values = {
            "name": name,
            "data": data,
            "shape": shape_exprs,
            "dtype": as_dtype(dtype, f"{where} dtype"),
            "strides": stride_exprs,
            "elem_offset": offset,
            "scope": scope,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Buffer is immutable; build a new one")

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def _check_indices(self, indices: Any) -> tuple[PrimExpr, ...]:
        if not isinstance(indices, tuple):
            indices = (indices,)
        for index in indices:
            if isinstance(index, slice):
                raise VMTypeError(
                    f"Buffer {self.name!r}: slices are not supported in loads and stores; "
                    "index every dimension with a scalar expression"
                )
        exprs = as_index_list(f"Buffer {self.name!r} index", indices)
        if len(exprs) != self.ndim:
            raise VMValueError(
                f"Buffer {self.name!r}: {len(exprs)} indices given for a {self.ndim}-d buffer "
                f"(shape {format_shape(self.shape)})"
            )
        return exprs

    def __getitem__(self, indices: Any) -> BufferLoad:
        return BufferLoad(self, indices)

    def vload(self, indices: Any) -> BufferLoad:
        """``buffer[indices]`` as a :class:`BufferLoad` (TVM's spelling)."""
        return BufferLoad(self, indices)

    def vstore(self, indices: Any, value: ExprLike) -> Any:
        """A :class:`~relaxvm.ir.tir.stmt.BufferStore` of ``value`` at ``indices``."""
        from .stmt import BufferStore  # stmt imports this module

        return BufferStore(self, value, indices)

    def __repr__(self) -> str:
        return f'Buffer({self.name}, {format_shape(self.shape)}, "{self.dtype}", {self.scope})'


def format_shape(shape: Sequence[PrimExpr]) -> str:
    """``(n, 4)``-style text for a shape (a trailing comma for one dimension)."""
    parts = [str(extent) for extent in shape]
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def decl_buffer(
    shape: Sequence[ExprLike] | ExprLike,
    dtype: str | DataType = "float32",
    name: str = "buffer",
    data: Var | None = None,
    strides: Sequence[ExprLike] | None = None,
    elem_offset: ExprLike = 0,
    scope: str = "global",
) -> Buffer:
    """Declare a new :class:`Buffer` (TVM's ``tir.decl_buffer`` argument order)."""
    return Buffer(name, shape, dtype, strides, elem_offset, scope, data)


class BufferLoad(PrimExpr):
    """``buffer[indices]``: read one element (TVM's ``tir.BufferLoad``).

    ``operands`` is ``(buffer.data, *indices)``; see the module docstring for why.
    """

    __slots__ = ("_operands", "buffer", "indices")
    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    _operands: tuple[PrimExpr, ...]

    def __init__(self, buffer: Buffer, indices: Any) -> None:
        if not isinstance(buffer, Buffer):
            raise VMTypeError(f"BufferLoad: expected a Buffer, got {type(buffer).__name__}")
        exprs = buffer._check_indices(indices)
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "indices", exprs)
        object.__setattr__(self, "_operands", (buffer.data, *exprs))
        self._finish(buffer.dtype)

    @property
    def operands(self) -> tuple[PrimExpr, ...]:
        """``(buffer.data, *indices)``."""
        return self._operands

    def with_operands(self, *operands: PrimExpr) -> PrimExpr:
        """A load of the same buffer at new indices; the handle operand must be unchanged."""
        if len(operands) != len(self._operands):
            raise VMTypeError(
                f"BufferLoad.with_operands: expected {len(self._operands)} operands, "
                f"got {len(operands)}"
            )
        if all(new is old for new, old in zip(operands, self._operands, strict=True)):
            return self
        if operands[0] is not self.buffer.data:
            raise VMTypeError(
                f"BufferLoad of {self.buffer.name!r}: the handle variable cannot be replaced "
                f"by `{operands[0]}`; remap the buffer instead"
            )
        return BufferLoad(self.buffer, tuple(operands[1:]))

    def _ctor_args(self) -> tuple[Any, ...]:
        return (self.buffer, self.indices)

    def _script_render(self, render: Callable[[PrimExpr], str]) -> str:
        return f"{self.buffer.name}[{', '.join(render(index) for index in self.indices)}]"

    def _evaluate(self, evaluate_child: Callable[[PrimExpr], Any]) -> Any:
        raise VMValueError(
            f"evaluate: cannot read buffer {self.buffer.name!r} in `{self}`; buffer contents "
            "exist only while a kernel runs (use relaxvm.ir.tir.run_prim_func)"
        )

    def __repr__(self) -> str:
        return f"BufferLoad[{self.dtype}]({self})"
