"""Prepared launches: a kernel checks a set of arguments once and repeats the launch it bound
for them (CUDAKernel._prepare, CUDADriver.prepare_launch), and prepares again whenever the
arguments, the driver or the loaded module change."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm_cuda import driver as driver_module
from relaxvm_cuda.driver import _SIGNATURES, CUDADriver
from relaxvm_cuda.kernel import CUDAKernel
from relaxvm_cuda.module import CUDAModule
from relaxvm_cuda.program import PTXKernel, PTXProgram
from relaxvm_cuda.runtime_errors import CUDADriverError
from relaxvm_llvm.signature import BufferParam, KernelSignature

PTX = """\
.version 7.0
.target sm_80
.address_size 64

.visible .entry __rvm_add(
\t.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n
)
{
\tret;
}
"""
ADD = PTXKernel(
    name="add",
    symbol="__rvm_add",
    signature=KernelSignature(
        "add",
        "__rvm_add",
        tuple(BufferParam(x, "float32", (["v", 0],), None, 0, written=x == "c") for x in "abc"),
        ("n",),
        ("int64",),
    ),
    launch=(["floordiv", ["add", ["v", 0], 255], 256], 1, 1, 256, 1, 1),
)


def _gpu(array: Any) -> relaxvm.Tensor:
    return relaxvm.tensor(np.asarray(array, dtype="float32"), relaxvm.cuda())


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    checked: list[int] = []
    original = CUDAKernel.check_args

    def counting(self: CUDAKernel, args: tuple[Any, ...]) -> Any:
        checked.append(len(args))
        return original(self, args)

    monkeypatch.setattr(CUDAKernel, "check_args", counting)
    return checked


def test_a_repeated_call_reuses_its_checks_and_launch(
    fake_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = _count_checks(monkeypatch)
    module = CUDAModule(PTXProgram(PTX, "sm_80", (ADD,)))
    a, b = _gpu(np.arange(300)), _gpu(np.ones(300))
    out = relaxvm.empty((300,), "float32", relaxvm.cuda())
    for _ in range(3):
        module["add"](a, b, out)
    assert len(checked) == 1 and len(fake_driver.launches) == 3
    assert all(
        launch
        == ("__rvm_add", (2, 1, 1), (256, 1, 1), 0, [a.data_ptr, b.data_ptr, out.data_ptr, 300])
        for launch in fake_driver.launches
    )
    # Other arguments are checked (and launched with their own values).
    module["add"](b, a, out)
    assert len(checked) == 2 and fake_driver.launches[-1][4][:2] == [b.data_ptr, a.data_ptr]
    # After an unload, the function handles are gone: the next call loads and prepares again.
    module.unload()
    module["add"](a, b, out)
    assert len(checked) == 3 and fake_driver.calls.count("module_load") == 2


def test_a_new_driver_gets_a_launch_of_its_own(
    fake_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = _count_checks(monkeypatch)
    module = CUDAModule(PTXProgram(PTX, "sm_80", (ADD,)))
    a = _gpu(np.arange(4))
    out = relaxvm.empty((4,), "float32", relaxvm.cuda())
    module["add"](a, a, out)
    other = type(fake_driver)()
    driver_module.set_driver(other)  # the fixture resets the driver afterwards
    module["add"](a, a, out)
    assert len(checked) == 2
    assert len(fake_driver.launches) == 1 and len(other.launches) == 1
    assert other.calls.count("module_load") == 1


class _Lib:
    """Just enough of libcuda for CUDADriver: every entry point succeeds, launches are kept."""

    def __init__(self, launch_result: int = 0) -> None:
        self.calls: list[str] = []
        self.launched: list[tuple[Any, ...]] = []

        def count(out: Any) -> int:
            out._obj.value = 1
            return 0

        def context(out: Any, device: int) -> int:
            out._obj.value = 0xC0
            return 0

        def launch(function: Any, *rest: Any) -> int:
            self.calls.append("cuLaunchKernel")
            pointers = rest[8]
            values = [ctypes.c_uint64.from_address(pointers[k]).value for k in range(2)]
            self.launched.append((function, rest[0:3], rest[3:6], rest[6], values))
            return launch_result

        special: dict[str, Callable[..., int]] = {
            "cuDeviceGetCount": count,
            "cuDevicePrimaryCtxRetain": context,
            "cuCtxSetCurrent": lambda ctx: self.calls.append("cuCtxSetCurrent") or 0,
            "cuGetErrorName": lambda code, out: 1,
            "cuLaunchKernel": launch,
        }
        for name in _SIGNATURES:
            fn = special.get(name, lambda *args: 0)
            # A fresh function object per entry: the driver sets restype/argtypes on it.
            setattr(self, name, (lambda f: lambda *a: f(*a))(fn))


def test_cuda_driver_prepared_launch_sets_the_context_and_passes_the_values() -> None:
    lib = _Lib()
    driver = CUDADriver("fake-libcuda", lib=lib)
    params = [ctypes.c_uint64(0x1000), ctypes.c_int64(7)]
    run = driver.prepare_launch(0, "fn", (3, 2, 1), (128, 1, 1), 16, params)
    lib.calls.clear()
    run()
    run()
    assert lib.calls == ["cuCtxSetCurrent", "cuLaunchKernel"] * 2
    assert lib.launched == [("fn", (3, 2, 1), (128, 1, 1), 16, [0x1000, 7])] * 2


def test_cuda_driver_prepared_launch_reports_a_failure() -> None:
    driver = CUDADriver("fake-libcuda", lib=_Lib(launch_result=701))
    run = driver.prepare_launch(0, "fn", (1, 1, 1), (1, 1, 1), 0, [ctypes.c_uint64(1)] * 2)
    with pytest.raises(CUDADriverError, match=r"cuLaunchKernel failed .*grid \(1, 1, 1\)"):
        run()


def test_arguments_of_another_kind_take_the_full_checks(
    fake_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaxvm.errors import VMTypeError

    checked = _count_checks(monkeypatch)
    module = CUDAModule(PTXProgram(PTX, "sm_80", (ADD,)))
    a = _gpu(np.arange(4))
    out = relaxvm.empty((4,), "float32", relaxvm.cuda())
    for _ in range(2):  # an int where a buffer goes is never a cached call
        with pytest.raises(VMTypeError, match=r"parameter 'b' needs a relaxvm.Tensor"):
            module["add"](a, 7, out)
    with pytest.raises(VMTypeError, match=r"expected 3 arguments"):
        module["add"](a, a)
    assert len(checked) == 3 and not fake_driver.launches
