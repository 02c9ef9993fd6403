"""What the CPU schedules need to know about the target: vector width, threads, cutoffs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from relaxvm.runtime.dtype import DataType

__all__ = ["SMALL_PARALLEL_FACTOR", "CpuConfig", "cpu_config"]

#: How many times ``parallel_cutoff`` of work a matmul-like kernel with only one or a few rows
#: (a batch-1 layer) must carry before its column tiles run in parallel: a 512 x 512 layer at
#: batch 1 takes about 20 us on one core and no less on two, while a second thread that waits
#: for a core (another process, numpy's spinning BLAS threads) costs up to a time slice.
SMALL_PARALLEL_FACTOR = 4

# CPU names whose widest useful vector registers are 512 bits (AVX-512 parts).
_AVX512_CPUS = (
    "skylake-avx512",
    "cascadelake",
    "cooperlake",
    "cannonlake",
    "icelake",
    "tigerlake",
    "rocketlake",
    "sapphirerapids",
    "emeraldrapids",
    "graniterapids",
    "znver4",
    "znver5",
    "x86-64-v4",
    "knl",
    "knm",
)
_AVX2_CPUS = (
    "haswell",
    "broadwell",
    "skylake",
    "alderlake",
    "raptorlake",
    "meteorlake",
    "arrowlake",
    "lunarlake",
    "znver1",
    "znver2",
    "znver3",
    "x86-64-v3",
    "bdver4",
)


@dataclass(frozen=True)
class CpuConfig:
    """Target facts a schedule chooses tile sizes from.

    Attributes
    ----------
    vector_bits : int
        Width of the widest vector register the target uses (512 for AVX-512, 256 for AVX2).
    num_threads : int
        Threads the runtime's pool runs parallel loops on.
    parallel_cutoff : int
        Loops with less estimated work than this (in scalar operations) stay serial: a
        parallel launch costs about 10 to 25 microseconds on the pool.
    l2_bytes : int
        Per-core L2 cache size; matmul column blocks are sized to keep their slice of the
        right-hand operand in half of it.
    pack : bool
        Copy a matmul's right-hand operand into tile-major panels before the main loop
        (for large enough problems).
    tile : tuple of int, optional
        ``(rows, vectors)`` of the register tile of matmul-like reductions; by default chosen
        from the number of vector registers (16 with AVX2, 32 with AVX-512).
    """

    vector_bits: int = 256
    num_threads: int = 2
    parallel_cutoff: int = 1 << 18
    tile: tuple[int, int] | None = None
    l2_bytes: int = 512 * 1024
    pack: bool = True

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers (x86-64: 32 with AVX-512, else 16)."""
        return 32 if self.vector_bits >= 512 else 16

    def lanes(self, dtype: DataType | str) -> int:
        """Elements of ``dtype`` in one vector register (at least 1)."""
        bits = DataType(dtype).bits
        if bits <= 1:  # bool: stored as bytes
            bits = 8
        return max(1, self.vector_bits // bits)


def _vector_bits_of(cpu: str, features: str) -> int:
    flags = {f.strip() for f in features.split(",") if f.strip()}
    if "+avx512f" in flags:
        return 512
    if "-avx512f" in flags and ("+avx2" in flags or "+avx" in flags):
        return 256
    if "+avx2" in flags or "+avx" in flags:
        return 256
    cpu = cpu.lower()
    if any(cpu.startswith(name) for name in _AVX512_CPUS):
        return 512
    if any(cpu.startswith(name) for name in _AVX2_CPUS):
        return 256
    return 128


@lru_cache(maxsize=1)
def _host_cpu() -> tuple[str, str]:
    try:
        import llvmlite.binding as llvm

        return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    except Exception:
        return "generic", ""


def _num_threads() -> int:
    text = os.environ.get("RELAXVM_NUM_THREADS", "")
    if text.strip().isdigit() and int(text) > 0:
        return int(text)
    return max(1, os.cpu_count() or 1)


def cpu_config(target: Any = None) -> CpuConfig:
    """The :class:`CpuConfig` of a target (a ``relaxvm.target.Target``, a dict of attributes,
    a CpuConfig, or None for the host CPU).

    ``-mcpu`` and ``-mattr`` decide the vector width (``+avx512f`` → 512 bits, ``+avx2`` →
    256); without them the host CPU's name and features are used, as the codegen does.
    ``-num-threads`` overrides the thread count (otherwise ``RELAXVM_NUM_THREADS`` or the
    CPU count).
    """
    if isinstance(target, CpuConfig):
        return target
    attrs: dict[str, Any] = {}
    if isinstance(target, dict):
        attrs = dict(target)
    elif target is not None and hasattr(target, "attrs"):
        attrs = dict(target.attrs)
    cpu = str(attrs.get("mcpu") or "")
    mattr = attrs.get("mattr") or ""
    if isinstance(mattr, (list, tuple)):
        mattr = ",".join(mattr)
    host_cpu, host_features = _host_cpu()
    if not cpu or cpu in ("native", "host"):
        cpu = host_cpu
        mattr = f"{host_features},{mattr}" if mattr and mattr != host_features else host_features
    elif mattr == host_features and cpu != host_cpu:
        # Target("llvm -mcpu=other") keeps the host's feature string as its default; the
        # codegen then uses that CPU's own features, and so does the schedule.
        mattr = ""
    threads = attrs.get("num-threads") or attrs.get("num_threads")
    return CpuConfig(
        vector_bits=_vector_bits_of(cpu, str(mattr)),
        num_threads=int(threads) if threads else _num_threads(),
    )
