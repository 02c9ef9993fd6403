"""relaxvm's LLVM CPU target beside numpy, onnxruntime and torch, 1 thread and N threads.

    python benchmarks/bench_cpu.py [--workloads matmul512,add,...] [--interfere none|numpy|
                                   process|threads|all] [--repeat 40] [--quick] [--json PATH]

Measures, in one process, for each workload and each interference mode: relaxvm with one
thread and with N threads (N = the CPUs this process may use), numpy, onnxruntime
(``intra_op_num_threads`` = N) and torch (when importable, ``set_num_threads(N)``). Workloads:
matmul 512^3 and 1024^3 and the add of two 4M-element vectors (throughput), the 3-layer MLP of
``bench_models.py`` at batch 64 and 1, the transformer encoder layer of
``relaxvm.testing.onnx_models`` and a ResNet-style 3x3 conv2d 56x56x64 -> 64 (latency, ms).
Every relaxvm result is checked against a reference before timing.

Interference modes: ``none``; ``numpy`` (a 256x256 numpy matmul before every timed call, so
OpenBLAS's worker threads are spinning while the timed call runs); ``process`` (a busy Python
process pinned to one core for the whole workload); ``threads`` (a second relaxvm VM running
the same workload in a loop on a background Python thread).

Each timed sample is one call (after an untimed warm-up call); the table shows the median and
the 90th percentile of latency (for throughput rows: the throughput at those latencies). Every
block of calls starts after a short pause so that the spinning workers of whichever runtime ran
last have gone to sleep. See docs/performance.md for how to read the ratios and the targets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import build_mlp, numpy_mlp

WORKLOADS = (
    "matmul512",
    "matmul1024",
    "add",
    "mlp64",
    "mlp1",
    "mlp64c",
    "mlp1c",
    "transformer",
    "conv",
)
MODES = ("none", "numpy", "process", "threads")
THROUGHPUT_UNITS = ("GFLOP/s", "GB/s")
#: N threads may be at most this much slower than 1 thread (issue 14).
THREAD_TOLERANCE = 1.10
#: The busy process of ``--interfere process``: it spins, and exits if its parent dies.
_BUSY_LOOP = (
    "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n"
    "    for _ in range(200000):\n        pass\n"
)


@dataclass
class Target:
    """One of the issue's targets: ``ratio(ref) op value`` (ratios as in :func:`ratio`)."""

    ref: str
    op: str  # ">=" or "<="
    value: float
    note: str = ""

    def verdict(self, r: float | None) -> str:
        text = f"target {self.op} {self.value:g}x {self.ref}{self.note}: "
        if r is None:
            return text + f"n/a ({self.ref} not measured)"
        met = r >= self.value if self.op == ">=" else r <= self.value
        return text + ("met" if met else "NOT met")


@dataclass
class Workload:
    """A workload: a factory of relaxvm calls (each with its own VM) and the references."""

    key: str
    label: str
    unit: str  # GFLOP/s, GB/s or ms
    amount: float  # flop or bytes per call (throughput units only)
    make_call: Callable[[], Callable[[], Any]]
    expected: np.ndarray
    refs: dict[str, Callable[[], Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)


# ---- building the workloads ------------------------------------------------------------------
class Builder:
    """Builds the workloads at a size scale, sharing compiled modules and sessions."""

    def __init__(self, args: argparse.Namespace, threads: int) -> None:
        import relaxvm

        self.relaxvm = relaxvm
        self.args = args
        self.threads = threads
        self.rng = np.random.default_rng(0)
        self.torch = _import_torch(threads)
        self._mlp: tuple[Any, list[np.ndarray], Any] | None = None
        self._mlp_constants: Any = None

    def dim(self, size: int, multiple: int = 1) -> int:
        return max(multiple, round(size * self.args.scale / multiple) * multiple)

    def compile(self, mod: Any) -> Any:
        return self.relaxvm.compile(mod, "llvm", exec_mode=self.args.exec_mode)

    def vm_call(self, ex: Any, inputs: list[np.ndarray]) -> Callable[[], Callable[[], Any]]:
        relaxvm = self.relaxvm

        def make() -> Callable[[], Any]:
            main = relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"]
            tensors = [relaxvm.tensor(value) for value in inputs]
            return lambda: main(*tensors)

        return make

    def session(self, model: Any) -> Any:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        return onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )

    def one_node(self, op: str, inputs: dict[str, np.ndarray], **attrs: Any) -> Workload:
        """relaxvm (through ``from_onnx``) and onnxruntime on a one-node ONNX model."""
        from onnx import TensorProto, helper, numpy_helper

        from relaxvm.frontend.onnx import from_onnx

        feeds = {k: v for k, v in inputs.items() if not k.startswith("w")}
        graph = helper.make_graph(
            [helper.make_node(op, list(inputs), ["y"], **attrs)],
            op.lower(),
            [
                helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                for k, v in feeds.items()
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(v, k) for k, v in inputs.items() if k not in feeds],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = min(model.ir_version, 10)  # onnxruntime lags the newest IR
        session = self.session(model)
        (expected,) = session.run(None, feeds)
        make = self.vm_call(self.compile(from_onnx(model)), list(feeds.values()))
        work = Workload("", "", "ms", 0.0, make, expected)
        work.refs["onnxruntime"] = lambda: session.run(None, feeds)
        return work

    def matmul(self, key: str, size: int) -> Workload:
        n = self.dim(size, 16)
        a, b = (self.rng.standard_normal((n, n)).astype("float32") for _ in range(2))
        work = self.one_node("MatMul", {"a": a, "b": b})
        work.key, work.label, work.unit, work.amount = key, f"matmul {n}^3", "GFLOP/s", 2.0 * n**3
        work.refs = {"numpy": lambda: a @ b, **work.refs}
        if self.torch is not None:
            ta, tb = self.torch.from_numpy(a), self.torch.from_numpy(b)
            work.refs["torch"] = lambda: self.torch.mm(ta, tb)
        if size == 512:
            work.targets.append(Target("numpy", ">=", 1.2, " (with numpy's BLAS active)"))
        return work

    def add(self) -> Workload:
        n = self.dim(4 * 1024 * 1024, 1024)
        a, b = (self.rng.standard_normal(n).astype("float32") for _ in range(2))
        work = self.one_node("Add", {"a": a, "b": b})
        label = f"add {n // (1024 * 1024)}M" if n >= 1 << 20 else f"add {n // 1024}K"
        work.key, work.label, work.unit, work.amount = "add", label, "GB/s", 12.0 * n
        work.refs = {"numpy": lambda: a + b, **work.refs}
        if self.torch is not None:
            ta, tb = self.torch.from_numpy(a), self.torch.from_numpy(b)
            work.refs["torch"] = lambda: ta + tb
        work.targets.append(Target("numpy", ">=", 1.8))
        return work

    def mlp(self, batch: int, constants: bool = False) -> Workload:
        """The MLP with its weights as parameters (``mlpB``), or as constants (``mlpBc``: the
        ONNX graph onnxruntime runs, imported with ``from_onnx``, so the weights are packed
        at compile time as in a deployed model)."""
        width = self.dim(512, 16)
        if self._mlp is None:  # one module (symbolic batch) and session serve both batches
            weights = []
            for _ in range(3):
                weights.append(self.rng.standard_normal((width, width)) / np.sqrt(width))
                weights.append(self.rng.standard_normal(width) * 0.1)
            weights = [w.astype("float32") for w in weights]
            session = self.session(onnx_mlp(weights))
            self._mlp = (self.compile(build_mlp(width)), weights, session)
        ex, weights, session = self._mlp
        x = self.rng.standard_normal((batch, width)).astype("float32")
        if constants:
            from relaxvm.frontend.onnx import from_onnx

            if self._mlp_constants is None:
                self._mlp_constants = self.compile(from_onnx(onnx_mlp(weights)))
            make = self.vm_call(self._mlp_constants, [x])
            key, label = f"mlp{batch}c", f"MLP {width}x3 b{batch} const"
        else:
            make = self.vm_call(ex, [x, *weights])
            key, label = f"mlp{batch}", f"MLP {width}x3 b{batch}"
        work = Workload(key, label, "ms", 0.0, make, numpy_mlp(x, weights))
        work.refs["numpy"] = lambda: numpy_mlp(x, weights)
        work.refs["onnxruntime"] = lambda: session.run(None, {"x": x})
        if self.torch is not None:
            torch = self.torch
            tx, tw = torch.from_numpy(x), [torch.from_numpy(w) for w in weights]

            def torch_mlp() -> Any:
                with torch.no_grad():
                    h = tx
                    for layer in range(3):
                        h = torch.addmm(tw[2 * layer + 1], h, tw[2 * layer])
                        h = torch.relu(h) if layer < 2 else h
                    return h

            work.refs["torch"] = torch_mlp
        work.targets.append(Target("onnxruntime", "<=", 1.0))
        work.targets.append(Target("numpy", "<=", 0.8 if batch > 1 else 0.6))
        return work

    def transformer(self) -> Workload:
        from relaxvm.frontend.onnx import from_onnx
        from relaxvm.testing.onnx_models import random_inputs, transformer_encoder_model

        d_model = self.dim(256, 16)
        seq = self.dim(64, 4)
        model = transformer_encoder_model(d_model=d_model, heads=4, ffn=4 * d_model)
        feeds = random_inputs(model, {"batch": 1, "seq": seq}, seed=1)
        session = self.session(model)
        (expected,) = session.run(None, feeds)
        make = self.vm_call(self.compile(from_onnx(model)), list(feeds.values()))
        work = Workload("transformer", f"transformer d{d_model} s{seq}", "ms", 0.0, make, expected)
        work.refs["onnxruntime"] = lambda: session.run(None, feeds)
        work.skipped["numpy"] = "no numpy version"
        work.targets.append(Target("onnxruntime", "<=", 1.0))
        return work

    def conv(self) -> Workload:
        size, channels = self.dim(56, 2), self.dim(64, 8)
        x = self.rng.standard_normal((1, channels, size, size)).astype("float32")
        w = (self.rng.standard_normal((channels, channels, 3, 3)) / (3 * channels**0.5)).astype(
            "float32"
        )
        work = self.one_node("Conv", {"x": x, "w": w}, pads=[1, 1, 1, 1])
        work.key, work.label = "conv", f"conv3x3 {size}x{size}x{channels}"
        work.unit, work.amount = "GFLOP/s", 2.0 * channels * channels * 9 * size * size
        work.skipped["numpy"] = "no numpy conv"
        if self.torch is not None:
            torch = self.torch
            tx, tw = torch.from_numpy(x), torch.from_numpy(w)
            with torch.no_grad():
                work.expected = torch.nn.functional.conv2d(tx, tw, padding=1).numpy()
            work.refs["torch"] = lambda: torch.nn.functional.conv2d(tx, tw, padding=1)
        work.targets.append(Target("torch", ">=", 1.0))
        return work

    def build(self, key: str) -> Workload:
        if key.startswith("matmul"):
            return self.matmul(key, int(key[len("matmul") :]))
        if key.startswith("mlp"):
            return self.mlp(int(key[len("mlp") :].rstrip("c")), constants=key.endswith("c"))
        work: Workload = getattr(self, key)()
        return work


def onnx_mlp(weights: list[np.ndarray]) -> Any:
    """The MLP of :func:`build_mlp` as an ONNX model (``MatMul``, ``Add``, ``Relu``) with
    these weights as initializers and a symbolic batch ``N``."""
    from onnx import TensorProto, helper, numpy_helper

    width = weights[0].shape[0]
    nodes, h = [], "x"
    for layer in range(3):
        nodes.append(helper.make_node("MatMul", [h, f"w{layer}"], [f"m{layer}"]))
        h = "y" if layer == 2 else f"a{layer}"
        nodes.append(helper.make_node("Add", [f"m{layer}", f"b{layer}"], [h]))
        if layer < 2:
            nodes.append(helper.make_node("Relu", [h], [f"r{layer}"]))
            h = f"r{layer}"
    names = [f"{kind}{layer}" for layer in range(3) for kind in "wb"]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])],
        [numpy_helper.from_array(w, name) for w, name in zip(weights, names, strict=True)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 10)  # onnxruntime lags the newest IR
    return model


def _import_torch(threads: int) -> Any:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        return None
    torch.set_num_threads(threads)
    return torch


# ---- timing ----------------------------------------------------------------------------------
def sample(fn: Callable[[], Any], repeat: int, before: Callable[[], Any] | None) -> list[float]:
    """Seconds of ``repeat`` single calls after a warm-up call; ``before`` runs untimed
    before each call (the numpy interference)."""
    fn()
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def ratio(unit: str, t_vm: float, t_ref: float) -> float:
    """Throughput units: relaxvm's speed over the reference's (higher is better); latency:
    relaxvm's latency over the reference's (lower is better)."""
    return t_ref / t_vm if unit in THROUGHPUT_UNITS else t_vm / t_ref


@contextlib.contextmanager
def interference(mode: str, work: Workload) -> Iterator[Callable[[], Any] | None]:
    """Set up one interference mode for a workload; yields the per-call hook (or None)."""
    if mode == "numpy":
        m = np.random.default_rng(1).standard_normal((256, 256)).astype("float32")
        yield lambda: m @ m
    elif mode == "process":
        busy = subprocess.Popen([sys.executable, "-c", _BUSY_LOOP])
        try:
            with contextlib.suppress(AttributeError, OSError):
                cpus = sorted(os.sched_getaffinity(0))
                os.sched_setaffinity(busy.pid, {cpus[-1]})
            yield None
        finally:  # never leave a spinning process behind (Ctrl-C and errors included)
            busy.kill()
            busy.wait()
    elif mode == "threads":
        call, stop, errors = work.make_call(), threading.Event(), []

        def loop() -> None:
            try:
                while not stop.is_set():
                    call()
            except BaseException as err:  # reported below, never lost
                errors.append(err)

        worker = threading.Thread(target=loop, name="bench-background-vm", daemon=True)
        worker.start()
        try:
            yield None
        finally:
            stop.set()
            worker.join()
        if errors:
            raise SystemExit(f"{work.label}: the background VM failed: {errors[0]!r}")
    else:
        yield None


def measure(work: Workload, mode: str, args: argparse.Namespace, threads: int) -> dict[str, Any]:
    """Samples of relaxvm (1 and N threads) and of every reference under one mode.

    The calls are split into ``--rounds`` rounds of one block per contender, and the two
    thread counts swap places every round (A-B-B-A), so that a change of the machine's load
    hits every contender alike. Each block starts with a pause, so that the worker threads of
    whatever ran before (OpenBLAS, onnxruntime: they spin after a call) are asleep, except in
    the numpy mode, whose point is that they are not."""
    from relaxvm_llvm.parallel import set_num_threads

    call = work.make_call()
    names = [f"relaxvm {count}t" for count in (1, threads)] + list(work.refs)
    samples: dict[str, list[float]] = {name: [] for name in names}
    per_block = max(1, args.repeat // args.rounds)
    pause = 0.0 if mode == "numpy" else args.pause
    with interference(mode, work) as before:
        for index in range(args.rounds):
            counts = (1, threads) if index % 2 == 0 else (threads, 1)
            blocks = [(f"relaxvm {c}t", call, c) for c in counts]
            blocks += [(name, fn, threads) for name, fn in work.refs.items()]
            for name, fn, count in blocks:
                set_num_threads(count)
                time.sleep(pause)
                samples[name] += sample(fn, per_block, before)
    set_num_threads(threads)
    return samples


# ---- report ----------------------------------------------------------------------------------
def summarize(work: Workload, samples: dict[str, list[float]], threads: int) -> dict[str, Any]:
    stats = {
        name: {"median_s": float(np.median(s)), "p90_s": float(np.percentile(s, 90))}
        for name, s in samples.items()
    }
    t1, tn = stats["relaxvm 1t"]["median_s"], stats[f"relaxvm {threads}t"]["median_s"]
    ratios = {ref: ratio(work.unit, tn, stats[ref]["median_s"]) for ref in work.refs}
    verdicts = [t.verdict(ratios.get(t.ref)) for t in work.targets]
    return {
        "workload": work.key, "label": work.label, "unit": work.unit, "amount": work.amount,
        "stats": stats,
        "threads_ratio": tn / t1, "loses": tn / t1 > THREAD_TOLERANCE,
        "ratios": ratios, "targets": verdicts, "skipped": work.skipped,
    }  # fmt: skip


def show(work: Workload, seconds: float) -> str:
    if work.unit in THROUGHPUT_UNITS:
        return f"{work.amount / seconds / 1e9:9.1f}"
    return f"{seconds * 1e3:9.3f}"


def print_row(work: Workload, result: dict[str, Any], threads: int, refs: list[str]) -> None:
    stats = result["stats"]
    cells = []
    for name in ("relaxvm 1t", f"relaxvm {threads}t"):
        cells.append(f"{show(work, stats[name]['median_s'])} {show(work, stats[name]['p90_s'])}")
    verdict = "LOSES" if result["loses"] else "ok"
    cells.append(f"{result['threads_ratio']:6.2f} {verdict:5}")
    cells += [show(work, stats[r]["median_s"]) if r in stats else f"{'-':>9}" for r in refs]
    print(f"{work.label:24} {work.unit:8} " + "  ".join(cells), flush=True)
    parts = [f"vs {ref} {r:.2f}x" for ref, r in result["ratios"].items()]
    parts += [f"{ref}: {why}" for ref, why in work.skipped.items()]
    print(f"{'':26}{', '.join(parts)}", flush=True)
    for verdict_text in result["targets"]:
        print(f"{'':26}{verdict_text}", flush=True)


def print_machine(threads: int, torch: Any) -> dict[str, Any]:
    import llvmlite
    import llvmlite.binding as llvm
    import onnxruntime

    import relaxvm
    from relaxvm_llvm import parallel

    model = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    features = llvm.get_host_cpu_features()
    wanted = ("avx512f", "avx512bw", "avx512vnni", "avx2", "fma", "avx", "neon", "sve")
    isa = [name for name in wanted if features.get(name)]
    machine = {
        "cpu": model, "cpus": os.cpu_count(), "threads": threads,
        "llvm_cpu": llvm.get_host_cpu_name(), "isa": isa, "python": platform.python_version(),
        "numpy": np.__version__, "onnxruntime": onnxruntime.__version__,
        "relaxvm": relaxvm.__version__, "llvmlite": llvmlite.__version__,
        "torch": None if torch is None else torch.__version__,
        "parallel_backend": parallel.get_parallel_backend(),
        # Present since the idle-CPU check of issue 14; absent in older pools.
        "parallel_adaptive": getattr(parallel, "get_parallel_adaptive", lambda: None)(),
    }  # fmt: skip
    load = (
        ", ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    )
    machine["load_average"] = load
    print(f"machine: {model}; {os.cpu_count()} cpus, {threads} usable (relaxvm N = {threads})")
    print(f"load average before the run: {load} (a shared machine: other work moves the numbers)")
    print(f"vector ISA (llvmlite host, {machine['llvm_cpu']}): {' '.join(isa) or 'none found'}")
    print(
        f"python {machine['python']}; numpy {np.__version__}; onnxruntime "
        f"{onnxruntime.__version__}; relaxvm {relaxvm.__version__} ({machine['parallel_backend']} "
        f"pool, adaptive {machine['parallel_adaptive']}); llvmlite {llvmlite.__version__}; torch "
        + (torch.__version__ if torch is not None else "not installed (skipped)")
    )
    return machine


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workloads", default="all", help=f"comma list of {', '.join(WORKLOADS)}")
    parser.add_argument(
        "--interfere", default="none", help=f"comma list of {', '.join(MODES)}, or all"
    )
    parser.add_argument("--repeat", type=int, help="timed calls per contender (default 40)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per contender (4)")
    parser.add_argument("--quick", action="store_true", help="6 calls, short pauses: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="write every result as JSON")
    parser.add_argument("--scale", type=float, default=1.0, help="scale the sizes (smoke tests)")
    parser.add_argument("--pause", type=float, help="idle seconds before each block (0.2)")
    parser.add_argument("--exec-mode", default="compiled", choices=["bytecode", "compiled"])
    args = parser.parse_args(argv)

    def pick(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
        chosen = list(allowed) if text == "all" else [t for t in text.split(",") if t]
        unknown = [t for t in chosen if t not in allowed]
        if unknown or not chosen:
            parser.error(f"unknown {what} {unknown}; choose from {', '.join(allowed)} or all")
        return chosen

    args.workloads = pick(args.workloads, WORKLOADS, "workload(s)")
    args.interfere = pick(args.interfere, MODES, "interference mode(s)")
    args.repeat = args.repeat or (6 if args.quick else 40)
    args.rounds = args.rounds or (2 if args.quick else 4)
    args.pause = args.pause if args.pause is not None else (0.05 if args.quick else 0.15)
    if args.repeat < 2 or args.rounds < 1 or args.scale <= 0:
        parser.error("--repeat must be at least 2, --rounds at least 1 and --scale positive")
    return args


def check(work: Workload, threads: int) -> None:
    """Compare one relaxvm call with the reference; SystemExit on a mismatch."""
    got = work.make_call()().numpy()
    scale = max(1.0, float(np.max(np.abs(work.expected))))
    error = float(np.max(np.abs(got - work.expected))) if got.shape == work.expected.shape else -1
    if error < 0 or error > 1e-3 * scale:
        raise SystemExit(
            f"{work.label}: relaxvm ({threads} threads) differs from the reference "
            f"(shape {got.shape} vs {work.expected.shape}, max error {error})"
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A cache of its own, so that the user's kernel cache is left alone.
    os.environ.setdefault("RELAXVM_CACHE_DIR", tempfile.mkdtemp(prefix="relaxvm-bench-cache-"))
    from relaxvm_llvm.parallel import get_num_threads, set_num_threads

    threads = get_num_threads()
    builder = Builder(args, threads)
    machine = print_machine(threads, builder.torch)
    works = []
    for key in args.workloads:
        started = time.perf_counter()
        work = builder.build(key)
        for count in (1, threads):  # checked once per thread count before any timing
            set_num_threads(count)
            check(work, count)
        set_num_threads(threads)
        seconds = time.perf_counter() - started
        print(f"built and checked {work.label} in {seconds:.1f} s", flush=True)
        works.append(work)

    refs = ["numpy", "onnxruntime", "torch"]
    results = []
    for mode in args.interfere:
        print(
            f"\n== interference: {mode} == median and p90 of {args.repeat} calls; refs: median\n"
            "   GFLOP/s, GB/s rows: higher is better, ratio = relaxvm speed / ref speed;\n"
            "   ms rows: lower is better, ratio = relaxvm latency / ref latency (relaxvm at "
            f"{threads} threads);\n   {threads}t/1t = time ratio, LOSES above "
            f"{THREAD_TOLERANCE:.2f}"
        )
        head = f"{'relaxvm 1t med/p90':>19}  {f'relaxvm {threads}t med/p90':>19}  "
        head += f"{f'{threads}t/1t':>12}  " + "  ".join(f"{r:>9}" for r in refs)
        print(f"{'workload':24} {'unit':8} {head}")
        for work in works:
            result = summarize(work, measure(work, mode, args, threads), threads)
            result["mode"] = mode
            print_row(work, result, threads, refs)
            results.append(result)
    if builder.torch is None:
        print("\ntorch: not installed, skipped (the conv2d target is measured against torch)")
    if hasattr(os, "getloadavg"):
        print(f"load average after the run: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
