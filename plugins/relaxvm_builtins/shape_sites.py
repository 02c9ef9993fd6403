"""Call-site fast paths of ``match_shape`` and ``make_shape`` (see :mod:`.shape`).

Both builtins take their dimension codes as immediates, fixed when the VM loads the
program, so most of their work can be decided once per call site (call-site specialisation,
:mod:`relaxvm.registry.specialization`). What is left per call is what a shape actually
varies in; anything unusual still goes to the builtin, which raises the exact error.
Kept apart from :mod:`.shape` only for size; importing the plugin attaches them.
"""

from __future__ import annotations

from typing import Any

from relaxvm.registry.specialization import CallSite, Specialization, specializer
from relaxvm.runtime import Shape, Tensor

from .shape import MakeShapeCode, MatchShapeCode, make_shape, match_shape

__all__ = ["static_make_dims", "static_match_dims"]

_ASSERT_IMM = int(MatchShapeCode.ASSERT_EQUAL_TO_IMM)
_USE_IMM = int(MakeShapeCode.USE_IMM)
_LOAD = int(MakeShapeCode.LOAD_SHAPE)
_new_shape = tuple.__new__


def _pairs(values: list[Any]) -> list[tuple[Any, Any]] | None:
    """The ``(code, value)`` pairs of ``[size, code_0, v_0, ..., [err_ctx]]``, or None when
    the count does not fit (the builtin then reports it)."""
    if not values or type(values[0]) is not int:
        return None
    ndim = values[0]
    rest = values[1:]
    if ndim < 0 or len(rest) - 2 * ndim not in (0, 1):
        return None
    return [(rest[2 * i], rest[2 * i + 1]) for i in range(ndim)]


def static_match_dims(values: list[Any]) -> tuple[int, ...] | None:
    """The dimensions a ``match_shape(value, heap, size, code_0, v_0, ...[, err_ctx])`` call
    asserts, given its fixed arguments from ``size`` on, when every code is
    ``ASSERT_EQUAL_TO_IMM`` (0) with an int value; None otherwise.

    Such a call passes exactly when the value is a Tensor whose shape equals these
    dimensions, so that one tuple comparison can stand in for the call; every other case
    still goes to the builtin (which raises the exact error).
    """
    pairs = _pairs(values)
    if pairs is None:
        return None
    dims = []
    for code, dim in pairs:
        if type(code) is not int or code != _ASSERT_IMM or type(dim) is not int:
            return None
        dims.append(dim)
    return tuple(dims)


@specializer(match_shape)
def _match_shape_site(site: CallSite) -> Specialization | None:
    """A Tensor register matched against fixed dimensions only: one tuple comparison."""
    if len(site) < 3 or not site.is_register(0) or not site.all_fixed(2):
        return None
    dims = static_match_dims(list(site.args[2:]))
    if dims is None:
        return None
    generic = site.generic()
    inline = "None if {0}.__class__ is {Tensor} and {0}.shape == {dims} else {call}"
    if site.is_register(1):  # the heap, unused by this match but passed on to the builtin

        def match_with_heap(value: Any, heap: Any) -> None:
            if value.__class__ is Tensor and value.shape == dims:
                return None
            return generic(value, heap)

        return Specialization.call(match_with_heap, inline=inline, Tensor=Tensor, dims=dims)

    def match(value: Any) -> None:
        if value.__class__ is Tensor and value.shape == dims:
            return None
        return generic(value)

    return Specialization.call(match, inline=inline, Tensor=Tensor, dims=dims)


def static_make_dims(values: list[Any]) -> list[tuple[bool, int]] | None:
    """``(load, value)`` per dimension of a ``make_shape(heap, size, code_0, v_0, ...)`` call
    whose arguments from ``size`` on are the fixed ``values``: ``load`` says the dimension is
    heap slot ``value``, else ``value`` itself. None when a code or value is malformed."""
    pairs = _pairs(values)
    if pairs is None:
        return None
    dims = []
    for code, value in pairs:
        if type(code) is not int or code not in (_USE_IMM, _LOAD) or type(value) is not int:
            return None
        dims.append((code == _LOAD, value))
    return dims


@specializer(make_shape)
def _make_shape_site(site: CallSite) -> Specialization | None:
    """Immediates only: the Shape itself (a constant, Shapes are immutable). With heap
    loads: the heap read at precomputed slots."""
    if len(site) < 2 or not site.all_fixed(1):
        return None
    dims = static_make_dims(list(site.args[1:]))
    if dims is None:
        return None
    if not any(load for load, _ in dims):
        return Specialization.constant(_new_shape(Shape, [value for _, value in dims]))
    if not site.is_register(0):
        return None
    generic = site.generic()
    pattern = tuple(dims)

    def make(heap: Any) -> Shape:
        try:
            item = heap.host_array().item
            return _new_shape(Shape, [item(value) if load else value for load, value in pattern])
        except (AttributeError, IndexError, TypeError, ValueError):
            return generic(heap)

    return Specialization.call(make)
