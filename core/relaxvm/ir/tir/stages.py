"""Read a PrimFunc as a list of *stages*: the loop nests that ``te.create_prim_func`` (and
FuseTIR, which concatenates them) produce, one per computed tensor.

A stage is a perfect nest of *spatial* loops around either

* one store ``Y[v0, v1, ...] = value`` (an injective stage), or
* ``Y[vs] = init`` followed by a nest of *reduction* loops around
  ``Y[vs] = combine(Y[vs], source)`` (a reduction stage; ``combine`` is ``+``, ``max`` or
  ``min``).

Where every stored index is one spatial loop variable (each once), iterations write distinct
elements, which is what makes a stage safe to run in parallel and to tile. Statements that do
not fit are *opaque* and are left alone by the schedules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from relaxvm.ir import Add, IntImm, Max, Min, PrimExpr, Var
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.expr_functor import free_vars, post_order_visit, substitute
from relaxvm.ir.op import max_expr, min_expr
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
    SeqStmt,
    Stmt,
    StmtMutator,
    seq,
)
from relaxvm.ir.tir import post_order_visit as post_order_visit_stmt
from relaxvm.ir.tir import substitute as substitute_stmt
from relaxvm.ir.tir.lower_blocks import as_loop_nests

__all__ = [
    "COMBINE",
    "Stage",
    "loads_of",
    "parse_stages",
    "stage_reads",
    "static_extent",
    "vector_access",
]


#: How each reduction combines the accumulated value with a new one.
COMBINE: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "sum": lambda a, b: a + b,
    "max": max_expr,
    "min": min_expr,
}


@dataclass
class Stage:
    """One loop nest of a function body (see the module docstring)."""

    stmt: Stmt
    kind: str  # "injective", "reduction" or "opaque"
    loops: list[For] = field(default_factory=list)
    store: BufferStore | None = None  # the injective store, or the reduction's update
    init: BufferStore | None = None
    reduce_loops: list[For] = field(default_factory=list)
    combiner: str | None = None  # "sum", "max", "min"
    source: PrimExpr | None = None
    condition: PrimExpr | None = None

    @property
    def buffer(self) -> Buffer | None:
        """The buffer the stage writes."""
        return None if self.store is None else self.store.buffer

    @property
    def spatial_vars(self) -> list[Var]:
        """The spatial loop variables, outermost first."""
        return [loop.loop_var for loop in self.loops]


def static_extent(expr: PrimExpr) -> int | None:
    """The value of a constant extent, or None when it is symbolic."""
    return expr.value if isinstance(expr, IntImm) else None


def loads_of(expr: PrimExpr) -> list[BufferLoad]:
    """The buffer loads in ``expr`` (including loads inside load indices)."""
    found: list[BufferLoad] = []
    post_order_visit(
        expr, lambda node: found.append(node) if isinstance(node, BufferLoad) else None
    )
    return found


def stage_reads(stmt: Stmt) -> set[Buffer]:
    """Every buffer a statement loads from."""
    reads: set[Buffer] = set()

    def visit_expr(expr: PrimExpr) -> None:
        reads.update(load.buffer for load in loads_of(expr))

    def visit(node: Stmt) -> None:
        if isinstance(node, BufferStore):
            visit_expr(node.value)
            for index in node.indices:
                visit_expr(index)
        elif isinstance(node, For):
            visit_expr(node.min)
            visit_expr(node.extent)
        elif isinstance(node, IfThenElse):
            visit_expr(node.condition)

    post_order_visit_stmt(stmt, visit)
    return reads


def vector_access(load: BufferLoad | BufferStore, var: Var) -> str:
    """How an access moves as ``var`` steps by one: ``"invariant"`` (does not use it),
    ``"contiguous"`` (only the last index uses it, and it grows by exactly one) or
    ``"strided"``."""
    uses = [var in free_vars(index) for index in load.indices]
    if not any(uses):
        return "invariant"
    if any(uses[:-1]):
        return "strided"
    last = load.indices[-1]
    if last is var:
        return "contiguous"
    step = _ANALYZER.simplify(substitute(last, {var: var + 1}) - last)
    return "contiguous" if isinstance(step, IntImm) and step.value == 1 else "strided"


_ANALYZER = Analyzer()


def _perfect_loops(stmt: Stmt) -> tuple[list[For], Stmt]:
    loops: list[For] = []
    while isinstance(stmt, For) and stmt.kind == ForKind.SERIAL:
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def _distinct_loop_indices(store: BufferStore, loops: list[For]) -> bool:
    loop_vars = [loop.loop_var for loop in loops]
    indices = list(store.indices)
    if len(indices) != len(loop_vars):
        return False
    if not all(isinstance(index, Var) for index in indices):
        return False
    if {id(v) for v in indices} != {id(v) for v in loop_vars}:
        return False
    for loop in loops:  # loops must run from 0 and not depend on each other
        if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            return False
        if set(free_vars(loop.extent)) & set(loop_vars):
            return False
    return True


def _combiner(update: BufferStore) -> tuple[str, PrimExpr] | None:
    value = update.value
    kinds = {Add: "sum", Max: "max", Min: "min"}
    for node_type, name in kinds.items():
        if type(value) is node_type:
            a, b = value.a, value.b  # type: ignore[attr-defined]
            for acc, source in ((a, b), (b, a)):
                if (
                    isinstance(acc, BufferLoad)
                    and acc.buffer is update.buffer
                    and all(x is y for x, y in zip(acc.indices, update.indices, strict=True))
                    and update.buffer not in {load.buffer for load in loads_of(source)}
                ):
                    return name, source
    return None


def parse_stage(stmt: Stmt) -> Stage:
    """Classify one statement of the function body as an injective, reduction or opaque
    stage."""
    loops, leaf = _perfect_loops(stmt)
    opaque = Stage(stmt, "opaque")
    if isinstance(leaf, BufferStore):
        if not loops or not _distinct_loop_indices(leaf, loops):
            return opaque
        if leaf.buffer in {load.buffer for load in loads_of(leaf.value)}:
            return opaque
        return Stage(stmt, "injective", loops=loops, store=leaf)
    if not (isinstance(leaf, SeqStmt) and len(leaf.seq) == 2):
        return opaque
    init, nest = leaf.seq
    if not isinstance(init, BufferStore) or not _distinct_loop_indices(init, loops):
        return opaque
    reduce_loops, update = _perfect_loops(nest)
    condition = None
    if isinstance(update, IfThenElse) and update.else_case is None:
        condition, update = update.condition, update.then_case
    if not reduce_loops or not isinstance(update, BufferStore) or update.buffer is not init.buffer:
        return opaque
    if not all(x is y for x, y in zip(update.indices, init.indices, strict=True)):
        return opaque
    spatial = {loop.loop_var for loop in loops}
    for loop in reduce_loops:
        if not (isinstance(loop.min, IntImm) and loop.min.value == 0):
            return opaque
        if set(free_vars(loop.extent)) & (spatial | {r.loop_var for r in reduce_loops}):
            return opaque
    found = _combiner(update)
    if found is None:
        return opaque
    combiner, source = found
    if init.buffer in {load.buffer for load in loads_of(init.value)}:
        return opaque
    return Stage(
        stmt,
        "reduction",
        loops=loops,
        store=update,
        init=init,
        reduce_loops=reduce_loops,
        combiner=combiner,
        source=source,
        condition=condition,
    )


def _unfuse(stmt: Stmt) -> tuple[Buffer, list[Stmt]] | None:
    """FuseTIR's form of a reduction with its epilogue, back in the stage form.

    ``for vs: {acc = local(1); acc[0] = init; for ks: acc[0] += src; Out[vs] = f(acc[0])}``
    becomes ``for vs: {X[vs] = init; for ks: X[vs] += src}`` and ``for vs: Out[vs] =
    f(X[vs])`` with a new scratch buffer ``X``, which the epilogue inlining then folds back
    into the tile's registers.
    """
    loops, leaf = _perfect_loops(stmt)
    if not loops or not isinstance(leaf, Allocate):
        return None
    acc = leaf.buffer
    if acc.scope != "local" or len(acc.shape) != 1 or static_extent(acc.shape[0]) != 1:
        return None
    body = leaf.body
    if not (isinstance(body, SeqStmt) and len(body.seq) == 3):
        return None
    init, nest, final = body.seq
    if not (isinstance(init, BufferStore) and init.buffer is acc and isinstance(nest, For)):
        return None
    if not isinstance(final, BufferStore) or final.buffer is acc:
        return None
    spatial = [loop.loop_var for loop in loops]
    shape = [loop.extent for loop in loops]
    scratch = Buffer(f"{acc.name}_full", shape, acc.dtype)
    element = scratch[tuple(spatial)]

    def to_full(expr: PrimExpr) -> PrimExpr:
        from .stage_epilogue import rewrite_loads  # stage_epilogue imports this module

        return rewrite_loads(expr, lambda load: element if load.buffer is acc else None)

    class _ToFull(StmtMutator):
        def visit_expr(self, expr: PrimExpr) -> PrimExpr:
            return to_full(expr)

        def visit_buffer_store_(self, node: BufferStore) -> Stmt:
            new = super().visit_buffer_store_(node)
            assert isinstance(new, BufferStore)
            if new.buffer is acc:
                return BufferStore(scratch, new.value, spatial)
            return new

    reduction: Stmt = seq(
        BufferStore(scratch, to_full(init.value), spatial), _ToFull().visit_stmt(nest)
    )
    fresh = {var: Var(var.name, var.dtype) for var in spatial}
    epilogue: Stmt = substitute_stmt(
        BufferStore(final.buffer, to_full(final.value), final.indices), fresh
    )
    for loop in reversed(loops):
        reduction = For(loop.loop_var, loop.min, loop.extent, ForKind.SERIAL, reduction)
        epilogue = For(fresh[loop.loop_var], loop.min, loop.extent, ForKind.SERIAL, epilogue)
    return scratch, [reduction, epilogue]


def _merge_scalar_reductions(items: list[Stmt]) -> list[Stmt]:
    """``Y[()] = init`` followed by the loops updating ``Y[()]`` is one reduction stage with
    no spatial loops (a sum of every element); the function body lists them apart."""
    merged: list[Stmt] = []
    for item in items:
        previous = merged[-1] if merged else None
        if (
            isinstance(previous, BufferStore)
            and not previous.indices
            and isinstance(item, For)
            and parse_stage(SeqStmt([previous, item])).kind == "reduction"
        ):
            merged[-1] = SeqStmt([previous, item])
            continue
        merged.append(item)
    return merged


def parse_stages(func: PrimFunc) -> tuple[list[Buffer], list[Stage]]:
    """Split ``func.body`` into the scratch buffers allocated around it (outermost first) and
    its stages. Reductions in FuseTIR's fused form get a scratch buffer of their own (see
    :func:`_unfuse`)."""
    scratch: list[Buffer] = []
    body = as_loop_nests(func).body  # block form (te.create_prim_func) as its loops
    while isinstance(body, Allocate):
        scratch.append(body.buffer)
        body = body.body
    items = list(body.seq) if isinstance(body, SeqStmt) else [body]
    stages: list[Stage] = []
    for item in _merge_scalar_reductions(items):
        unfused = _unfuse(item)
        if unfused is None:
            stages.append(parse_stage(item))
            continue
        buffer, parts = unfused
        parsed = [parse_stage(part) for part in parts]
        if any(stage.kind == "opaque" for stage in parsed):
            stages.append(parse_stage(item))
            continue
        scratch.append(buffer)
        stages.extend(parsed)
    return scratch, stages
