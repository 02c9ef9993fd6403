"""GPU schedules for the CUDA target: legalized PrimFuncs to thread-bound loop nests.

``schedule_prim_func(func)`` picks, from the function's stages (read by the core stage
parser, :mod:`relaxvm.ir.tir.stages`), one of (the kind is in :data:`GPU_SCHEDULE_ATTR`):

* ``injective``: flattened, one element per thread (several independent outputs in one
  launch; gathers check each index where they load it);
* ``gemm``: a sum of products (matmul, batch matmul, dense, convolution as an implicit
  GEMM) tiled in shared memory with register blocking;
* ``small_reduction``: a thread per output over a small window (pooling);
* ``rows``: a block per row, reductions by warp shuffles, per-row scratch in shared memory
  (reductions, softmax, norms, median, attention, losses);
* ``outer_parallel``: a loop nest of any form whose outer loops are independent (scans,
  argmax, sorts per line), those loops over threads;
* ``single_thread``: anything else, the whole kernel in one thread (slow, always correct).

The reference interpreter runs the result with GPU semantics, so every schedule is checked
on the CPU.
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
