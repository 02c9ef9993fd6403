"""Reductions over small windows (pooling, short sums): one output element per thread, the
reduction run serially in the thread's registers.

A block per output element (:mod:`.rows`) wastes a block of threads on a 3 x 3 window;
here the outputs are flattened and spread over blocks of threads like an injective kernel,
and each thread runs the whole (constant, small) reduction nest. Elementwise consumers
(pooling's division, an activation) are folded into the final store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.expr_functor import substitute
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
)
from relaxvm.ir.tir.stage_epilogue import Epilogue, find_epilogue, rewrite_loads
from relaxvm.ir.tir.stages import COMBINE, Stage, loads_of, stage_reads

from .common import (
    element_per_thread,
    product,
)

__all__ = ["SMALL_REDUCTION", "SmallPlan", "plan_small_reduction", "small_reduction_kernel"]

#: Largest reduction (elements per output) a thread runs alone.
SMALL_REDUCTION = 32


@dataclass
class SmallPlan:
    """The main reduction, its folded epilogue and the auxiliary reductions it reads."""

    stage: Stage
    epilogue: Epilogue
    aux: list[Stage]


def _small(stage: Stage) -> bool:
    size = product([loop.extent for loop in stage.reduce_loops])
    return isinstance(size, IntImm) and size.value <= SMALL_REDUCTION


def plan_small_reduction(stages: list[Stage], scratch: list[Buffer]) -> SmallPlan | None:
    """A :class:`SmallPlan` when the function's first stage is a small constant-sized
    reduction, every other reduction is small, writes scratch and reads no stage's output,
    and everything else folds into the first one's store; else None."""
    if not stages or stages[0].kind != "reduction" or not stages[0].loops:
        return None
    if not _small(stages[0]):
        return None
    aux = [s for s in stages[1:] if s.kind == "reduction"]
    written = {s.buffer for s in stages}
    for stage in aux:
        reads = stage_reads(stage.stmt) - {stage.buffer}  # its own accumulator aside
        if stage.buffer not in scratch or not _small(stage) or reads & written:
            return None
    if stage_reads(stages[0].stmt) & {s.buffer for s in aux}:
        return None
    rest = [stages[0], *(s for s in stages[1:] if s.kind != "reduction")]
    aux_buffers = {s.buffer for s in aux}
    inner_scratch = {b for b in scratch if b not in aux_buffers}
    epilogue = find_epilogue(rest, 0, inner_scratch)
    if len(epilogue.inlined) != len(rest) - 1 or inner_scratch - set(epilogue.dropped):
        return None
    loads = [ld for ld in loads_of(epilogue.value) if ld.buffer in aux_buffers]
    for stage in aux:
        mine = [ld for ld in loads if ld.buffer is stage.buffer]
        if any(not structural_equal(ld, mine[0]) for ld in mine):
            return None  # read at several elements: not one register
    return SmallPlan(stages[0], epilogue, aux)


def _replace_with(
    buffer: Buffer | None, value: PrimExpr
) -> Callable[[BufferLoad], PrimExpr | None]:
    return lambda load: value if load.buffer is buffer else None


def _reduce_into(stage: Stage, acc: Buffer) -> Stmt:
    """``acc[0] = init; for ...: acc[0] = combine(acc[0], source)`` for ``stage``."""
    assert stage.init is not None and stage.source is not None and stage.combiner is not None
    zero = IntImm("int64", 0)
    update: Stmt = BufferStore(acc, COMBINE[stage.combiner](acc[zero], stage.source), [zero])
    if stage.condition is not None:
        update = IfThenElse(stage.condition, update)
    for loop in reversed(stage.reduce_loops):
        update = For(loop.loop_var, loop.min, loop.extent, ForKind.SERIAL, update)
    return seq(BufferStore(acc, stage.init.value, [zero]), update)


def small_reduction_kernel(plan: SmallPlan) -> Stmt:
    """The kernel (see the module docstring)."""
    stage, epilogue = plan.stage, plan.epilogue
    assert stage.init is not None
    zero = IntImm("int64", 0)
    acc = Buffer("acc", (1,), stage.init.buffer.dtype, scope="local")
    value = substitute(epilogue.value, {epilogue.acc: acc[zero]})
    parts: list[Stmt] = [_reduce_into(stage, acc)]
    buffers = [acc]
    body: Stmt
    for k, aux in enumerate(plan.aux):
        assert aux.init is not None
        load = next(ld for ld in loads_of(value) if ld.buffer is aux.buffer)
        register = Buffer(f"aux{k}", (1,), aux.init.buffer.dtype, scope="local")
        buffers.append(register)
        # The aux stage's element at the load's indices: its spatial variables bound there.
        body = _reduce_into(aux, register)
        for var, index in reversed(list(zip(aux.init.indices, load.indices, strict=True))):
            assert isinstance(var, Var)
            body = LetStmt(var, index, body)
        parts.append(body)
        value = rewrite_loads(value, _replace_with(aux.buffer, register[zero]))
    parts.append(BufferStore(epilogue.buffer, value, list(epilogue.indices)))
    body = seq(*parts)
    for buffer in reversed(buffers):
        body = Allocate(buffer, body)
    loop_vars = [loop.loop_var for loop in stage.loops]
    extents = [loop.extent for loop in stage.loops]
    return element_per_thread(loop_vars, extents, body)
