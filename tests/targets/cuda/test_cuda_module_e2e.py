"""The ``cuda`` target end to end without a GPU: compile, export and load need no driver;
running the VM on the fake driver goes through the device API and the kernel module."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm_cuda.module import CUDAModule
from relaxvm_cuda.runtime_errors import CUDAUnavailableError

pytest.importorskip("relaxvm_cuda.codegen")


@I.ir_module
class Double:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        return R.add(x, x)


def _cuda_module(ex: Any) -> CUDAModule:
    (module,) = [m for kind, _, m in ex.kernel_libs if kind == "cuda"]
    return module  # type: ignore[no-any-return]


def _run_double(fake_driver: Any, ex: Any) -> np.ndarray:
    (kernel,) = _cuda_module(ex).program.kernels

    def double(grid: Any, block: Any, values: list[int]) -> None:
        x, out = (np.ctypeslib.as_array((ctypes.c_float * 12).from_address(p)) for p in values)
        out[:] = x + x

    fake_driver.kernels[kernel.symbol] = double
    vm = relaxvm.VirtualMachine(ex, relaxvm.cuda())
    x = np.arange(12, dtype="float32").reshape(3, 4)
    y = vm["main"](relaxvm.tensor(x, relaxvm.cuda()))
    assert y.device == relaxvm.cuda(0)
    return y.numpy()  # type: ignore[no-any-return]


def test_compile_export_and_load_need_no_gpu(no_driver: None, tmp_path: Path) -> None:
    ex = relaxvm.compile(Double, target="cuda -arch=sm_90")
    module = _cuda_module(ex)
    assert module.program.arch == "sm_90" and ".target sm_90" in module.get_source()
    path = tmp_path / "double.rvm"
    ex.export_library(str(path))
    loaded = relaxvm.load_module(str(path))
    assert _cuda_module(loaded).program == module.program
    with pytest.raises(CUDAUnavailableError, match="cannot load the driver library"):
        vm = relaxvm.VirtualMachine(loaded, relaxvm.cuda())
        vm["main"](relaxvm.tensor(np.ones((3, 4), "float32")))


def test_vm_runs_on_the_fake_driver(fake_driver: Any, tmp_path: Path) -> None:
    ex = relaxvm.compile(Double, target="cuda")
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(_run_double(fake_driver, ex), x + x)
    assert fake_driver.launches and fake_driver.calls.count("module_load") == 1
    path = tmp_path / "double.rvm"
    ex.export_library(str(path))
    loaded = relaxvm.load_module(str(path))
    np.testing.assert_array_equal(_run_double(fake_driver, loaded), x + x)


def test_error_slot_matches_the_code_generator() -> None:
    from relaxvm_cuda import codegen_func, module

    assert module.ERROR_SLOT == codegen_func.ERROR_SYMBOL
    assert module.UNSIGNED_FLAG == codegen_func.UNSIGNED_FLAG
