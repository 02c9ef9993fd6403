"""PTX generation without a GPU: kernels compile to PTX that ptxas assembles, and errors
name the kernel and the construct."""

from __future__ import annotations

import re

import pytest

from relaxvm.ir import Var
from relaxvm.ir.tir import Call, PrimFunc, exp, seq, te
from relaxvm_cuda.codegen import compile_ptx
from relaxvm_cuda.codegen_func import ERROR_SYMBOL
from relaxvm_cuda.codegen_math import LLVM_INTRINSICS
from relaxvm_cuda.errors import CUDABuildError
from relaxvm_cuda.ptxas import find_ptxas, ptxas_check
from relaxvm_cuda.schedule import schedule_kind, schedule_prim_func
from relaxvm_llvm.schedule import workloads

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not on PATH")
ARCHS = ("sm_80", "sm_90")


def _unary(fn, dtype="float32", n=None) -> PrimFunc:  # type: ignore[no-untyped-def]
    shape = (Var("n", "int64") if n is None else n,)
    a = te.placeholder(shape, dtype, name="A")
    out = te.compute(shape, lambda i: fn(a[i]), name="B")
    # Loops: compile_ptx is the code generator, which takes lowered kernels.
    return te.create_loop_func([a, out], name="unary")


@pytest.mark.parametrize("arch", ARCHS)
def test_injective_kernel_is_an_entry_with_its_launch(arch: str) -> None:
    func = schedule_prim_func(workloads.add((Var("n", "int64"), 7)))
    assert schedule_kind(func) == "injective"
    program = compile_ptx([("add", func)], arch)
    assert program.arch == arch
    (kernel,) = program.kernels
    assert re.search(rf"\.visible \.entry {kernel.symbol}\(", program.ptx)
    assert f".target {arch}" in program.ptx
    assert ERROR_SYMBOL in program.ptx
    # grid x = ceil(n * 7 / 256) over the signature's variable 0; 256 threads per block
    assert kernel.launch[3:] == (256, 1, 1)
    assert kernel.launch[0] != 1 and "v" in str(kernel.launch[0])
    assert kernel.signature.var_names == ("n",)


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_schedules_assemble_with_ptxas(arch: str) -> None:
    funcs = [
        ("add", workloads.add((5, 7))),
        ("softmax", workloads.softmax(Var("n", "int64"), 33)),
        ("layer_norm", workloads.layer_norm(4, 20)),
        ("matmul", workloads.matmul(8, 9, 10, bias=True, relu=True)),
        ("sum0", workloads.reduce_sum((6, 5), 0)),
        ("pool", workloads.max_pool2d(1, 2, 6, 6)),
    ]
    program = compile_ptx([(n, schedule_prim_func(f)) for n, f in funcs], arch)
    assert "bar.sync" in program.ptx and ".shared" in program.ptx
    ptxas_check(program.ptx, arch)


@needs_ptxas
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_math_assembles_in_every_float_type(dtype: str) -> None:
    from relaxvm.ir.tir import intrin

    names = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
             "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
             "acosh", "atanh", "floor", "ceil", "round", "trunc", "fabs"]  # fmt: skip
    funcs = [(n, schedule_prim_func(_unary(getattr(intrin, n), dtype))) for n in names]
    funcs.append(("pow", schedule_prim_func(_unary(lambda x: intrin.pow(x, x), dtype))))
    program = compile_ptx(funcs, "sm_80")
    assert len(program.kernels) == len(names) + 1
    # no libm-style call survives: everything was lowered to arithmetic
    assert "call" not in program.ptx.replace("call.uni", "")
    ptxas_check(program.ptx, "sm_80")


def test_unscheduled_function_runs_as_one_thread() -> None:
    program = compile_ptx([("u", _unary(exp, n=8))], "sm_80")
    assert program.kernels[0].launch == (1, 1, 1, 1, 1, 1)


def test_whitelist_leaves_out_intrinsics_that_abort_llvm() -> None:
    for name in ("exp", "log", "log2", "pow", "sin", "cos"):
        assert name not in LLVM_INTRINSICS
    assert "f64" not in LLVM_INTRINSICS["exp2"]


class _Fancy(Call):
    """An intrinsic the cuda target does not know (not registered anywhere)."""

    __slots__ = ()
    op = "tir.fancy_math"
    arity = 1


def test_unsupported_intrinsic_names_kernel_and_intrinsic() -> None:
    func = _unary(lambda x: _Fancy("float32", "tir.fancy_math", [x]), n=4)
    with pytest.raises(CUDABuildError, match=r"kernel 'weird'.*tir\.fancy_math"):
        compile_ptx([("weird", schedule_prim_func(func))], "sm_80")


@pytest.mark.parametrize("arch", ["sm_8", "compute_80", "sm_81", "sm_80a", 80])
def test_bad_arch_is_named(arch: object) -> None:
    with pytest.raises(CUDABuildError, match=re.escape(repr(arch))):
        compile_ptx([("add", workloads.add((2, 2)))], arch)  # type: ignore[arg-type]


def _symbolic_scratch_copy(scope: str) -> PrimFunc:
    from relaxvm.ir.tir import Allocate, Buffer, BufferStore, For, ForKind

    n = Var("n", "int64")
    a = te.placeholder((n,), "float32", name="A")
    out = te.compute((n,), lambda i: a[i], name="B")
    func = te.create_prim_func([a, out], name="copy")
    out_buffer = func.buffer_map[func.params[1]]
    tmp = Buffer("tmp", (n,), "float32", scope=scope)
    i, j = Var("i", "int64"), Var("j", "int64")
    body = Allocate(
        tmp,
        seq(
            For(i, 0, n, ForKind.SERIAL, BufferStore(tmp, 1.0, [i])),
            For(j, 0, n, ForKind.SERIAL, BufferStore(out_buffer, tmp[j], [j])),
        ),
    )
    return func.with_body(body)


@needs_ptxas
def test_symbolic_global_scratch_of_one_thread_comes_from_the_device_heap() -> None:
    program = compile_ptx([("copy", _symbolic_scratch_copy("global"))], "sm_80")
    assert "call.uni (retval0), malloc" in program.ptx and "call.uni free" in program.ptx
    assert ERROR_SYMBOL in program.ptx  # a failed allocation is reported there
    for arch in ARCHS:
        ptxas_check(program.ptx, arch)


def test_symbolic_shared_scratch_is_refused_with_the_buffer_name() -> None:
    with pytest.raises(CUDABuildError, match=r"kernel 'copy'.*'tmp' \(shared\).*symbolic shape"):
        compile_ptx([("copy", _symbolic_scratch_copy("shared"))], "sm_80")


@needs_ptxas
def test_ptxas_rejection_carries_its_log() -> None:
    with pytest.raises(CUDABuildError, match=r"ptxas -arch=sm_80 rejected the PTX"):
        ptxas_check(".version 7.0\n.target sm_80\n.address_size 64\nthis is not ptx\n", "sm_80")
