"""Arithmetic on te tensors: ``x + 1``, ``1 - x``, ``x * y``, ``x / 2``, ``-x``, ``x.astype(t)``.

As TVM's te binds ``+ - * /`` to ``topi.add`` / ``subtract`` / ``multiply`` / ``divide`` (and
``astype`` to ``topi.cast``), each operator makes a new elementwise compute stage (``T_add``
...): two tensors broadcast as numpy does, a Python number takes the tensor's dtype, and
``-x`` multiplies by -1 in the tensor's dtype. ``//``, ``%`` and comparisons are not
overloaded on tensors (nor are they in TVM): index the tensor inside ``te.compute`` instead.

The topi operators are built on te, so they are imported on first use (a module-level import
would be a cycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import VMTypeError
from ...runtime.dtype import DataType
from ..expr import PrimExpr

if TYPE_CHECKING:
    from .te import Tensor

__all__ = ["TensorArithmetic"]


class TensorArithmetic:
    """The operators of :class:`~relaxvm.ir.tir.te.Tensor` (a mixin: it holds no state)."""

    __slots__ = ()

    def __add__(self, other: Any) -> Tensor:
        return _topi_binary("add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _topi_binary("add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _topi_binary("subtract", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _topi_binary("subtract", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _topi_binary("multiply", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _topi_binary("multiply", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _topi_binary("divide", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _topi_binary("divide", other, self)

    def __neg__(self) -> Tensor:
        # As TVM: multiplication by -1 in the tensor's dtype (a ``T_multiply`` stage).
        return _topi_binary("multiply", self, -1)

    def astype(self, dtype: str | DataType) -> Tensor:
        """A ``T_cast`` stage converting every element to ``dtype`` (TVM's ``topi.cast``).

        Parameters
        ----------
        dtype : str or DataType
            The element type of the result.

        Returns
        -------
        Tensor
            A new te tensor of the same shape.
        """
        from ... import topi

        result: Tensor = topi.cast(self, dtype)  # type: ignore[arg-type]  # self is a Tensor
        return result


_OPERAND_TYPES = (TensorArithmetic, PrimExpr, int, float)


def _topi_binary(name: str, lhs: Any, rhs: Any) -> Tensor:
    """``topi.<name>(lhs, rhs)`` for a tensor operator, naming the operator in errors."""
    from ... import topi

    if not isinstance(lhs, _OPERAND_TYPES) or not isinstance(rhs, _OPERAND_TYPES):
        other = rhs if isinstance(lhs, TensorArithmetic) else lhs
        raise VMTypeError(
            f"te.Tensor {name}: the other operand must be a te.Tensor, a PrimExpr or a number, "
            f"got {type(other).__name__}"
        )
    result: Tensor = getattr(topi, name)(lhs, rhs)
    return result
