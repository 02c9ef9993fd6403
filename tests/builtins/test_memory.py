"""vm.builtin.alloc_storage / alloc_tensor / null_value / ensure_zero_offset / to_device /
memory_manager.clear."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import DataType, Shape, Storage
from relaxvm.errors import DeviceError, VMError, VMTypeError, VMValueError
from relaxvm.runtime import AllocatorType, NaiveAllocator, get_allocator

Lookup = Callable[[str], Callable[..., Any]]
U8 = DataType("uint8")
F32 = DataType("float32")


# -- alloc_storage ----------------------------------------------------------------------------
def test_alloc_storage_takes_bytes_from_the_indexed_allocator(ctx: Any, builtin: Lookup) -> None:
    storage = builtin("alloc_storage")(ctx, Shape([1000]), 0, U8, "global")
    assert isinstance(storage, Storage)
    assert storage.nbytes >= 1000
    assert storage.device == ctx.devices[0]
    assert ctx.allocators[0].stats.allocations == 1


def test_alloc_storage_minus_one_is_the_host(make_ctx: Any, builtin: Lookup) -> None:
    cpu = relaxvm.cpu()
    first, host = NaiveAllocator(cpu), NaiveAllocator(cpu)
    vm = make_ctx([cpu, cpu], [first, host])
    builtin("alloc_storage")(vm, Shape([16]), -1, U8, "global")
    builtin("alloc_storage")(vm, 16, 0, F32, "global")  # an int size works too
    assert (first.stats.allocations, host.stats.allocations) == (1, 1)


def test_alloc_storage_device_index_out_of_range(ctx: Any, builtin: Lookup) -> None:
    alloc_storage = builtin("alloc_storage")
    with pytest.raises(
        VMError,
        match=r"device index 1 is out of VM physical devices list \(the VM has 1 devices: cpu\(0\)",
    ):
        alloc_storage(ctx, Shape([8]), 1, U8, "global")
    with pytest.raises(VMError, match=r"device index -2 is out of VM physical devices list"):
        alloc_storage(ctx, Shape([8]), -2, U8, "global")


def test_alloc_storage_bad_arguments(ctx: Any, builtin: Lookup) -> None:
    alloc_storage = builtin("alloc_storage")
    with pytest.raises(
        VMTypeError, match=r"alloc_storage: size must be a Shape holding the byte count, got float"
    ):
        alloc_storage(ctx, 8.0, 0, U8, "global")
    with pytest.raises(
        VMValueError, match=r"alloc_storage: size must be a non-negative int, got -4"
    ):
        alloc_storage(ctx, Shape([-4]), 0, U8, "global")
    with pytest.raises(VMValueError, match=r"memory scope 'texture' is not supported"):
        alloc_storage(ctx, Shape([8]), 0, U8, "texture")


def test_alloc_storage_out_of_memory_is_an_exception(ctx: Any, builtin: Lookup) -> None:
    with pytest.raises(VMError, match=r"out of memory"):
        builtin("alloc_storage")(ctx, Shape([1 << 60]), 0, U8, "global")


def test_pooled_allocator_reuses_freed_storage(ctx: Any, builtin: Lookup) -> None:
    alloc_storage = builtin("alloc_storage")
    stats = ctx.allocators[0].stats
    storage = alloc_storage(ctx, Shape([3000]), 0, U8, "global")
    del storage
    gc.collect()
    again = alloc_storage(ctx, Shape([2500]), 0, U8, "global")  # same page-rounded size
    assert (stats.allocations, stats.device_allocations, stats.pool_hits) == (2, 1, 1)
    assert again.nbytes == 4096


# -- alloc_tensor ---------------------------------------------------------------------------
def test_alloc_tensor_views_storage_at_offset(ctx: Any, builtin: Lookup) -> None:
    storage = builtin("alloc_storage")(ctx, Shape([256]), 0, U8, "global")
    alloc_tensor = builtin("alloc_tensor")
    a = alloc_tensor(storage, 0, Shape([4, 4]), F32)
    b = alloc_tensor(storage, 64, Shape([16]), F32, "global")
    assert (a.shape, a.dtype, a.byte_offset) == ((4, 4), F32, 0)
    assert (b.shape, b.byte_offset) == ((16,), 64)
    assert a.storage is storage and b.storage is storage
    b.host_array()[:] = np.arange(16, dtype="float32")
    raw = storage.buffer[64:128].view("float32")
    np.testing.assert_array_equal(raw, np.arange(16, dtype="float32"))


def test_alloc_tensor_converts_hand_written_arguments(ctx: Any, builtin: Lookup) -> None:
    storage = builtin("alloc_storage")(ctx, Shape([64]), 0, U8, "global")
    tensor = builtin("alloc_tensor")(storage, 0, (2, 3), "int32")
    assert type(tensor.shape) is Shape and tensor.shape == (2, 3)
    assert tensor.dtype is DataType("int32")


def test_alloc_tensor_bounds(ctx: Any, builtin: Lookup) -> None:
    storage = builtin("alloc_storage")(ctx, Shape([64]), 0, U8, "global")
    alloc_tensor = builtin("alloc_tensor")
    assert alloc_tensor(storage, 32, Shape([8]), F32).nbytes == 32  # exactly fits
    region = storage.nbytes
    with pytest.raises(VMValueError) as info:
        alloc_tensor(storage, region - 16, Shape([8]), F32)
    assert str(info.value) == (
        f"storage allocation failure, attempted to allocate 32 at offset {region - 16} in "
        f"region that is {region} bytes"
    )
    with pytest.raises(
        VMValueError, match=r"storage allocation failure, attempted to allocate 4 at offset -4"
    ):
        alloc_tensor(storage, -4, Shape([1]), F32)


def test_alloc_tensor_bad_arguments(ctx: Any, builtin: Lookup) -> None:
    storage = builtin("alloc_storage")(ctx, Shape([64]), 0, U8, "global")
    alloc_tensor = builtin("alloc_tensor")
    with pytest.raises(VMTypeError, match=r"alloc_tensor: expect a Storage but get Tensor"):
        alloc_tensor(relaxvm.tensor(np.zeros(4, "float32")), 0, Shape([1]), F32)
    with pytest.raises(VMTypeError, match=r"alloc_tensor: offset must be an int, got float"):
        alloc_tensor(storage, 0.0, Shape([1]), F32)
    with pytest.raises(VMTypeError, match=r"alloc_tensor: shape must be a Shape, got int"):
        alloc_tensor(storage, 0, 4, F32)
    with pytest.raises(VMValueError, match=r"alloc_tensor: memory scope 'shared' is not supported"):
        alloc_tensor(storage, 0, Shape([1]), F32, "shared")


# -- null_value ------------------------------------------------------------------------------
def test_null_value_is_none(builtin: Lookup) -> None:
    assert builtin("null_value")() is None


# -- memory_manager.clear --------------------------------------------------------------------
def test_memory_manager_clear_empties_the_pools(builtin: Lookup) -> None:
    pool = get_allocator(relaxvm.cpu(), AllocatorType.POOLED)
    storage = pool.alloc(12345)
    size = storage.nbytes
    del storage
    gc.collect()
    assert pool.stats.bytes_pooled >= size
    assert builtin("memory_manager.clear")() is None
    assert pool.stats.bytes_pooled == 0
    hits = pool.stats.pool_hits
    device_allocations = pool.stats.device_allocations
    pool.alloc(12345)
    assert (pool.stats.pool_hits, pool.stats.device_allocations) == (hits, device_allocations + 1)


# -- ensure_zero_offset ----------------------------------------------------------------------
def _tensor_at(offset: int, values: np.ndarray, allocator: Any) -> relaxvm.Tensor:
    storage = allocator.alloc(offset + values.nbytes)
    tensor = storage.alloc_tensor(offset, Shape(values.shape), DataType(values.dtype))
    tensor.host_array()[...] = values
    return tensor


def test_ensure_zero_offset_returns_zero_offset_tensors_unchanged(builtin: Lookup) -> None:
    tensor = relaxvm.tensor(np.arange(6, dtype="float32"))
    assert builtin("ensure_zero_offset")(tensor) is tensor


def test_ensure_zero_offset_views_aligned_memory(ctx: Any, builtin: Lookup) -> None:
    values = np.arange(12, dtype="float32").reshape(3, 4)
    tensor = _tensor_at(128, values, ctx.allocators[0])
    result = builtin("ensure_zero_offset")(tensor)
    assert result.byte_offset == 0
    assert result.data_ptr == tensor.data_ptr  # the same memory, pointer moved
    np.testing.assert_array_equal(result.numpy(), values)
    tensor.host_array()[0, 0] = 42.0
    assert result.numpy()[0, 0] == 42.0


def test_ensure_zero_offset_view_keeps_the_block_out_of_the_pool(ctx: Any, builtin: Lookup) -> None:
    pool = ctx.allocators[0]
    values = np.arange(4, dtype="int32")
    result = builtin("ensure_zero_offset")(_tensor_at(64, values, pool))
    gc.collect()  # the original tensor and storage are gone; the view must hold the block
    assert pool.stats.releases == 0
    fresh = pool.alloc(64 + values.nbytes)
    assert fresh.data_ptr != result.data_ptr - 64
    np.testing.assert_array_equal(result.numpy(), values)


def test_ensure_zero_offset_copies_unaligned_data(ctx: Any, builtin: Lookup) -> None:
    values = np.arange(5, dtype="int32")
    tensor = _tensor_at(4, values, ctx.allocators[0])
    result = builtin("ensure_zero_offset")(tensor)
    assert result.byte_offset == 0
    assert result.data_ptr != tensor.data_ptr
    np.testing.assert_array_equal(result.numpy(), values)
    tensor.host_array()[0] = 100
    assert result.numpy()[0] == 0  # a copy, not a view


def test_ensure_zero_offset_rejects_non_tensors(builtin: Lookup) -> None:
    with pytest.raises(VMTypeError, match=r"ensure_zero_offset: expect a Tensor but get Shape"):
        builtin("ensure_zero_offset")(Shape([1]))


# -- to_device --------------------------------------------------------------------------------
def test_to_device_copies(builtin: Lookup) -> None:
    values = np.arange(6, dtype="float64").reshape(2, 3)
    source = relaxvm.tensor(values)
    cpu = relaxvm.cpu()
    result = builtin("to_device")(source, cpu.device_type, cpu.device_id)
    assert result is not source and result.data_ptr != source.data_ptr
    assert (result.shape, result.dtype, result.device) == (source.shape, source.dtype, cpu)
    np.testing.assert_array_equal(result.numpy(), values)
    assert builtin("to_device")(source, 1, 0, "global").numpy().sum() == values.sum()


def test_to_device_copies_only_the_viewed_elements(builtin: Lookup) -> None:
    source = relaxvm.tensor(np.arange(8, dtype="int32")).view(Shape([2, 2]), None, 16)
    result = builtin("to_device")(source, 1, 0)
    np.testing.assert_array_equal(result.numpy(), [[4, 5], [6, 7]])


def test_to_device_errors(builtin: Lookup) -> None:
    to_device = builtin("to_device")
    source = relaxvm.tensor(np.zeros(2, "float32"))
    with pytest.raises(DeviceError, match=r"no device API is installed for"):
        to_device(source, 99, 0)
    with pytest.raises(DeviceError, match=r"to_device: device cpu\(3\) does not exist"):
        to_device(source, 1, 3)
    with pytest.raises(VMTypeError, match=r"to_device: expect a Tensor but get Tuple"):
        to_device((source,), 1, 0)
    with pytest.raises(VMValueError, match=r"to_device: memory scope 'texture' is not supported"):
        to_device(source, 1, 0, "texture")
