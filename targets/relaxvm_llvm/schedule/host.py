"""Facts about the host CPU that the schedules size their tiles from: the architecture, the
LLVM CPU name and features, and the per-core cache sizes Linux reports in sysfs.

Nothing here imports llvmlite at module import time (the plugin loader imports the package),
and every reader falls back to ``None`` / a neutral value when the host does not say:
:func:`relaxvm_llvm.schedule.cpu_config` then keeps its defaults.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = [
    "SYSFS_CACHE",
    "CacheSizes",
    "host_arch",
    "host_cache_sizes",
    "host_cpu",
    "read_cache_sizes",
]

#: Where Linux describes the caches CPU 0 sees, one ``index*`` directory per cache.
SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


@dataclass(frozen=True)
class CacheSizes:
    """Cache sizes in bytes, ``None`` where the host does not report them.

    Attributes
    ----------
    l1d_bytes : int or None
        The level-1 data cache of one core.
    l2_bytes : int or None
        The level-2 cache the first CPU sees (per core on current x86-64 and most aarch64
        server parts; on CPUs whose cores share one L2 it is the shared size).
    """

    l1d_bytes: int | None = None
    l2_bytes: int | None = None


def parse_size(text: str) -> int | None:
    """Bytes of a sysfs cache ``size`` (``"32K"``, ``"1024K"``, ``"2M"``, ``"512"``), or
    None when the text is not one."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1:] if text[-1:] in _UNITS else ""
    digits = text[: len(text) - len(unit)]
    if not digits.isdigit() or int(digits) <= 0:
        return None
    return int(digits) * _UNITS[unit]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None


def read_cache_sizes(root: str | os.PathLike[str] = SYSFS_CACHE) -> CacheSizes:
    """The L1d and L2 sizes described under ``root`` (a sysfs ``cpu*/cache`` directory).

    Each ``index*`` directory holds ``level``, ``type`` (``Data``, ``Instruction``,
    ``Unified``) and ``size``; unreadable or malformed entries are skipped, and a missing
    directory (another OS, a container without sysfs) gives ``CacheSizes()``.
    """
    l1d = l2 = None
    try:
        entries = sorted(Path(root).glob("index*"))
    except OSError:
        return CacheSizes()
    for entry in entries:
        level, kind, size = (_read(entry / name) for name in ("level", "type", "size"))
        if level is None or kind is None or size is None:
            continue
        bytes_ = parse_size(size)
        if bytes_ is None:
            continue
        if level == "1" and kind in ("Data", "Unified") and l1d is None:
            l1d = bytes_
        elif level == "2" and kind in ("Data", "Unified") and l2 is None:
            l2 = bytes_
    return CacheSizes(l1d, l2)


@lru_cache(maxsize=1)
def host_cache_sizes() -> CacheSizes:
    """:func:`read_cache_sizes` of this machine (read once per process)."""
    return read_cache_sizes(SYSFS_CACHE)


def host_arch() -> str:
    """``"x86-64"``, ``"aarch64"`` or the machine name ``platform.machine()`` reports."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "x64"):
        return "x86-64"
    if machine in ("aarch64", "arm64"):
        return "aarch64"
    return machine or "unknown"


@lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """LLVM's name and feature string of the host CPU (``("generic", "")`` without LLVM)."""
    try:
        import llvmlite.binding as llvm

        return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    except Exception:
        return "generic", ""
