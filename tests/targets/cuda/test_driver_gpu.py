"""The CUDA runtime on a real GPU (``pytest -m gpu``; skipped with the reason elsewhere):
driver queries, device memory round trips, a hand-written PTX kernel, JIT error logs,
out-of-memory, and a compiled model run end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm_cuda.device import cuda_device_api
from relaxvm_cuda.module import CUDAModule
from relaxvm_cuda.program import PTXKernel, PTXProgram
from relaxvm_cuda.runtime_errors import CUDAModuleLoadError, CUDAOutOfMemoryError
from relaxvm_llvm.signature import BufferParam, KernelSignature

pytestmark = pytest.mark.gpu

# c[i] = a[i] + b[i] for i < n; checked with ptxas 13 for sm_75, sm_80 and sm_90.
VADD_PTX = """\
.version 6.0
.target sm_70
.address_size 64

.visible .entry __rvm_vadd(
\t.param .u64 a,
\t.param .u64 b,
\t.param .u64 c,
\t.param .u64 n
)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\t.reg .f32 %f<4>;
\t.reg .b64 %rd<12>;

\tld.param.u64 %rd1, [a];
\tld.param.u64 %rd2, [b];
\tld.param.u64 %rd3, [c];
\tld.param.u64 %rd4, [n];
\tmov.u32 %r1, %ctaid.x;
\tmov.u32 %r2, %ntid.x;
\tmov.u32 %r3, %tid.x;
\tmul.wide.u32 %rd5, %r1, %r2;
\tcvt.u64.u32 %rd6, %r3;
\tadd.s64 %rd7, %rd5, %rd6;
\tsetp.ge.s64 %p1, %rd7, %rd4;
\t@%p1 bra DONE;
\tshl.b64 %rd8, %rd7, 2;
\tcvta.to.global.u64 %rd1, %rd1;
\tcvta.to.global.u64 %rd2, %rd2;
\tcvta.to.global.u64 %rd3, %rd3;
\tadd.s64 %rd9, %rd1, %rd8;
\tadd.s64 %rd10, %rd2, %rd8;
\tadd.s64 %rd11, %rd3, %rd8;
\tld.global.f32 %f1, [%rd9];
\tld.global.f32 %f2, [%rd10];
\tadd.f32 %f3, %f1, %f2;
\tst.global.f32 [%rd11], %f3;
DONE:
\tret;
}
"""

VADD = PTXKernel(
    name="vadd",
    symbol="__rvm_vadd",
    signature=KernelSignature(
        name="vadd",
        symbol="__rvm_vadd",
        params=(
            BufferParam("a", "float32", (["v", 0],), None, 0, written=False),
            BufferParam("b", "float32", (["v", 0],), None, 0, written=False),
            BufferParam("c", "float32", (["v", 0],), None, 0, written=True),
        ),
        var_names=("n",),
        var_dtypes=("int64",),
    ),
    launch=(["floordiv", ["add", ["v", 0], 255], 256], 1, 1, 256, 1, 1),
)


def test_driver_reports_the_device(requires_gpu: Any) -> None:
    driver = requires_gpu
    assert driver.device_count() >= 1 and driver.driver_version() >= 11000
    major, minor = driver.compute_capability(0)
    assert major >= 5 and 0 <= minor <= 9
    assert driver.device_name(0)
    free, total = driver.mem_get_info(0)
    assert 0 < free <= total
    assert relaxvm.cuda(0).exist and not relaxvm.cuda(driver.device_count()).exist


def test_tensor_round_trip_and_device_copies(requires_gpu: Any) -> None:
    x = np.random.default_rng(0).standard_normal((257, 33)).astype("float32")
    t = relaxvm.tensor(x, relaxvm.cuda())
    np.testing.assert_array_equal(t.numpy(), x)
    to_device = relaxvm.get_global_func("vm.builtin.to_device")
    np.testing.assert_array_equal(to_device(t, 1, 0).numpy(), x)
    api = cuda_device_api()
    a, b = api.alloc(0, 64, 256), api.alloc(0, 64, 256)
    api.copy_from_host(a, 0, np.arange(16, dtype="int32"))
    api.fill_bytes(b, 0, 64, 0)
    api.copy_within(b, 32, a, 0, 32)
    out = np.empty(16, "int32")
    api.copy_to_host(b, 0, out)
    np.testing.assert_array_equal(out, [0] * 8 + list(range(8)))
    api.free(a)
    api.free(b)


def test_hand_written_ptx_kernel_runs(requires_gpu: Any) -> None:
    module = CUDAModule(PTXProgram(VADD_PTX, "sm_70", (VADD,)))
    n = 1_000_003
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
    ta, tb = relaxvm.tensor(a, relaxvm.cuda()), relaxvm.tensor(b, relaxvm.cuda())
    tc = relaxvm.empty((n,), "float32", relaxvm.cuda())
    module["vadd"](ta, tb, tc)
    np.testing.assert_array_equal(tc.numpy(), a + b)
    cuda_device_api().synchronize(0)


def test_bad_ptx_raises_with_the_jit_log(requires_gpu: Any) -> None:
    bad = b".version 6.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n\tbogus;\n}\n"
    with pytest.raises(
        CUDAModuleLoadError, match=r"(?s)cuModuleLoadDataEx failed.*JIT error log:\n.+"
    ) as info:
        requires_gpu.module_load(0, bad)
    assert "(the JIT wrote no log)" not in str(info.value)


def test_out_of_memory_is_an_exception_and_the_device_stays_usable(requires_gpu: Any) -> None:
    api = cuda_device_api()
    with pytest.raises(
        CUDAOutOfMemoryError, match=r"cannot allocate 1125899906842624 bytes"
    ) as info:
        api.alloc(0, 1 << 50, 256)
    err = info.value
    assert isinstance(err, MemoryError) and err.total and err.free is not None
    t = relaxvm.tensor(np.ones(8, "float32"), relaxvm.cuda())
    np.testing.assert_array_equal(t.numpy(), np.ones(8))


def test_compiled_model_runs_exports_and_loads(requires_gpu: Any, tmp_path: Path) -> None:
    pytest.importorskip("relaxvm_cuda.codegen")
    from relaxvm.script import ir as I
    from relaxvm.script import relax as R

    @I.ir_module
    class Model:
        @R.function
        def main(x: R.Tensor(("n", 64), "float32"), w: R.Tensor((64, 32), "float32")):
            return R.nn.softmax(R.matmul(x, w), axis=-1)

    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 64)).astype("float32")
    w = rng.standard_normal((64, 32)).astype("float32")
    logits = x @ w
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    ex = relaxvm.compile(Model, target="cuda")
    path = tmp_path / "model.rvm"
    ex.export_library(str(path))
    for executable in (ex, relaxvm.load_module(str(path))):
        vm = relaxvm.VirtualMachine(executable, relaxvm.cuda())
        y = vm["main"](relaxvm.tensor(x, relaxvm.cuda()), relaxvm.tensor(w, relaxvm.cuda()))
        np.testing.assert_allclose(y.numpy(), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_a_function_mixing_host_and_device_runs(requires_gpu: Any, exec_mode: str) -> None:
    # Shape computation on the host, kernels on the GPU, R.to_vdevice both ways, a host
    # argument copied to the device and a result left on the host.
    from relaxvm.script import ir as I
    from relaxvm.script import relax as R

    @I.ir_module
    class Mixed:
        @R.function
        def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
            z = R.add(x, y)
            on_host = R.to_vdevice(z, "cpu:0")
            back = R.to_vdevice(on_host, "cuda:0")
            return (R.sum(back, axis=1), on_host)

    ex = relaxvm.compile(Mixed, target="cuda", exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, [relaxvm.cuda(), relaxvm.cpu()])
    x = np.arange(12, dtype="float32").reshape(3, 4)
    y = np.array([1, 2, 3, 4], dtype="float32")
    sums, on_host = vm["main"](relaxvm.tensor(x, relaxvm.cuda()), y)  # y: a host array
    assert sums.device == relaxvm.cuda() and on_host.device == relaxvm.cpu()
    np.testing.assert_allclose(sums.numpy(), (x + y).sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(on_host.numpy(), x + y)
