"""Dynamic shapes with the BlockBuilder API: one executable serves every batch size.

    python examples/dynamic_batch.py [--target llvm] [--exec-mode ...] [--batch 1 3 17]

The function takes ``x: (n, 16)`` with a symbolic ``n``, computes ``relu(x @ w + b)``,
concatenates the result with itself along the batch axis (shape ``(n * 2, 8)``) and sums over
the features. A wrongly shaped input is refused with an error that names the parameter.
"""

from __future__ import annotations

import argparse

import numpy as np

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, IRModule, TensorStructInfo, Var
from relaxvm.ir.relax import op as R


def build() -> IRModule:
    """The module, built binding by binding."""
    n = SymVar("n", "int64")
    x = Var("x", TensorStructInfo((n, 16), "float32"))
    w = Var("w", TensorStructInfo((16, 8), "float32"))
    b = Var("b", TensorStructInfo((8,), "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.add(R.matmul(x, w), b)))
            doubled = bb.emit(R.concat([h, h], axis=0))  # (n * 2, 8)
            out = bb.emit_output(R.sum(doubled, axis=[1]))  # (n * 2,)
        bb.emit_func_output(out)
    return bb.get()


def run(
    batches: list[int], target: str = "llvm", exec_mode: str = "bytecode", verbose: bool = True
) -> bool:
    """Compile once, run for each batch size, check a bad input is refused."""
    mod = build()
    if verbose:
        print(mod["main"])
    ex = relaxvm.compile(mod, target=target, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    ok = True
    for n in batches:
        x = rng.standard_normal((n, 16)).astype("float32")
        got = vm["main"](relaxvm.tensor(x), relaxvm.tensor(w), relaxvm.tensor(b)).numpy()
        h = np.maximum(x @ w + b, 0)
        want = np.concatenate([h, h]).sum(axis=1)
        match = got.shape == (2 * n,) and np.allclose(got, want, atol=1e-4)
        ok &= match
        if verbose:
            print(f"batch {n:3d}: output shape {got.shape}  {'ok' if match else 'MISMATCH'}")
    try:
        vm["main"](
            relaxvm.tensor(np.ones((4, 15), "float32")), relaxvm.tensor(w), relaxvm.tensor(b)
        )
    except relaxvm.errors.RelaxVMError as err:  # a RuntimeError here, as in TVM
        if verbose:
            print(f"bad input refused: {str(err).splitlines()[0]}")
    else:
        ok = False
        print("a (4, 15) input was not refused")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--exec-mode", default="bytecode", choices=["bytecode", "compiled"])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 3, 17])
    args = parser.parse_args(argv)
    ok = run(args.batch, args.target, args.exec_mode)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
