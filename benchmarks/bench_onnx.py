"""ONNX models in relaxvm beside onnxruntime, and ResNet-18's import + compile time.

    python benchmarks/bench_onnx.py [--models mlp,cnn,transformer] [--batches 1,32] [--seq 64]
                                    [--repeat 10] [--exec-mode compiled] [--threads N] [--no-resnet]

Measures, in one process:

* each real model of ``relaxvm.testing.onnx_models`` (an MLP, a small ResNet at 32x32, a
  transformer encoder layer, optionally ResNet-18 with ``--models ...,resnet18``), imported
  with ``from_onnx`` and compiled once (its batch and sequence dims are symbolic), at batch 1
  and batch 32 (sequence length ``--seq`` for the transformer): the median latency in relaxvm
  and in onnxruntime (CPU provider, all graph optimizations, ``intra_op_num_threads`` set to
  relaxvm's thread count), and the ratio relaxvm / onnxruntime (issue 16's target: at most
  1.5x at batch 32). Both outputs are compared first.
* importing and compiling ResNet-18 (random weights, 224x224, from a ``.onnx`` file): cold,
  in a fresh process with an empty kernel cache, and warm, in a fresh process whose cache the
  cold run filled, and again in the same process (targets: under 5 s cold, 0.5 s warm). Each
  child process times only ``from_onnx`` + ``relaxvm.compile``, not Python's start-up, ``import
  relaxvm`` or building the model.

Each block of calls starts after a short pause (``--pause``), so that the other runtime's
spinning worker threads have gone to sleep. The machine is shared and noisy: run it twice before
believing a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

MODELS = ("mlp", "cnn", "transformer", "resnet18")
TARGET_RATIO = 1.5  # issue 16: latency at most 1.5x onnxruntime's at batch 32
COLD_TARGET, WARM_TARGET = 5.0, 0.5


def build(name: str) -> tuple[Any, Callable[[int, int], dict[str, int]]]:
    """The model and how to name its symbolic dims for a batch and a sequence length."""
    from relaxvm.testing import onnx_models

    if name == "mlp":
        return onnx_models.mlp_model(in_features=784, hidden=(512, 512)), lambda b, s: {"N": b}
    if name == "cnn":
        model = onnx_models.cnn_model(size=32, widths=(32, 64, 128), blocks=2)
        return model, lambda b, s: {"N": b}
    if name == "transformer":
        model = onnx_models.transformer_encoder_model(d_model=256, heads=4, ffn=1024)
        return model, lambda b, s: {"batch": b, "seq": s}
    if name == "resnet18":
        return onnx_models.resnet18_model(batch="N"), lambda b, s: {"N": b}
    raise ValueError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


def median_seconds(fn: Callable[[], object], repeat: int, pause: float) -> float:
    """Median of ``repeat`` timed calls, after a warm-up call and a pause."""
    fn()
    time.sleep(pause)
    # Calls of a few ms: several per sample, so the timer's resolution and the loop are noise.
    started = time.perf_counter()
    fn()
    once = time.perf_counter() - started
    number = max(1, min(20, int(0.02 / max(once, 1e-9))))
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - started) / number)
    return statistics.median(samples)


def ort_session(model: Any, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def bench_latency(args: argparse.Namespace, threads: int) -> None:
    import relaxvm
    from relaxvm.frontend.onnx import from_onnx
    from relaxvm.testing.onnx_models import random_inputs

    print(
        f"latency, median of {args.repeat} ({args.exec_mode} mode; onnxruntime "
        f"intra_op_num_threads={threads}); ratio = relaxvm / onnxruntime"
    )
    header = f"{'model':20} {'batch':>5} {'compile':>8} {'relaxvm':>11} {'onnxruntime':>11} "
    print(header + f"{'ratio':>6}  target")
    verdicts = []
    for name in args.models:
        model, dims_for = build(name)
        started = time.perf_counter()
        ex = relaxvm.compile(from_onnx(model), "llvm", exec_mode=args.exec_mode)
        compile_s = time.perf_counter() - started
        main = relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"]
        session = ort_session(model, threads)
        for batch in args.batches:
            inputs = random_inputs(model, dims_for(batch, args.seq), seed=batch)
            tensors = [relaxvm.tensor(value) for value in inputs.values()]
            got = main(*tensors).numpy()
            (want,) = session.run(None, inputs)
            if not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                error = float(np.max(np.abs(got - want)))
                raise SystemExit(
                    f"{name} batch {batch}: relaxvm differs from onnxruntime ({error})"
                )
            t_ort = median_seconds(
                lambda s=session, i=inputs: s.run(None, i), args.repeat, args.pause
            )
            t_vm = median_seconds(lambda f=main, t=tensors: f(*t), args.repeat, args.pause)
            ratio = t_vm / t_ort
            verdict = ""
            if batch == 32:
                verdict = f"<= {TARGET_RATIO}x {'met' if ratio <= TARGET_RATIO else 'NOT met'}"
                verdicts.append(ratio <= TARGET_RATIO)
            label = name if name != "transformer" else f"transformer(seq {args.seq})"
            print(
                f"{label:20} {batch:>5} {compile_s:7.2f}s {t_vm * 1e3:9.3f}ms {t_ort * 1e3:9.3f}ms "
                f"{ratio:5.2f}x  {verdict}",
                flush=True,
            )
    if verdicts:
        print(f"batch-32 target met for {sum(verdicts)} of {len(verdicts)} models")


# ---- ResNet-18 import + compile -----------------------------------------------------------------
def child_compile(path: str, times: int) -> None:
    """In a child process: time ``from_onnx(path)`` + compile ``times`` times; print JSON."""
    import relaxvm
    from relaxvm.frontend.onnx import from_onnx

    results = []
    for _ in range(times):
        started = time.perf_counter()
        mod = from_onnx(path)
        imported = time.perf_counter() - started
        relaxvm.compile(mod, "llvm")
        results.append({"import": imported, "total": time.perf_counter() - started})
    print(json.dumps(results))


def run_child(path: str, cache_dir: str, times: int) -> list[dict[str, float]]:
    env = {**os.environ, "RELAXVM_CACHE_DIR": cache_dir, "RELAXVM_PROGRESS": "0"}
    done = subprocess.run(
        [sys.executable, __file__, "--child-compile", path, "--child-times", str(times)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the compile child failed:\n{done.stderr}")
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def byte_compile_packages() -> None:
    """Byte-compile relaxvm's packages, as ``pip install`` does: an editable install run with
    ``PYTHONDONTWRITEBYTECODE=1`` has no ``.pyc`` files, and each fresh process would compile
    every source again (0.2-0.4 s that an installed relaxvm never pays)."""
    import compileall
    import importlib

    for name in ("relaxvm", "relaxvm_llvm", "relaxvm_ops", "relaxvm_builtins"):
        package = importlib.import_module(name)
        compileall.compile_dir(os.path.dirname(package.__file__ or ""), quiet=1)


def bench_resnet18_compile() -> None:
    import onnx

    from relaxvm.testing.onnx_models import resnet18_model

    byte_compile_packages()

    with tempfile.TemporaryDirectory(prefix="relaxvm-bench-onnx-") as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        onnx.save(resnet18_model(), path)
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache)
        cold, same_process = run_child(path, cache, 2)
        (warm,) = run_child(path, cache, 1)
    print(
        "ResNet-18 (random weights, 1x3x224x224, from a .onnx file): import + compile "
        "(relaxvm's .pyc files written first, as pip install does)"
    )
    rows = [
        ("cold (fresh process, empty cache)", cold, COLD_TARGET),
        ("warm (fresh process, filled cache)", warm, WARM_TARGET),
        ("warm (same process, second time)", same_process, WARM_TARGET),
    ]
    for label, result, target in rows:
        total = result["total"]
        print(
            f"  {label:36} {total:7.3f} s (import {result['import']:.3f} s)  target < {target} s: "
            f"{'met' if total < target else 'NOT met'}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--seq", type=int, default=64, help="the transformer's sequence length")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--exec-mode", default="compiled", choices=["bytecode", "compiled"])
    parser.add_argument(
        "--threads", type=int, help="threads for both runtimes (default: relaxvm's own count)"
    )
    parser.add_argument("--pause", type=float, default=0.3, help="idle seconds per block")
    parser.add_argument("--no-resnet", action="store_true", help="skip ResNet-18 compile times")
    parser.add_argument("--no-latency", action="store_true", help="only ResNet-18 compile times")
    parser.add_argument("--child-compile", help=argparse.SUPPRESS)
    parser.add_argument("--child-times", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_compile:
        child_compile(args.child_compile, args.child_times)
        return 0
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    args.batches = [int(b) for b in args.batches.split(",") if b]

    # Latency runs get a cache of their own, so that the user's cache is left alone.
    os.environ.setdefault("RELAXVM_CACHE_DIR", tempfile.mkdtemp(prefix="relaxvm-bench-cache-"))
    import onnxruntime

    import relaxvm
    from relaxvm_llvm.parallel import get_num_threads, set_num_threads

    if args.threads is not None:
        set_num_threads(args.threads)
    threads = get_num_threads()
    print(
        f"relaxvm {relaxvm.__version__}; onnxruntime {onnxruntime.__version__}; "
        f"{os.cpu_count()} cpus; relaxvm threads {threads}"
    )
    if not args.no_latency:
        bench_latency(args, threads)
    if not args.no_resnet:
        bench_resnet18_compile()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
