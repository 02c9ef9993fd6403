"""Heterogeneous execution on the simulated CUDA device: arguments moved to the VM's device,
constants placed there, shape computation on the host, ``R.to_vdevice`` between ``cpu`` and
``cuda``, and functions that use both."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var, const
from relaxvm.ir.relax import op as rop
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm_cuda.simulator import CUDASimulator

pytest.importorskip("relaxvm_cuda.codegen")

EXEC_MODES = ["bytecode", "compiled"]


@I.ir_module
class Mixed:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
        # On the GPU: the add and the row sums; copies of z to the host and back.
        z = R.add(x, y)
        on_host = R.to_vdevice(z, "cpu:0")
        back = R.to_vdevice(on_host, "cuda:0")
        return (R.sum(back, axis=1), on_host)


def _with_constant() -> Any:
    """``main(x) = x * arange(6).reshape(2, 3)``, the factor a constant."""
    x = Var("x", TensorStructInfo([2, 3], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        factor = const(np.arange(6, dtype="float32").reshape(2, 3))
        bb.emit_func_output(bb.emit(rop.multiply(x, factor)))
    return bb.get()


@I.ir_module
class Pair:
    @R.function
    def main(t: R.Tuple(R.Tensor((3,), "float32"), R.Tensor((3,), "float32"))):
        return R.add(t[0], t[1])


@I.ir_module
class Identity:
    @R.function
    def main(x: R.Tensor((3,), "float32")):
        return x


def _vm(mod: Any, exec_mode: str, devices: Any = None) -> relaxvm.VirtualMachine:
    ex = relaxvm.compile(mod, target="cuda", exec_mode=exec_mode)
    return relaxvm.VirtualMachine(ex, devices or relaxvm.cuda())


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_cpu_arguments_are_copied_to_the_vm_device(
    cuda_simulator: CUDASimulator, exec_mode: str
) -> None:
    vm = _vm(Mixed, exec_mode, [relaxvm.cuda(), relaxvm.cpu()])
    y = np.arange(4, dtype="float32")
    for n in (2, 5):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype("float32")
        x_cpu = relaxvm.tensor(x)
        total, on_host = vm["main"](x_cpu, relaxvm.tensor(y, relaxvm.cuda()))
        assert total.device == relaxvm.cuda(0) and on_host.device == relaxvm.cpu(0)
        np.testing.assert_allclose(total.numpy(), (x + y).sum(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(on_host.numpy(), x + y)
        assert x_cpu.device == relaxvm.cpu(0)  # the caller's tensor is untouched
    # numpy arrays are accepted too, and land on the GPU.
    total, _ = vm["main"](np.ones((3, 4), "float32"), y)
    np.testing.assert_allclose(total.numpy(), np.full(3, 4 + y.sum()))


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_tuple_arguments_are_converted_element_wise(
    cuda_simulator: CUDASimulator, exec_mode: str
) -> None:
    vm = _vm(Pair, exec_mode)
    a, b = np.arange(3, dtype="float32"), np.full(3, 10, "float32")
    got = vm["main"]((relaxvm.tensor(a), relaxvm.tensor(b, relaxvm.cuda())))
    assert got.device == relaxvm.cuda(0)
    np.testing.assert_array_equal(got.numpy(), a + b)


def test_tensors_already_on_the_device_are_passed_as_they_are(
    cuda_simulator: CUDASimulator,
) -> None:
    vm = _vm(Identity, "bytecode")
    x = relaxvm.tensor(np.arange(3, dtype="float32"), relaxvm.cuda())
    assert vm["main"](x) is x  # no copy when nothing needs moving
    cpu_x = relaxvm.tensor(np.arange(3, dtype="float32"))
    moved = vm["main"](cpu_x)
    assert moved is not cpu_x and moved.device == relaxvm.cuda(0)
    np.testing.assert_array_equal(moved.numpy(), cpu_x.numpy())


def test_a_cpu_vm_takes_gpu_tensors_through_the_host(cuda_simulator: CUDASimulator) -> None:
    ex = relaxvm.compile(Identity, target="llvm")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    gpu = relaxvm.tensor(np.arange(3, dtype="float32"), relaxvm.cuda())
    got = vm["main"](gpu)
    assert got.device == relaxvm.cpu(0)
    np.testing.assert_array_equal(got.numpy(), [0, 1, 2])


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_constants_of_a_loaded_executable_are_placed_on_the_device(
    cuda_simulator: CUDASimulator, exec_mode: str, tmp_path: Any
) -> None:
    ex = relaxvm.compile(_with_constant(), target="cuda", exec_mode=exec_mode)
    path = tmp_path / "const.rvm"
    ex.export_library(str(path))
    loaded = relaxvm.load_module(str(path))
    host_constants = [c for c in loaded.constants if isinstance(c, relaxvm.Tensor)]
    assert host_constants and all(c.device == relaxvm.cpu(0) for c in host_constants)
    vm = relaxvm.VirtualMachine(loaded, relaxvm.cuda())
    x = np.full((2, 3), 2, "float32")
    # The kernel refuses host tensors: it runs only because the constant moved to the GPU.
    got = vm["main"](relaxvm.tensor(x, relaxvm.cuda()))
    np.testing.assert_array_equal(got.numpy(), 2 * np.arange(6).reshape(2, 3))


def test_set_input_and_invoke_closure_move_arguments(cuda_simulator: CUDASimulator) -> None:
    vm = _vm(Pair, "bytecode")
    a = relaxvm.tensor(np.ones(3, "float32"))
    vm.set_input("main", (a, a))
    vm.invoke_stateful("main")
    out = vm.get_outputs("main")
    assert out.device == relaxvm.cuda(0)
    np.testing.assert_array_equal(out.numpy(), [2, 2, 2])
    closure = vm.module.get_function("main")
    np.testing.assert_array_equal(closure((a, a)).numpy(), [2, 2, 2])
    from relaxvm.vm.closure import VMClosure

    vm_closure = vm._pool[vm.executable.func_map["main"]]
    assert isinstance(vm_closure, VMClosure)
    np.testing.assert_array_equal(vm.invoke_closure(vm_closure, (a, a)).numpy(), [2, 2, 2])


def test_kernels_still_refuse_host_tensors_passed_directly(
    cuda_simulator: CUDASimulator,
) -> None:
    # The VM moves arguments; a kernel called directly still checks where its buffers are.
    ex = relaxvm.compile(_with_constant(), target="cuda")
    (module,) = [m for kind, _, m in ex.kernel_libs if kind == "cuda"]
    (name,) = [k.name for k in module.program.kernels]
    cpu_in = relaxvm.tensor(np.ones((2, 3), "float32"))
    out = relaxvm.empty((2, 3), "float32", relaxvm.cuda())
    with pytest.raises(ValueError, match=r"is on cpu\(0\); cuda kernels need tensors on a CUDA"):
        module[name](cpu_in, cpu_in, out)
