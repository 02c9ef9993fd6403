"""A 3-layer MLP with a dynamic batch size, written in the script format.

    python examples/mlp.py [--target llvm] [--exec-mode bytecode|compiled] [--batch 1 64]

Compiles the model once for the LLVM CPU target and runs it for each batch size given
(the batch dimension is the symbolic ``n``), checking every result against numpy.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import relaxvm
from relaxvm.script import ir as I
from relaxvm.script import relax as R


@I.ir_module
class MLP:
    @R.function
    def main(
        x: R.Tensor(("n", 784), "float32"),
        w1: R.Tensor((784, 512), "float32"),
        b1: R.Tensor((512,), "float32"),
        w2: R.Tensor((512, 512), "float32"),
        b2: R.Tensor((512,), "float32"),
        w3: R.Tensor((512, 10), "float32"),
        b3: R.Tensor((10,), "float32"),
    ) -> R.Tensor(("n", 10), "float32"):
        with R.dataflow():
            h1 = R.nn.relu(R.add(R.matmul(x, w1), b1))
            h2 = R.nn.relu(R.add(R.matmul(h1, w2), b2))
            out = R.add(R.matmul(h2, w3), b3)
            R.output(out)
        return out


def make_weights(seed: int = 0) -> list[np.ndarray]:
    """Random weights scaled so that activations stay of order one."""
    rng = np.random.default_rng(seed)
    shapes = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]
    return [(rng.standard_normal(s) / np.sqrt(s[0])).astype("float32") for s in shapes]


def reference(x: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    """The same model in numpy."""
    w1, b1, w2, b2, w3, b3 = weights
    h1 = np.maximum(x @ w1 + b1, 0)
    h2 = np.maximum(h1 @ w2 + b2, 0)
    return h2 @ w3 + b3


def run(
    batches: list[int], target: str = "llvm", exec_mode: str = "bytecode", verbose: bool = True
) -> float:
    """Compile, run for each batch size and return the largest absolute error."""
    started = time.perf_counter()
    ex = relaxvm.compile(MLP, target=target, exec_mode=exec_mode)
    if verbose:
        print(f"compiled for {target} ({exec_mode}) in {time.perf_counter() - started:.2f} s")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    weights = make_weights()
    params = [relaxvm.tensor(w) for w in weights]
    worst = 0.0
    rng = np.random.default_rng(1)
    for n in batches:
        x = rng.standard_normal((n, 784)).astype("float32")
        out = vm["main"](relaxvm.tensor(x), *params).numpy()
        error = float(np.max(np.abs(out - reference(x, weights))))
        worst = max(worst, error)
        if verbose:
            print(f"batch {n:4d}: output {out.shape}, max |error| vs numpy = {error:.2e}")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--exec-mode", default="bytecode", choices=["bytecode", "compiled"])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    args = parser.parse_args(argv)
    worst = run(args.batch, args.target, args.exec_mode)
    ok = worst < 1e-3
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
