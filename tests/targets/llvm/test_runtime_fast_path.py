"""The fast runtime paths: the Tensor-only kernel caller, the native thread pool, the VM's
inline opcodes. Every fast path must keep the checks and messages of the general one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from typing import Any

import numpy as np
import pytest

import relaxvm_llvm
from relaxvm.ir import Var
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, PrimFunc, te
from relaxvm.runtime import Device, tensor
from relaxvm_llvm import parallel
from relaxvm_llvm.errors import KernelRuntimeError
from relaxvm_llvm.kernel_callers import _MISSING


@pytest.fixture(scope="module")
def kernels() -> Any:
    a = te.placeholder((2, 3), "float32", name="A")
    b = te.placeholder((2, 3), "float32", name="B")
    c = te.compute((2, 3), lambda i, j: a[i, j] + b[i, j], name="C")
    n, m = Var("n"), Var("m")
    x = te.placeholder((n, m), "int32", name="X")
    y = te.compute((n * m,), lambda i: x[i // m, i % m] + 1, name="Y")
    k = Var("k", "int32")
    buf = Buffer("V", (k,), "int32")
    i = Var("i", "int32")
    count = PrimFunc(
        [buf, k],
        For(i, 0, k, ForKind.SERIAL, BufferStore(buf, i * 3, [i])),
        attrs={"global_symbol": "count"},
    )
    funcs = {
        "add": te.create_prim_func([a, b, c], name="add"),
        "flat": te.create_prim_func([x, y], name="flat"),
        "count": count,
    }
    return relaxvm_llvm.build(funcs)


def _add_args() -> list[Any]:
    a = np.arange(6, dtype="float32").reshape(2, 3)
    return [tensor(a), tensor(np.ones((2, 3), "float32")), tensor(np.zeros((2, 3), "float32"))]


def test_fast_call_is_the_tensor_path_and_computes(kernels: Any) -> None:
    add = kernels["add"]
    assert "rest" in add.fast_call.__code__.co_varnames  # the Tensor-only caller
    args = _add_args()
    add.fast_call(*args)
    np.testing.assert_array_equal(args[2].numpy(), np.arange(6).reshape(2, 3) + 1)
    flat = kernels["flat"]
    x = tensor(np.arange(12, dtype="int32").reshape(3, 4))
    out = tensor(np.zeros(12, "int32"))
    flat.fast_call(x, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(12) + 1)


@pytest.mark.parametrize(
    ("mutate", "error", "pattern"),
    [
        (lambda a: a[:2], TypeError, r"'add': expected 3 arguments \(A, B, C\), got 2"),
        (lambda a: [*a, a[0]], TypeError, r"'add': expected 3 arguments \(A, B, C\), got 4"),
        (
            lambda a: [a[0], a[1], tensor(np.zeros((3, 2), "float32"))],
            ValueError,
            r"'add': parameter 'C' dim 0 must be `2` = 2, but the argument has 3",
        ),
        (
            lambda a: [a[0], tensor(np.zeros((2, 3), "float64")), a[2]],
            TypeError,
            r"'add': parameter 'B' holds float32 but the argument is float64",
        ),
        (
            lambda a: [tensor(np.zeros(6, "float32")), a[1], a[2]],
            ValueError,
            r"'add': parameter 'A' is 2-d but the argument has shape \(6,\)",
        ),
        (
            lambda a: [a[0], 1.5, a[2]],
            TypeError,
            r"'add': parameter 'B' needs a relaxvm.Tensor or numpy array, got float",
        ),
    ],
)
def test_fast_call_errors_keep_their_messages(
    kernels: Any, mutate: Any, error: type, pattern: str
) -> None:
    args = mutate(_add_args())
    before = [a.numpy().copy() if hasattr(a, "numpy") else a for a in args]
    for entry in (kernels["add"].fast_call, kernels["add"]):
        with pytest.raises(error, match=pattern):
            entry(*args)
    # Nothing ran: outputs untouched.
    after = [a.numpy() if hasattr(a, "numpy") else a for a in args]
    for old, new in zip(before, after, strict=True):
        if isinstance(old, np.ndarray):
            np.testing.assert_array_equal(old, new)


def test_fast_call_refuses_a_non_cpu_tensor(kernels: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    args = _add_args()
    fake = Device.__new__(Device)
    for name, value in (("device_type", 2), ("device_id", 0), ("_hash", 0)):
        object.__setattr__(fake, name, value)
    args[1].device = fake  # what a CUDA tensor looks like to the check
    with pytest.raises(ValueError, match=r"'add': parameter 'B' is on .*need CPU tensors"):
        kernels["add"].fast_call(*args)


def test_symbolic_shapes_bind_and_must_agree(kernels: Any) -> None:
    flat = kernels["flat"]
    x = tensor(np.zeros((3, 4), "int32"))
    with pytest.raises(ValueError, match=r"'flat': parameter 'Y' dim 0 must be `\(n \* m\)` = 12"):
        flat.fast_call(x, tensor(np.zeros(11, "int32")))
    count = kernels["count"]
    v = tensor(np.zeros(5, "int32"))
    count.fast_call(v, 5)
    np.testing.assert_array_equal(v.numpy(), np.arange(5) * 3)
    with pytest.raises(ValueError, match=r"dim 0 must be `k` = 4 \(bound by scalar parameter"):
        count.fast_call(v, 4)
    with pytest.raises(ValueError, match=r"scalar parameter 'k' = 4294967296 does not fit"):
        count.fast_call(v, 1 << 32)
    count.fast_call(v, np.int64(5))  # numpy integers take the general path and work


def test_the_missing_sentinel_is_never_passed_on(kernels: Any) -> None:
    with pytest.raises(TypeError, match="expected 3 arguments"):
        kernels["add"].fast_call()
    assert repr(_MISSING) == "<missing>"


# ---- parallel runtime -----------------------------------------------------------------------
def _parallel_module() -> Any:
    n = Var("n", "int64")
    out = Buffer("out", (n,), "int64")
    i = Var("i", "int64")
    body = For(i, 0, n, ForKind.PARALLEL, BufferStore(out, out[i] * 2 + i, [i]))
    return relaxvm_llvm.build({"pstep": PrimFunc([out], body, attrs={"global_symbol": "pstep"})})


@pytest.fixture(scope="module")
def pstep() -> Any:
    return _parallel_module()["pstep"]


@pytest.mark.parametrize("backend", ["native", "python"])
@pytest.mark.parametrize("extent", [1, 2, 3, 7, 1000])
def test_parallel_backends_compute_every_iteration_once(
    pstep: Any, backend: str, extent: int, parallel_always: None
) -> None:
    before = parallel.get_parallel_backend()
    if backend == "native" and parallel._native is None:
        pytest.skip("no native pool on this platform")
    parallel.set_parallel_backend(backend)
    try:
        values = np.arange(extent, dtype="int64")
        out = tensor(values.copy())
        for _ in range(20):  # a doubled chunk would show as a wrong value
            pstep(out)
        expected = values.copy()
        for _ in range(20):
            expected = expected * 2 + np.arange(extent)
        np.testing.assert_array_equal(out.numpy(), expected)
    finally:
        parallel.set_parallel_backend(before)


def test_native_pool_from_many_python_threads(pstep: Any, parallel_always: None) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(200):
                out = tensor(np.zeros(64, "int64"))
                pstep(out)
                np.testing.assert_array_equal(out.numpy(), np.arange(64))
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a parallel launch deadlocked"
    assert errors == []


def test_exception_in_a_python_pool_chunk_propagates(
    pstep: Any, parallel_always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = parallel.get_parallel_backend()
    parallel.set_parallel_backend("python")

    class Exploding(dict):  # type: ignore[type-arg]
        def get(self, key: Any, default: Any = None) -> Any:
            real = parallel.RANGE_TYPE(key)

            def chunk(begin: int, end: int, closure: int) -> None:
                if begin > 0:  # a worker's chunk, not the caller's
                    raise ZeroDivisionError("chunk failed")
                real(begin, end, closure)

            return chunk

    monkeypatch.setattr(parallel, "_range_fns", Exploding())
    try:
        with pytest.raises(KernelRuntimeError, match=r"'pstep' failed.*chunk failed"):
            pstep(tensor(np.zeros(10, "int64")))
        monkeypatch.undo()
        out = tensor(np.zeros(10, "int64"))
        pstep(out)  # the pool recovered
        np.testing.assert_array_equal(out.numpy(), np.arange(10))
    finally:
        parallel.set_parallel_backend(before)


def test_backend_setting_is_validated() -> None:
    with pytest.raises(ValueError, match=r"set_parallel_backend: name must be one of"):
        parallel.set_parallel_backend("openmp")
    assert parallel.get_parallel_backend() in parallel.BACKENDS


_CHILD = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_runtime_fast_path import _parallel_module
    from relaxvm.runtime import tensor
    from relaxvm_llvm import parallel
    kernel = _parallel_module()["pstep"]
    out = tensor(np.zeros(1000, "int64"))
    kernel(out)
    assert (out.numpy() == np.arange(1000)).all(), "wrong result"
    print(parallel.get_num_threads(), parallel.get_parallel_backend(), parallel.native_workers())
    pid = os.fork()
    if pid == 0:  # the child gets a fresh pool
        child = tensor(np.zeros(1000, "int64"))
        kernel(child)
        os._exit(0 if (child.numpy() == np.arange(1000)).all() else 3)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    """
)


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("backend", ["native", "python"])
def test_thread_count_and_backend_from_the_environment(threads: int, backend: str) -> None:
    env = dict(
        os.environ,
        RELAXVM_NUM_THREADS=str(threads),
        RELAXVM_PARALLEL_CUTOFF="0",
        RELAXVM_PARALLEL_BACKEND=backend,
    )
    code = _CHILD.format(tests=os.path.dirname(__file__))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()[-2:]
    count, chosen, workers = first.split()
    assert int(count) == threads
    if parallel._native is not None:
        assert chosen == backend
        # The native pool starts threads - 1 workers on the first parallel launch.
        assert int(workers) == (threads - 1 if backend == "native" else 0)
    assert second == "child 0"


def test_a_bad_backend_in_the_environment_warns() -> None:
    env = dict(os.environ, RELAXVM_PARALLEL_BACKEND="gpu")
    code = "from relaxvm_llvm import parallel; print(parallel.get_parallel_backend())"
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "RELAXVM_PARALLEL_BACKEND='gpu' is not one of" in done.stderr
    assert done.stdout.strip() in parallel.BACKENDS


# ---- the VM's inline opcodes (kill, alloc_tensor) -------------------------------------------
def _alloc_program(nbytes: int, bad_storage: bool, mode: str, elems: int = 64) -> Any:
    """alloc_storage(nbytes) -> alloc_tensor((elems,) float32) -> kill; optionally an
    alloc_tensor from the tensor argument (not a Storage)."""
    import relaxvm
    from relaxvm.vm.executable.executable import Executable

    ib = relaxvm.ExecBuilder()
    ib.declare_function("main", relaxvm.VMFuncKind.VM_FUNC)
    for name in ("vm.builtin.alloc_storage", "vm.builtin.alloc_tensor", "vm.builtin.null_value"):
        ib.declare_function(name, relaxvm.VMFuncKind.PACKED_FUNC)
    size = ib.add_constant(relaxvm.Shape([nbytes]))
    u8 = ib.add_constant(relaxvm.DataType("uint8"))
    scope = ib.add_constant("global")
    shape = ib.add_constant(relaxvm.Shape([elems]))
    f32 = ib.add_constant(relaxvm.DataType("float32"))
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call(
            "vm.builtin.alloc_storage",
            args=[ib.vm_state(), ib.c(size), ib.imm(0), ib.c(u8), ib.c(scope)],
            dst=ib.r(1),
        )
        tensor_args = [ib.r(1), ib.imm(0), ib.c(shape), ib.c(f32)]
        ib.emit_call("vm.builtin.alloc_tensor", args=tensor_args, dst=ib.r(2))
        ib.emit_call("vm.builtin.null_value", args=[], dst=ib.r(1))
        if bad_storage:
            bad_args = [ib.r(0), ib.imm(0), ib.c(shape), ib.c(f32)]
            ib.emit_call("vm.builtin.alloc_tensor", args=bad_args, dst=ib.r(3))
        ib.emit_ret(ib.r(2))
    ex = ib.get()
    return Executable(
        ex.func_table, ex.constants, ex.instr_offset, ex.instr_data, ex.memory_scopes, mode
    )


@pytest.mark.parametrize("mode", ["bytecode", "compiled"])
def test_inline_alloc_tensor_and_kill(mode: str) -> None:
    import relaxvm

    vm = relaxvm.VirtualMachine(_alloc_program(256, False, mode), relaxvm.cpu())
    out = vm["main"](tensor(np.zeros(1, "float32")))
    assert out.shape == (64,) and str(out.dtype) == "float32"
    assert out.storage.nbytes >= 256  # the storage lives on in the tensor after the kill
    out.copyfrom(np.arange(64, dtype="float32"))
    np.testing.assert_array_equal(out.numpy(), np.arange(64))


@pytest.mark.parametrize("mode", ["bytecode", "compiled"])
@pytest.mark.parametrize(
    ("nbytes", "bad", "error", "pattern", "pc"),
    [
        # The allocator rounds 8 bytes up to a page: 16 KiB of float32 do not fit.
        (8, False, ValueError, r"storage allocation failure, attempted to allocate 16384", 1),
        (1 << 16, True, TypeError, r"alloc_tensor: expect a Storage but get Tensor", 3),
    ],
)
def test_inline_alloc_tensor_falls_back_to_the_builtin_errors(
    mode: str, nbytes: int, bad: bool, error: type, pattern: str, pc: int
) -> None:
    import relaxvm

    vm = relaxvm.VirtualMachine(_alloc_program(nbytes, bad, mode, 4096), relaxvm.cpu())
    with pytest.raises(error, match=pattern) as info:
        vm["main"](tensor(np.zeros(1, "float32")))
    notes = getattr(info.value, "__notes__", [])
    assert f"  in VM function 'main', instruction {pc}: call vm.builtin.alloc_tensor" in notes
