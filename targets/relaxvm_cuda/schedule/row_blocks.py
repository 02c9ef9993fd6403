"""Row kernels with per-row scratch in shared memory: the :mod:`.rows` kernel generalized to
stages whose loops go on past the row (median's ranks, attention's score matrix, group
norm's per-group statistics).

The *row* is the longest common prefix of every stage's loop extents (axes of extent 1
aside) such that every scratch buffer is addressed by the row's variables at the same
leading axes wherever it is read or written; the rest of a scratch buffer (constant-sized)
lives in shared memory, one copy per block. A block runs its row through every stage in
order, with a barrier after each:

* an injective stage, or a reduction with spatial loops past the row: its remaining
  spatial loops are flattened over the threads (a reduction's loop nest runs in the thread
  that owns the element);
* a reduction over the row alone: the block-wide reduction of :mod:`.rows`;
* a bare store (``out[()] = sum / n``): thread 0.

With an empty row (a loss reduced to a scalar) the whole function is one block.
"""

from __future__ import annotations

from relaxvm.ir import EQ, IntImm, PrimExpr, Var
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    IfThenElse,
    Stmt,
    StmtMutator,
    post_order_visit,
)
from relaxvm.ir.tir.stage_epilogue import rewrite_loads
from relaxvm.ir.tir.stages import Stage, loads_of

from .common import node_exprs, product
from .rows import (
    RowPlan,
    barrier,
    block_per_row,
    block_reduction,
    row_extents,
    split_loops,
    spread_over_row,
    threads_for_loops,
)

__all__ = ["SHARED_SCRATCH_BYTES", "plan_row_blocks", "row_blocks_kernel"]

#: Most bytes of per-row scratch a block keeps in shared memory (the reductions' partials
#: and the 48 KiB a block may have without opting in need the rest).
SHARED_SCRATCH_BYTES = 32 * 1024


def _bare(stage: Stage) -> bool:
    return stage.kind == "opaque" and isinstance(stage.stmt, BufferStore)


def _accesses(stage: Stage) -> list[BufferLoad | BufferStore]:
    found: list[BufferLoad | BufferStore] = []

    def visit(node: object) -> None:
        if isinstance(node, BufferStore):
            found.append(node)
        for expr in node_exprs(node):
            found.extend(loads_of(expr))

    post_order_visit(stage.stmt, visit)
    return found


def _common_prefix(lists: list[list[PrimExpr]]) -> int:
    length = min(len(x) for x in lists)
    for k in range(length):
        if not all(structural_equal(x[k], lists[0][k]) for x in lists):
            return k
    return length


def plan_row_blocks(stages: list[Stage], scratch: list[Buffer]) -> RowPlan | None:
    """A :class:`RowPlan` (with ``kept`` positions) when the stages fit, else None."""
    if not stages or any(s.kind == "opaque" and not _bare(s) for s in stages):
        return None
    extents = [[] if _bare(s) else row_extents(s) for s in stages]
    for nrows in range(_common_prefix(extents), -1, -1):
        plan = _try(stages, scratch, extents[0][:nrows])
        if plan is not None:
            return plan
    return None


def _row_positions(buffer: Buffer, rows: list[PrimExpr]) -> list[int] | None:
    positions = [k for k, e in enumerate(buffer.shape) if not _unit(e)][: len(rows)]
    if len(positions) != len(rows):
        return None
    if not all(structural_equal(buffer.shape[k], r) for k, r in zip(positions, rows, strict=True)):
        return None
    return positions


def _unit(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value == 1


def _try(stages: list[Stage], scratch: list[Buffer], rows: list[PrimExpr]) -> RowPlan | None:
    nrows = len(rows)
    written = {s.buffer for s in stages}
    shared: dict[Buffer, Buffer] = {}
    kept: dict[Buffer, list[int]] = {}
    positions: dict[Buffer, list[int]] = {}
    nbytes = 0
    for buffer in scratch:
        if sum(1 for s in stages if s.buffer is buffer) != 1:
            return None
        where = _row_positions(buffer, rows)
        if where is None:
            return None
        rest = [k for k in range(len(buffer.shape)) if k not in where]
        shape = [buffer.shape[k] for k in rest]
        if not all(isinstance(e, IntImm) for e in shape):
            return None
        count = product(shape)
        assert isinstance(count, IntImm)
        nbytes += count.value * max(1, buffer.dtype.bits // 8)
        positions[buffer], kept[buffer] = where, rest
        shared[buffer] = Buffer(
            f"{buffer.name}_shared", tuple(shape) or (1,), buffer.dtype, scope="shared"
        )
    if nbytes > SHARED_SCRATCH_BYTES:
        return None
    for stage in stages:
        if not _bare(stage) and len(row_extents(stage)) < nrows:
            return None
        if _bare(stage) and nrows:
            return None
        row_vars = [] if _bare(stage) else split_loops(stage, nrows)[0]
        for access in _accesses(stage):
            buffer = access.buffer
            if buffer in positions:
                indices = [access.indices[k] for k in positions[buffer]]
                if not all(x is y for x, y in zip(indices, row_vars, strict=True)):
                    return None
            elif (
                buffer in written
                and buffer is not stage.buffer  # a reduction reads its own element
                and isinstance(access, BufferLoad)
                and nrows
            ):
                return None  # an output read back: maybe another block's row
    return RowPlan(rows, shared, kept)


class _ToShared(StmtMutator):
    def __init__(self, plan: RowPlan) -> None:
        super().__init__()
        self.plan = plan

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        return rewrite_loads(expr, self.plan.load)

    def visit_buffer_store_(self, node: BufferStore) -> Stmt:
        new = super().visit_buffer_store_(node)
        assert isinstance(new, BufferStore)
        shared = self.plan.shared.get(new.buffer)
        if shared is None:
            return new
        return BufferStore(shared, new.value, self.plan.index(new.buffer, new.indices))


def _spread(stage: Stage, plan: RowPlan, tx: Var, threads: int, row: PrimExpr) -> Stmt:
    """The stage's loops past the row over the threads, its innermost body in each."""
    leaf: Stmt = stage.loops[-1].body if stage.loops else stage.stmt
    return spread_over_row(stage, plan, tx, threads, row, _ToShared(plan).visit_stmt(leaf))


def row_blocks_kernel(stages: list[Stage], plan: RowPlan) -> Stmt:
    """The kernel (see the module docstring)."""
    nrows = len(plan.rows)
    threads = threads_for_loops(_stage_loops(stage, nrows) for stage in stages if not _bare(stage))

    def parts(row: Var, tx: Var) -> list[Stmt]:
        found: list[Stmt] = []
        for stage in stages:
            if _bare(stage):
                store = _ToShared(plan).visit_stmt(stage.stmt)
                found += [IfThenElse(EQ(tx, IntImm("int64", 0)), store), barrier()]
            elif stage.kind == "reduction" and not split_loops(stage, nrows)[1]:
                found.append(block_reduction(stage, plan, tx, threads, row))
            else:
                found.append(_spread(stage, plan, tx, threads, row))
        return found

    return block_per_row(plan, threads, parts)


def _stage_loops(stage: Stage, nrows: int) -> list[For]:
    """The loops a thread shares in: a row reduction's, else those past the row."""
    inner = split_loops(stage, nrows)[1]
    return stage.reduce_loops if stage.kind == "reduction" and not inner else inner
