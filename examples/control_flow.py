"""Control flow in Relax: if/else on a tensor condition, calls between functions, recursion
and a closure, written in the script format.

    python examples/control_flow.py [--target llvm] [--exec-mode bytecode|compiled]
"""

# `cls` inside a script-format module names the module itself (as in TVMScript); ruff cannot
# know that, and `if`/`else` must stay statements there (no conditional expressions).
# ruff: noqa: F821, SIM108

from __future__ import annotations

import argparse

import numpy as np

import relaxvm
from relaxvm.script import ir as I
from relaxvm.script import relax as R


@I.ir_module
class ControlFlow:
    @R.function
    def halve(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.multiply(x, R.const(0.5, "float32"))

    @R.function
    def choose(x: R.Tensor((4,), "float32"), flag: R.Tensor((), "bool")) -> R.Tensor(
        (4,), "float32"
    ):
        # halve when flag is true, relu otherwise
        if flag:
            y = cls.halve(x)
        else:
            y = R.nn.relu(x)
        return y

    @R.function
    def add_n_times(x: R.Tensor((4,), "float32"), n: R.Tensor((), "int64")) -> R.Tensor(
        (4,), "float32"
    ):
        # x + n, one recursive call per unit
        if R.greater(n, R.const(0, "int64")):
            r = cls.add_n_times(
                R.add(x, R.const(1.0, "float32")), R.subtract(n, R.const(1, "int64"))
            )
        else:
            r = x
        return r

    @R.function
    def scale_by_closure(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        # a local function capturing x
        @R.function
        def times_x(y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            return R.multiply(x, y)

        return times_x(R.add(x, R.const(1.0, "float32")))


def run(target: str = "llvm", exec_mode: str = "bytecode", verbose: bool = True) -> bool:
    """Compile and check every function against numpy; True when all match."""
    ex = relaxvm.compile(ControlFlow, target=target, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.array([-2.0, -0.5, 1.0, 3.0], "float32")
    tx = relaxvm.tensor(x)
    cases = [
        ("choose(flag=True)", vm["choose"](tx, relaxvm.tensor(np.array(True))), x * 0.5),
        ("choose(flag=False)", vm["choose"](tx, relaxvm.tensor(np.array(False))), np.maximum(x, 0)),
        ("add_n_times(n=5)", vm["add_n_times"](tx, relaxvm.tensor(np.array(5))), x + 5),
        ("scale_by_closure", vm["scale_by_closure"](tx), x * (x + 1)),
    ]
    ok = True
    for name, got, want in cases:
        match = np.allclose(got.numpy(), want)
        ok &= match
        if verbose:
            print(f"{name:20s} -> {got.numpy()}  {'ok' if match else f'MISMATCH (want {want})'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--exec-mode", default="bytecode", choices=["bytecode", "compiled"])
    args = parser.parse_args(argv)
    ok = run(args.target, args.exec_mode)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
