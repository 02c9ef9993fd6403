"""Runtime micro-benchmarks: kernel call overhead and parallel launch cost.

Run from the repository root (the project and llvmlite installed)::

    python benchmarks/bench_runtime.py [--number 20000] [--repeat 5]

What is measured:

* **kernel call**: a 3-argument elementwise kernel (``C = A + B`` on 4 float32 elements)
  called with :class:`relaxvm.Tensor` arguments and with numpy arrays, next to the bare
  ctypes call of its entry point (the floor for any checked call) and the general caller
  (the only path before the Tensor fast path);
* **parallel launch**: a kernel whose only loop is a parallel loop over 2 elements, with the
  serial cutoff at 0 (every call goes through the thread pool), minus the same kernel with one
  thread (serial): what one pool dispatch costs, on the native and on the Python pool;
* **matmul**: a parallel 512x512x512 and 64x512x512 float32 matmul with the default schedule
  on both pools, next to numpy (interleaved rounds).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import relaxvm_llvm
from relaxvm.ir import Var
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, PrimFunc, te
from relaxvm.runtime import tensor
from relaxvm_llvm import parallel


def best_of(func: Callable[[], Any], number: int, repeat: int) -> float:
    """Best seconds per call over ``repeat`` runs of ``number`` calls."""
    func()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            func()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def add_kernel() -> Any:
    a = te.placeholder((4,), "float32", name="A")
    b = te.placeholder((4,), "float32", name="B")
    c = te.compute((4,), lambda i: a[i] + b[i], name="C")
    return relaxvm_llvm.build({"add": te.create_prim_func([a, b, c], name="add")})["add"]


def parallel_kernel() -> Any:
    n = Var("n", "int64")
    out = Buffer("out", (n,), "float32")
    i = Var("i", "int64")
    body = For(i, 0, n, ForKind.PARALLEL, BufferStore(out, out[i] + 1.0, [i]))
    func = PrimFunc([out], body, attrs={"global_symbol": "pinc"})
    return relaxvm_llvm.build({"pinc": func})["pinc"]


def bench_calls(number: int, repeat: int) -> None:
    kernel = add_kernel()
    call = kernel.fast_call
    arrays = [np.ones(4, "float32") for _ in range(3)]
    tensors = [tensor(a) for a in arrays]
    raw = kernel._cfunc
    ptrs = [t.data_ptr for t in tensors]
    t_raw = best_of(lambda: raw(*ptrs), number, repeat)
    t_tensor = best_of(lambda: call(*tensors), number, repeat)
    t_numpy = best_of(lambda: call(*arrays), number, repeat)
    t_obj = best_of(lambda: kernel(*tensors), number, repeat)
    general = kernel._general  # the general caller (the only one before the Tensor path)
    t_general = best_of(lambda: general(*tensors), number, repeat)
    print("kernel call, 3 args (µs):")
    print(f"  raw ctypes call of the entry point      {t_raw * 1e6:7.3f}")
    print(f"  checked, relaxvm.Tensor args (fast_call) {t_tensor * 1e6:7.3f}")
    print(f"  checked, Tensor args via Kernel.__call__ {t_obj * 1e6:7.3f}")
    print(f"  checked, numpy args (fast_call)         {t_numpy * 1e6:7.3f}")
    print(
        f"  general caller, Tensor args (old path)  {t_general * 1e6:7.3f}  "
        f"(fast path / general: {t_tensor / t_general:.2f})"
    )
    print(
        f"  check overhead over raw: {(t_tensor - t_raw) * 1e6:.3f} µs "
        f"(ratio checked/raw {t_tensor / t_raw:.2f})"
    )


def bench_launch(number: int, repeat: int) -> None:
    kernel = parallel_kernel()
    out = tensor(np.zeros(2, "float32"))
    threads, cutoff = parallel.get_num_threads(), parallel.get_parallel_cutoff()
    backend_before = parallel.get_parallel_backend()
    try:
        parallel.set_parallel_cutoff(0)
        parallel.set_num_threads(1)
        serial = best_of(lambda: kernel(out), number, repeat)
        results = {}
        for backend in parallel.BACKENDS:
            parallel.set_parallel_backend(backend)
            for count in (2, 4):
                parallel.set_num_threads(count)
                results[backend, count] = best_of(lambda: kernel(out), number, repeat)
    finally:
        parallel.set_parallel_backend(backend_before)
        parallel.set_num_threads(threads)
        parallel.set_parallel_cutoff(cutoff)
    print("parallel launch (µs per call of a 2-iteration parallel loop, Tensor argument):")
    print(f"  serial (1 thread)          {serial * 1e6:8.2f}")
    for (backend, count), seconds in results.items():
        print(
            f"  {backend:<6} pool, {count} threads  {seconds * 1e6:8.2f}  "
            f"(launch cost {(seconds - serial) * 1e6:.2f})"
        )
    launch = {key: value - serial for key, value in results.items()}
    for count in (2, 4):
        print(
            f"  native/python launch cost, {count} threads: "
            f"{launch['native', count] / launch['python', count]:.2f}"
        )


def bench_matmul(repeat: int) -> None:
    for m in (512, 64):
        bench_one_matmul(m, repeat)


def bench_one_matmul(m: int, repeat: int) -> None:
    """A default-scheduled ``m``x512x512 matmul on both pools, and numpy."""
    from relaxvm_llvm.schedule import schedule_prim_func

    a = te.placeholder((m, 512), "float32", name="A")
    b = te.placeholder((512, 512), "float32", name="B")
    k = te.reduce_axis((0, 512), name="k")
    c = te.compute((m, 512), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    func = te.create_prim_func([a, b, c], name="mm")
    func = schedule_prim_func(func)
    kernel = relaxvm_llvm.build({"mm": func})["mm"]
    x = np.random.default_rng(0).standard_normal((m, 512)).astype("float32")
    y = np.random.default_rng(1).standard_normal((512, 512)).astype("float32")
    z = np.zeros((m, 512), "float32")
    kernel(x, y, z)
    np.testing.assert_allclose(z, x @ y, rtol=1e-3, atol=1e-3)
    xt, yt, zt = tensor(x), tensor(y), tensor(z)
    flops = 2 * m * 512 * 512
    before = parallel.get_parallel_backend()
    timings: dict[str, float] = {}
    try:
        for _ in range(2):  # interleaved: a load spike hits every variant
            for backend in parallel.BACKENDS:
                parallel.set_parallel_backend(backend)
                seconds = best_of(lambda: kernel(xt, yt, zt), 5, repeat)
                timings[backend] = min(timings.get(backend, seconds), seconds)
            seconds = best_of(lambda: x @ y, 5, repeat)
            timings["numpy"] = min(timings.get("numpy", seconds), seconds)
    finally:
        parallel.set_parallel_backend(before)
    t_np = timings["numpy"]
    for name, seconds in timings.items():
        print(
            f"matmul {m}x512x512 {name:<7} {flops / seconds / 1e9:7.1f} GFLOP/s "
            f"({seconds * 1e3:.3f} ms), ratio to numpy {t_np / seconds:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-matmul", action="store_true")
    args = parser.parse_args()
    bench_calls(args.number, args.repeat)
    bench_launch(args.number // 10, args.repeat)
    if not args.skip_matmul:
        bench_matmul(args.repeat)


if __name__ == "__main__":
    main()
