"""Kernels of the LLVM target with their default CPU schedules, side by side with numpy.

Run from the repository root (the project and llvmlite installed)::

    python benchmarks/bench_llvm_kernels.py [--repeat 15] [--number 10] [--only matmul,add]

Every workload is a TE kernel shaped as the op legalizations write it
(:mod:`relaxvm_llvm.schedule.workloads`), scheduled by
``relaxvm_llvm.schedule.schedule_prim_func`` for the host CPU and compiled by the ``llvm``
target. Its output is checked against numpy before timing. Timings interleave relaxvm and
the reference (best of ``--repeat`` rounds of ``--number`` calls each), so a load spike from
another process hits both. Ratios are relaxvm's throughput over the reference's (above 1:
relaxvm is faster): "ratio" compares the best times, "median" is the median of the per-round
ratios (more robust on a shared machine). The issue's targets: matmul >= 0.8, add >= 1.0, conv2d >= 1.0 (against
im2col + numpy matmul). torch is timed too when installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

TARGETS = {"matmul": 0.8, "add": 1.0, "conv2d": 1.0}
#: Seconds of idle time before each timed block (see best_of).
PAUSE = 0.25
#: Reference time over relaxvm time in each round of the last best_of (adjacent blocks, so a
#: load spike that lasts a round hits both; the median is the robust figure on a busy host).
ROUND_RATIOS: list[float] = []


@dataclass
class Result:
    name: str
    unit: str
    amount: float  # flops or bytes per call
    relaxvm_s: float
    reference_s: float
    reference: str
    torch_s: float | None = None


def best_of(
    fns: list[Callable[[], Any]], number: int, repeat: int, pause: float | None = None
) -> list[float]:
    """Best seconds per call of each function, measured in interleaved rounds.

    Each block of calls starts after a short pause: OpenBLAS's worker threads keep spinning
    for a while after a call, and would otherwise steal the second core from whatever is
    timed next (its default spin time is about 0.1 s).
    """
    pause = PAUSE if pause is None else pause
    best = [float("inf")] * len(fns)
    for fn in fns:
        fn()  # warm up (first-touch pages, thread pool start)
    ROUND_RATIOS.clear()
    for _ in range(repeat):
        this_round = []
        for k, fn in enumerate(fns):
            time.sleep(pause)
            start = time.perf_counter()
            for _ in range(number):
                fn()
            this_round.append((time.perf_counter() - start) / number)
            best[k] = min(best[k], this_round[-1])
        ROUND_RATIOS.append(this_round[1] / this_round[0])
    return best


def compile_kernel(func: Any) -> Any:
    """Schedule for the host and compile one PrimFunc; returns the callable kernel."""
    from relaxvm_llvm.schedule import schedule_prim_func
    from relaxvm_llvm.target import build

    scheduled = schedule_prim_func(func)
    return build(scheduled)[scheduled.name]


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def bench_matmul(args: argparse.Namespace) -> Result:
    from relaxvm_llvm.schedule import workloads as wl

    n = 512
    kernel = compile_kernel(wl.matmul(n, n, n))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    out, ref = np.empty((n, n), "float32"), np.empty((n, n), "float32")
    kernel(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-3, atol=1e-3)
    fns: list[Callable[[], Any]] = [lambda: kernel(a, b, out), lambda: np.matmul(a, b, out=ref)]
    torch = _torch()
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fns.append(lambda: torch.mm(ta, tb))
    times = best_of(fns, args.number, args.repeat)
    return Result(
        "matmul 512x512x512 fp32", "GFLOP/s", 2.0 * n**3, times[0], times[1],
        "np.matmul(out=)", times[2] if torch is not None else None,
    )  # fmt: skip


def bench_add(args: argparse.Namespace) -> Result:
    from relaxvm_llvm.schedule import workloads as wl

    n = 4 * 1024 * 1024
    kernel = compile_kernel(wl.add((n,)))
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    out, ref = np.empty(n, "float32"), np.empty(n, "float32")
    kernel(a, b, out)
    np.testing.assert_array_equal(out, a + b)
    fns: list[Callable[[], Any]] = [lambda: kernel(a, b, out), lambda: np.add(a, b, out=ref)]
    torch = _torch()
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(ref)
        fns.append(lambda: torch.add(ta, tb, out=tc))
    times = best_of(fns, args.number, args.repeat)
    return Result(
        "elementwise add 4M fp32", "GB/s", 12.0 * n, times[0], times[1], "np.add(out=)",
        times[2] if torch is not None else None,
    )  # fmt: skip


def im2col_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3, stride 1, pad 1 NCHW convolution of batch 1 as im2col + one numpy matmul."""
    _, c, h, wd = x.shape
    f = w.shape[0]
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    cols = np.empty((c, 3, 3, h, wd), x.dtype)
    for dy in range(3):
        for dx in range(3):
            cols[:, dy, dx] = xp[:, dy : dy + h, dx : dx + wd]
    return (w.reshape(f, c * 9) @ cols.reshape(c * 9, h * wd)).reshape(1, f, h, wd)


def bench_conv2d(args: argparse.Namespace) -> Result:
    from relaxvm_llvm.schedule import workloads as wl

    c, hw = 64, 56
    kernel = compile_kernel(wl.conv2d_nchw(1, c, hw, hw, c))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c, hw, hw)).astype("float32")
    w = rng.standard_normal((c, c, 3, 3)).astype("float32")
    out = np.empty((1, c, hw, hw), "float32")
    kernel(x, w, out)
    np.testing.assert_allclose(out, im2col_conv(x, w), rtol=1e-3, atol=1e-3)
    fns: list[Callable[[], Any]] = [lambda: kernel(x, w, out), lambda: im2col_conv(x, w)]
    torch = _torch()
    if torch is not None:
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        fns.append(lambda: torch.nn.functional.conv2d(tx, tw, padding=1))
    times = best_of(fns, max(1, args.number // 2), args.repeat)
    flops = 2.0 * c * c * 9 * hw * hw
    return Result(
        "conv2d 64->64 3x3 56x56 b1", "GFLOP/s", flops, times[0], times[1],
        "im2col + np.matmul", times[2] if torch is not None else None,
    )  # fmt: skip


def numpy_softmax(x: np.ndarray, out: np.ndarray) -> None:
    np.subtract(x, x.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)


def bench_softmax(args: argparse.Namespace) -> Result:
    from relaxvm_llvm.schedule import workloads as wl

    rows, cols = 1024, 1024
    kernel = compile_kernel(wl.softmax(rows, cols))
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype("float32")
    out, ref = np.empty_like(x), np.empty_like(x)
    kernel(x, out)
    numpy_softmax(x, ref)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)
    fns: list[Callable[[], Any]] = [lambda: kernel(x, out), lambda: numpy_softmax(x, ref)]
    torch = _torch()
    if torch is not None:
        tx = torch.from_numpy(x)
        fns.append(lambda: torch.softmax(tx, dim=1))
    times = best_of(fns, args.number, args.repeat)
    return Result(
        "softmax 1024x1024 fp32", "GB/s", 8.0 * rows * cols, times[0], times[1],
        "numpy (max, exp, sum, divide)", times[2] if torch is not None else None,
    )  # fmt: skip


def _dense_layer(batch: int) -> Callable[[argparse.Namespace], Result]:
    def bench(args: argparse.Namespace) -> Result:
        from relaxvm_llvm.schedule import workloads as wl

        n = 512
        kernel = compile_kernel(wl.matmul(batch, n, n, bias=True, relu=True))
        rng = np.random.default_rng(0)
        x = rng.standard_normal((batch, n)).astype("float32")
        w = rng.standard_normal((n, n)).astype("float32")
        b = rng.standard_normal(n).astype("float32")
        out, ref = np.empty((batch, n), "float32"), np.empty((batch, n), "float32")

        def numpy_layer() -> None:
            np.matmul(x, w, out=ref)
            np.add(ref, b, out=ref)
            np.maximum(ref, 0, out=ref)

        kernel(x, w, b, out)
        numpy_layer()
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3)
        fns: list[Callable[[], Any]] = [lambda: kernel(x, w, b, out), numpy_layer]
        times = best_of(fns, args.number * (20 if batch == 1 else 2), args.repeat)
        return Result(
            f"matmul+bias+relu {batch}x512x512", "GFLOP/s", 2.0 * batch * n * n, times[0],
            times[1], "numpy matmul, +=, maximum",
        )  # fmt: skip

    return bench


def bench_linear(args: argparse.Namespace) -> Result:
    from relaxvm_llvm.schedule import workloads as wl

    m, n = 64, 512
    kernel = compile_kernel(wl.dense(m, n, n))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, n)).astype("float32")
    w = rng.standard_normal((n, n)).astype("float32")
    out, ref = np.empty((m, n), "float32"), np.empty((m, n), "float32")
    kernel(x, w, out)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-3, atol=1e-3)
    fns: list[Callable[[], Any]] = [lambda: kernel(x, w, out), lambda: np.matmul(x, w.T, out=ref)]
    times = best_of(fns, args.number * 2, args.repeat)
    return Result(
        "linear x@W.T 64x512x512", "GFLOP/s", 2.0 * m * n * n, times[0], times[1],
        "np.matmul(x, w.T, out=)",
    )  # fmt: skip


BENCHES = {
    "matmul": bench_matmul,
    "add": bench_add,
    "conv2d": bench_conv2d,
    "softmax": bench_softmax,
    "dense64": _dense_layer(64),
    "dense1": _dense_layer(1),
    "linear": bench_linear,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="measurement rounds")
    parser.add_argument("--number", type=int, default=10, help="calls per round")
    parser.add_argument("--only", default="", help="comma list of " + ",".join(BENCHES))
    parser.add_argument("--pause", type=float, default=0.25, help="idle seconds per block")
    args = parser.parse_args(argv)
    global PAUSE
    PAUSE = args.pause
    names = [n for n in args.only.split(",") if n] or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {list(BENCHES)}")
    from relaxvm_llvm.schedule import cpu_config

    config = cpu_config(None)
    print(
        f"# {platform.machine()} {os.cpu_count()} cpus, vector {config.vector_bits} bits, "
        f"{config.num_threads} threads, numpy {np.__version__}, python {sys.version.split()[0]}"
    )
    header = (
        f"{'workload':30} {'unit':8} {'relaxvm':>9} {'reference':>9} {'ratio':>6} "
        f"{'median':>6}  reference"
    )
    print(header)
    failed = False
    for name in names:
        r = BENCHES[name](args)
        scale = 1e-9
        ours, theirs = r.amount / r.relaxvm_s * scale, r.amount / r.reference_s * scale
        ratio = r.reference_s / r.relaxvm_s
        target = TARGETS.get(name)
        verdict = "" if target is None else (" ok" if ratio >= target else f" below {target}")
        failed |= target is not None and ratio < target
        median = statistics.median(ROUND_RATIOS) if ROUND_RATIOS else float("nan")
        print(
            f"{r.name:30} {r.unit:8} {ours:9.1f} {theirs:9.1f} {ratio:6.2f} {median:6.2f}  "
            f"{r.reference}{verdict}"
        )
        if r.torch_s is not None:
            tr = r.amount / r.torch_s * scale
            print(f"{'':30} {'torch':8} {'':9} {tr:9.1f} {r.torch_s / r.relaxvm_s:6.2f}")
    print("(ratio: best times; median: median of per-round ratios; above 1: relaxvm faster)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
