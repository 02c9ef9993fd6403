"""Shape tuples: the VM's value for ``R.Shape`` and for tensor shapes."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import SupportsIndex

from ..errors import VMTypeError

__all__ = ["Shape"]


class Shape(tuple):  # type: ignore[type-arg]
    """An immutable tuple of int dimensions (TVM's ``ShapeTuple`` / ``ffi.Shape``).

    It is a ``tuple`` subclass, so ``shape == (3, 4)`` and ``shape[0]`` work; as TVM's
    ``ShapeTuple`` it also equals a list of the same dims (``shape == [3, 4]``). The VM tells it
    apart from a Relax tuple (a plain ``tuple``) by its type.

    Parameters
    ----------
    dims : iterable of int
        The dimensions; numpy integers are accepted, bools and floats are not.
    """

    __slots__ = ()

    def __new__(cls, dims: Iterable[SupportsIndex] = ()) -> Shape:
        if type(dims) is Shape:
            return dims
        try:
            values = tuple(dims)
        except TypeError:
            raise VMTypeError(f"Shape: expected an iterable of ints, got {dims!r}") from None
        for dim in values:
            if isinstance(dim, bool) or not hasattr(dim, "__index__"):
                raise VMTypeError(f"Shape: dimensions must be integers, got {dims!r}")
        return tuple.__new__(cls, (operator.index(d) for d in values))

    @classmethod
    def _trusted(cls, dims: tuple[int, ...]) -> Shape:
        """Wrap a tuple of Python ints without validation (VM hot paths)."""
        return tuple.__new__(cls, dims)

    def __eq__(self, other: object) -> bool:
        # TVM's ShapeTuple equals any sequence with the same dims, a list included
        # (``vm["f"](...) == [4, 9]``); a plain tuple never equals a list.
        if isinstance(other, list):
            other = tuple(other)
        return tuple.__eq__(self, other)  # type: ignore[no-any-return]

    def __ne__(self, other: object) -> bool:
        if isinstance(other, list):
            other = tuple(other)
        return tuple.__ne__(self, other)  # type: ignore[no-any-return]

    # Defining __eq__ would otherwise make the class unhashable.
    __hash__ = tuple.__hash__

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self)

    def __repr__(self) -> str:
        return f"Shape({list(self)})"

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self)) + "]"
