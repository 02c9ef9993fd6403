"""Symbolic shapes at run time: the shape heap, ``match_shape`` and ``make_shape``.

The compiler (``VMShapeLower``) gives every symbolic variable of a function, such as ``n`` in
``R.Tensor((n, 4))``, a slot in an int64 tensor called the shape heap. ``match_shape`` checks a
value's shape against its annotation and stores newly bound variables into the heap;
``make_shape`` builds a shape from immediates and heap slots. Each dimension is described by a
``(code, value)`` pair of arguments whose meaning is given by :class:`MatchShapeCode` or
:class:`MakeShapeCode`.

These run on every function call, so the success path does only what it must; anything
unusual is handed to a careful second pass that finds the exact problem and words the error.
"""

from __future__ import annotations

import sys
from enum import IntEnum
from typing import Any

import numpy as np

from relaxvm.errors import VMError, VMTypeError, VMValueError
from relaxvm.runtime import DataType, Shape, Tensor
from relaxvm.vm.native_plan import replay_safe

from ._table import builtin
from ._util import error_prefix, type_name

__all__ = [
    "MakeShapeCode",
    "MatchShapeCode",
    "alloc_shape_heap",
    "make_prim_value",
    "make_shape",
    "match_prim_value",
    "match_shape",
]

_INT64 = DataType("int64")

_getrefcount = sys.getrefcount
#: Reference counts say exactly who holds an object only with the GIL on; free-threaded
#: builds (``sys._is_gil_enabled() is False``) get a fresh heap per call.
_REFCOUNTS_EXACT = getattr(sys, "_is_gil_enabled", lambda: True)()
#: Heaps kept per allocator and heap size (enough for a few nested or concurrent calls).
_MAX_SPARE_HEAPS = 4


def _unreferenced_count() -> int:
    """What getrefcount says of an object held only by a list being looped over (the list,
    the loop variable, the argument), measured in exactly the pattern alloc_shape_heap uses:
    interpreters differ in whether the argument adds a reference."""
    kept = [Tensor.__new__(Tensor)]
    for item in kept:
        return _getrefcount(item)
    raise AssertionError("unreachable")  # pragma: no cover


_UNREFERENCED = _unreferenced_count()


class MatchShapeCode(IntEnum):
    """What ``match_shape`` / ``match_prim_value`` does with one dimension (TVM's codes)."""

    #: The dimension must equal the immediate value.
    ASSERT_EQUAL_TO_IMM = 0
    #: Store the dimension into heap slot ``value`` (first binding of a symbolic variable).
    STORE_TO_HEAP = 1
    #: Nothing to check (the dimension is bound by a later, computed check).
    NO_OP = 2
    #: The dimension must equal heap slot ``value`` (a variable bound earlier).
    ASSERT_EQUAL_TO_LOAD = 3


class MakeShapeCode(IntEnum):
    """Where ``make_shape`` / ``make_prim_value`` takes one dimension from (TVM's codes)."""

    #: The immediate value itself.
    USE_IMM = 0
    #: Heap slot ``value``.
    LOAD_SHAPE = 1


# Plain ints for the hot loops: comparing with an IntEnum member is slower than with an int.
_ASSERT_IMM = int(MatchShapeCode.ASSERT_EQUAL_TO_IMM)
_STORE = int(MatchShapeCode.STORE_TO_HEAP)
_NO_OP = int(MatchShapeCode.NO_OP)
_ASSERT_LOAD = int(MatchShapeCode.ASSERT_EQUAL_TO_LOAD)
_USE_IMM = int(MakeShapeCode.USE_IMM)
_LOAD = int(MakeShapeCode.LOAD_SHAPE)

# ``Shape._trusted`` without the classmethod call: builds a Shape from known-good Python ints
# (the hot make_shape path spends a third of its time creating the Shape).
_new_shape = tuple.__new__


# -- the heap ----------------------------------------------------------------------------------
@builtin("vm.builtin.alloc_shape_heap")
@replay_safe
def alloc_shape_heap(ctx: Any, size: int) -> Tensor:
    """Allocate a function call's shape heap: an int64 tensor of ``size`` slots on the host.

    Parameters
    ----------
    ctx : VirtualMachine
        The VM (``%vm``); the heap comes from its last device, which is always the host CPU.
    size : int
        Number of slots.

    Returns
    -------
    Tensor
        Uninitialised, like TVM's: every slot is written by a ``STORE_TO_HEAP`` before it is
        read.

    Raises
    ------
    VMTypeError
        ``size`` is not an int.
    VMValueError
        ``size`` is negative.
    """
    if type(size) is not int:
        raise VMTypeError(
            f"vm.builtin.alloc_shape_heap: size must be an int, got {type_name(size)}"
        )
    if size < 0:
        raise VMValueError(f"vm.builtin.alloc_shape_heap: size must be >= 0, got {size}")
    allocator = ctx.allocators[-1]
    # Every call of a function with symbolic shapes needs a heap, and making one (storage,
    # tensor, numpy view, release) costs several microseconds. A heap is garbage as soon as
    # its call returns, so the allocator keeps a few and hands out one nobody references
    # any more: only the spare list and this loop hold it (_UNREFERENCED). A heap still
    # held anywhere (a caller, a traceback, a recursive call in progress, another thread's
    # loop) has more and is skipped. The contents are uninitialised
    # either way: every slot is stored before it is loaded.
    spares = getattr(allocator, "scratch", None)
    if spares is None or not _REFCOUNTS_EXACT:
        storage = allocator.alloc(size * 8, dtype_hint=_INT64)
        return Tensor(storage, 0, Shape._trusted((size,)), _INT64)
    key = ("shape_heap", size)
    kept = spares.get(key)
    if kept is None:
        kept = spares[key] = []
    for heap in kept:
        if _getrefcount(heap) == _UNREFERENCED:
            return heap
    storage = allocator.alloc(size * 8, dtype_hint=_INT64)
    heap = Tensor(storage, 0, Shape._trusted((size,)), _INT64)
    if len(kept) < _MAX_SPARE_HEAPS:
        heap.host_array()  # made once, kept with the heap
        kept.append(heap)
    return heap


def _heap_words(heap: Any, slot: Any, prefix: str) -> np.ndarray:
    """The heap as an int64 numpy array, after checking that ``slot`` is inside it."""
    if heap is None:
        raise VMValueError(
            f"{prefix}heap slot {slot} is needed, but the shape heap argument is None"
        )
    if not isinstance(heap, Tensor):
        raise VMTypeError(f"{prefix}the shape heap must be a Tensor, got {type_name(heap)}")
    if heap.dtype != _INT64 or len(heap.shape) != 1:
        raise VMValueError(
            f"{prefix}the shape heap must be a 1-d int64 tensor, got shape "
            f"{list(heap.shape)} dtype {heap.dtype}"
        )
    if type(slot) is not int:
        raise VMTypeError(f"{prefix}a heap slot must be an int, got {type_name(slot)}")
    if not 0 <= slot < heap.shape[0]:
        raise VMValueError(
            f"{prefix}heap slot {slot} is out of range for a shape heap of {heap.shape[0]} slots"
        )
    return heap.host_array()


def _split_err_ctx(args: tuple[Any, ...], num_pairs: int, builtin_name: str) -> Any:
    """The optional ``err_ctx`` after ``num_pairs`` ``(code, value)`` pairs, or None."""
    if type(num_pairs) is not int or num_pairs < 0:
        raise VMValueError(
            f"vm.builtin.{builtin_name}: the number of dimensions must be an int >= 0, got "
            f"{num_pairs!r}"
        )
    extra = len(args) - 2 * num_pairs
    if extra not in (0, 1):
        raise VMValueError(
            f"vm.builtin.{builtin_name}: {num_pairs} dimensions need {2 * num_pairs} "
            f"(code, value) arguments plus an optional err_ctx, got {len(args)}"
        )
    return args[-1] if extra else None


# -- match_shape -------------------------------------------------------------------------------
@builtin("vm.builtin.match_shape")
@replay_safe
def match_shape(value: Any, heap: Any, size: int, *codes_and_values: Any) -> None:
    """Check the shape of ``value`` dimension by dimension; bind symbolic dims in the heap.

    Called as ``match_shape(value, heap, n, code_0, v_0, ..., code_{n-1}, v_{n-1}[, err_ctx])``;
    the trailing ``err_ctx`` is present when the argument count is odd after ``n``.

    Parameters
    ----------
    value : Tensor or Shape
        The value whose shape (or itself, for a Shape) is matched.
    heap : Tensor or None
        The shape heap; None when the function has no symbolic variables.
    size : int
        The expected number of dimensions.
    *codes_and_values
        One :class:`MatchShapeCode` and one int per dimension, then optionally ``err_ctx``.

    Raises
    ------
    VMError
        ``"match_cast shape size mismatch"`` (wrong ndim), ``"shape[i] mismatch to specified
        constant"`` or ``"shape[i] mismatch to a previous populated value"``.
    VMTypeError
        ``value`` is neither a Tensor nor a Shape.
    VMValueError
        Malformed arguments: unknown code, heap slot out of range, no heap.
    """
    value_type = type(value)
    if value_type is Tensor:
        shape = value.shape
    elif value_type is Shape:
        shape = value
    else:
        return _match_shape_checked(value, heap, size, codes_and_values)
    if len(shape) != size or not 0 <= len(codes_and_values) - size - size <= 1:
        return _match_shape_checked(value, heap, size, codes_and_values)
    # An index walk over the flat (code, value) arguments: measured faster than zip() or
    # slicing them into pairs.
    words = None
    i = 0
    try:
        for dim in shape:
            code = codes_and_values[i]
            if code == _ASSERT_IMM:
                if dim != codes_and_values[i + 1]:
                    break
            elif code == _STORE:
                if words is None:
                    words = heap.host_array()
                words[codes_and_values[i + 1]] = dim
            elif code == _ASSERT_LOAD:
                if words is None:
                    words = heap.host_array()
                if words.item(codes_and_values[i + 1]) != dim:
                    break
            elif code != _NO_OP:
                break
            i += 2
        else:
            return None
    except (AttributeError, IndexError, TypeError, ValueError):
        pass
    # Something is wrong: go again, slowly, to find out what and say so.
    return _match_shape_checked(value, heap, size, codes_and_values)


def _match_shape_checked(
    value: Any, heap: Any, size: Any, codes_and_values: tuple[Any, ...]
) -> None:
    """``match_shape`` with every check and a precise error (the slow path)."""
    err_ctx = _split_err_ctx(codes_and_values, size, "match_shape")
    prefix = error_prefix(err_ctx, "match_shape")
    if isinstance(value, Tensor):
        shape = value.shape
    elif isinstance(value, Shape):
        shape = value
    else:
        raise VMTypeError(
            f"{prefix}match_cast expects a Tensor or a Shape but got {type_name(value)}"
        )
    if len(shape) != size:
        raise VMError(
            f"{prefix}match_cast shape size mismatch: expected ndim {size}, but the value has "
            f"ndim {len(shape)} (shape {list(shape)})."
        )
    for index in range(size):
        _match_one(
            shape[index],
            codes_and_values[2 * index],
            codes_and_values[2 * index + 1],
            heap,
            prefix,
            f"shape[{index}]",
            f" (shape {list(shape)})",
        )


def _match_one(
    value: int, code: Any, slot: Any, heap: Any, prefix: str, subject: str, context: str
) -> None:
    """Check or bind one value by its MatchShapeCode, with a precise error (the slow path
    shared by ``match_shape`` and ``match_prim_value``)."""
    if code == _ASSERT_IMM:
        if value != slot:
            raise VMError(
                f"{prefix}match_cast error, {subject} mismatch to specified constant: "
                f"expected {slot}, but got {value}{context}."
            )
    elif code == _STORE:
        _heap_words(heap, slot, prefix)[slot] = value
    elif code == _ASSERT_LOAD:
        bound = _heap_words(heap, slot, prefix).item(slot)
        if bound != value:
            raise VMError(
                f"{prefix}match_cast error, {subject} mismatch to a previous populated value: "
                f"expected {bound} (heap slot {slot}), but got {value}{context}."
            )
    elif code != _NO_OP:
        raise VMValueError(f"{prefix}unknown MatchShapeCode {code!r} for {subject} (expected 0..3)")


@builtin("vm.builtin.match_prim_value")
@replay_safe
def match_prim_value(value: Any, heap: Any, code: int, slot: int, err_ctx: Any = None) -> None:
    """Check or bind a scalar the way :func:`match_shape` does one dimension.

    Parameters
    ----------
    value : int
        The prim value (an ``R.Prim("int64")`` argument or a computed one).
    heap : Tensor or None
        The shape heap.
    code : int
        A :class:`MatchShapeCode`.
    slot : int
        The immediate to compare with, or the heap slot.
    err_ctx : str, optional
        Prefix for error messages.

    Raises
    ------
    VMError
        ``"PrimValue mismatch to specified constant"`` or ``"PrimValue mismatch to a previous
        populated value"``.
    VMTypeError
        ``value`` is not an int.
    VMValueError
        Unknown code, no heap, heap slot out of range.
    """
    if type(value) is int:
        try:
            if code == _ASSERT_IMM:
                if value == slot:
                    return None
            elif code == _STORE:
                heap.host_array()[slot] = value
                return None
            elif code == _ASSERT_LOAD:
                if heap.host_array().item(slot) == value:
                    return None
            elif code == _NO_OP:
                return None
        except (AttributeError, IndexError, TypeError, ValueError):
            pass
    return _match_prim_value_checked(value, heap, code, slot, err_ctx)


def _match_prim_value_checked(value: Any, heap: Any, code: Any, slot: Any, err_ctx: Any) -> None:
    """``match_prim_value`` with every check and a precise error (the slow path)."""
    prefix = error_prefix(err_ctx, "match_prim_value")
    # bool is an int here, as in TVM, where the argument converts to int64.
    if not isinstance(value, (int, np.integer)):
        raise VMTypeError(f"{prefix}match_cast expects an int PrimValue but got {type_name(value)}")
    _match_one(int(value), code, slot, heap, prefix, "PrimValue", "")


# -- make_shape --------------------------------------------------------------------------------
@builtin("vm.builtin.make_shape")
@replay_safe
def make_shape(heap: Any, size: int, *codes_and_values: Any) -> Shape:
    """Build a Shape from immediates and heap slots.

    Called as ``make_shape(heap, n, code_0, v_0, ..., code_{n-1}, v_{n-1}[, err_ctx])``.

    Parameters
    ----------
    heap : Tensor or None
        The shape heap (None when every dimension is an immediate).
    size : int
        Number of dimensions.
    *codes_and_values
        One :class:`MakeShapeCode` and one int per dimension, then optionally ``err_ctx``.

    Returns
    -------
    Shape

    Raises
    ------
    VMValueError
        Malformed arguments: unknown code, no heap for a load, heap slot out of range.
    """
    dims = []
    words = None
    i = 0
    try:
        end = size + size
        # A trailing err_ctx is allowed; a short argument list falls to the checked path.
        if len(codes_and_values) - end > 1:
            end = -1
        while i < end:
            code = codes_and_values[i]
            if code == _USE_IMM:
                dim = codes_and_values[i + 1]
                if type(dim) is not int:  # a Shape must only ever hold ints
                    break
                dims.append(dim)
            elif code == _LOAD:
                if words is None:
                    words = heap.host_array()
                dims.append(words.item(codes_and_values[i + 1]))
            else:
                break
            i += 2
        else:
            if i == end:
                return _new_shape(Shape, dims)
    except (AttributeError, IndexError, TypeError, ValueError):
        pass
    return _make_shape_checked(heap, size, codes_and_values)


def _make_shape_checked(heap: Any, size: Any, codes_and_values: tuple[Any, ...]) -> Shape:
    """``make_shape`` with every check and a precise error (the slow path)."""
    err_ctx = _split_err_ctx(codes_and_values, size, "make_shape")
    prefix = error_prefix(err_ctx, "make_shape")
    dims: list[int] = []
    for index in range(size):
        code = codes_and_values[2 * index]
        slot = codes_and_values[2 * index + 1]
        if code == _USE_IMM:
            if type(slot) is not int:
                raise VMTypeError(
                    f"{prefix}dimension {index} must be an int, got {type_name(slot)}"
                )
            dims.append(slot)
        elif code == _LOAD:
            dims.append(_heap_words(heap, slot, prefix).item(slot))
        else:
            raise VMValueError(
                f"{prefix}unknown MakeShapeCode {code!r} for dimension {index} (expected 0 or 1)"
            )
    return _new_shape(Shape, dims)


@builtin("vm.builtin.make_prim_value")
@replay_safe
def make_prim_value(heap: Any, code: int, slot: int) -> int:
    """A scalar from an immediate or a heap slot (the scalar form of :func:`make_shape`).

    Raises
    ------
    VMValueError
        Unknown code, no heap for a load, heap slot out of range.
    """
    if code == _USE_IMM:
        return slot
    if code == _LOAD:
        return _heap_words(heap, slot, "vm.builtin.make_prim_value: ").item(slot)
    raise VMValueError(
        f"vm.builtin.make_prim_value: unknown MakeShapeCode {code!r} (expected 0 or 1)"
    )
