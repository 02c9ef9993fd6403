"""Load time of an exported model: trusted (signed by this user) and untrusted (rebuilt).

Run from the repository root (the project must be installed)::

    python benchmarks/bench_load.py [--number 20] [--example mlp]

The example's model (``examples/mlp.py`` by default) is compiled for the host CPU and
exported with ``export_library`` under one key. Then ``relaxvm.load_module`` is timed:

* **trusted**: the file's tag verifies under the loading user's key, so the object code is
  linked as is (docs/security.md). The issue's target: within 10% of the load time before
  exports were authenticated (run this script on the older tree to compare).
* **untrusted, warm cache**: the same file loaded under another key (``RELAXVM_KEY``), by a
  user who compiled the same model once (so their compile cache is warm): the tag does not
  verify, so the object code is ignored and the kernels are found in the compile cache under
  the digest of the file's TIR (every rebuild stores that entry). Target: under 50 ms.
* **untrusted, first load**: the same without that entry: the TIR is decoded, printed for
  the compile cache key and this user's own build is found there.
* **untrusted, cold cache**: the compile cache disabled: a full, hardened compile (every
  access checked, loops serial; ``relaxvm_llvm.tir_guard``).

Each row is the best and the median of ``--number`` loads, in milliseconds. For the MLP
example it then times one inference (batch ``--batch``) with the trusted kernels and with the
hardened ones, which is what a user runs until they export the model again.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import relaxvm

_ROOT = Path(__file__).resolve().parent.parent
_KEY_EXPORT = "11" * 32
_KEY_OTHER = "22" * 32


def _example_module(name: str) -> object:
    path = _ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no example {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _time(fn: Callable[[], object], number: int) -> tuple[float, float]:
    times = []
    for _ in range(number):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times), statistics.median(times)


def _rebuilt(ex: object) -> bool:
    return any(getattr(m, "rebuilt", False) for _, _, m in getattr(ex, "kernel_libs", []))


def main() -> None:
    """Print the load times (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20)
    parser.add_argument("--example", default="mlp")
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="relaxvm-bench-load-")
    # A private cache and key directory: the numbers do not depend on the user's state.
    os.environ.setdefault("RELAXVM_CACHE_DIR", os.path.join(scratch, "cache"))
    os.environ["XDG_CONFIG_HOME"] = os.path.join(scratch, "config")
    os.environ["RELAXVM_KEY"] = _KEY_EXPORT
    os.environ.setdefault("RELAXVM_PROGRESS", "0")

    example = _example_module(args.example)
    mod = getattr(example, args.example.upper(), None) or example.MLP  # type: ignore[attr-defined]
    ex = relaxvm.compile(mod, target="llvm")
    path = os.path.join(scratch, "model.rvm")
    ex.export_library(path)
    size = os.path.getsize(path)
    print(f"{args.example}: {size / 1024:.0f} KiB export, {len(ex.kernel_libs)} kernel lib(s)")
    print(f"{'load_module':34s} {'best ms':>9s} {'median ms':>10s}  rebuilt")

    def load() -> object:
        return relaxvm.load_module(path)

    def forget_tir_entry() -> None:
        # Drop the entry under the TIR's digest, so the load decodes and prints the TIR.
        from relaxvm_llvm import cache as llvm_cache
        from relaxvm_llvm import target as llvm_target

        store = llvm_cache.default_cache()
        for _, _, module in ex.kernel_libs:
            tir = getattr(module, "tir_bytes", None)
            if store is not None and tir is not None:
                store.discard(llvm_target._tir_key(tir(), module.compiled.info))

    def first_load() -> object:
        forget_tir_entry()
        return load()

    # The loading user (another key) compiled the same model once: their compile cache is
    # warm with their own entries (the cache authenticates entries with its user's key, so
    # the exporter's entries do not count).
    os.environ["RELAXVM_KEY"] = _KEY_OTHER
    relaxvm.compile(mod, target="llvm")

    rows = [("trusted (signed by this user)", _KEY_EXPORT, None, load)]
    rows.append(("untrusted, warm cache (rebuild)", _KEY_OTHER, None, load))
    rows.append(("untrusted, first load (rebuild)", _KEY_OTHER, None, first_load))
    rows.append(("untrusted, cold cache (rebuild)", _KEY_OTHER, "0", load))
    for label, key, cache, fn in rows:
        os.environ["RELAXVM_KEY"] = key
        if cache is None:
            os.environ.pop("RELAXVM_CACHE", None)
        else:
            os.environ["RELAXVM_CACHE"] = cache
        number = args.number if cache is None else max(1, min(args.number, 3))
        rebuilt = _rebuilt(fn())
        best, median = _time(fn, number)
        print(f"{label:34s} {best:9.2f} {median:10.2f}  {rebuilt}")
    os.environ.pop("RELAXVM_CACHE", None)
    if hasattr(example, "make_weights"):
        _time_inference(example, path, args.batch, args.number)
    sys.stdout.flush()


def _time_inference(example: object, path: str, batch: int, number: int) -> None:
    import numpy as np

    weights = [relaxvm.tensor(w) for w in example.make_weights()]  # type: ignore[attr-defined]
    x = relaxvm.tensor(np.random.default_rng(0).standard_normal((batch, 784), dtype="float32"))
    print(f"{'inference, batch ' + str(batch):34s} {'best ms':>9s} {'median ms':>10s}  ratio")
    rows = [("trusted kernels", _KEY_EXPORT, None), ("hardened kernels", _KEY_OTHER, "0")]
    base = None
    for label, key, cache in rows:
        os.environ["RELAXVM_KEY"] = key
        if cache is not None:
            os.environ["RELAXVM_CACHE"] = cache
        main_fn = relaxvm.VirtualMachine(relaxvm.load_module(path), relaxvm.cpu())["main"]
        os.environ.pop("RELAXVM_CACHE", None)
        main_fn(x, *weights)
        best, median = _time(lambda fn=main_fn: fn(x, *weights), number)
        base = base or best
        print(f"{label:34s} {best:9.2f} {median:10.2f}  {best / base:5.2f}x")


if __name__ == "__main__":
    main()
