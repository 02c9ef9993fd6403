"""What the CPU schedules need to know about the target: vector width, registers, tile, caches,
threads, cutoffs — chosen from the host CPU and overridable through the ``Target``.

``cpu_config(target)`` reads the target's attributes (:data:`TARGET_ATTRS`), fills in what they
leave open from the host (:mod:`.host`: LLVM's CPU name and features, sysfs cache sizes) and
validates the overrides; :meth:`CpuConfig.describe` is the one line that ``relaxvm inspect``
shows for the kernels of an exported executable.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from relaxvm.runtime.dtype import DataType
from relaxvm.target import TargetError

from . import host

__all__ = [
    "SMALL_PARALLEL_FACTOR",
    "TARGET_ATTRS",
    "TVM_ATTRS",
    "CpuConfig",
    "check_target_attrs",
    "cpu_config",
    "describe_host",
]

#: How many times ``parallel_cutoff`` of work a matmul-like kernel with only one or a few rows
#: (a batch-1 layer) must carry before its column tiles run in parallel. A 512 x 512 layer at
#: batch 1 (2**18 multiply-adds, ~30 us) stays on one core: split (factor 1), the 3-layer MLP
#: at batch 1 took 0.79-0.80x its one-thread time in one run, but 0.99-1.14x in another and
#: 1.48x beside a busy process (launches of ~15 us per thread leave no margin for a helper's
#: wake-up or a shared core), so the split waits for layers of 4x that work.
SMALL_PARALLEL_FACTOR = 4

#: The attributes of an ``llvm`` target, with what each means (``Target("llvm -key=value")``;
#: in a dict target ``vector_bits`` may be spelled with an underscore). Anything else is refused.
TARGET_ATTRS: dict[str, str] = {
    "mcpu": "LLVM CPU name (default: the host CPU; 'native' = the host)",
    "mattr": "LLVM CPU features (default: the host's)",
    "fastmath": "fast-math flags: contract,reassoc,nsz (default), fast or strict",
    "num-threads": "threads the schedules plan for (default: RELAXVM_NUM_THREADS or the CPUs)",
    "vector-bits": "vector width of the schedules: 128, 256 or 512, at most the CPU's widest",
    "tile": "register tile ROWSxVECTORS of matmul-like kernels (default from the registers)",
    "l2-bytes": "L2 bytes the column blocking assumes (default: half the sysfs L2, else 512K)",
    "l1-bytes": "per-core L1 data cache size (default: sysfs, else 32K)",
    "pack": "pack the reused matmul operand into tile-major panels: 1 (default) or 0",
}

#: TVM's own ``llvm`` target attributes, accepted so that TVM programs run unchanged:
#: ``num-cores`` means ``num-threads``, ``mtriple`` must name this machine's architecture
#: (relaxvm compiles for the host only), the others do not change relaxvm's code.
TVM_ATTRS: dict[str, str] = {
    "num-cores": "TVM's spelling of -num-threads",
    "mtriple": "LLVM target triple: must be this machine's architecture (no cross-compiling)",
    "keys": "TVM target keys (accepted; no effect)",
    "tag": "TVM target tag (accepted; no effect)",
    "device": "TVM device name (accepted; no effect)",
    "model": "TVM model name (accepted; no effect)",
    "libs": "TVM external libraries (accepted; no effect)",
    "opt-level": "TVM's LLVM optimisation level (accepted; relaxvm always optimises at -O3)",
    "link-params": "TVM parameter linking (accepted; no effect)",
    "system-lib": "TVM system library (accepted; no effect)",
    "runtime": "TVM runtime (accepted; no effect)",
    "jit": "TVM JIT engine choice (accepted; relaxvm uses MCJIT)",
    "cl-opt": "LLVM command-line options (accepted; no effect)",
    "mabi": "ABI name (accepted; the host's ABI is used)",
    "mfloat-abi": "float ABI (accepted; the host's is used)",
    "fast-math": "TVM's fast-math (boolean): every fast-math flag, nnan and ninf included",
    "fast-math-nnan": "TVM's fast-math flag nnan (boolean): NaN inputs give undefined results",
    "fast-math-ninf": "TVM's fast-math flag ninf (boolean): infinite inputs give undefined results",
    "fast-math-nsz": "TVM's fast-math flag nsz (boolean)",
    "fast-math-arcp": "TVM's fast-math flag arcp (boolean)",
    "fast-math-contract": "TVM's fast-math flag contract (boolean)",
    "fast-math-reassoc": "TVM's fast-math flag reassoc (boolean)",
}

_DEFAULT_L1 = 32 * 1024
_DEFAULT_L2 = 512 * 1024
_MIN_L2 = 64 * 1024

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
        Width of the vectors the schedules use (512 for AVX-512, 256 for AVX2, 128 for SSE
        and NEON).
    num_threads : int
        Threads the runtime's pool runs parallel loops on.
    parallel_cutoff : int
        Loops with less estimated work than this (in scalar operations) stay serial: a
        parallel launch costs about 10 to 25 microseconds on the pool.
    tile : tuple of int, optional
        ``(rows, vectors)`` of the register tile of matmul-like reductions; by default
        (:attr:`register_tile`) chosen from the number of vector registers.
    l2_bytes : int
        The L2 size the schedules assume; matmul column blocks are sized to keep their slice
        of the right-hand operand in half of it. From the host: half the per-core L2 that
        sysfs reports (the rest holds rows of A, tiles of C and prefetched lines; on a 1 MiB
        Cascade Lake L2, assuming 512 KiB multiplies 1024 x 1024 float32 matrices about 1.2x
        faster than assuming 1 MiB, and slightly faster than 256 KiB).
    pack : bool
        Copy a matmul's right-hand operand into tile-major panels before the main loop
        (for large enough problems).
    l1_bytes : int
        Per-core L1 data cache size (recorded and shown; the schedules' L1 rules use fixed
        sizes that fit any current core).
    arch : str
        ``"x86-64"`` or ``"aarch64"`` (decides the register count).
    cpu : str
        The LLVM CPU name the configuration was chosen for (for :meth:`describe`).
    isa : str
        The vector instruction set: ``"avx512"``, ``"avx2"``, ``"avx"``, ``"sse"``, ``"neon"``.
    overridden : tuple of str
        Target attributes that set a value here instead of the host (for :meth:`describe`).
    l2_cache_bytes : int, optional
        The per-core L2 size the host reports, when it does (for :meth:`describe`).
    """

    vector_bits: int = 256
    num_threads: int = 2
    parallel_cutoff: int = 1 << 18
    tile: tuple[int, int] | None = None
    l2_bytes: int = _DEFAULT_L2
    pack: bool = True
    l1_bytes: int = _DEFAULT_L1
    arch: str = "x86-64"
    cpu: str = ""
    isa: str = ""
    overridden: tuple[str, ...] = ()
    l2_cache_bytes: int | None = None

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers: 32 with AVX-512 and on aarch64, else 16."""
        return 32 if self.vector_bits >= 512 or self.arch == "aarch64" else 16

    @property
    def register_tile(self) -> tuple[int, int]:
        """``(rows, vectors)`` of the register tile: :attr:`tile`, else 8x2 with 32 vector
        registers and 6x2 with 16 (accumulators, the B vectors and one broadcast fit)."""
        if self.tile is not None:
            return self.tile
        return (8, 2) if self.vector_registers >= 32 else (6, 2)

    def lanes(self, dtype: DataType | str) -> int:
        """Elements of ``dtype`` in one vector register (at least 1)."""
        bits = DataType(dtype).bits
        if bits <= 1:  # bool: stored as bytes
            bits = 8
        return max(1, self.vector_bits // bits)

    def as_dict(self) -> dict[str, Any]:
        """The configuration as plain data (what :func:`describe_host` returns)."""
        data = asdict(self)
        data["tile"] = list(self.register_tile)
        data["vector_registers"] = self.vector_registers
        data["overridden"] = list(self.overridden)
        return data

    def describe(self) -> str:
        """One line: ``llvm schedule: x86-64 cascadelake avx512 (512-bit vectors, 32
        registers), register tile 8x2, L2 512 KiB of 1 MiB, L1d 32 KiB, pack on, threads 2``
        (``of``: the L2 the host reports; then the attributes the target set, if any)."""
        rows, vectors = self.register_tile
        cache = self.l2_cache_bytes
        of = ""
        if cache and cache != self.l2_bytes and "l2-bytes" not in self.overridden:
            of = f" of {_size_text(cache)}"
        name = " ".join(part for part in (self.arch, self.cpu, self.isa) if part)
        text = (
            f"llvm schedule: {name} ({self.vector_bits}-bit vectors, {self.vector_registers} "
            f"registers), register tile {rows}x{vectors}, L2 {_size_text(self.l2_bytes)}{of}, "
            f"L1d {_size_text(self.l1_bytes)}, pack {'on' if self.pack else 'off'}, "
            f"threads {self.num_threads}"
        )
        if self.overridden:
            text += f" (set by the target: {', '.join(self.overridden)})"
        return text


def _size_text(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _flags(features: str) -> set[str]:
    return {f.strip() for f in features.split(",") if f.strip()}


def _vector_bits_of(cpu: str, features: str) -> int:
    flags = _flags(features)
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


def _isa_of(arch: str, bits: int, widest: int, features: str) -> str:
    """The name of the vector instruction set that ``bits``-wide vectors use."""
    if arch == "aarch64":
        return "neon"
    if arch != "x86-64":
        return ""
    if bits >= 512:
        return "avx512"
    if bits >= 256:
        # An AVX-only CPU (no +avx2, not wider): 256-bit float vectors, 128-bit integers.
        only_avx = widest == 256 and "+avx2" not in _flags(features) and "+avx" in _flags(features)
        return "avx" if only_avx else "avx2"
    return "sse"


def _num_threads() -> int:
    text = os.environ.get("RELAXVM_NUM_THREADS", "")
    if text.strip().isdigit() and int(text) > 0:
        return int(text)
    return max(1, os.cpu_count() or 1)


# -- target attributes ----------------------------------------------------------------------


def _attr_error(key: str, value: Any, expected: str) -> TargetError:
    return TargetError(f"llvm target: -{key}={value!r} is not valid: {expected}")


def _normalized(attrs: dict[str, Any]) -> dict[str, Any]:
    """``attrs`` with ``_`` spellings of known keys turned into ``-``; unknown keys refused."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if key in ("kind", "host"):  # a dict target's own keys
            continue
        name = str(key).replace("_", "-")
        if name in TVM_ATTRS:
            if name == "num-cores" and "num-threads" not in attrs:
                out["num-threads"] = value
            elif name == "mtriple":
                _check_triple(value)
            continue
        if name not in TARGET_ATTRS:
            raise TargetError(
                f"llvm target: unknown attribute -{key}={value!r}; the llvm target knows "
                f"{', '.join('-' + k for k in TARGET_ATTRS)} (and TVM's "
                f"{', '.join('-' + k for k in TVM_ATTRS)})"
            )
        out[name] = value
    return out


def _check_triple(value: Any) -> None:
    """``-mtriple`` must name the host's architecture: kernels run in this process."""
    import llvmlite.binding as llvm

    host_arch = llvm.get_process_triple().split("-")[0]
    arch = str(value).split("-")[0]
    aliases = {"amd64": "x86_64", "arm64": "aarch64"}
    if aliases.get(arch, arch) != aliases.get(host_arch, host_arch):
        raise TargetError(
            f"llvm target: -mtriple={value!r} is not this machine's architecture "
            f"({host_arch}); relaxvm compiles kernels for the host only"
        )


def _int_value(key: str, value: Any, low: int, high: int, sizes: bool = False) -> int:
    expected = f"expected an integer from {low} to {high}" + (
        " (bytes; a K, M or G suffix multiplies by 1024s)" if sizes else ""
    )
    if isinstance(value, bool):
        raise _attr_error(key, value, expected)
    if isinstance(value, int):
        number: int | None = value
    elif sizes and isinstance(value, str):
        number = host.parse_size(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    else:
        number = None
    if number is None or not low <= number <= high:
        raise _attr_error(key, value, expected)
    return number


def _bool_value(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise _attr_error(key, value, "expected 1/0 (true/false, on/off)")


def _count(part: Any) -> int | None:
    if isinstance(part, bool):
        return None
    if isinstance(part, int):
        return part
    if isinstance(part, str) and part.strip().isdigit():
        return int(part)
    return None


def _tile_value(value: Any, registers: int) -> tuple[int, int]:
    expected = "expected ROWSxVECTORS such as 6x2, each from 1 to 32"
    if isinstance(value, str):
        parts: list[Any] = value.lower().split("x")
    elif isinstance(value, (tuple, list)):
        parts = list(value)
    else:
        raise _attr_error("tile", value, expected)
    numbers = [_count(part) for part in parts]
    if len(numbers) != 2 or not all(n is not None and 1 <= n <= 32 for n in numbers):
        raise _attr_error("tile", value, expected)
    rows, vectors = (int(n or 0) for n in numbers)
    # The accumulators, one vector per column of B and a broadcast of A live in registers;
    # a tile that cannot fit spills on every step of the K loop.
    if rows * vectors + vectors + 1 > registers:
        raise _attr_error(
            "tile",
            value,
            f"{rows}x{vectors} accumulators plus {vectors} B vectors and one broadcast need "
            f"{rows * vectors + vectors + 1} vector registers, the target has {registers}",
        )
    return rows, vectors


def _cpu_and_features(attrs: dict[str, Any]) -> tuple[str, str]:
    """The CPU name and feature string code is generated for (as ``target_info`` decides)."""
    cpu = attrs.get("mcpu") or ""
    mattr = attrs.get("mattr") or ""
    if isinstance(mattr, (list, tuple)):
        mattr = ",".join(mattr)
    if not isinstance(cpu, str) or not isinstance(mattr, str):
        raise TargetError(f"llvm target: mcpu and mattr must be strings, got {cpu!r}, {mattr!r}")
    host_cpu, host_features = host.host_cpu()
    if not cpu or cpu in ("native", "host"):
        cpu = host_cpu
        mattr = f"{host_features},{mattr}" if mattr and mattr != host_features else host_features
    elif mattr == host_features and cpu != host_cpu:
        # Target("llvm -mcpu=other") keeps the host's feature string as its default; the
        # codegen then uses that CPU's own features, and so does the schedule.
        mattr = ""
    return cpu, mattr


def check_target_attrs(attrs: Any) -> None:
    """Refuse unknown attributes and malformed values of an ``llvm`` target.

    Raises
    ------
    TargetError
        Naming the attribute and its value.
    """
    cpu_config(attrs)


def cpu_config(target: Any = None) -> CpuConfig:
    """The :class:`CpuConfig` of a target (a ``relaxvm.target.Target``, a dict of attributes,
    a CpuConfig, or None for the host CPU).

    From the host, unless the target says otherwise: the vector width from ``-mcpu`` and
    ``-mattr`` (else the host CPU's name and features: ``+avx512f`` → 512 bits, ``+avx2`` →
    256, else 128, which is also NEON's on aarch64), the register tile from the vector
    register count (8x2 with 32, 6x2 with 16), the L1d and L2 sizes from Linux sysfs (else
    32 KiB and 512 KiB), the threads from ``RELAXVM_NUM_THREADS`` or the CPU count. The
    attributes ``-vector-bits``, ``-tile``, ``-l2-bytes``, ``-l1-bytes``, ``-pack`` and
    ``-num-threads`` override them (:data:`TARGET_ATTRS`).

    Raises
    ------
    TargetError
        An unknown attribute, a malformed value, or ``-vector-bits`` wider than the CPU's
        vectors (the kernels would use instructions it does not have); the message names the
        attribute and the value.
    """
    if isinstance(target, CpuConfig):
        return target
    given: dict[str, Any] = {}
    if isinstance(target, dict):
        given = dict(target)
    elif target is not None and hasattr(target, "attrs"):
        given = dict(target.attrs)
    elif target is not None:
        raise TargetError(f"llvm target: expected a Target, got {type(target).__name__}")
    attrs = _normalized(given)
    cpu, mattr = _cpu_and_features(attrs)
    arch = host.host_arch()
    widest = _vector_bits_of(cpu, mattr)
    if arch == "aarch64":
        widest = 128  # NEON; SVE's width is not known at compile time
    overridden: list[str] = []
    bits = widest
    if "vector-bits" in attrs:
        value = attrs["vector-bits"]
        bits = _int_value("vector-bits", value, 0, 1 << 16)
        if bits not in (128, 256, 512):
            raise _attr_error("vector-bits", value, "expected 128, 256 or 512")
        if bits > widest:
            raise _attr_error(
                "vector-bits",
                value,
                f"CPU {cpu!r} has {widest}-bit vectors at most, and wider vectors would use "
                "instructions it does not have",
            )
        overridden.append("vector-bits")
    caches = host.host_cache_sizes()
    l1 = caches.l1d_bytes or _DEFAULT_L1
    # Half of the reported L2 (see CpuConfig.l2_bytes): 512 KiB on this project's 1 MiB
    # machines, the value the blocking was measured and tuned with.
    l2 = max(_MIN_L2, caches.l2_bytes // 2) if caches.l2_bytes else _DEFAULT_L2
    if "l1-bytes" in attrs:
        l1 = _int_value("l1-bytes", attrs["l1-bytes"], 1024, 1 << 30, sizes=True)
        overridden.append("l1-bytes")
    if "l2-bytes" in attrs:
        l2 = _int_value("l2-bytes", attrs["l2-bytes"], 1024, 1 << 30, sizes=True)
        overridden.append("l2-bytes")
    pack = True
    if "pack" in attrs:
        pack = _bool_value("pack", attrs["pack"])
        overridden.append("pack")
    threads = _num_threads()
    if attrs.get("num-threads") is not None:
        threads = _int_value("num-threads", attrs["num-threads"], 1, 4096)
        overridden.append("num-threads")
    fastmath = attrs.get("fastmath")
    if fastmath is not None and not isinstance(fastmath, (str, bool)):
        raise _attr_error("fastmath", fastmath, "expected a comma list of flags, fast or strict")
    config = CpuConfig(
        vector_bits=bits,
        num_threads=threads,
        l2_bytes=l2,
        pack=pack,
        l1_bytes=l1,
        arch=arch,
        cpu=cpu,
        isa=_isa_of(arch, bits, widest, mattr),
        l2_cache_bytes=caches.l2_bytes,
    )
    tile = config.register_tile
    if "tile" in attrs:
        tile = _tile_value(attrs["tile"], config.vector_registers)
        overridden.append("tile")
    return CpuConfig(**{**asdict(config), "tile": tile, "overridden": tuple(overridden)})


def describe_host() -> dict[str, Any]:
    """What the schedules choose on this host for ``Target("llvm")``, as plain data.

    Returns
    -------
    dict
        ``arch``, ``cpu``, ``isa``, ``vector_bits``, ``vector_registers``, ``tile`` (rows,
        vectors), ``l1_bytes``, ``l2_bytes`` (each with ``*_source``: ``"sysfs"`` or
        ``"default"``), ``l2_cache_bytes`` (what sysfs reports, or None), ``pack``,
        ``num_threads``, ``parallel_cutoff``, ``overridden`` and
        ``text``, the line ``relaxvm inspect`` shows.
    """
    config = cpu_config(None)
    caches = host.host_cache_sizes()
    data = config.as_dict()
    data["l1_bytes_source"] = "sysfs" if caches.l1d_bytes else "default"
    data["l2_bytes_source"] = "sysfs" if caches.l2_bytes else "default"
    data["text"] = config.describe()
    return data
