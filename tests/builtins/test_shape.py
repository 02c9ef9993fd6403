"""vm.builtin.alloc_shape_heap / match_shape / match_prim_value / make_shape / make_prim_value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import Shape
from relaxvm.errors import VMError, VMTypeError, VMValueError
from relaxvm.runtime import NaiveAllocator, PooledAllocator
from relaxvm_builtins import MakeShapeCode, MatchShapeCode

IMM = MatchShapeCode.ASSERT_EQUAL_TO_IMM
STORE = MatchShapeCode.STORE_TO_HEAP
NO_OP = MatchShapeCode.NO_OP
LOAD_EQ = MatchShapeCode.ASSERT_EQUAL_TO_LOAD
USE_IMM = MakeShapeCode.USE_IMM
LOAD = MakeShapeCode.LOAD_SHAPE

ERR_CTX = 'ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 4), "float32")) '

Lookup = Callable[[str], Callable[..., Any]]


@pytest.fixture
def heap(ctx: Any, builtin: Lookup) -> relaxvm.Tensor:
    words = builtin("alloc_shape_heap")(ctx, 4)
    words.host_array()[:] = -7  # a recognisable "never written" value
    return words


def zeros(*shape: int) -> relaxvm.Tensor:
    return relaxvm.tensor(np.zeros(shape, "float32"))


# -- alloc_shape_heap ---------------------------------------------------------------------
def test_alloc_shape_heap_is_int64_vector_on_host(ctx: Any, builtin: Lookup) -> None:
    heap = builtin("alloc_shape_heap")(ctx, 5)
    assert isinstance(heap, relaxvm.Tensor)
    assert heap.shape == (5,) and isinstance(heap.shape, Shape)
    assert heap.dtype == "int64"
    assert heap.device == ctx.devices[-1]
    assert ctx.allocators[-1].stats.allocations == 1


def test_alloc_shape_heap_uses_the_last_device_allocator(make_ctx: Any, builtin: Lookup) -> None:
    cpu = relaxvm.cpu()
    first, host = NaiveAllocator(cpu), PooledAllocator(cpu)
    builtin("alloc_shape_heap")(make_ctx([cpu, cpu], [first, host]), 3)
    assert (first.stats.allocations, host.stats.allocations) == (0, 1)


def test_alloc_shape_heap_rejects_bad_sizes(ctx: Any, builtin: Lookup) -> None:
    with pytest.raises(VMValueError, match=r"alloc_shape_heap: size must be >= 0, got -1"):
        builtin("alloc_shape_heap")(ctx, -1)
    with pytest.raises(VMTypeError, match=r"alloc_shape_heap: size must be an int, got Shape"):
        builtin("alloc_shape_heap")(ctx, Shape([3]))


# -- match_shape ------------------------------------------------------------------------------
def test_match_shape_assert_equal_to_imm_passes(builtin: Lookup) -> None:
    assert builtin("match_shape")(zeros(3, 4), None, 2, IMM, 3, IMM, 4, ERR_CTX) is None


def test_match_shape_assert_equal_to_imm_names_dim_expected_and_actual(builtin: Lookup) -> None:
    with pytest.raises(VMError) as info:
        builtin("match_shape")(zeros(3, 5), None, 2, IMM, 3, IMM, 4, ERR_CTX)
    message = str(info.value)
    assert message.startswith(ERR_CTX + "match_cast error, shape[1] mismatch to specified constant")
    assert "expected 4, but got 5" in message
    # TVM raises these as RuntimeError (ICHECK).
    assert isinstance(info.value, RuntimeError)


def test_match_shape_store_to_heap_binds_symbolic_dims(builtin: Lookup, heap: Any) -> None:
    builtin("match_shape")(zeros(3, 4), heap, 2, STORE, 0, STORE, 2)
    assert heap.numpy().tolist() == [3, -7, 4, -7]


def test_match_shape_no_op_checks_nothing(builtin: Lookup, heap: Any) -> None:
    builtin("match_shape")(zeros(3, 9), heap, 2, NO_OP, 0, IMM, 9)
    assert heap.numpy().tolist() == [-7, -7, -7, -7]


def test_match_shape_store_then_assert_equal_to_load(builtin: Lookup, heap: Any) -> None:
    # R.Tensor((n, n)): the first dim binds n, the second must equal it.
    match_shape = builtin("match_shape")
    match_shape(zeros(6, 6), heap, 2, STORE, 1, LOAD_EQ, 1, ERR_CTX)
    assert heap.numpy()[1] == 6
    with pytest.raises(VMError) as info:
        match_shape(zeros(6, 7), heap, 2, STORE, 1, LOAD_EQ, 1, ERR_CTX)
    message = str(info.value)
    assert message.startswith(
        ERR_CTX + "match_cast error, shape[1] mismatch to a previous populated value"
    )
    assert "expected 6 (heap slot 1), but got 7" in message


def test_match_shape_load_compares_with_an_earlier_call(builtin: Lookup, heap: Any) -> None:
    # A second parameter R.Tensor((n,)) checked against n bound by the first one.
    match_shape = builtin("match_shape")
    match_shape(zeros(5, 2), heap, 2, STORE, 0, IMM, 2)
    match_shape(zeros(5), heap, 1, LOAD_EQ, 0)
    with pytest.raises(VMError, match=r"shape\[0\] mismatch to a previous populated value"):
        match_shape(zeros(4), heap, 1, LOAD_EQ, 0)


def test_match_shape_accepts_a_shape_value(builtin: Lookup, heap: Any) -> None:
    builtin("match_shape")(Shape([2, 8]), heap, 2, IMM, 2, STORE, 3, ERR_CTX)
    assert heap.numpy()[3] == 8


def test_match_shape_accepts_plain_int_codes(builtin: Lookup, heap: Any) -> None:
    builtin("match_shape")(zeros(2, 3), heap, 2, 1, 0, 0, 3)
    assert heap.numpy()[0] == 2


def test_match_shape_size_mismatch(builtin: Lookup) -> None:
    with pytest.raises(VMError) as info:
        builtin("match_shape")(zeros(3, 4, 5), None, 2, IMM, 3, IMM, 4, ERR_CTX)
    message = str(info.value)
    assert message.startswith(ERR_CTX + "match_cast shape size mismatch")
    assert "expected ndim 2" in message and "ndim 3" in message


def test_match_shape_without_err_ctx_names_the_builtin(builtin: Lookup) -> None:
    with pytest.raises(VMError, match=r"^vm\.builtin\.match_shape: match_cast shape size mismatch"):
        builtin("match_shape")(zeros(3), None, 2, IMM, 3, IMM, 4)


def test_match_shape_err_ctx_none_is_treated_as_absent(builtin: Lookup) -> None:
    with pytest.raises(VMError, match=r"^vm\.builtin\.match_shape: match_cast error, shape\[0\]"):
        builtin("match_shape")(zeros(3), None, 1, IMM, 4, None)


def test_match_shape_rejects_values_without_a_shape(builtin: Lookup) -> None:
    with pytest.raises(
        VMTypeError, match=r"^ErrorContext.* expects a Tensor or a Shape but got Tuple"
    ):
        builtin("match_shape")((1, 2), None, 2, IMM, 1, IMM, 2, ERR_CTX)
    with pytest.raises(VMTypeError, match=r"got int"):
        builtin("match_shape")(3, None, 0)


def test_match_shape_malformed_arguments(builtin: Lookup, heap: Any) -> None:
    match_shape = builtin("match_shape")
    with pytest.raises(VMValueError, match=r"unknown MatchShapeCode 7 for shape\[1\]"):
        match_shape(zeros(2, 3), heap, 2, IMM, 2, 7, 0)
    with pytest.raises(
        VMValueError, match=r"heap slot 0 is needed, but the shape heap argument is None"
    ):
        match_shape(zeros(2), None, 1, STORE, 0)
    with pytest.raises(
        VMValueError, match=r"heap slot 9 is out of range for a shape heap of 4 slots"
    ):
        match_shape(zeros(2), heap, 1, STORE, 9, ERR_CTX)
    with pytest.raises(VMValueError, match=r"heap slot -1 is out of range"):
        match_shape(zeros(2), heap, 1, LOAD_EQ, -1)
    with pytest.raises(VMValueError, match=r"2 dimensions need 4 \(code, value\) arguments"):
        match_shape(zeros(2, 3), heap, 2, IMM, 2)
    with pytest.raises(VMTypeError, match=r"the shape heap must be a Tensor, got Shape"):
        match_shape(zeros(2), Shape([1]), 1, STORE, 0)


# -- match_prim_value ------------------------------------------------------------------------
def test_match_prim_value_codes(builtin: Lookup, heap: Any) -> None:
    match_prim_value = builtin("match_prim_value")
    match_prim_value(16, heap, IMM, 16, ERR_CTX)
    match_prim_value(16, heap, STORE, 2, ERR_CTX)
    assert heap.numpy()[2] == 16
    match_prim_value(16, heap, LOAD_EQ, 2, ERR_CTX)
    match_prim_value(99, heap, NO_OP, 0, ERR_CTX)
    match_prim_value(np.int64(16), heap, LOAD_EQ, 2)
    assert heap.numpy().tolist() == [-7, -7, 16, -7]


def test_match_prim_value_errors(builtin: Lookup, heap: Any) -> None:
    match_prim_value = builtin("match_prim_value")
    heap.host_array()[0] = 3
    with pytest.raises(
        VMError,
        match=r"^ErrorContext.*PrimValue mismatch to specified constant: expected 4, but got 5",
    ):
        match_prim_value(5, heap, IMM, 4, ERR_CTX)
    with pytest.raises(
        VMError,
        match=r"PrimValue mismatch to a previous populated value: expected 3 \(heap slot 0\), but got 5",
    ):
        match_prim_value(5, heap, LOAD_EQ, 0)
    with pytest.raises(
        VMTypeError, match=r"match_prim_value: match_cast expects an int PrimValue but got float"
    ):
        match_prim_value(5.0, heap, IMM, 5)
    with pytest.raises(VMValueError, match=r"unknown MatchShapeCode 9"):
        match_prim_value(5, heap, 9, 0)
    with pytest.raises(VMValueError, match=r"shape heap argument is None"):
        match_prim_value(5, None, STORE, 0)


# -- make_shape --------------------------------------------------------------------------------
def test_make_shape_use_imm(builtin: Lookup) -> None:
    result = builtin("make_shape")(None, 3, USE_IMM, 2, USE_IMM, 3, USE_IMM, 4)
    assert type(result) is Shape and result == (2, 3, 4)
    assert builtin("make_shape")(None, 0) == ()


def test_make_shape_load_shape(builtin: Lookup, heap: Any) -> None:
    heap.host_array()[:] = [10, 20, 30, 40]
    result = builtin("make_shape")(heap, 3, LOAD, 3, USE_IMM, 7, LOAD, 0)
    assert type(result) is Shape and result == (40, 7, 10)
    assert all(type(d) is int for d in result)


def test_make_shape_accepts_a_trailing_err_ctx(builtin: Lookup, heap: Any) -> None:
    heap.host_array()[1] = 5
    assert builtin("make_shape")(heap, 2, LOAD, 1, USE_IMM, 2, ERR_CTX) == (5, 2)


def test_shape_heap_round_trip(ctx: Any, builtin: Lookup) -> None:
    # What VMShapeLower emits for f(x: R.Tensor((n, m))) -> R.Tensor((m, n, 2)).
    heap = builtin("alloc_shape_heap")(ctx, 2)
    x = relaxvm.tensor(np.ones((3, 7), "float32"))
    builtin("match_shape")(x, heap, 2, STORE, 0, STORE, 1, ERR_CTX)
    out_shape = builtin("make_shape")(heap, 3, LOAD, 1, LOAD, 0, USE_IMM, 2)
    assert out_shape == np.ones((3, 7)).T[..., None].repeat(2, axis=-1).shape


def test_make_shape_errors(builtin: Lookup, heap: Any) -> None:
    make_shape = builtin("make_shape")
    with pytest.raises(
        VMValueError, match=r"^vm\.builtin\.make_shape: unknown MakeShapeCode 5 for dimension 1"
    ):
        make_shape(None, 2, USE_IMM, 1, 5, 0)
    with pytest.raises(
        VMValueError,
        match=r"^ErrorContext.*heap slot 0 is needed, but the shape heap argument is None",
    ):
        make_shape(None, 1, LOAD, 0, ERR_CTX)
    with pytest.raises(
        VMValueError, match=r"heap slot 4 is out of range for a shape heap of 4 slots"
    ):
        make_shape(heap, 1, LOAD, 4)
    with pytest.raises(VMValueError, match=r"3 dimensions need 6 \(code, value\) arguments"):
        make_shape(None, 3, USE_IMM, 1, USE_IMM, 2)
    with pytest.raises(
        VMValueError, match=r"need 2 \(code, value\) arguments plus an optional err_ctx, got 4"
    ):
        make_shape(None, 1, USE_IMM, 1, USE_IMM, 2)
    with pytest.raises(VMTypeError, match=r"dimension 0 must be an int, got str"):
        make_shape(None, 1, USE_IMM, "4")


# -- make_prim_value ------------------------------------------------------------------------
def test_make_prim_value(builtin: Lookup, heap: Any) -> None:
    heap.host_array()[2] = 123
    make_prim_value = builtin("make_prim_value")
    assert make_prim_value(None, USE_IMM, 9) == 9
    value = make_prim_value(heap, LOAD, 2)
    assert value == 123 and type(value) is int
    with pytest.raises(VMValueError, match=r"make_prim_value: unknown MakeShapeCode 3"):
        make_prim_value(heap, 3, 0)
    with pytest.raises(VMValueError, match=r"make_prim_value: heap slot 8 is out of range"):
        make_prim_value(heap, LOAD, 8)
