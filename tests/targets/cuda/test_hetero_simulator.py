"""The simulated CUDA device (``relaxvm_cuda.simulator``): selection, memory, launches that run
the kernels' TIR, the index-error slot, and the TIR and host functions a module carries through
export and load."""

from __future__ import annotations

import ctypes
import gc
import json
import re
import struct
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import security
from relaxvm.errors import ExecutableFormatError, VMIndexError
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
from relaxvm.ir.relax import op as rop
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm_cuda import driver as driver_module
from relaxvm_cuda.module import CUDAModule
from relaxvm_cuda.runtime_errors import CUDAOutOfMemoryError, CUDAUnavailableError
from relaxvm_cuda.simulator import CUDASimulator, CUDASimulatorError
from relaxvm_cuda.target import MAGIC, TAG_PURPOSE, load, serialize

pytest.importorskip("relaxvm_cuda.codegen")


@I.ir_module
class AddSum:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
        return R.sum(R.add(x, y), axis=1)


def _cuda_module(ex: Any) -> CUDAModule:
    (module,) = [m for kind, _, m in ex.kernel_libs if kind == "cuda"]
    return module  # type: ignore[no-any-return]


def _gpu(array: np.ndarray) -> relaxvm.Tensor:
    return relaxvm.tensor(array, relaxvm.cuda())


def test_environment_variable_selects_the_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    from relaxvm.runtime.memory import clear_pools
    from relaxvm_cuda.target import default_arch

    monkeypatch.setenv(driver_module.SIMULATOR_ENV, "1")
    monkeypatch.delenv("RELAXVM_CUDA_ARCH", raising=False)
    gc.collect()  # blocks of earlier tests' drivers must not reach the pools meanwhile
    clear_pools()
    driver_module.set_driver(None)
    try:
        assert isinstance(driver_module.get_driver(), CUDASimulator)
        assert relaxvm.cuda(0).exist and not relaxvm.cuda(1).exist
        assert default_arch() == "sm_80"
        assert "simulator" in driver_module.get_driver().device_name(0)
    finally:
        gc.collect()
        clear_pools()
        driver_module.set_driver(None)
    for value, on in [("1", True), ("yes", True), ("0", False), ("", False), ("off", False)]:
        assert driver_module.simulator_enabled(value) is on


def test_vm_runs_compiled_kernels_on_the_simulator(cuda_simulator: CUDASimulator) -> None:
    ex = relaxvm.compile(AddSum, target="cuda")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cuda())
    y = np.arange(4, dtype="float32")
    for n in (1, 3, 7):  # a symbolic extent: the shape function runs on the host
        x = np.random.default_rng(n).standard_normal((n, 4)).astype("float32")
        out = vm["main"](_gpu(x), _gpu(y))
        assert out.device == relaxvm.cuda(0)
        np.testing.assert_allclose(out.numpy(), (x + y).sum(axis=1), rtol=1e-5, atol=1e-6)
    module = _cuda_module(ex)
    launched = {symbol for symbol, _, _ in cuda_simulator.launches}
    assert launched == {k.symbol for k in module.program.kernels} and len(launched) == 2
    # The shape function is a host function: compiled by the llvm target, never launched.
    assert module.host is not None and "shape_func" in module.host.list_functions()
    assert "shape_func" not in {k.name for k in module.program.kernels}


def test_uninitialised_device_memory_reads_as_nan(cuda_simulator: CUDASimulator) -> None:
    t = relaxvm.empty((4,), "float32", relaxvm.cuda())
    assert np.isnan(t.numpy()).all()
    i = relaxvm.empty((2,), "int32", relaxvm.cuda())
    np.testing.assert_array_equal(i.numpy(), [-1, -1])


def test_copies_outside_an_allocation_are_refused(cuda_simulator: CUDASimulator) -> None:
    pointer = cuda_simulator.mem_alloc(0, 64)
    host = (ctypes.c_uint8 * 128)()
    with pytest.raises(CUDASimulatorError, match=r"128 bytes at 0x[0-9a-f]+ are not inside one"):
        cuda_simulator.memcpy_htod(0, pointer, ctypes.addressof(host), 128)
    cuda_simulator.memcpy_htod(0, pointer, ctypes.addressof(host), 64)
    cuda_simulator.mem_free(0, pointer)
    with pytest.raises(CUDASimulatorError, match="not inside one allocation"):
        cuda_simulator.memcpy_dtoh(0, ctypes.addressof(host), pointer, 8)


def test_out_of_memory_is_an_exception() -> None:
    from relaxvm.runtime.memory import clear_pools

    gc.collect()
    clear_pools()
    driver_module.set_driver(CUDASimulator(total=1 << 12))
    try:
        with pytest.raises(CUDAOutOfMemoryError):
            relaxvm.empty((1 << 12,), "float32", relaxvm.cuda())
        assert relaxvm.empty((16,), "float32", relaxvm.cuda()).shape == (16,)
    finally:
        gc.collect()
        clear_pools()
        driver_module.set_driver(None)


def test_bad_ordinals_and_handles(cuda_simulator: CUDASimulator) -> None:
    with pytest.raises(CUDAUnavailableError, match=r"ordinal 3: 1 present"):
        cuda_simulator.mem_alloc(3, 16)
    with pytest.raises(CUDASimulatorError, match="not a kernel handle"):
        cuda_simulator.launch(0, "k", (1, 1, 1), (1, 1, 1), 0, [])
    with pytest.raises(CUDASimulatorError, match="devices must be >= 1"):
        CUDASimulator(devices=0)


def _take_vm(exec_mode: str = "bytecode") -> relaxvm.VirtualMachine:
    x = Var("x", TensorStructInfo([5, 3], "float32"))
    i = Var("i", TensorStructInfo([2], "int64"))
    bb = BlockBuilder()
    with bb.function("main", [x, i]):
        bb.emit_func_output(bb.emit(rop.take(x, i, axis=0)))
    ex = relaxvm.compile(bb.get(), target="cuda", exec_mode=exec_mode)
    return relaxvm.VirtualMachine(ex, relaxvm.cuda())


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_index_errors_travel_through_the_error_slot(
    cuda_simulator: CUDASimulator, exec_mode: str
) -> None:
    vm = _take_vm(exec_mode)
    x = np.arange(15, dtype="float32").reshape(5, 3)
    message = re.escape("take: index 7 is out of range for axis 0 with size 5 (valid range -5..4)")
    with pytest.raises(VMIndexError, match=message):
        vm["main"](_gpu(x), _gpu(np.array([0, 7], "int64")))
    # The slot was read and cleared: the VM and the module work on.
    got = vm["main"](_gpu(x), _gpu(np.array([4, -2], "int64")))
    np.testing.assert_array_equal(got.numpy(), x[[4, -2]])


def test_a_module_without_tir_cannot_be_simulated(cuda_simulator: CUDASimulator) -> None:
    ex = relaxvm.compile(AddSum, target="cuda")
    module = _cuda_module(ex)
    bare = CUDAModule(module.program, tir_missing="stripped for this test")
    (kernel,) = [k for k in module.program.kernels if k.name == "add"]
    x = _gpu(np.ones((2, 4), "float32"))
    out = relaxvm.empty((2, 4), "float32", relaxvm.cuda())
    args = [x, _gpu(np.ones(4, "float32")), out]
    with pytest.raises(CUDASimulatorError, match=r"has none \(stripped for this test\)"):
        bare[kernel.name](*args)
    module[kernel.name](*args)  # the module with its TIR runs
    np.testing.assert_array_equal(out.numpy(), np.full((2, 4), 2, "float32"))


def test_tir_does_not_match_kernels_is_refused() -> None:
    ex = relaxvm.compile(AddSum, target="cuda")
    module = _cuda_module(ex)
    with pytest.raises(ValueError, match=r"no TIR for kernel\(s\) \['add', 'sum'\]"):
        CUDAModule(module.program, {})


def test_export_keeps_tir_and_host_functions(cuda_simulator: CUDASimulator, tmp_path: Any) -> None:
    ex = relaxvm.compile(AddSum, target="cuda")
    path = tmp_path / "addsum.rvm"
    ex.export_library(str(path))
    loaded = relaxvm.load_module(str(path))
    module = _cuda_module(loaded)
    assert module.tir is not None and set(module.tir) == set(_cuda_module(ex).tir or ())
    assert module.host is not None
    vm = relaxvm.VirtualMachine(loaded, relaxvm.cuda())
    x = np.arange(8, dtype="float32").reshape(2, 4)
    y = np.ones(4, "float32")
    np.testing.assert_allclose(vm["main"](_gpu(x), _gpu(y)).numpy(), (x + y).sum(1))


def _header(data: bytes) -> tuple[dict[str, Any], int]:
    size = struct.unpack_from("<I", data, 12)[0]
    return json.loads(data[16 : 16 + size]), 16 + size


def test_version_1_files_load_without_tir(cuda_simulator: CUDASimulator) -> None:
    module = _cuda_module(relaxvm.compile(AddSum, target="cuda"))
    data = serialize(module)
    header, start = _header(data)
    ptx = data[start : start + header["ptx_size"]]
    old = {k: header[k] for k in ("arch", "ptx_size", "ptx_sha256", "kernels")}
    raw = json.dumps(old).encode()
    body = struct.pack("<8sII", MAGIC, 1, len(raw)) + raw + ptx
    loaded = load(body + security.sign(body, purpose=TAG_PURPOSE))
    assert loaded.tir is None and loaded.program == module.program
    assert "format version 1" in loaded.tir_missing
    with pytest.raises(CUDASimulatorError, match="format version 1"):
        loaded.simulated_kernels()


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda h: h.update(tir_size=-2), r"'tir_size' must be a non-negative int"),
        (lambda h: h.update(tir_sha256="00"), r"the TIR at offset \d+ does not match"),
        (lambda h: h.update(host_size="x"), r"'host_size' must be a non-negative int"),
        (lambda h: h.update(tir_missing=3), r"'tir_missing' must be a string or null"),
    ],
    ids=["tir-size", "tir-digest", "host-size", "tir-missing"],
)
def test_corrupt_tir_and_host_sections_are_refused(edit: Any, match: str) -> None:
    data = serialize(_cuda_module(relaxvm.compile(AddSum, target="cuda")))
    header, start = _header(data)
    edit(header)
    raw = json.dumps(header).encode()
    body = data[:12] + struct.pack("<I", len(raw)) + raw + data[start:-32]
    with pytest.raises(ExecutableFormatError, match=match):
        load(body + security.sign(body, purpose=TAG_PURPOSE))
