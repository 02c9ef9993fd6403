"""DLPack both ways: relaxvm tensors read by numpy/torch, and producers read by relaxvm."""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import DeviceError, VMTypeError, VMValueError
from relaxvm.runtime import Device, Tensor, from_dlpack
from relaxvm.runtime import dlpack as dl

_get_name = dl._api.PyCapsule_GetName


def _pointer(capsule: object, name: bytes) -> int:
    return int(dl._api.PyCapsule_GetPointer(id(capsule), name))


DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def _values(dtype: str, shape: tuple[int, ...] = (2, 3)) -> np.ndarray:
    values = np.arange(int(np.prod(shape)))
    if dtype == "bool":
        values = values % 2
    return values.astype(dtype).reshape(shape)


# --- export: numpy reads relaxvm tensors -------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_reads_every_dtype_zero_copy(dtype: str) -> None:
    t = relaxvm.tensor(_values(dtype))
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a, _values(dtype))
    assert a.ctypes.data == t.data_ptr


def test_writes_are_shared_both_ways() -> None:
    t = relaxvm.tensor(np.zeros((2, 2), "float32"))
    a = np.from_dlpack(t)
    a[0, 1] = 5.0
    assert t.numpy()[0, 1] == 5.0
    t.copyfrom(np.full((2, 2), 3.0, "float32"))
    np.testing.assert_array_equal(a, np.full((2, 2), 3.0))


def test_numpy_array_keeps_memory_alive_after_tensor_is_gone() -> None:
    t = relaxvm.tensor(np.arange(1024, dtype="float32"))
    a = np.from_dlpack(t)
    del t
    gc.collect()
    # Had the storage returned to the pool, this allocation of the same size would reuse it.
    other = relaxvm.tensor(np.full(1024, -1.0, "float32"))
    np.testing.assert_array_equal(a, np.arange(1024, dtype="float32"))
    assert other.data_ptr != a.ctypes.data


def test_deleter_releases_the_export() -> None:
    before = len(dl._live)
    a = np.from_dlpack(relaxvm.tensor(np.ones(4)))
    assert len(dl._live) == before + 1
    del a
    gc.collect()
    assert len(dl._live) == before


def test_unconsumed_capsule_is_released_at_the_next_export() -> None:
    dl._sweep_pending()
    before = len(dl._live)
    for max_version in (None, (1, 0)):
        capsule = relaxvm.tensor(np.ones(4)).__dlpack__(max_version=max_version)
        assert len(dl._live) == before + 1
        del capsule
        gc.collect()
        kept = relaxvm.tensor(np.ones(4)).__dlpack__()
        # The abandoned export is gone; only the new capsule's is live.
        assert len(dl._live) == before + 1
        del kept
        dl._sweep_pending()
        assert len(dl._live) == before


def test_held_capsule_is_not_released_by_a_sweep() -> None:
    capsule = relaxvm.tensor(np.arange(4.0)).__dlpack__()
    dl._sweep_pending()
    gc.collect()
    other = relaxvm.tensor(np.full(4, -1.0))
    np.testing.assert_array_equal(from_dlpack(capsule).numpy(), np.arange(4.0))
    assert other.numpy()[0] == -1.0


def test_capsule_dropped_while_an_exception_unwinds() -> None:
    # CPython frees the capsule while KeyError propagates: a Python capsule destructor
    # would crash the interpreter here.
    def boom() -> int:
        raise KeyError("original")

    with pytest.raises(KeyError, match="original"):
        print(relaxvm.tensor(np.ones(2)).__dlpack__(), boom())
    before = len(dl._live)
    dl._sweep_pending()
    assert len(dl._live) == before - 1


def test_capsule_names_follow_max_version() -> None:
    t = relaxvm.tensor(np.ones(2))
    assert _get_name(t.__dlpack__()) == b"dltensor"
    assert _get_name(t.__dlpack__(max_version=(0, 8))) == b"dltensor"
    assert _get_name(t.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    assert _get_name(t.__dlpack__(max_version=(1, 3))) == b"dltensor_versioned"


def test_dlpack_device() -> None:
    assert relaxvm.tensor(np.ones(2)).__dlpack_device__() == (1, 0)


def test_view_with_byte_offset() -> None:
    t = relaxvm.tensor(np.arange(8, dtype="int32"))
    view = t.view((2, 2), relative_byte_offset=8)
    a = np.from_dlpack(view)
    np.testing.assert_array_equal(a, [[2, 3], [4, 5]])
    a[0, 0] = 100
    assert t.numpy()[2] == 100


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2)])
def test_zero_d_and_empty(shape: tuple[int, ...]) -> None:
    data = np.full(shape, 7.5, "float32")
    t = relaxvm.tensor(data)
    a = np.from_dlpack(t)
    assert a.shape == shape
    np.testing.assert_array_equal(a, data)
    back = from_dlpack(a)
    assert tuple(back.shape) == shape


def test_copy_true_exports_a_copy() -> None:
    t = relaxvm.tensor(np.zeros(3, "float32"))
    a = np.from_dlpack(t, copy=True)
    a[0] = 1.0
    assert t.numpy()[0] == 0.0


def test_dl_device_cpu_is_accepted() -> None:
    t = relaxvm.tensor(np.ones(3))
    a = np.from_dlpack(t, device="cpu")
    assert a.ctypes.data == t.data_ptr


def test_export_errors() -> None:
    t = relaxvm.tensor(np.ones(2))
    with pytest.raises(dl.DLPackError, match=r"__dlpack__: stream must be None for CPU"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"cannot export a tensor on cpu\(0\) to dl_device"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(VMValueError, match="uint1"):
        relaxvm.tensor(np.ones(2, bool)).view((2,), "uint1").__dlpack__()


# --- import: relaxvm reads other producers ----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_every_dtype_zero_copy(dtype: str) -> None:
    a = _values(dtype)
    t = from_dlpack(a)
    assert isinstance(t, Tensor)
    assert t.dtype == dtype
    assert tuple(t.shape) == a.shape
    assert t.device == Device(1, 0)
    assert t.data_ptr == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)


def test_from_numpy_shares_writes_and_keeps_producer_alive() -> None:
    a = np.zeros(5, "float64")
    t = from_dlpack(a)
    a[1] = 2.0
    assert t.numpy()[1] == 2.0
    t.copyfrom(np.arange(5.0))
    np.testing.assert_array_equal(a, np.arange(5.0))
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0))


def test_raw_capsule_is_renamed_and_cannot_be_used_twice() -> None:
    a = np.arange(4, dtype="int32")
    for capsule in (a.__dlpack__(), a.__dlpack__(max_version=(1, 0))):
        name = _get_name(capsule)
        t = from_dlpack(capsule)
        np.testing.assert_array_equal(t.numpy(), a)
        assert _get_name(capsule) == b"used_" + name
        with pytest.raises(dl.DLPackError, match=r"from_dlpack: the capsule was already consumed"):
            from_dlpack(capsule)


def test_round_trip_through_relaxvm_export_with_offset() -> None:
    t = relaxvm.tensor(np.arange(6, dtype="float32"))
    view = t.view((2,), relative_byte_offset=12)
    back = from_dlpack(view)
    np.testing.assert_array_equal(back.numpy(), [3.0, 4.0])
    back.copyfrom(np.array([9.0, 9.0], "float32"))
    np.testing.assert_array_equal(t.numpy(), [0, 1, 2, 9, 9, 5])
    del t, view
    gc.collect()
    np.testing.assert_array_equal(back.numpy(), [9.0, 9.0])


def test_strided_producer_is_copied_by_default() -> None:
    a = np.arange(12, dtype="int16").reshape(3, 4)
    for strided in (a[:, ::2], a.T, a[::-1]):
        t = from_dlpack(strided)
        np.testing.assert_array_equal(t.numpy(), strided)
        a_before = a.copy()
        t.copyfrom(np.zeros(strided.shape, "int16"))
        np.testing.assert_array_equal(a, a_before)


def test_strided_producer_with_copy_false_is_refused() -> None:
    a = np.arange(12, dtype="int16").reshape(3, 4)
    with pytest.raises(dl.DLPackError, match=r"from_dlpack: the producer's tensor is strided"):
        from_dlpack(a[:, ::2], copy=False)


def test_size_one_dims_with_odd_strides_are_compact() -> None:
    a = np.arange(4, dtype="float32").reshape(4, 1)[:, ::5]
    t = from_dlpack(a, copy=False)
    assert t.data_ptr == a.ctypes.data


def test_copy_true_copies() -> None:
    a = np.zeros(3, "float32")
    t = from_dlpack(a, copy=True)
    t.copyfrom(np.ones(3, "float32"))
    assert a[0] == 0.0


def test_read_only_producer_gives_read_only_tensor() -> None:
    a = np.arange(3.0)
    a.flags.writeable = False
    t = from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(VMValueError, match=r"Tensor.copyfrom: the tensor is read-only"):
        t.copyfrom(np.zeros(3))
    assert not np.from_dlpack(t).flags.writeable
    with pytest.raises(BufferError, match=r"read-only and DLPack 0.8 cannot say so"):
        t.__dlpack__()


def test_relaxvm_tensor_still_copies_from_dlpack_producers() -> None:
    a = np.arange(3.0)
    t = relaxvm.tensor(a)
    a[0] = 9.0
    assert t.numpy()[0] == 0.0


# --- import errors ----------------------------------------------------------------------------


def test_from_dlpack_rejects_non_producers() -> None:
    with pytest.raises(VMTypeError, match=r"from_dlpack: expected an object with __dlpack__.*list"):
        from_dlpack([1, 2, 3])
    with pytest.raises(VMTypeError, match=r"from_dlpack: copy must be None, True or False"):
        from_dlpack(np.ones(2), copy="yes")  # type: ignore[arg-type]


class _Fake:
    def __init__(self, device: tuple[int, int], capsule: object = None) -> None:
        self.device = device
        self.capsule = capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: object) -> object:
        return self.capsule


def test_from_dlpack_refuses_cuda_naming_the_device() -> None:
    with pytest.raises(DeviceError, match=r"from_dlpack: cannot import a tensor on cuda\(1\)"):
        from_dlpack(_Fake((2, 1)))


def test_from_dlpack_refuses_a_capsule_on_another_device() -> None:
    # A producer without __dlpack_device__ whose struct says CUDA: checked before consuming.
    t = relaxvm.tensor(np.ones(2))
    capsule = t.__dlpack__()
    struct = dl.DLManagedTensor.from_address(_pointer(capsule, b"dltensor"))
    struct.dl_tensor.device.device_type = 2
    with pytest.raises(DeviceError, match=r"only CPU memory"):
        from_dlpack(capsule)
    assert _get_name(capsule) == b"dltensor"


def test_from_dlpack_rejects_a_producer_returning_no_capsule() -> None:
    with pytest.raises(VMTypeError, match=r"__dlpack__ of _Fake returned int, not a DLPack"):
        from_dlpack(_Fake((1, 0), capsule=5))


def test_from_dlpack_rejects_foreign_capsules() -> None:
    value = ctypes.c_int(1)
    capsule = dl._api.PyCapsule_New(ctypes.addressof(value), b"something_else", None)
    with pytest.raises(dl.DLPackError, match=r"from_dlpack: not a DLPack capsule"):
        from_dlpack(capsule)


def test_from_dlpack_rejects_unknown_dtype_and_version() -> None:
    t = relaxvm.tensor(np.ones(2, "float32"))
    capsule = t.__dlpack__(max_version=(1, 0))
    address = _pointer(capsule, b"dltensor_versioned")
    struct = dl.DLManagedTensorVersioned.from_address(address)
    struct.dl_tensor.dtype.bits = 24
    with pytest.raises(dl.DLPackError, match=r"from_dlpack: DLPack dtype \(code=2, bits=24"):
        from_dlpack(capsule)
    struct.dl_tensor.dtype.bits = 32
    struct.version.major = 2
    with pytest.raises(dl.DLPackError, match=r"DLPack version 2.0 is not supported"):
        from_dlpack(capsule)


# --- torch ------------------------------------------------------------------------------------


def test_torch_both_ways() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    t = relaxvm.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    x = torch.from_dlpack(t)
    x[0, 0] = 10.0
    assert t.numpy()[0, 0] == 10.0
    del t
    gc.collect()
    assert float(x[1, 2]) == 5.0
    y = torch.arange(8, dtype=torch.int64)
    r = from_dlpack(y)
    y[3] = -1
    assert r.numpy()[3] == -1
    bf = torch.arange(4, dtype=torch.bfloat16)
    rb = from_dlpack(bf)
    assert rb.dtype == "bfloat16"
    assert torch.equal(torch.from_dlpack(rb), bf)
    transposed = torch.arange(6).reshape(2, 3).t()
    np.testing.assert_array_equal(from_dlpack(transposed).numpy(), transposed.numpy())
