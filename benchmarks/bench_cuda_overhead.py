"""Host-side cost of one call of a compiled model on the CUDA target, without a GPU.

    python benchmarks/bench_cuda_overhead.py [--width 512] [--batch 64] [--number 100]
                                             [--repeat 30] [--exec-modes bytecode,compiled]
                                             [--json PATH]

It compiles the 3-layer MLP of ``bench_models.py`` (``build_mlp``: each layer's matmul + bias
(+ relu) fused into one kernel) for ``"cuda"`` and runs it on ``relaxvm.cuda(0)`` exactly as
``bench_cuda.py`` does (inputs already device tensors; a sample is one call followed by the
driver's ``synchronize``), but over :class:`NoOpDriver`: device memory is host memory and a
launch does nothing. Everything but the real driver's C calls is the same code path, so the
time per call is the Python overhead a GPU run pays on top of the kernels (plus a few µs per
real ``cuLaunchKernel``). It prints, per exec mode, the best of ``--repeat`` means over
``--number`` calls in µs, and the driver calls per call (launches, device allocations and
frees, host<->device copies, synchronizations: a steady-state call should make one launch per
kernel, one synchronization, the sample's own, and nothing else).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import build_mlp

EXEC_MODES = ("bytecode", "compiled")
# What a kernel launch reads of a device attribute; generous (an H200's limits).
_LIMITS = {1: 1024, 2: 1024, 3: 1024, 4: 64, 5: 2**31 - 1, 6: 65535, 7: 65535, 8: 49152}


class NoOpDriver:
    """A :class:`relaxvm_cuda.driver.Driver` that computes nothing and counts its calls.

    Device memory is host memory (256-byte aligned, as ``cuMemAlloc`` guarantees), so copies
    work; kernels are never run. ``counts`` has one entry per kind of call.
    """

    def __init__(self, capability: tuple[int, int] = (9, 0)) -> None:
        self.capability = capability
        self.counts: collections.Counter[str] = collections.Counter()
        self._blocks: dict[int, Any] = {}
        self._slot = (ctypes.c_int64 * 4)()  # every module's index-error slot

    def device_count(self) -> int:
        return 1

    def attribute(self, ordinal: int, attribute: int) -> int:
        major, minor = self.capability
        return {75: major, 76: minor, 10: 32, 16: 132, 97: 232448}.get(
            attribute, _LIMITS.get(attribute, 0)
        )

    def compute_capability(self, ordinal: int) -> tuple[int, int]:
        return self.capability

    def device_name(self, ordinal: int) -> str:
        return "no-op GPU"

    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        return 1 << 34, 1 << 34

    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        self.counts["alloc"] += 1
        block = ctypes.create_string_buffer(nbytes + 256)
        pointer = (ctypes.addressof(block) + 255) // 256 * 256
        self._blocks[pointer] = block
        return pointer

    def mem_free(self, ordinal: int, pointer: int) -> None:
        self.counts["free"] += 1
        del self._blocks[pointer]

    def _copy(self, kind: str, dst: int, src: int, nbytes: int) -> None:
        self.counts[kind] += 1
        ctypes.memmove(dst, src, nbytes)

    def memcpy_htod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._copy("memcpy", dst, src, nbytes)

    def memcpy_dtoh(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._copy("memcpy", dst, src, nbytes)

    def memcpy_dtod(self, ordinal: int, dst: int, src: int, nbytes: int) -> None:
        self._copy("memcpy", dst, src, nbytes)

    def memset_d8(self, ordinal: int, dst: int, value: int, nbytes: int) -> None:
        self.counts["memset"] += 1
        ctypes.memset(dst, value, nbytes)

    def synchronize(self, ordinal: int) -> None:
        self.counts["sync"] += 1

    def module_load(self, ordinal: int, image: bytes) -> object:
        return object()

    def module_unload(self, ordinal: int, module: Any) -> None:
        pass

    def module_function(self, ordinal: int, module: Any, name: str) -> str:
        return name

    def module_global(self, ordinal: int, module: Any, name: str) -> tuple[int, int]:
        return ctypes.addressof(self._slot), 32

    def function_attribute(self, ordinal: int, function: Any, attribute: int) -> int:
        return 1024

    def set_function_attribute(
        self, ordinal: int, function: Any, attribute: int, value: int
    ) -> None:
        pass

    def launch(
        self,
        ordinal: int,
        function: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        params: Sequence[Any],
    ) -> None:
        self.counts["launch"] += 1


def measure(
    exec_mode: str, driver: NoOpDriver, width: int, batch: int, number: int, repeat: int
) -> dict[str, Any]:
    """Compile the MLP in ``exec_mode``, run it ``repeat`` x ``number`` times; one row."""
    import relaxvm

    device = relaxvm.cuda(0)
    ex = relaxvm.compile(build_mlp(width), "cuda", exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, device)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((batch, width), dtype="float32")]
    for _ in range(3):
        arrays += [rng.standard_normal((width, width), dtype="float32")]
        arrays += [rng.standard_normal((width,), dtype="float32")]
    tensors = [relaxvm.tensor(a, device) for a in arrays]
    main = vm["main"]
    call: Callable[[], Any] = lambda: main(*tensors)  # noqa: E731
    for _ in range(5):  # warm-up: first-call checks, pools filled, kernels looked up
        call()
    driver.counts.clear()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            call()
            driver.synchronize(0)
        best = min(best, (time.perf_counter() - started) / number)
    calls = number * repeat
    per_call = {k: driver.counts[k] / calls for k in ("launch", "alloc", "free", "memcpy")}
    per_call["memset"] = driver.counts["memset"] / calls
    per_call["sync"] = driver.counts["sync"] / calls
    return {"exec_mode": exec_mode, "us_per_call": best * 1e6, **per_call}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--number", type=int, default=100, help="calls per measurement")
    parser.add_argument("--repeat", type=int, default=30, help="measurements (best is kept)")
    parser.add_argument("--exec-modes", default=",".join(EXEC_MODES))
    parser.add_argument("--json", help="also write the rows as JSON to this path")
    args = parser.parse_args(argv)
    import relaxvm
    from relaxvm.runtime.memory import clear_pools
    from relaxvm_cuda import driver as driver_module

    # relaxvm's pools may hold blocks of the driver in use so far (released by VMs that
    # garbage collection has not reached yet): collected and emptied first, or a block of
    # that driver would be handed to this one.
    gc.collect()
    clear_pools()
    driver = NoOpDriver()
    previous = driver_module.set_driver(driver)
    try:
        rows = [
            measure(mode, driver, args.width, args.batch, args.number, args.repeat)
            for mode in args.exec_modes.split(",")
            if mode
        ]
    finally:
        gc.collect()
        clear_pools()  # the pools must not keep blocks of the no-op driver
        driver_module.set_driver(previous)
    print(f"relaxvm {relaxvm.__version__}; MLP {args.width} wide, batch {args.batch}, on a "
          "no-op CUDA driver (host overhead only)")  # fmt: skip
    print(f"{'exec mode':10} {'us/call':>9} {'launch':>7} {'alloc':>6} {'free':>6} "
          f"{'memcpy':>7} {'memset':>7} {'sync':>5}")  # fmt: skip
    for r in rows:
        print(f"{r['exec_mode']:10} {r['us_per_call']:9.1f} {r['launch']:7.2f} {r['alloc']:6.2f} "
              f"{r['free']:6.2f} {r['memcpy']:7.2f} {r['memset']:7.2f} {r['sync']:5.2f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
