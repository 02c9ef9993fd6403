"""Runtime objects: DataType, Device, Shape, Tensor, Storage, allocators, Module."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import DeviceError, FunctionNotFoundError, VMError, VMTypeError, VMValueError
from relaxvm.runtime import (
    AllocatorType,
    DataType,
    Device,
    Module,
    NaiveAllocator,
    PooledAllocator,
    Shape,
    get_allocator,
)

# -- DataType -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "bits", "lanes"),
    [
        ("float32", 2, 32, 1),
        ("float16", 2, 16, 1),
        ("int8", 0, 8, 1),
        ("uint8", 1, 8, 1),
        ("int64", 0, 64, 1),
        ("bool", 6, 8, 1),
        ("handle", 3, 64, 1),
        ("bfloat16", 4, 16, 1),
        ("float32x4", 2, 32, 4),
    ],
)
def test_dtype_parse_and_print(text, code, bits, lanes):
    dtype = DataType(text)
    assert (dtype.code, dtype.bits, dtype.lanes) == (code, bits, lanes)
    assert str(dtype) == text
    assert DataType.from_code(code, bits, lanes) == dtype
    assert dtype == text and hash(dtype) == hash(DataType(text))


def test_dtype_from_numpy_and_back():
    for name in [
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
    ]:
        assert DataType(np.dtype(name)).numpy_dtype() == np.dtype(name)
    assert DataType(np.float32) == "float32"
    assert DataType("float32x4").itemsize == 16
    assert DataType("bool").itemsize == 1


@pytest.mark.parametrize("bad", ["float", "float33", "int7", "vector", "", "float32x0"])
def test_dtype_rejects_bad_spellings(bad):
    with pytest.raises(VMTypeError, match="DataType"):
        DataType(bad)


def test_dtype_from_code_validation():
    with pytest.raises(VMValueError, match="unknown type code 9"):
        DataType.from_code(9, 32)
    with pytest.raises(VMValueError, match="12 bits is not valid for type code 2"):
        DataType.from_code(2, 12)
    with pytest.raises(VMTypeError, match="no numpy equivalent"):
        DataType("bfloat16").numpy_dtype()
    with pytest.raises(VMTypeError, match="numpy dtype <U3 has no relaxvm equivalent"):
        DataType(np.dtype("U3"))


def test_dtype_not_equal_to_garbage():
    assert DataType("float32") != "nonsense"
    assert DataType("float32") != 3


# -- Device -------------------------------------------------------------------------------


def test_cpu_device():
    dev = relaxvm.cpu()
    assert (dev.device_type, dev.device_id, dev.kind) == (1, 0, "cpu")
    assert dev == relaxvm.device("cpu") == relaxvm.device("cpu:0") == Device(1, 0)
    assert repr(dev) == "cpu(0)" and dev.exist
    assert hash(dev) == hash(Device(1, 0))


def test_cuda_without_plugin_names_a_device_that_does_not_exist():
    dev = relaxvm.cuda(1)
    assert (dev.device_type, dev.device_id) == (2, 1)
    assert repr(dev) == "cuda(1)"
    if relaxvm.registry.functions.get_global_func("device_api.cuda", allow_missing=True) is None:
        assert not dev.exist
        with pytest.raises(
            DeviceError, match=r"no device API is installed for cuda\(1\); installed kinds: .*cpu"
        ):
            _ = dev.api


def test_unknown_device_kind():
    with pytest.raises(DeviceError, match="unknown device kind 'tpu'.*installed kinds: .*cpu"):
        relaxvm.device("tpu")
    with pytest.raises(DeviceError, match="cannot parse device id"):
        relaxvm.device("cpu:x")
    with pytest.raises(DeviceError, match="device_id must be >= 0"):
        Device(1, -1)


# -- Shape --------------------------------------------------------------------------------


def test_shape():
    shape = Shape([2, np.int64(3)])
    assert shape == (2, 3) and isinstance(shape, tuple)
    assert shape.ndim == 2 and repr(shape) == "Shape([2, 3])" and str(shape) == "[2, 3]"
    assert type(shape[1]) is int
    assert Shape(shape) is shape


def test_shape_equals_a_list_of_the_same_dims_as_tvm_shape_tuple():
    # TVM's ShapeTuple compares equal to a list (``vm["f"](shape) == [4, 9]`` in its tests).
    shape = Shape([4, 9])
    # Both operand orders (the list's own == defers to Shape), and != agrees with ==.
    assert shape == [4, 9] and operator.eq([4, 9], shape) and not operator.ne(shape, [4, 9])
    assert shape != [4, 8] and shape != [4, 9, 1] and shape != [4]
    assert shape == (4, 9) and shape == Shape([4, 9]) and shape != (9, 4)
    assert shape != {4, 9} and shape != "49"
    # Still hashable, and like the equal tuple (usable as a dict key next to tuples).
    assert {(4, 9): "t"}[shape] == "t"


def test_runtime_has_tvm_shape_tuple_and_load_module(tmp_path):
    from relaxvm import runtime
    from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, op

    assert runtime.ShapeTuple is Shape
    x = Var("x", TensorStructInfo([3], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.add(x, x)))
    path = tmp_path / "m.rvm"
    relaxvm.compile(bb.get(), "llvm").export_library(path)
    vm = relaxvm.VirtualMachine(runtime.load_module(path), relaxvm.cpu())
    data = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(vm["main"](relaxvm.tensor(data)).numpy(), data + data)


@pytest.mark.parametrize("bad", [[1.5], [True], ["a"], 5])
def test_shape_rejects_non_integers(bad):
    with pytest.raises(VMTypeError, match="Shape"):
        Shape(bad)


# -- Tensor -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "float64", "int8", "int32", "int64", "uint8", "bool"]
)
def test_tensor_round_trip(dtype):
    data = (np.arange(24) % 3).astype(dtype).reshape(2, 3, 4)
    t = relaxvm.tensor(data)
    assert t.shape == (2, 3, 4) and t.dtype == dtype and t.device == relaxvm.cpu()
    np.testing.assert_array_equal(t.numpy(), data)
    assert t.numpy() is not t.numpy()  # numpy() copies
    assert t.data_ptr % 64 == 0
    assert t.nbytes == data.nbytes and t.ndim == 3


def test_tensor_zero_d_and_empty():
    t = relaxvm.tensor(np.float32(2.5))
    assert t.shape == () and t.numpy() == np.float32(2.5)
    e = relaxvm.tensor(np.zeros((0, 3), "float32"))
    assert e.shape == (0, 3) and e.numpy().shape == (0, 3)


def test_tensor_dtype_conversion_and_bad_dtype():
    t = relaxvm.tensor([1, 2, 3], dtype="float16")
    assert t.dtype == "float16"
    with pytest.raises(VMTypeError, match="cannot hold numpy dtype"):
        relaxvm.tensor(np.array(["a", "b"]))


def test_tensor_views_share_memory_with_byte_offsets():
    base = relaxvm.tensor(np.arange(12, dtype="float32"))
    view = base.view((2, 2), relative_byte_offset=16)
    assert view.byte_offset == base.byte_offset + 16
    np.testing.assert_array_equal(view.numpy(), [[4, 5], [6, 7]])
    view.host_array()[0, 0] = 100
    assert base.numpy()[4] == 100
    as_int = base.view((12,), "int32")
    assert as_int.numpy()[0] == 0 and as_int.dtype == "int32"
    with pytest.raises(
        VMValueError,
        match="view of 16 bytes at relative offset 48 does not fit in the tensor's 48 bytes",
    ):
        base.view((4,), relative_byte_offset=48)


def test_tensor_copyfrom_copyto():
    t = relaxvm.empty((2, 2), "int32")
    t.copyfrom(np.array([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    other = relaxvm.empty((2, 2), "int32")
    t.copyto(other)
    np.testing.assert_array_equal(other.numpy(), t.numpy())
    np.testing.assert_array_equal(t.copyto(relaxvm.cpu()).numpy(), t.numpy())
    with pytest.raises(VMValueError, match=r"shape \(3,\) does not match the tensor's \(2, 2\)"):
        t.copyfrom(np.zeros(3))


def test_tensor_array_protocol():
    t = relaxvm.tensor(np.ones(3, "float32"))
    np.testing.assert_array_equal(np.asarray(t), np.ones(3))


# -- Storage and allocators -----------------------------------------------------------------


def test_naive_allocator_stats():
    alloc = NaiveAllocator(relaxvm.cpu())
    storage = alloc.alloc(100)
    assert storage.nbytes == 100 and alloc.stats.bytes_in_use == 100
    assert alloc.stats.device_allocations == 1
    del storage
    assert alloc.stats.releases == 1 and alloc.stats.bytes_in_use == 0


def test_pooled_allocator_reuses_buffers():
    alloc = PooledAllocator(relaxvm.cpu())
    first = alloc.alloc(1000)
    assert first.nbytes == 4096  # page-rounded
    pointer = first.data_ptr
    del first
    assert alloc.stats.bytes_pooled == 4096
    second = alloc.alloc(4000)
    assert second.data_ptr == pointer
    assert alloc.stats.pool_hits == 1 and alloc.stats.device_allocations == 1
    del second
    alloc.clear()
    assert alloc.stats.bytes_pooled == 0
    third = alloc.alloc(10)
    assert alloc.stats.device_allocations == 2
    assert alloc.stats.peak_bytes_in_use == 4096
    del third


def test_storage_alloc_tensor_bounds():
    storage = NaiveAllocator(relaxvm.cpu()).alloc(64)
    t = storage.alloc_tensor(32, Shape([8]), DataType("float32"))
    assert t.byte_offset == 32 and t.storage is storage
    with pytest.raises(
        VMValueError, match="attempted to allocate 36 at offset 32 in region that is 64 bytes"
    ):
        storage.alloc_tensor(32, Shape([9]), DataType("float32"))
    with pytest.raises(VMValueError, match="offset -4"):
        storage.alloc_tensor(-4, Shape([1]), DataType("float32"))


def test_allocator_errors():
    alloc = NaiveAllocator(relaxvm.cpu())
    with pytest.raises(VMValueError, match="non-negative int"):
        alloc.alloc(-1)
    with pytest.raises(VMValueError, match="memory scope 'texture' is not supported"):
        alloc.alloc(8, scope="texture")
    with pytest.raises(VMError, match="out of memory: cannot allocate"):
        alloc.alloc(1 << 62)
    with pytest.raises(VMValueError, match="unknown allocator type 7"):
        get_allocator(relaxvm.cpu(), 7)


def test_get_allocator_is_shared_per_device_and_kind():
    dev = relaxvm.cpu()
    assert get_allocator(dev, AllocatorType.POOLED) is get_allocator(dev, 2)
    assert isinstance(get_allocator(dev, 1), NaiveAllocator)


# -- Module -------------------------------------------------------------------------------


def test_module_functions_and_imports():
    lib = Module({"kernel": lambda: "lib"}, name="lib")
    inner = Module({"deep": lambda: "deep"}, name="inner")
    lib.import_module(inner)
    host = Module({"own": lambda: "own"}, name="host")
    host.import_module(lib)
    assert host.get_function("kernel") is None
    assert host.get_function("kernel", query_imports=True)() == "lib"
    assert host["deep"]() == "deep"
    assert "own" in host and "missing" not in host
    assert host.imports == [lib] and host.list_functions() == ["own"]
    with pytest.raises(FunctionNotFoundError, match="module 'host' has no function 'missing'"):
        host["missing"]
    with pytest.raises(TypeError, match="expected a Module"):
        host.import_module("not a module")


def test_tensor_zero_d_copyfrom_and_big_endian_input():
    t = relaxvm.empty((), "float32")
    t.copyfrom(np.float32(4.5))
    assert t.numpy() == np.float32(4.5)
    big_endian = np.arange(4, dtype=">i4")
    np.testing.assert_array_equal(relaxvm.tensor(big_endian).numpy(), [0, 1, 2, 3])
