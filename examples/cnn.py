"""A small CNN (conv2d, batch norm, relu, pooling, linear), written in the script format.

    python examples/cnn.py [--target llvm] [--exec-mode bytecode|compiled]

Input images are NCHW 1x3x32x32; the network is conv(3->16) + BN + relu + maxpool,
conv(16->32) + BN + relu, global average pooling and a linear classifier. The result is
checked against a numpy implementation of the same layers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import relaxvm
from relaxvm.script import ir as I
from relaxvm.script import relax as R


@I.ir_module
class CNN:
    @R.function
    def main(
        x: R.Tensor((1, 3, 32, 32), "float32"),
        k1: R.Tensor((16, 3, 3, 3), "float32"),
        g1: R.Tensor((16,), "float32"),
        be1: R.Tensor((16,), "float32"),
        m1: R.Tensor((16,), "float32"),
        v1: R.Tensor((16,), "float32"),
        k2: R.Tensor((32, 16, 3, 3), "float32"),
        g2: R.Tensor((32,), "float32"),
        be2: R.Tensor((32,), "float32"),
        m2: R.Tensor((32,), "float32"),
        v2: R.Tensor((32,), "float32"),
        w: R.Tensor((10, 32), "float32"),
        b: R.Tensor((10,), "float32"),
    ) -> R.Tensor((1, 10), "float32"):
        with R.dataflow():
            c1 = R.nn.conv2d(x, k1, strides=1, padding=1)
            n1 = R.nn.batch_norm(c1, g1, be1, m1, v1, axis=1, epsilon=1e-5)
            p1 = R.nn.max_pool2d(R.nn.relu(n1), pool_size=2, strides=2)
            c2 = R.nn.conv2d(p1, k2, strides=1, padding=1)
            n2 = R.nn.relu(R.nn.batch_norm(c2, g2, be2, m2, v2, axis=1, epsilon=1e-5))
            pooled = R.reshape(R.nn.adaptive_avg_pool2d(n2, output_size=1), (1, 32))
            out = R.linear(pooled, w, b)
            R.output(out)
        return out


def make_params(seed: int = 0) -> list[np.ndarray]:
    """Convolution kernels, batch-norm statistics and the classifier."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype("float32")

    def positive(*shape: int) -> np.ndarray:
        return rng.uniform(0.5, 1.5, shape).astype("float32")

    return [
        normal(16, 3, 3, 3, scale=0.3),
        positive(16), normal(16, scale=0.1), normal(16, scale=0.1), positive(16),
        normal(32, 16, 3, 3, scale=0.1),
        positive(32), normal(32, scale=0.1), normal(32, scale=0.1), positive(32),
        normal(10, 32, scale=0.2), normal(10, scale=0.1),
    ]  # fmt: skip


def _conv2d(x: np.ndarray, k: np.ndarray, pad: int) -> np.ndarray:
    _, c, h, w = x.shape
    o, _, kh, kw = k.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out_h, out_w = h + 2 * pad - kh + 1, w + 2 * pad - kw + 1
    cols = np.stack(
        [xp[:, :, i : i + out_h, j : j + out_w] for i in range(kh) for j in range(kw)], axis=2
    )  # n, c, kh*kw, out_h, out_w
    return np.einsum("nckhw,ock->nohw", cols, k.reshape(o, c, kh * kw))


def _batch_norm(x, gamma, beta, mean, var, eps=1e-5):
    shape = (1, -1, 1, 1)
    scale = gamma.reshape(shape) / np.sqrt(var.reshape(shape) + eps)
    return (x - mean.reshape(shape)) * scale + beta.reshape(shape)


def reference(x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    """The same network in numpy."""
    k1, g1, be1, m1, v1, k2, g2, be2, m2, v2, w, b = params
    a1 = np.maximum(_batch_norm(_conv2d(x, k1, 1), g1, be1, m1, v1), 0)
    n, c, h, w_ = a1.shape
    p1 = a1.reshape(n, c, h // 2, 2, w_ // 2, 2).max(axis=(3, 5))
    a2 = np.maximum(_batch_norm(_conv2d(p1, k2, 1), g2, be2, m2, v2), 0)
    pooled = a2.mean(axis=(2, 3))
    return pooled @ w.T + b


def run(target: str = "llvm", exec_mode: str = "bytecode", verbose: bool = True) -> float:
    """Compile, run once and return the largest absolute error against numpy."""
    started = time.perf_counter()
    ex = relaxvm.compile(CNN, target=target, exec_mode=exec_mode)
    if verbose:
        print(f"compiled for {target} ({exec_mode}) in {time.perf_counter() - started:.2f} s")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    params = make_params()
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype("float32")
    out = vm["main"](relaxvm.tensor(x), *[relaxvm.tensor(p) for p in params]).numpy()
    error = float(np.max(np.abs(out - reference(x, params))))
    if verbose:
        print(f"logits {np.round(out[0, :4], 4)}..., max |error| vs numpy = {error:.2e}")
    return error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--exec-mode", default="bytecode", choices=["bytecode", "compiled"])
    args = parser.parse_args(argv)
    ok = run(args.target, args.exec_mode) < 1e-3
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
