"""Model-level speed of the LLVM target: MLP latency and compile times, side by side with numpy.

    python benchmarks/bench_models.py [--repeat 30] [--width 512]

Measures, in one process:

* a 3-layer MLP, 512 wide (``relu(x @ w + b)`` twice, then ``x @ w + b``), float32, for batch
  64 and batch 1: relaxvm's latency (bytecode and compiled exec modes) against numpy doing the
  same three layers (and torch when installed); targets: batch 64 at most 1.0x numpy, batch 1
  at most 1.5x numpy;
* compiling that MLP: cold (an empty kernel cache, first compile in the process) at most
  1.0 s, warm (the same model again, kernels from the cache) at most 0.1 s.

Timings are medians over ``--repeat`` runs of a few calls each. numpy runs last in each
block, and relaxvm is timed after a pause, because OpenBLAS's threads keep spinning for a
moment after a numpy matmul and would otherwise take the second core from relaxvm's threads.
Compile times are for a fresh kernel cache; the first compile in a process also pays for
importing the compiler and initialising LLVM (and for compiling relaxvm's ``.py`` files when
no ``.pyc`` files can be written, as with ``PYTHONDONTWRITEBYTECODE=1``). The machine is shared
and noisy: run it twice before believing a ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np


def _median_seconds(fn: Callable[[], object], repeat: int, number: int) -> float:
    fn()  # warm up: first-call costs are not latency
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - started) / number)
    return statistics.median(samples)


def build_mlp(width: int):
    """The MLP as an IRModule with a symbolic batch size."""
    from relaxvm.ir import Var as SymVar
    from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
    from relaxvm.ir.relax import op as R

    n = SymVar("n", "int64")
    x = Var("x", TensorStructInfo((n, width), "float32"))
    params = []
    for layer in range(3):
        params.append(Var(f"w{layer}", TensorStructInfo((width, width), "float32")))
        params.append(Var(f"b{layer}", TensorStructInfo((width,), "float32")))
    bb = BlockBuilder()
    with bb.function("main", [x, *params]):
        with bb.dataflow():
            h = x
            for layer in range(3):
                h = bb.emit(R.add(R.matmul(h, params[2 * layer]), params[2 * layer + 1]))
                if layer < 2:
                    h = bb.emit(R.nn.relu(h))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def numpy_mlp(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    h = x
    for layer in range(3):
        h = h @ weights[2 * layer] + weights[2 * layer + 1]
        if layer < 2:
            h = np.maximum(h, 0)
    return h


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument(
        "--pause", type=float, default=0.5, help="idle seconds before timing relaxvm"
    )
    args = parser.parse_args(argv)
    width = args.width

    # Compile times need a cache of their own: cold means an empty one.
    cache_dir = tempfile.mkdtemp(prefix="relaxvm-bench-cache-")
    os.environ["RELAXVM_CACHE_DIR"] = cache_dir
    import relaxvm

    mod = build_mlp(width)
    started = time.perf_counter()
    ex = relaxvm.compile(mod, target="llvm")
    cold = time.perf_counter() - started
    started = time.perf_counter()
    relaxvm.compile(build_mlp(width), target="llvm")
    warm = time.perf_counter() - started
    ex_compiled = relaxvm.compile(mod, target="llvm", exec_mode="compiled")

    rng = np.random.default_rng(0)
    weights = []
    for _ in range(3):
        weights.append((rng.standard_normal((width, width)) / np.sqrt(width)).astype("float32"))
        weights.append(rng.standard_normal(width).astype("float32") * 0.1)
    params = [relaxvm.tensor(w) for w in weights]
    try:
        import torch  # type: ignore[import-not-found]

        torch.set_num_threads(os.cpu_count() or 1)
    except ImportError:
        torch = None

    print(f"relaxvm {relaxvm.__version__}; numpy {np.__version__}; {os.cpu_count()} cores")
    print(f"3-layer MLP, width {width}, float32 (median of {args.repeat})")
    print(f"{'batch':>5}  {'numpy':>10}  {'bytecode':>10}  {'compiled':>10}  ratio(b/np)  target")
    verdicts = []
    for batch, target in ((64, 1.0), (1, 1.5)):
        x = rng.standard_normal((batch, width)).astype("float32")
        tx = relaxvm.tensor(x)
        number = 20 if batch == 1 else 5
        results = {}
        expected = numpy_mlp(x, weights)
        for label, built in (("bytecode", ex), ("compiled", ex_compiled)):
            vm = relaxvm.VirtualMachine(built, relaxvm.cpu())
            got = vm["main"](tx, *params).numpy()
            if not np.allclose(got, expected, rtol=1e-3, atol=1e-3):
                raise SystemExit(f"{label} result differs from numpy at batch {batch}")
            # OpenBLAS threads spin for a while after each numpy matmul and would take the
            # second core from relaxvm's threads: let them go to sleep before timing.
            time.sleep(args.pause)
            func = vm["main"]
            results[label] = _median_seconds(
                lambda f=func, tx=tx: f(tx, *params), args.repeat, number
            )
        t_np = _median_seconds(lambda x=x: numpy_mlp(x, weights), args.repeat, number)
        ratio = results["bytecode"] / t_np
        best = min(results.values()) / t_np
        line = (
            f"{batch:>5}  {t_np * 1e6:8.1f}us  {results['bytecode'] * 1e6:8.1f}us  "
            f"{results['compiled'] * 1e6:8.1f}us  {ratio:10.2f}x  <= {target}x "
            f"({'met' if best <= target else 'NOT met'}, best mode {best:.2f}x)"
        )
        if torch is not None:
            tw = [torch.from_numpy(w) for w in weights]
            tx_t = torch.from_numpy(x)

            def torch_mlp(tx_t=tx_t, tw=tw):
                with torch.no_grad():
                    h = tx_t
                    for layer in range(3):
                        h = torch.addmm(tw[2 * layer + 1], h, tw[2 * layer])
                        if layer < 2:
                            h = torch.relu(h)
                    return h

            line += f"; torch {_median_seconds(torch_mlp, args.repeat, number) * 1e6:.1f}us"
        print(line)
        verdicts.append(best <= target)
    print(
        f"compile the MLP: cold {cold:.3f} s (target <= 1.0 s: {'met' if cold <= 1.0 else 'NOT met'}), "
        f"warm {warm:.3f} s (target <= 0.1 s: {'met' if warm <= 0.1 else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
