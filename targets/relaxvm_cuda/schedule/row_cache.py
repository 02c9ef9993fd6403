"""The per-thread loops of a :mod:`.rows` kernel, tuned: each stage's share of the row runs
in a loop over *steps* (thread ``tx`` takes the elements ``step * threads + tx``), and

* when the number of steps is static and small the loop is unrolled (independent loads in
  flight; a local array indexed by the step becomes registers), and its bound check is
  dropped when the row is a whole number of steps;
* an input the kernel never writes, read at the stage's own element by two or more stages
  (softmax's ``x``), is loaded once into a local array before the first stage and every
  stage reads that copy (the *row cache*);
* a reduction's source (softmax's ``exp(x - max)``) that a later stage computes again, from
  cached inputs and earlier results only, is kept in a local array and read back there;
* subexpressions that depend only on earlier stages' results (one value per row, in shared
  memory) are computed once per thread before the loop, and a division by one becomes a
  multiplication by its reciprocal (one rounding more: within 1.5 ulp of the quotient).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from relaxvm.ir import Div, FloorDiv, FloorMod, IntImm, Mod, PrimExpr, Var
from relaxvm.ir.expr_functor import free_vars, post_order_visit, substitute
from relaxvm.ir.op import const
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    StmtMutator,
    seq,
)
from relaxvm.ir.tir.intrin import FLOAT_INTRINSICS, Call
from relaxvm.ir.tir.stages import Stage

from .common import ceildiv, let_indices, product

__all__ = ["MAX_UNROLLED_STEPS", "RowCache", "StageLoop", "plan_row_cache"]

#: Most steps per thread for which a stage's loop is unrolled and the row cached (each cached
#: input or kept source costs this many registers per thread).
MAX_UNROLLED_STEPS = 32

_INT_DIVISIONS = (Div, Mod, FloorDiv, FloorMod)


def rebuild(expr: PrimExpr, hook: Callable[[PrimExpr], PrimExpr | None]) -> PrimExpr:
    """``expr`` rebuilt bottom-up; ``hook`` sees each rebuilt node and may replace it."""
    done: dict[int, PrimExpr] = {}

    def visit(node: PrimExpr) -> None:
        if isinstance(node, BufferLoad):
            new: PrimExpr = node.with_operands(
                node.buffer.data, *(done[id(i)] for i in node.indices)
            )
        elif node.operands:
            new = node.with_operands(*(done[id(op)] for op in node.operands))
        else:
            new = node
        replaced = hook(new)
        done[id(node)] = new if replaced is None else replaced

    post_order_visit(expr, visit)
    return done[id(expr)]


class _ExprRewrite(StmtMutator):
    def __init__(self, fn: Callable[[PrimExpr], PrimExpr]) -> None:
        super().__init__()
        self.fn = fn

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        return self.fn(expr)


def _static_steps(extents: list[PrimExpr], threads: int) -> tuple[int | None, bool]:
    """(steps per thread when static, whether the row is a whole number of steps)."""
    total = product(extents)
    if not isinstance(total, IntImm):
        return None, False
    return -(-total.value // threads), total.value % threads == 0


def _same(a: list[PrimExpr], b: list[PrimExpr]) -> bool:
    return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b, strict=True))


@dataclass
class StageLoop:
    """How one stage's per-thread loop is built (see the module docstring)."""

    step: Var
    threads: int
    unroll: bool
    guarded: bool
    shared: set[Buffer]
    loads: Callable[[BufferLoad], PrimExpr | None]
    #: Earlier reductions' sources as this stage would compute them, with their kept copy.
    reuse: list[tuple[PrimExpr, Buffer]] = field(default_factory=list)
    keep: Buffer | None = None
    hoisted: list[tuple[Var, PrimExpr]] = field(default_factory=list)

    def rewrite(self, expr: PrimExpr, hoist: bool = True) -> PrimExpr:
        """``expr`` reading cached and shared copies, reusing kept sources and (when
        ``hoist``) with its per-row invariants taken out of the loop."""

        def load(node: PrimExpr) -> PrimExpr | None:
            return self.loads(node) if isinstance(node, BufferLoad) else None

        expr = rebuild(expr, load)
        if self.reuse:

            def reuse(node: PrimExpr) -> PrimExpr | None:
                for pattern, kept in self.reuse:
                    if structural_equal(node, pattern):
                        return kept[self.step]
                return None

            expr = rebuild(expr, reuse)
        return self._hoist(expr) if hoist else expr

    def rewrite_stmt(self, stmt: Stmt) -> Stmt:
        return _ExprRewrite(self.rewrite).visit_stmt(stmt)

    def _invariant(self, node: PrimExpr) -> bool:
        if isinstance(node, BufferLoad):
            return node.buffer in self.shared and all(isinstance(i, IntImm) for i in node.indices)
        if isinstance(node, Var):
            return False
        if isinstance(node, Call):
            name = type(node).op.removeprefix("tir.")
            if name not in FLOAT_INTRINSICS and name != "if_then_else":
                return False  # check_index reports errors: it stays where it is
        return all(self._invariant(op) for op in node.operands)

    def _bind(self, value: PrimExpr) -> Var:
        for var, bound in self.hoisted:
            if structural_equal(bound, value):
                return var
        var = Var(f"row_inv{len(self.hoisted)}", value.dtype)
        self.hoisted.append((var, value))
        return var

    def _hoist(self, expr: PrimExpr) -> PrimExpr:
        """``expr`` with its per-row invariants that read shared memory bound before the
        loop (each binding may use the earlier ones)."""

        def hook(node: PrimExpr) -> PrimExpr | None:
            if isinstance(node, BufferLoad):
                return self._bind(node) if self._invariant(node) else None
            if isinstance(node, Var) or not node.operands:
                return None
            if isinstance(node, _INT_DIVISIONS) and not str(node.dtype).startswith("float"):
                return None  # a division by zero in a row that runs no step must not run
            if all(self._is_hoisted(op) or self._invariant(op) for op in node.operands):
                if any(self._is_hoisted(op) for op in node.operands):
                    return self._bind(node)
                return None
            if (
                isinstance(node, Div)
                and str(node.dtype) in ("float32", "float64")
                and self._is_hoisted(node.b)
            ):
                return node.a * self._bind(const(1, node.dtype) / node.b)
            return None

        return rebuild(expr, hook)

    def _is_hoisted(self, node: PrimExpr) -> bool:
        return isinstance(node, Var) and any(node is v for v, _ in self.hoisted)

    def loop(self, tx: PrimExpr, loop_vars: list[Var], extents: list[PrimExpr], body: Stmt) -> Stmt:
        """The stage's loop: ``body`` for each of the thread's elements (``loop_vars`` bound
        from the flat index), after the hoisted values."""
        total = product(extents)
        flat = self.step * self.threads + tx
        inner = let_indices(flat, loop_vars, extents, body)
        if self.guarded:
            inner = IfThenElse(flat < total, inner)
        kind = ForKind.UNROLLED if self.unroll else ForKind.SERIAL
        stmt: Stmt = For(self.step, 0, ceildiv(total, self.threads), kind, inner)
        for var, value in reversed(self.hoisted):
            stmt = LetStmt(var, value, stmt)
        return stmt


@dataclass
class RowCache:
    """The row cache of a kernel: per stage, its :class:`StageLoop` factory inputs, and the
    statements loading the cached inputs."""

    threads: int
    shared: dict[Buffer, Buffer]
    #: Per stage: its flattened loop variables and extents (reduction or past the row).
    inner: list[tuple[list[Var], list[PrimExpr]]]
    #: Per stage: the row variables.
    rows: list[list[Var]]
    row_extents: list[PrimExpr]
    inputs: dict[Buffer, Buffer] = field(default_factory=dict)
    extents: list[PrimExpr] = field(default_factory=list)
    steps: list[Var] = field(default_factory=list)
    #: Reduction stage index -> its source (cache-rewritten) and the local copy kept of it.
    kept: dict[int, tuple[PrimExpr, Buffer]] = field(default_factory=dict)

    def _cached_load(self, position: int, load: BufferLoad) -> PrimExpr | None:
        cache = self.inputs.get(load.buffer)
        if cache is not None and self._identity(position, load):
            return cache[self.steps[position]]
        shared = self.shared.get(load.buffer)
        if shared is not None:
            return shared[IntImm("int64", 0)]
        return None

    def _identity(self, position: int, load: BufferLoad) -> bool:
        """Whether ``load`` reads the stage's own element (row and flat index, in order) of
        a buffer shaped like the rows and the cached extents."""
        variables, extents = self.inner[position]
        wanted = [*self.rows[position], *variables]
        return (
            _same(extents, self.extents)
            and len(load.indices) == len(wanted)
            and all(a is b for a, b in zip(load.indices, wanted, strict=True))
            and _same(list(load.buffer.shape), [*self.row_extents, *extents])
        )

    def stage_loop(self, position: int) -> StageLoop:
        """The loop of stage ``position``."""
        steps, exact = _static_steps(self.inner[position][1], self.threads)
        step = self.steps[position]
        reuse = []
        for i, (source, kept) in self.kept.items():
            if i < position and _same(self.inner[position][1], self.extents):
                reuse.append((substitute(source, {self.steps[i]: step}), kept))
        return StageLoop(
            step=step,
            threads=self.threads,
            unroll=steps is not None and steps <= MAX_UNROLLED_STEPS,
            guarded=not exact,
            shared=set(self.shared.values()),
            loads=lambda load: self._cached_load(position, load),
            reuse=reuse,
            keep=self.kept[position][1] if position in self.kept else None,
        )

    def preload(self, row: PrimExpr, tx: PrimExpr) -> Stmt | None:
        """The loop loading the cached inputs' elements of the thread (None if none)."""
        if not self.inputs:
            return None
        variables = [Var(f"{v.name}_c", v.dtype) for v in self.rows[0]]
        inner = [Var(f"k_c{n}", "int64") for n in range(len(self.extents))]
        step = Var("c_outer", "int64")
        stores = [
            BufferStore(cache, buffer[tuple(variables) + tuple(inner)], [step])
            for buffer, cache in self.inputs.items()
        ]
        whole = _static_steps(self.extents, self.threads)[1]
        loop = StageLoop(step, self.threads, True, not whole, set(), lambda load: None)
        body = loop.loop(tx, inner, self.extents, seq(*stores))
        return let_indices(row, variables, self.row_extents, body)

    def locals(self) -> list[Buffer]:
        """The local arrays to allocate around the kernel body."""
        return [*self.inputs.values(), *(kept for _, kept in self.kept.values())]


def plan_row_cache(
    stages: list[Stage],
    threads: int,
    shared: dict[Buffer, Buffer],
    inner: list[tuple[list[Var], list[PrimExpr]]],
    rows: list[list[Var]],
    row_extents: list[PrimExpr],
) -> RowCache:
    """The :class:`RowCache` of a row kernel's stages (``inner``: each stage's flattened loop
    variables and extents; ``rows``: each stage's row variables)."""
    cache = RowCache(threads, shared, inner, rows, row_extents)
    cache.steps = [Var("k_outer", "int64") for _ in stages]
    written = {s.buffer for s in stages} | set(shared)
    users: dict[Buffer, set[int]] = {}
    for position, stage in enumerate(stages):
        steps, _ = _static_steps(inner[position][1], threads)
        if steps is None or steps > MAX_UNROLLED_STEPS or not cache.rows[position]:
            continue
        cache.extents = cache.extents or inner[position][1]
        for load in _loads(stage):
            if load.buffer not in written and cache._identity(position, load):
                users.setdefault(load.buffer, set()).add(position)
    for buffer, positions in users.items():
        if len(positions) >= 2 and str(buffer.dtype) != "bool":
            steps, _ = _static_steps(cache.extents, threads)
            assert steps is not None
            cache.inputs[buffer] = Buffer(
                f"{buffer.name}_row", (steps,), buffer.dtype, scope="local"
            )
    if cache.inputs:
        _plan_kept(cache, stages)
    return cache


def _loads(stage: Stage) -> list[BufferLoad]:
    found: list[BufferLoad] = []
    exprs = [stage.source] if stage.kind == "reduction" else []
    if stage.store is not None and stage.kind != "reduction":
        exprs = [stage.store.value, *stage.store.indices]
    for expr in exprs:
        if expr is not None:
            post_order_visit(
                expr, lambda node: found.append(node) if isinstance(node, BufferLoad) else None
            )
    return found


def _plan_kept(cache: RowCache, stages: list[Stage]) -> None:
    """Keep the sources of reductions that a later stage computes again."""
    local = set(cache.inputs.values()) | set(cache.shared.values())
    for i, stage in enumerate(stages):
        if stage.kind != "reduction" or stage.condition is not None or stage.source is None:
            continue
        if not _same(cache.inner[i][1], cache.extents):
            continue
        source = cache.stage_loop(i).rewrite(stage.source, hoist=False)
        if isinstance(source, BufferLoad) or not _reads_only(source, local, cache.steps[i]):
            continue
        for j in range(i + 1, len(stages)):
            later = stages[j]
            expr = (
                later.source if later.kind == "reduction" else getattr(later.store, "value", None)
            )
            if expr is None or not _same(cache.inner[j][1], cache.extents):
                continue
            pattern = substitute(source, {cache.steps[i]: cache.steps[j]})
            mine = cache.stage_loop(j).rewrite(expr, hoist=False)
            if _contains(mine, pattern):
                steps, _ = _static_steps(cache.extents, cache.threads)
                assert steps is not None
                name = f"{stage.init.buffer.name if stage.init else 'source'}_kept"
                cache.kept[i] = (source, Buffer(name, (steps,), source.dtype, scope="local"))
                break


def _reads_only(expr: PrimExpr, buffers: set[Buffer], step: Var) -> bool:
    loads_ok = True

    def visit(node: PrimExpr) -> None:
        nonlocal loads_ok
        if isinstance(node, BufferLoad) and node.buffer not in buffers:
            loads_ok = False
        if isinstance(node, Call) and type(node).op.removeprefix("tir.") not in FLOAT_INTRINSICS:
            loads_ok = False

    post_order_visit(expr, visit)
    handles = {b.data for b in buffers}
    return loads_ok and all(v is step or v in handles for v in free_vars(expr))


def _contains(expr: PrimExpr, pattern: PrimExpr) -> bool:
    found = False

    def visit(node: PrimExpr) -> None:
        nonlocal found
        found = found or structural_equal(node, pattern)

    post_order_visit(expr, visit)
    return found
