"""relaxvm's CUDA target beside torch (when installed) on the same GPU, in one process.

    python benchmarks/bench_cuda.py [--workloads add,matmul,mlp,softmax] [--repeat 20]
                                    [--scale 1.0] [--simulate] [--json PATH]

Workloads and issue 9's targets (relaxvm / torch):

| workload | measure | target |
|---|---|---|
| ``add``: elementwise add of two 64M-element float32 vectors | GB/s | at least 0.8x torch's |
| ``matmul``: 4096^3 float32 | TFLOP/s | at least 0.5x torch's |
| ``mlp``: the 3-layer MLP of ``bench_models.py``, 512 wide, batch 64 | latency | at most 1.5x |
| ``softmax``: rows of 4096 float32 (4096 rows) | GB/s | at least 0.8x torch's |

Every relaxvm result is compared with numpy before timing. A sample is one call followed by a
device synchronization (``cuCtxSynchronize``; ``torch.cuda.synchronize`` for torch), after an
untimed warm-up; the table shows medians. ``--scale`` shrinks every extent (``0.0625`` makes
everything tiny). Without a GPU the script says which of driver or device is missing and exits
with status 2; ``--simulate`` runs on relaxvm's simulated device instead (``RELAXVM_CUDA_
SIMULATOR``: kernels run on the TIR interpreter, so timings mean nothing: it checks that the
script works, and the smoke test uses it at tiny sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import build_mlp, numpy_mlp

WORKLOADS = ("add", "matmul", "mlp", "softmax")


@dataclass
class Row:
    """One workload's result: medians in seconds, the measure, the ratio and the verdict."""

    workload: str
    relaxvm_s: float
    torch_s: float | None
    measure: str  # "GB/s", "TFLOP/s" or "ms"
    relaxvm_value: float
    torch_value: float | None
    ratio: float | None  # relaxvm / torch in the measure's sense (speed, or latency for ms)
    target: str
    met: bool | None


@dataclass
class Workload:
    name: str
    module: Any  # the IRModule
    inputs: list[np.ndarray]
    reference: Callable[..., np.ndarray]
    measure: str
    amount: float  # bytes or FLOPs per call (unused for latency)
    target: tuple[str, float]  # (">=" or "<=", ratio)
    torch_fn: Callable[..., Any] | None = None


def _extent(value: int, scale: float, multiple: int = 1) -> int:
    return max(multiple, int(value * scale) // multiple * multiple)


def make_workloads(names: list[str], scale: float) -> list[Workload]:
    from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var
    from relaxvm.ir.relax import op as R

    rng = np.random.default_rng(0)
    out = []

    def single(
        name: str, shapes: list[tuple[int, ...]], build: Callable[..., Any]
    ) -> tuple[Any, list[np.ndarray]]:
        params = [Var(f"x{i}", TensorStructInfo(s, "float32")) for i, s in enumerate(shapes)]
        bb = BlockBuilder()
        with bb.function("main", params):
            bb.emit_func_output(bb.emit(build(*params)))
        inputs = [rng.standard_normal(s, dtype="float32") for s in shapes]
        return bb.finalize(), inputs

    for name in names:
        if name == "add":
            n = _extent(64 << 20, scale, 256)
            mod, inputs = single(name, [(n,), (n,)], R.add)
            out.append(Workload(name, mod, inputs, np.add, "GB/s", 12.0 * n, (">=", 0.8),
                                lambda a, b: a + b))  # fmt: skip
        elif name == "matmul":
            n = _extent(4096, scale, 16)
            mod, inputs = single(name, [(n, n), (n, n)], R.matmul)
            out.append(Workload(name, mod, inputs, np.matmul, "TFLOP/s", 2.0 * n**3, (">=", 0.5),
                                lambda a, b: a @ b))  # fmt: skip
        elif name == "softmax":
            rows, cols = _extent(4096, scale), _extent(4096, scale, 32)
            mod, inputs = single(name, [(rows, cols)], lambda x: R.nn.softmax(x, axis=-1))

            def softmax_ref(x: np.ndarray) -> np.ndarray:
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)

            out.append(Workload(name, mod, inputs, softmax_ref, "GB/s", 8.0 * rows * cols,
                                (">=", 0.8), lambda x: x.softmax(dim=-1)))  # fmt: skip
        elif name == "mlp":
            width, batch = _extent(512, scale, 16), _extent(64, scale)
            weights = []
            for _ in range(3):
                weights.append(rng.standard_normal((width, width), dtype="float32") / width**0.5)
                weights.append(rng.standard_normal((width,), dtype="float32"))
            x = rng.standard_normal((batch, width), dtype="float32")

            def torch_mlp(x: Any, *w: Any) -> Any:
                h = x
                for layer in range(3):
                    h = h @ w[2 * layer] + w[2 * layer + 1]
                    if layer < 2:
                        h = h.relu()
                return h

            out.append(Workload(name, build_mlp(width), [x, *weights],
                                lambda x, *w: numpy_mlp(x, list(w)), "ms", 0.0, ("<=", 1.5),
                                torch_mlp))  # fmt: skip
        else:
            raise SystemExit(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    return out


def _median_seconds(call: Callable[[], Any], sync: Callable[[], None], repeat: int) -> float:
    call()
    sync()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        sync()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _value(workload: Workload, seconds: float) -> float:
    if workload.measure == "ms":
        return seconds * 1e3
    scale = 1e9 if workload.measure == "GB/s" else 1e12
    return workload.amount / seconds / scale


def run(workload: Workload, repeat: int, torch: Any) -> Row:
    import relaxvm
    from relaxvm_cuda.driver import get_driver

    device = relaxvm.cuda(0)
    ex = relaxvm.compile(workload.module, "cuda")
    vm = relaxvm.VirtualMachine(ex, device)
    tensors = [relaxvm.tensor(a, device) for a in workload.inputs]
    got = vm["main"](*tensors).numpy()
    want = workload.reference(*workload.inputs)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3, err_msg=workload.name)
    driver = get_driver()
    seconds = _median_seconds(lambda: vm["main"](*tensors), lambda: driver.synchronize(0), repeat)
    torch_seconds = None
    if torch is not None and workload.torch_fn is not None:
        args = [torch.from_numpy(a).cuda() for a in workload.inputs]
        fn = workload.torch_fn
        torch_seconds = _median_seconds(lambda: fn(*args), torch.cuda.synchronize, repeat)
    value = _value(workload, seconds)
    torch_value = None if torch_seconds is None else _value(workload, torch_seconds)
    ratio = None if torch_value is None else value / torch_value
    sense, bound = workload.target
    met = None if ratio is None else (ratio >= bound if sense == ">=" else ratio <= bound)
    return Row(workload.name, seconds, torch_seconds, workload.measure, value, torch_value,
               ratio, f"{sense} {bound}x torch", met)  # fmt: skip


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--scale", type=float, default=1.0, help="shrink every extent")
    parser.add_argument("--simulate", action="store_true", help="the simulated device")
    parser.add_argument("--json", help="also write the rows as JSON to this path")
    args = parser.parse_args(argv)
    if args.simulate:
        os.environ["RELAXVM_CUDA_SIMULATOR"] = "1"
    import relaxvm
    from relaxvm_cuda.driver import driver_unavailable_reason, get_driver

    reason = driver_unavailable_reason()
    if reason is not None:
        print(f"bench_cuda: no GPU to measure on: {reason} (--simulate runs on the simulator)")
        return 2
    driver = get_driver()
    name = driver.device_name(0)
    major, minor = driver.compute_capability(0)
    torch = None if args.simulate else _torch()
    print(f"relaxvm {relaxvm.__version__}; GPU 0: {name} (sm_{major}{minor}); torch: "
          f"{'yes' if torch is not None else 'not installed (relaxvm only)'}"
          f"{'; SIMULATED: timings mean nothing' if args.simulate else ''}")  # fmt: skip
    names = [n for n in args.workloads.split(",") if n]
    rows = [run(w, args.repeat, torch) for w in make_workloads(names, args.scale)]
    print(f"{'workload':10} {'relaxvm':>12} {'torch':>12} {'ratio':>7}  target")
    for row in rows:
        theirs = "-" if row.torch_value is None else f"{row.torch_value:.3f}"
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        verdict = "" if row.met is None else ("met" if row.met else "NOT met")
        print(f"{row.workload:10} {row.relaxvm_value:9.3f} {row.measure:>3} {theirs:>12} "
              f"{ratio:>7}  {row.target} {verdict}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
