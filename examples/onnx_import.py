"""Import an ONNX model, compile it once, run it at two batch sizes and compare with onnxruntime.

    python examples/onnx_import.py [--model tiny|mlp|cnn|transformer] [--exec-mode bytecode|compiled]

``tiny`` (the default) builds a two-layer network with ``onnx.helper`` right here; the others
are the real-model graphs of ``relaxvm.testing.onnx_models`` (an MLP, a small ResNet, a
transformer encoder layer). The model is saved to a temporary ``.onnx`` file and read back
with ``relaxvm.frontend.onnx.from_onnx``, as a model exported by PyTorch would be. Its batch
(and sequence) dims are symbolic, so one compiled module serves every size. The reference is
onnxruntime when installed, else ``onnx.reference`` (the ONNX spec's own evaluator).
Needs ``pip install "relaxvm[onnx]"``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import numpy as np

import relaxvm

MODELS = ("tiny", "mlp", "cnn", "transformer")


def tiny_model() -> Any:
    """``relu(x @ w1 + b1) @ w2 + b2`` with a symbolic batch ``N``, written with onnx.helper."""
    from onnx import TensorProto, checker, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = {
        "w1": (rng.standard_normal((8, 16)) / np.sqrt(8)).astype("float32"),
        "b1": np.zeros(16, "float32"),
        "w2": (rng.standard_normal((16, 4)) / 4).astype("float32"),
        "b2": np.full(4, 0.1, "float32"),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["a"]),
        helper.make_node("Gemm", ["a", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by older onnxruntime releases too
    checker.check_model(model, full_check=True)  # full_check: types are inferred and checked
    return model


def build(name: str) -> tuple[Any, list[dict[str, int]]]:
    """The model and the symbolic-dim sizes to run it at."""
    from relaxvm.testing import onnx_models

    if name == "tiny":
        return tiny_model(), [{"N": 1}, {"N": 5}]
    if name == "mlp":
        return onnx_models.mlp_model(in_features=64, hidden=(128,)), [{"N": 1}, {"N": 8}]
    if name == "cnn":
        return onnx_models.cnn_model(size=16, widths=(8, 16)), [{"N": 1}, {"N": 3}]
    if name == "transformer":
        model = onnx_models.transformer_encoder_model(d_model=32, heads=4, ffn=64)
        return model, [{"batch": 1, "seq": 4}, {"batch": 2, "seq": 9}]
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


def reference(model: Any, inputs: dict[str, np.ndarray]) -> tuple[list[np.ndarray], str]:
    """The model's outputs from onnxruntime, or from onnx.reference without it."""
    try:
        import onnxruntime
    except ImportError:
        from onnx.reference import ReferenceEvaluator

        return list(ReferenceEvaluator(model).run(None, inputs)), "onnx.reference"
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return list(session.run(None, inputs)), "onnxruntime"


def run(
    name: str = "tiny",
    target: str = "llvm",
    exec_mode: str = "bytecode",
    verbose: bool = True,
) -> float:
    """Import, compile and run model ``name``; returns the largest relative error against the
    reference over every run."""
    import onnx

    from relaxvm.frontend.onnx import from_onnx
    from relaxvm.testing.onnx_models import random_inputs

    model, sizes = build(name)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.onnx")
        onnx.save(model, path)
        started = time.perf_counter()
        mod = from_onnx(path)  # a path, a ModelProto or bytes
        imported = time.perf_counter() - started
    started = time.perf_counter()
    ex = relaxvm.compile(mod, target, exec_mode=exec_mode)
    compiled = time.perf_counter() - started
    if verbose:
        ops = sorted({node.op_type for node in model.graph.node})
        print(f"{name}: {len(model.graph.node)} nodes ({', '.join(ops)})")
        print(f"imported in {imported * 1e3:.0f} ms, compiled for {target} in {compiled:.2f} s")
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    worst = 0.0
    for dims in sizes:
        inputs = random_inputs(model, dims, seed=sum(dims.values()))
        got = vm["main"](*[relaxvm.tensor(value) for value in inputs.values()]).numpy()
        (want,), source = reference(model, inputs)
        error = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
        worst = max(worst, error)
        if verbose:
            sizes_text = ", ".join(f"{k}={v}" for k, v in dims.items())
            print(f"  {sizes_text}: output {got.shape}, max relative error vs {source} {error:.1e}")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", choices=MODELS)
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--exec-mode", default="bytecode", choices=["bytecode", "compiled"])
    args = parser.parse_args(argv)
    ok = run(args.model, args.target, args.exec_mode) < 1e-4
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
