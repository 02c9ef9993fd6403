"""The cost of checking user indices in ``take``: checked vs unchecked kernels vs numpy.

Run from the repository root (the project must be installed)::

    python benchmarks/bench_take.py [--target llvm] [--repeat 7]

For each workload, all in this one process, the script times

* ``checked``: ``R.take`` as legalized: every index is checked (and negative ones wrapped)
  in a serial loop before the gather, which stays parallel and vectorized;
* ``unchecked``: the same module with ``take`` legalized by
  ``relaxvm_ops.indexing.legalize_take_unchecked`` (registered for the target in this
  process only, after the checked kernels are compiled): no check, an index out of range
  would read outside the buffer. It exists to measure the check, never to run user data;
* ``numpy``: ``np.take(x, idx, axis=...)``, which also checks its indices.

It prints the best time of each and the ratios checked/unchecked (target: under 1.05, issue
12) and checked/numpy. Timings include the VM call and the output allocation on both sides.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import relaxvm
from relaxvm.ir.relax import BlockBuilder, IRModule, TensorStructInfo, Var, op

#: The clock: wall time, or with ``--cpu-time`` (one thread) this thread's CPU time, which a
#: busy machine disturbs less.
CLOCK = time.perf_counter
TARGET_RATIO = 1.05

#: name, x shape, index shape, axis
WORKLOADS: list[tuple[str, tuple[int, ...], tuple[int, ...], int]] = [
    ("embedding 50000x256, 4096 rows", (50000, 256), (4096,), 0),
    ("embedding 32000x64, 128x32 ids", (32000, 64), (128, 32), 0),
    ("gather 1-d 4M from 1M", (1 << 20,), (1 << 22,), 0),
    ("columns 2048x1024, 256 cols", (2048, 1024), (256,), 1),
    ("small 1000x64, 16 rows", (1000, 64), (16,), 0),
]


def take_module(x_shape: tuple[int, ...], i_shape: tuple[int, ...], axis: int) -> IRModule:
    """``main(x, i) = take(x, i, axis)``."""
    x = Var("x", TensorStructInfo(list(x_shape), "float32"))
    i = Var("i", TensorStructInfo(list(i_shape), "int64"))
    bb = BlockBuilder()
    with bb.function("main", [x, i]):
        bb.emit_func_output(bb.emit(op.take(x, i, axis=axis)))
    return bb.get()


def compile_take(mod: IRModule, target: str) -> Callable[..., Any]:
    """``vm["main"]`` of ``mod`` compiled for ``target``."""
    ex = relaxvm.compile(mod, target=target)
    return relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"]  # type: ignore[no-any-return]


def use_unchecked_take(target: str) -> None:
    """From now on, legalize ``take`` for ``target`` without the index check (this process
    only: the benchmark compiles every checked kernel first)."""
    from relaxvm.registry import register_legalization
    from relaxvm_ops.indexing import legalize_take_unchecked

    register_legalization("relax.take", legalize_take_unchecked, target=target, override=True)


def best_times(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Best per-call time of each function in seconds. Samples of the functions alternate
    (each about 20 ms) in a rotating order, so that a busy machine slows all of them alike."""
    numbers = []
    for fn in fns:
        fn()
        start = CLOCK()
        fn()
        numbers.append(max(1, int(0.02 / max(CLOCK() - start, 1e-7))))
    best = [float("inf")] * len(fns)
    for sample in range(repeat):
        # Rotate the order, so that no function always runs after the same one (whose
        # memory traffic would otherwise bias it).
        order = [(k + sample) % len(fns) for k in range(len(fns))]
        for k in order:
            fn, number = fns[k], numbers[k]
            start = CLOCK()
            for _ in range(number):
                fn()
            best[k] = min(best[k], (CLOCK() - start) / number)
    return best


def relaxvm_llvm_threads(count: int) -> None:
    """Run the llvm target's parallel loops on ``count`` threads."""
    from relaxvm_llvm.parallel import set_num_threads

    set_num_threads(count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time with this thread's CPU time and run kernels on one thread",
    )
    args = parser.parse_args()
    if args.cpu_time:
        global CLOCK
        CLOCK = time.thread_time
        relaxvm_llvm_threads(1)
    rng = np.random.default_rng(0)
    clock = "CPU time on one thread" if args.cpu_time else "wall time"
    print(f"target {args.target}; times are the best of {args.repeat} ({clock})")
    header = f"{'workload':34} {'checked':>10} {'unchecked':>10} {'numpy':>10}"
    print(f"{header} {'chk/unchk':>9} {'chk/numpy':>9}")
    modules = [take_module(x_shape, i_shape, axis) for _, x_shape, i_shape, axis in WORKLOADS]
    checked_fns = [compile_take(mod, args.target) for mod in modules]
    use_unchecked_take(args.target)
    unchecked_fns = [compile_take(mod, args.target) for mod in modules]
    worst = 0.0
    for (name, x_shape, i_shape, axis), checked, unchecked in zip(
        WORKLOADS, checked_fns, unchecked_fns, strict=True
    ):
        x = rng.standard_normal(x_shape, dtype="float32")
        idx = rng.integers(-x_shape[axis], x_shape[axis], size=i_shape, dtype="int64")
        xt, it = relaxvm.tensor(x), relaxvm.tensor(idx)
        expected = np.take(x, idx, axis=axis)
        for fn in (checked, unchecked):
            np.testing.assert_array_equal(fn(xt, it).numpy(), expected)
        t_checked, t_unchecked, t_numpy = best_times(
            [
                functools.partial(checked, xt, it),
                functools.partial(unchecked, xt, it),
                functools.partial(np.take, x, idx, axis=axis),
            ],
            args.repeat,
        )
        ratio = t_checked / t_unchecked
        worst = max(worst, ratio)
        print(
            f"{name:34} {t_checked * 1e6:9.1f}u {t_unchecked * 1e6:9.1f}u {t_numpy * 1e6:9.1f}u "
            f"{ratio:9.3f} {t_checked / t_numpy:9.3f}"
        )
    verdict = "meets" if worst < TARGET_RATIO else "misses"
    print(f"worst checked/unchecked {worst:.3f}: {verdict} the {TARGET_RATIO} target")


if __name__ == "__main__":
    main()
