"""Default CPU schedules for the LLVM target.

``schedule_prim_func(func, target)`` rewrites a legalized (or fused) PrimFunc stage by stage
(:mod:`.stages` reads the loop nests ``te.create_prim_func`` and FuseTIR produce):

* injective and elementwise stages (:mod:`.injective`): the outer loops fused into one
  parallel loop (above a serial cutoff), the output's last axis in vectorized chunks with a
  tail; padding conditions split the loop into ranges, other guards become selects
  (:mod:`.guards`);
* reductions whose inputs are contiguous along the output's last axis (matmul, batch matmul,
  dense, NCHW convolution, pooling, sums over outer axes; :mod:`.tile`, :mod:`.plan`,
  :mod:`.packing`): register-blocked tiles with the following elementwise stages (bias,
  activation) inlined (:mod:`.epilogue`), packed operands and L2-sized column blocks; with
  few rows (a batch-1 layer; :mod:`.small`), unpacked one-row tiles wide across the columns,
  parallel over column tiles, chosen at run time when the row count is symbolic;
* reductions along the contiguous innermost axis (row sums, softmax and norm statistics;
  :mod:`.reduction`): vector lanes combined at the end, parallel over rows.

``schedule_module`` applies it to every PrimFunc of a module; ``schedule_pass(target)`` is
the same as a module pass, for the target kind's ``relax_passes`` hook. Every rewrite keeps what the
function computes; the tests check each one against the reference interpreter and, compiled,
against numpy.
"""

from __future__ import annotations

from .config import CpuConfig, cpu_config
from .dispatch import (
    SCHEDULED_ATTR,
    ScheduleError,
    schedule_conv2d,
    schedule_injective,
    schedule_matmul,
    schedule_module,
    schedule_pass,
    schedule_pool,
    schedule_prim_func,
    schedule_reduction,
    schedule_row_kernel,
)

__all__ = [
    "SCHEDULED_ATTR",
    "CpuConfig",
    "ScheduleError",
    "cpu_config",
    "schedule_conv2d",
    "schedule_injective",
    "schedule_matmul",
    "schedule_module",
    "schedule_pass",
    "schedule_pool",
    "schedule_prim_func",
    "schedule_reduction",
    "schedule_row_kernel",
]
