"""GPU schedules for the CUDA target: legalized PrimFuncs to thread-bound loop nests.

``schedule_prim_func(func)`` picks, from the function's stages (read by the LLVM target's
CPU-independent stage parser), the injective schedule (flattened, one element per thread),
a row kernel (a block per row: reductions with shared-memory trees and barriers, softmax,
norms, reductions with elementwise epilogues) or, for anything else, one thread for the
whole kernel (slow, always correct). The reference interpreter runs the result with GPU
semantics, so every schedule is checked on the CPU.
"""

from __future__ import annotations

from .dispatch import (
    GPU_SCHEDULE_ATTR,
    schedule_kind,
    schedule_module,
    schedule_pass,
    schedule_prim_func,
)
from .fallback import has_thread_binding, single_thread

__all__ = [
    "GPU_SCHEDULE_ATTR",
    "has_thread_binding",
    "schedule_kind",
    "schedule_module",
    "schedule_pass",
    "schedule_prim_func",
    "single_thread",
]
