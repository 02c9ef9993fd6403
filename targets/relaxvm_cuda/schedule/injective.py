"""The injective schedule: the output's index space flattened and spread over blocks of
threads, one element per thread, with a bounds guard for the last block."""

from __future__ import annotations

from relaxvm.ir.tir import Stmt
from relaxvm.ir.tir.stages import Stage

from .common import BLOCK_THREADS, element_per_thread

__all__ = ["injective_kernel"]


def injective_kernel(stage: Stage, threads: int = BLOCK_THREADS) -> Stmt:
    """``for b in blockIdx.x: for t in threadIdx.x: if b*T+t < N: <store at unflattened>``."""
    assert stage.store is not None
    loop_vars = [loop.loop_var for loop in stage.loops]
    extents = [loop.extent for loop in stage.loops]
    return element_per_thread(loop_vars, extents, stage.store, threads)
