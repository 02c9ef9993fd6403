"""The ``cuda`` device API on a fake driver whose device memory is host memory: tensors,
copies, ``vm.builtin.to_device``, the device allocators and out-of-memory errors."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import DeviceError, VMError, VMValueError
from relaxvm.runtime import get_device_api
from relaxvm_cuda.device import (
    CUDADeviceAPI,
    DeviceBuffer,
    NaiveDeviceAllocator,
    PooledDeviceAllocator,
    cuda_device_api,
)
from relaxvm_cuda.runtime_errors import CUDAOutOfMemoryError, CUDAUnavailableError


def test_registered_as_the_cuda_device_api() -> None:
    api = get_device_api("cuda")
    assert isinstance(api, CUDADeviceAPI) and api is cuda_device_api()
    assert (api.kind, api.device_type, api.host_accessible) == ("cuda", 2, False)
    assert relaxvm.cuda(1).device_type == 2


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype="float32").reshape(3, 4),
        np.array([1.5, -2.0, np.nan, np.inf], dtype="float16"),
        np.array([True, False, True]),
        np.array(7, dtype="int64"),
        np.zeros((0, 3), dtype="int8"),
        np.arange(6, dtype="float64")[::2],  # not contiguous
    ],
    ids=["f32", "f16", "bool", "0d", "empty", "strided"],
)
def test_tensor_round_trip(fake_driver: Any, array: np.ndarray) -> None:
    t = relaxvm.tensor(array, relaxvm.cuda())
    assert t.device == relaxvm.cuda(0) and tuple(t.shape) == array.shape
    # The storage is device memory (here: one of the fake driver's blocks).
    assert any(
        base <= t.data_ptr < base + ctypes.sizeof(b) for base, b in fake_driver.blocks.items()
    )
    np.testing.assert_array_equal(t.numpy(), array)
    assert t.numpy().dtype == array.dtype


def test_copyfrom_copyto_and_views(fake_driver: Any) -> None:
    t = relaxvm.empty((2, 3), "int32", relaxvm.cuda())
    t.copyfrom(np.arange(6, dtype="int32").reshape(2, 3))
    back = t.copyto(relaxvm.cpu())
    assert back.device == relaxvm.cpu()
    np.testing.assert_array_equal(back.numpy(), np.arange(6).reshape(2, 3))
    row = t.view((3,), relaxvm.DataType("int32"), relative_byte_offset=12)
    np.testing.assert_array_equal(row.numpy(), [3, 4, 5])
    t2 = relaxvm.empty((2, 3), "int32", relaxvm.cuda())
    t2[:] = t
    np.testing.assert_array_equal(t2.numpy(), t.numpy())


def test_device_memory_is_not_host_accessible(fake_driver: Any) -> None:
    t = relaxvm.tensor(np.ones(3, "float32"), relaxvm.cuda())
    with pytest.raises(DeviceError, match="not host-accessible"):
        t.host_array()
    assert "<values on device cuda(0)>" in str(t)
    np.testing.assert_array_equal(np.asarray(t), np.ones(3))


def test_to_device_both_ways(fake_driver: Any) -> None:
    to_device = relaxvm.get_global_func("vm.builtin.to_device")
    host = relaxvm.tensor(np.arange(5, dtype="float32"))
    gpu = to_device(host, 2, 0)
    assert gpu.device == relaxvm.cuda(0)
    again = to_device(gpu, 2, 0)  # device to device: a copy through the host
    assert again.data_ptr != gpu.data_ptr
    back = to_device(again, 1, 0)
    assert back.device == relaxvm.cpu()
    np.testing.assert_array_equal(back.numpy(), np.arange(5))
    with pytest.raises(DeviceError, match=r"cuda\(4\) does not exist"):
        to_device(host, 2, 4)


def test_unknown_ordinal_names_the_device_count(fake_driver: Any) -> None:
    assert relaxvm.cuda(0).exist and not relaxvm.cuda(1).exist
    with pytest.raises(
        CUDAUnavailableError, match=r"no CUDA device with ordinal 1: 1 present"
    ) as info:
        relaxvm.tensor(np.ones(2), relaxvm.cuda(1))
    assert info.value.missing == "device"


def test_copy_bounds_are_checked(fake_driver: Any) -> None:
    api = cuda_device_api()
    buffer = api.alloc(0, 8, 64)
    with pytest.raises(VMValueError, match=r"16 bytes at offset 0 do not fit in the buffer's 8"):
        api.copy_from_host(buffer, 0, np.zeros(2, "float64"))
    with pytest.raises(VMValueError, match=r"8 bytes at offset 4 do not fit"):
        api.copy_to_host(buffer, 4, np.zeros(1, "float64"))
    api.free(buffer)
    api.free(buffer)  # a second release does nothing (never a double free in the pool)
    with pytest.raises(VMValueError, match="the buffer was freed"):
        api.copy_to_host(buffer, 0, np.zeros(1, "int8"))


def test_copy_within_and_fill_bytes(fake_driver: Any) -> None:
    api = cuda_device_api()
    a, b = api.alloc(0, 16, 64), api.alloc(0, 16, 64)
    api.copy_from_host(a, 0, np.arange(4, dtype="int32"))
    api.fill_bytes(b, 0, 16, 0)
    api.copy_within(b, 8, a, 0, 8)
    out = np.empty(4, "int32")
    api.copy_to_host(b, 0, out)
    np.testing.assert_array_equal(out, [0, 0, 0, 1])
    with pytest.raises(VMValueError, match="value must be a byte"):
        api.fill_bytes(b, 0, 1, 256)


def test_large_alignment_is_honoured(fake_driver: Any) -> None:
    api = cuda_device_api()
    for alignment in (64, 256, 4096):
        buffer = api.alloc(0, 100, alignment)
        assert isinstance(buffer, DeviceBuffer) and buffer.pointer % alignment == 0
        api.copy_from_host(buffer, 0, np.ones(100, "uint8"))  # inside the real block
    with pytest.raises(VMValueError, match="power of two"):
        api.alloc(0, 8, 48)


def test_synchronize_and_memory_info(fake_driver: Any) -> None:
    api = cuda_device_api()
    api.synchronize(0)
    assert fake_driver.calls[-1] == "synchronize"
    free, total = api.memory_info(0)
    assert total == fake_driver.total and free <= total


# ---- allocators -------------------------------------------------------------------------------
def test_pooled_allocator_reuses_blocks_by_size_class(fake_driver: Any) -> None:
    pool = PooledDeviceAllocator(fake_driver, 0)
    assert pool.size_class(1) == 512 and pool.size_class(513) == 1024
    assert pool.size_class((1 << 20) + 1) == 2 << 20
    p1, s1 = pool.alloc(1000)
    assert s1 == 1024 and pool.stats.device_allocations == 1
    pool.free(p1, s1)
    assert pool.stats.bytes_cached == 1024 and pool.stats.bytes_in_use == 0
    p2, s2 = pool.alloc(600)  # same class: the cached block
    assert (p2, s2) == (p1, 1024)
    assert pool.stats.pool_hits == 1 and pool.stats.device_allocations == 1
    p3, _ = pool.alloc(100)  # another class: a new block
    assert p3 != p1 and pool.stats.device_allocations == 2
    assert pool.stats.peak_bytes_in_use == 1024 + 512
    pool.free(p2, s2)
    pool.free(p3, 512)
    assert fake_driver.calls.count("mem_free") == 0
    assert pool.release_cached() == 1536
    assert fake_driver.calls.count("mem_free") == 2 and not fake_driver.blocks
    assert pool.stats.bytes_cached == 0 and pool.stats.device_frees == 2


def test_naive_allocator_frees_at_once(fake_driver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAXVM_CUDA_POOL", "0")
    api = CUDADeviceAPI()  # a fresh API: allocators are chosen when first made
    assert isinstance(api.allocator(0), NaiveDeviceAllocator)
    assert not isinstance(api.allocator(0), PooledDeviceAllocator)
    buffer = api.alloc(0, 100, 64)
    assert len(fake_driver.blocks) == 1
    api.free(buffer)
    assert not fake_driver.blocks and api.allocator(0).stats.device_frees == 1


def test_pool_releases_its_cache_before_giving_up(fake_driver: Any) -> None:
    fake_driver.total = 4096
    pool = PooledDeviceAllocator(fake_driver, 0)
    blocks = [pool.alloc(1024) for _ in range(4)]
    for pointer, size in blocks:
        pool.free(pointer, size)
    pointer, size = pool.alloc(2048)  # does not fit beside the cache: released, retried
    assert size == 2048 and pool.stats.bytes_cached == 0
    assert fake_driver.used == 2048


def test_out_of_memory_is_an_exception(fake_driver: Any) -> None:
    api = cuda_device_api()
    with pytest.raises(CUDAOutOfMemoryError, match=r"cannot allocate 1073741824 bytes") as info:
        api.alloc(0, 1 << 30, 64)
    err = info.value
    assert isinstance(err, MemoryError) and err.requested == 1 << 30
    assert err.total == fake_driver.total and err.free == fake_driver.total - fake_driver.used
    assert "free of 16777216" in str(err)
    # Through relaxvm's allocators: still a Python exception (VMError), and usable after.
    with pytest.raises(VMError, match="out of memory"):
        relaxvm.empty((1 << 28,), "float32", relaxvm.cuda())
    t = relaxvm.tensor(np.ones(4, "float32"), relaxvm.cuda())
    np.testing.assert_array_equal(t.numpy(), np.ones(4))


def test_buffers_of_a_replaced_driver_are_refused(fake_driver: Any) -> None:
    from relaxvm_cuda.driver import set_driver

    api = cuda_device_api()
    buffer = api.alloc(0, 8, 64)
    set_driver(type(fake_driver)())
    with pytest.raises(VMValueError, match="allocated through another CUDA driver"):
        api.copy_to_host(buffer, 0, np.zeros(8, "uint8"))


def test_replacing_the_driver_gives_pooled_memory_back_through_the_old_one(
    fake_driver: Any,
) -> None:
    from relaxvm_cuda.driver import set_driver

    t = relaxvm.tensor(np.ones(1000, "float32"), relaxvm.cuda())
    del t  # into relaxvm's pool: a tensor made next of that size would reuse the block
    assert fake_driver.blocks
    successor = type(fake_driver)()
    set_driver(successor)
    # Every block went back through the outgoing driver; the successor allocates its own.
    assert not fake_driver.blocks and fake_driver.calls.count("mem_free") >= 1
    u = relaxvm.tensor(np.full(1000, 2, "float32"), relaxvm.cuda())
    assert successor.calls.count("mem_alloc") == 1 and "mem_free" not in successor.calls
    np.testing.assert_array_equal(u.numpy(), np.full(1000, 2))
