"""The injective schedule: the output's index space flattened and spread over blocks of
threads, one element per thread, with a bounds guard for the last block."""

from __future__ import annotations

from relaxvm.ir import Var
from relaxvm.ir.tir import IfThenElse, Stmt
from relaxvm.ir.tir.stages import Stage

from .common import BLOCK_THREADS, bound_loop, ceildiv, let_indices, product

__all__ = ["injective_kernel"]


def injective_kernel(stage: Stage, threads: int = BLOCK_THREADS) -> Stmt:
    """``for b in blockIdx.x: for t in threadIdx.x: if b*T+t < N: <store at unflattened>``."""
    assert stage.store is not None
    loop_vars = [loop.loop_var for loop in stage.loops]
    extents = [loop.extent for loop in stage.loops]
    total = product(extents)

    store: Stmt = stage.store

    def thread_body(bx: Var, tx: Var) -> Stmt:
        flat = bx * threads + tx
        return IfThenElse(flat < total, let_indices(flat, loop_vars, extents, store))

    return bound_loop(
        "blockIdx_x",
        ceildiv(total, threads),
        "blockIdx.x",
        lambda bx: bound_loop(
            "threadIdx_x", threads, "threadIdx.x", lambda tx: thread_body(bx, tx)
        ),
    )
