"""Printing tensors: ``repr`` stays one short line, ``str``/``print`` add numpy-style values."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.runtime import DataType, Device, Shape, Storage, Tensor


def test_repr_is_one_short_line() -> None:
    t = relaxvm.tensor(np.zeros((2, 3), "float32"))
    assert repr(t) == "<Tensor shape=[2, 3] dtype=float32 device=cpu(0)>"


def test_str_shows_header_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    t = relaxvm.tensor(np.arange(6, dtype="float32").reshape(2, 3))
    print(t)
    out = capsys.readouterr().out
    assert out == ("<Tensor shape=[2, 3] dtype=float32 device=cpu(0)>\n[[0. 1. 2.]\n [3. 4. 5.]]\n")


def test_big_tensors_are_abbreviated_like_numpy() -> None:
    data = np.arange(100_000, dtype="int64").reshape(1000, 100)
    text = str(relaxvm.tensor(data))
    assert "..." in text
    assert text.splitlines()[1:] == np.array2string(data).splitlines()
    assert len(text) < 2000


def test_printoptions_are_respected() -> None:
    t = relaxvm.tensor(np.array([1 / 3], "float64"))
    with np.printoptions(precision=2):
        assert str(t).splitlines()[1] == "[0.33]"


@pytest.mark.parametrize(
    ("data", "values"),
    [
        (np.array(2.5, "float32"), "2.5"),
        (np.zeros((0, 3), "float32"), "[]"),
        (np.array([True, False]), "[ True False]"),
        (np.array([-1, 7], "int8"), "[-1  7]"),
    ],
)
def test_special_shapes_and_dtypes(data: np.ndarray, values: str) -> None:
    assert str(relaxvm.tensor(data)).splitlines()[1] == values


def test_bfloat16_values_print_as_floats() -> None:
    bits = (np.array([1.0, -2.5, 0.5], "float32").view(np.uint32) >> 16).astype(np.uint16)
    t = relaxvm.tensor(bits).view((3,), "bfloat16")
    assert str(t) == "<Tensor shape=[3] dtype=bfloat16 device=cpu(0)>\n[ 1.  -2.5  0.5]"


def test_vector_lanes_print_as_a_last_axis() -> None:
    t = relaxvm.tensor(np.arange(8, dtype="float32")).view((2,), "float32x4")
    assert str(t).splitlines()[1:] == ["[[0. 1. 2. 3.]", " [4. 5. 6. 7.]]"]


def test_view_prints_its_own_elements() -> None:
    t = relaxvm.tensor(np.arange(6, dtype="int32")).view((2,), relative_byte_offset=8)
    assert str(t).splitlines()[1] == "[2 3]"


class _DeviceOnlyAPI:
    """A device whose memory the host cannot read (like CUDA)."""

    kind = "cuda"
    device_type = 2
    host_accessible = False

    def data_ptr(self, buffer: Any) -> int:
        return 0

    def copy_to_host(self, buffer: Any, byte_offset: int, dst: np.ndarray) -> None:
        raise AssertionError("printing must not copy device memory")


def _device_tensor() -> Tensor:
    api: Any = _DeviceOnlyAPI()
    storage = Storage(object(), 16, Device(2, 0), api, None, 0)
    return Tensor(storage, 0, Shape((4,)), DataType("float32"))


def test_device_memory_is_not_read() -> None:
    text = str(_device_tensor())
    assert text == "<Tensor shape=[4] dtype=float32 device=cuda(0)>\n<values on device cuda(0)>"


def test_printing_never_raises() -> None:
    t = relaxvm.tensor(np.zeros(2, "uint64")).view((2,), "handle")
    lines = str(t).splitlines()
    assert lines[0] == "<Tensor shape=[2] dtype=handle device=cpu(0)>"
    assert lines[1].startswith("<values not printable: DataType handle has no numpy equivalent")
