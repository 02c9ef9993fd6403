"""A transformer encoder block (multi-head attention, layer norm, GELU MLP) with a symbolic
sequence length, written in the script format.

    python examples/transformer_block.py [--target llvm] [--exec-mode ...] [--seq 8 33]

Model width 64, 4 heads of 16, MLP width 128. The result is checked against numpy for each
sequence length given; the module is compiled once.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import relaxvm
from relaxvm.script import ir as I
from relaxvm.script import relax as R


@I.ir_module
class EncoderBlock:
    @R.function
    def main(
        x: R.Tensor(("n", 64), "float32"),
        wq: R.Tensor((64, 64), "float32"),
        wk: R.Tensor((64, 64), "float32"),
        wv: R.Tensor((64, 64), "float32"),
        wo: R.Tensor((64, 64), "float32"),
        bo: R.Tensor((64,), "float32"),
        g1: R.Tensor((64,), "float32"),
        b1: R.Tensor((64,), "float32"),
        w_up: R.Tensor((64, 128), "float32"),
        b_up: R.Tensor((128,), "float32"),
        w_down: R.Tensor((128, 64), "float32"),
        b_down: R.Tensor((64,), "float32"),
        g2: R.Tensor((64,), "float32"),
        b2: R.Tensor((64,), "float32"),
    ) -> R.Tensor(("n", 64), "float32"):
        with R.dataflow():
            # (n, 64) -> (4, n, 16): one slice per head.
            q = R.permute_dims(R.reshape(R.matmul(x, wq), (-1, 4, 16)), axes=[1, 0, 2])
            k = R.permute_dims(R.reshape(R.matmul(x, wk), (-1, 4, 16)), axes=[1, 2, 0])
            v = R.permute_dims(R.reshape(R.matmul(x, wv), (-1, 4, 16)), axes=[1, 0, 2])
            scores = R.multiply(R.matmul(q, k), R.const(0.25, "float32"))
            attn = R.nn.softmax(scores, axis=-1)
            ctx = R.reshape(R.permute_dims(R.matmul(attn, v), axes=[1, 0, 2]), (-1, 64))
            h = R.nn.layer_norm(
                R.add(x, R.add(R.matmul(ctx, wo), bo)), g1, b1, axes=[-1], epsilon=1e-5
            )
            up = R.nn.gelu(R.add(R.matmul(h, w_up), b_up))
            down = R.add(R.matmul(up, w_down), b_down)
            out = R.nn.layer_norm(R.add(h, down), g2, b2, axes=[-1], epsilon=1e-5)
            R.output(out)
        return out


def make_params(seed: int = 0) -> list[np.ndarray]:
    """Attention and MLP weights, layer-norm scales and shifts."""
    rng = np.random.default_rng(seed)
    shapes = [(64, 64)] * 4 + [(64,)] * 3 + [(64, 128), (128,), (128, 64), (64,), (64,), (64,)]
    params = [(rng.standard_normal(s) / np.sqrt(s[0])).astype("float32") for s in shapes]
    params[5] += 1.0  # g1
    params[12] += 1.0  # g2
    return params


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    """The same block in numpy (float64 for a tight oracle)."""
    x = x.astype("float64")
    wq, wk, wv, wo, bo, g1, b1, w_up, b_up, w_down, b_down, g2, b2 = params
    n = x.shape[0]
    q = (x @ wq).reshape(n, 4, 16).transpose(1, 0, 2)
    k = (x @ wk).reshape(n, 4, 16).transpose(1, 2, 0)
    v = (x @ wv).reshape(n, 4, 16).transpose(1, 0, 2)
    attn = _softmax((q @ k) * 0.25)
    ctx = (attn @ v).transpose(1, 0, 2).reshape(n, 64)
    h = _layer_norm(x + ctx @ wo + bo, g1, b1)
    pre = h @ w_up + b_up
    up = 0.5 * pre * (1.0 + np.vectorize(math.erf)(pre / math.sqrt(2.0)))
    return _layer_norm(h + up @ w_down + b_down, g2, b2)


def run(
    seq_lens: list[int], target: str = "llvm", exec_mode: str = "bytecode", verbose: bool = True
) -> float:
    """Compile, run for each sequence length and return the largest absolute error."""
    started = time.perf_counter()
    ex = relaxvm.compile(EncoderBlock, target=target, exec_mode=exec_mode)
    if verbose:
        print(f"compiled for {target} ({exec_mode}) in {time.perf_counter() - started:.2f} s")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    params = make_params()
    tensors = [relaxvm.tensor(p) for p in params]
    rng = np.random.default_rng(1)
    worst = 0.0
    for n in seq_lens:
        x = rng.standard_normal((n, 64)).astype("float32")
        out = vm["main"](relaxvm.tensor(x), *tensors).numpy()
        error = float(np.max(np.abs(out - reference(x, params))))
        worst = max(worst, error)
        if verbose:
            print(f"sequence length {n:3d}: max |error| vs numpy = {error:.2e}")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--exec-mode", default="bytecode", choices=["bytecode", "compiled"])
    parser.add_argument("--seq", type=int, nargs="+", default=[8, 33])
    args = parser.parse_args(argv)
    ok = run(args.seq, args.target, args.exec_mode) < 1e-3
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
