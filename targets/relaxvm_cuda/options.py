"""The attributes a ``cuda`` target accepts, with their descriptions.

A module of its own so that the plugin entry point (which must stay cheap to load) and
:mod:`relaxvm_cuda.target` (which checks the attributes) share one table.
"""

from __future__ import annotations

__all__ = ["TARGET_OPTIONS"]

#: Every attribute a ``cuda`` target accepts, with its description (``relaxvm plugins``).
TARGET_OPTIONS: dict[str, str] = {
    "arch": "the sm_XY to generate PTX for (default: the device's, else sm_80)",
    "mcpu": "accepted when equal to arch",
    "max_num_threads": "threads per block the schedules may use (default 1024)",
    "max_threads_per_block": "threads per block the schedules may use (default 1024)",
    "thread_warp_size": "warp size: 32",
    "max_shared_memory_per_block": "shared memory per block in bytes (default 48K)",
    "registers_per_block": "registers per block",
    "l2_cache_size_bytes": "L2 cache size in bytes",
    "libs": "accepted, ignored (TVM's external libraries)",
    "model": "accepted, ignored (the GPU model name)",
    "keys": "accepted, ignored",
    "tag": "accepted, ignored",
    "device": "accepted, ignored",
}
