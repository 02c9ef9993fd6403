"""Compile time, and the VM's per-op overhead in bytecode and compiled mode.

Run from the repository root (the project must be installed)::

    python benchmarks/bench_compile.py [--target llvm] [--number 200] [--repeat 5]

What is measured, all in this one process:

* **compile time** of a 3-layer MLP (symbolic batch, fused by the default pipeline) and of a
  chain of 100 elementwise ops (unfused: ``get_pipeline("default", fuse=False)``);
* **per-op cost of the 100-op unfused chain** on 4-element tensors: one ``vm["main"](x)``
  divided by 100, in bytecode and in compiled mode, with the target's kernels (``full``) and
  with every kernel replaced by a Python no-op (``overhead``: what the VM itself costs per op:
  the planned ``alloc_tensor``, the kernel call, the kill, the dispatch);
* **numpy** doing the same 100 ops on the same arrays, for scale.

Targets (issue 4): VM overhead at most 1.0 µs per op in bytecode mode, and compiled mode at
most half of bytecode. The script prints the ratios and whether this run meets them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.target import Target
from relaxvm.transform import get_pipeline
from relaxvm.vm.executable.executable import Executable

CHAIN_LENGTH = 100
TARGET_BYTECODE_US = 1.0
TARGET_COMPILED_RATIO = 0.5


def mlp_module() -> rx.IRModule:
    """Three dense layers with relu, symbolic batch."""
    n = SymVar("n")
    x = rx.Var("x", rx.TensorStructInfo([n, 64], "float32"))
    weights = [rx.Var(f"w{i}", rx.TensorStructInfo([64, 64], "float32")) for i in range(3)]
    biases = [rx.Var(f"b{i}", rx.TensorStructInfo([64], "float32")) for i in range(3)]
    bb = rx.BlockBuilder()
    with bb.function("main", [x, *weights, *biases]):
        with bb.dataflow():
            h: Any = x
            for w, b in zip(weights, biases, strict=True):
                h = bb.emit(op.nn.relu(op.add(op.matmul(h, w), b)))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def chain_module(length: int = CHAIN_LENGTH) -> rx.IRModule:
    """``length`` elementwise ops on a 4-element tensor: add, multiply, add, ..."""
    x = rx.Var("x", rx.TensorStructInfo([4], "float32"))
    one, half = rx.const(np.float32(1.0)), rx.const(np.float32(0.5))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y: Any = x
            for i in range(length):
                y = bb.emit(op.add(y, one) if i % 2 == 0 else op.multiply(y, half))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def numpy_chain(x: np.ndarray, length: int = CHAIN_LENGTH) -> np.ndarray:
    y = x
    for i in range(length):
        y = np.add(y, np.float32(1.0)) if i % 2 == 0 else np.multiply(y, np.float32(0.5))
    return y


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


def without_kernels(ex: Executable) -> Executable:
    """The same program with every kernel a registered Python no-op (imports dropped)."""
    bare = Executable(
        ex.func_table, ex.constants, ex.instr_offset, ex.instr_data, ex.memory_scopes, ex.exec_mode
    )
    for module in ex.imports:
        for name in module.list_functions():
            relaxvm.register_func(name, lambda *args: None, override=True)
    return bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="llvm", help="target kind to build kernels with")
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    target = Target(args.target)
    mcpu = target.get("mcpu")
    print(
        f"relaxvm {relaxvm.__version__}, target {target.kind.name}"
        + (f" -mcpu={mcpu}" if mcpu else "")
    )

    start = time.perf_counter()
    relaxvm.compile(mlp_module(), target)
    mlp_s = time.perf_counter() - start
    unfused = get_pipeline("default", target=target, fuse=False)
    start = time.perf_counter()
    relaxvm.compile(chain_module(), target, relax_pipeline=unfused)
    chain_s = time.perf_counter() - start
    print(
        f"compile time: 3-layer MLP {mlp_s * 1e3:.0f} ms, 100-op chain (unfused) {chain_s * 1e3:.0f} ms"
    )

    x_np = np.linspace(-1, 1, 4, dtype="float32")
    x = relaxvm.tensor(x_np)
    expected = numpy_chain(x_np)
    numpy_us = best_of(lambda: numpy_chain(x_np), args.number, args.repeat) * 1e6 / CHAIN_LENGTH
    results: dict[tuple[str, str], float] = {}
    for mode in ("bytecode", "compiled"):
        ex = relaxvm.compile(chain_module(), target, relax_pipeline=unfused, exec_mode=mode)
        vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
        got = vm["main"](x).numpy()
        if not np.allclose(got, expected, rtol=1e-5, atol=1e-5):
            raise SystemExit(f"{mode}: the chain's result differs from numpy")
        run = vm["main"]
        results[mode, "full"] = best_of(lambda run=run: run(x), args.number, args.repeat)
        bare_vm = relaxvm.VirtualMachine(without_kernels(ex), relaxvm.cpu())
        bare = bare_vm["main"]
        results[mode, "overhead"] = best_of(lambda bare=bare: bare(x), args.number, args.repeat)

    print(f"\nper op of the {CHAIN_LENGTH}-op unfused chain on 4-element float32 tensors (µs):")
    print(f"  {'':<10}{'full':>10}{'overhead':>12}")
    for mode in ("bytecode", "compiled"):
        full = results[mode, "full"] * 1e6 / CHAIN_LENGTH
        over = results[mode, "overhead"] * 1e6 / CHAIN_LENGTH
        print(f"  {mode:<10}{full:>10.3f}{over:>12.3f}")
    print(f"  {'numpy':<10}{numpy_us:>10.3f}")
    byte_over = results["bytecode", "overhead"] * 1e6 / CHAIN_LENGTH
    comp_over = results["compiled", "overhead"] * 1e6 / CHAIN_LENGTH
    ratio = comp_over / byte_over
    print(
        f"\nratios: compiled/bytecode overhead {ratio:.2f}, "
        f"bytecode full/numpy {results['bytecode', 'full'] * 1e6 / CHAIN_LENGTH / numpy_us:.2f}, "
        f"compiled full/numpy {results['compiled', 'full'] * 1e6 / CHAIN_LENGTH / numpy_us:.2f}"
    )
    ok_byte = byte_over <= TARGET_BYTECODE_US
    ok_comp = ratio <= TARGET_COMPILED_RATIO
    print(
        f"targets: bytecode overhead <= {TARGET_BYTECODE_US} µs/op: "
        f"{'met' if ok_byte else 'NOT met'}; compiled <= {TARGET_COMPILED_RATIO} x bytecode: "
        f"{'met' if ok_comp else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
