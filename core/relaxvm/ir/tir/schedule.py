"""A small loop-nest schedule: split, fuse, reorder, and loop kinds, on a PrimFunc's loops.

TVM's ``tir.Schedule`` works on blocks; this one works directly on ``For`` loops, which is all
the targets here need. A loop is named by its loop variable (variables are unique objects), as
returned by :meth:`Schedule.get_loops`. Every transformation returns new loop variables where
it makes new loops, and replaces :attr:`Schedule.func` with a rewritten function; the
original function is never changed. None of them changes what the function computes, which the
tests check with the reference interpreter.

::

    sch = Schedule(func)
    i, j = sch.get_loops("C")
    io, ii = sch.split(i, [None, 4])
    sch.reorder(ii, io)
    sch.parallel(sch.fuse(ii, io))
    sch.cache_reduction("C")   # accumulate in a local scalar
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from ...errors import VMTypeError, VMValueError
from ..arith import Analyzer
from ..expr import ExprLike, IntImm, PrimExpr, Var
from ..expr_functor import free_vars, post_order_visit
from ..op import cast, convert, floordiv, floormod
from .buffer import Buffer, BufferLoad
from .function import PrimFunc
from .lower_blocks import as_loop_nests
from .stmt import Allocate, BufferStore, For, ForKind, IfThenElse, SeqStmt, Stmt, seq
from .stmt_functor import StmtMutator, StmtVisitor, substitute

__all__ = ["Schedule"]


class _FindLoops(StmtVisitor):
    """Record, for each loop, the chain of loops enclosing it (itself included)."""

    def __init__(self) -> None:
        self.chains: dict[Var, list[For]] = {}
        self.stores: dict[str, list[For]] = {}
        self.stack: list[For] = []

    def visit_for_(self, stmt: For) -> None:
        self.stack.append(stmt)
        self.chains[stmt.loop_var] = list(self.stack)
        super().visit_for_(stmt)
        self.stack.pop()

    def visit_buffer_store_(self, stmt: BufferStore) -> None:
        self.stores.setdefault(stmt.buffer.name, list(self.stack))


class _Replace(StmtMutator):
    """Replace the loop with a given loop variable by a new statement."""

    def __init__(self, loop_var: Var, new: Stmt) -> None:
        self.loop_var, self.new, self.found = loop_var, new, False

    def visit_for_(self, stmt: For) -> Stmt:
        if stmt.loop_var is self.loop_var:
            self.found = True
            return self.new
        return super().visit_for_(stmt)


class Schedule:
    """Loop transformations on a copy of ``func``; the result is :attr:`func`."""

    def __init__(self, func: PrimFunc) -> None:
        if not isinstance(func, PrimFunc):
            raise VMTypeError(f"Schedule: expected a PrimFunc, got {type(func).__name__}")
        self.func = as_loop_nests(func)  # a loop schedule: block form as its loops

    # ---- lookup ------------------------------------------------------------------------
    def _scan(self) -> _FindLoops:
        finder = _FindLoops()
        finder.visit_stmt(self.func.body)
        return finder

    def get_loops(self, buffer_name: str | None = None) -> list[Var]:
        """Loop variables, outermost first: those enclosing the first store into the named
        buffer, or every loop of the function (in program order) when no name is given."""
        finder = self._scan()
        if buffer_name is None:
            return list(finder.chains)
        chain = finder.stores.get(buffer_name)
        if chain is None:
            raise VMValueError(
                f"Schedule.get_loops: no store into a buffer named {buffer_name!r}; "
                f"stored buffers: {sorted(finder.stores)}"
            )
        return [loop.loop_var for loop in chain]

    def _loop(self, where: str, loop_var: Var) -> tuple[For, list[For]]:
        if isinstance(getattr(loop_var, "var", None), Var):
            loop_var = loop_var.var  # type: ignore[attr-defined]  # a te.IterVar
        if not isinstance(loop_var, Var):
            raise VMTypeError(f"Schedule.{where}: expected a loop variable, got {loop_var!r}")
        chain = self._scan().chains.get(loop_var)
        if chain is None:
            raise VMValueError(
                f"Schedule.{where}: {loop_var.name!r} is not a loop of {self.func.name!r} "
                "(it may have been replaced by an earlier transformation)"
            )
        return chain[-1], chain

    def _replace(self, loop_var: Var, new: Stmt) -> None:
        replacer = _Replace(loop_var, new)
        self.func = self.func.with_body(replacer.visit_stmt(self.func.body))

    # ---- loop kinds ----------------------------------------------------------------------
    def _set_kind(
        self, where: str, loop_var: Var, kind: ForKind, thread: str | None = None
    ) -> None:
        loop, _ = self._loop(where, loop_var)
        self._replace(loop.loop_var, loop.replace(kind=kind, thread_binding=thread))

    def parallel(self, loop: Var) -> None:
        """Run the loop's iterations in parallel."""
        self._set_kind("parallel", loop, ForKind.PARALLEL)

    def vectorize(self, loop: Var) -> None:
        """Mark the loop for vectorization."""
        self._set_kind("vectorize", loop, ForKind.VECTORIZED)

    def unroll(self, loop: Var) -> None:
        """Mark the loop for unrolling."""
        self._set_kind("unroll", loop, ForKind.UNROLLED)

    def bind(self, loop: Var, thread_axis: str) -> None:
        """Bind the loop to a GPU thread axis (``"threadIdx.x"``, ``"blockIdx.x"``, ...)."""
        self._set_kind("bind", loop, ForKind.THREAD_BINDING, thread_axis)

    # ---- split -----------------------------------------------------------------------------
    def split(self, loop: Var, factors: Sequence[ExprLike | None]) -> list[Var]:
        """Split a loop into nested loops with the given extents, outermost first.

        At most one factor may be None; it is inferred as the ceiling division of the extent
        by the product of the others. When the factors do not provably multiply to the extent,
        the body is guarded by ``if fused_index < extent``.
        """
        node, _ = self._loop("split", loop)
        loop = node.loop_var
        dtype = loop.dtype
        if len(factors) < 2:
            raise VMValueError(f"Schedule.split: need at least two factors, got {list(factors)}")
        if sum(f is None for f in factors) > 1:
            raise VMValueError("Schedule.split: at most one factor may be None")
        known: list[PrimExpr] = []
        for factor in factors:
            if factor is None:
                continue
            expr = cast(convert(factor), dtype)
            if isinstance(expr, IntImm) and expr.value <= 0:
                raise VMValueError(f"Schedule.split: factors must be positive, got {expr.value}")
            known.append(expr)
        product = math.prod(known[1:], start=known[0])
        extents = [
            floordiv(node.extent + product - 1, product) if f is None else cast(convert(f), dtype)
            for f in factors
        ]
        new_vars = [Var(f"{loop.name}_{k}", dtype) for k in range(len(extents))]
        fused: PrimExpr = new_vars[0]
        for var, extent in zip(new_vars[1:], extents[1:], strict=True):
            fused = fused * extent + var
        body = substitute(node.body, {loop: node.min + fused})
        total = math.prod(extents[1:], start=extents[0])
        if not Analyzer().can_prove_equal(total, node.extent):
            body = IfThenElse(fused < node.extent, body)
        for var, extent in reversed(list(zip(new_vars, extents, strict=True))):
            body = For(var, 0, extent, ForKind.SERIAL, body)
        self._replace(loop, body)
        return new_vars

    # ---- fuse --------------------------------------------------------------------------------
    def _perfect_chain(self, where: str, outer: Var, inner: Var) -> list[For]:
        """The loops from ``outer`` down to ``inner``, each the whole body of the one above."""
        _, chain = self._loop(where, inner)
        starts = [k for k, loop in enumerate(chain) if loop.loop_var is outer]
        if not starts:
            raise VMValueError(
                f"Schedule.{where}: loop {outer.name!r} does not enclose loop {inner.name!r}"
            )
        nest = chain[starts[0] :]
        for upper, lower in itertools.pairwise(nest):
            if upper.body is not lower:
                raise VMValueError(
                    f"Schedule.{where}: loops {upper.loop_var.name!r} and "
                    f"{lower.loop_var.name!r} are not perfectly nested (other statements "
                    "sit between them)"
                )
        return nest

    def fuse(self, *loops: Var) -> Var:
        """Fuse perfectly nested loops (given outermost first) into one loop."""
        if len(loops) < 2:
            raise VMValueError("Schedule.fuse: need at least two loops")
        loops = tuple(self._loop("fuse", loop)[0].loop_var for loop in loops)
        nest = self._perfect_chain("fuse", loops[0], loops[-1])
        if [loop.loop_var for loop in nest] != list(loops):
            raise VMValueError(
                "Schedule.fuse: the loops must be directly nested, outermost first; the nest "
                f"is {[loop.loop_var.name for loop in nest]}"
            )
        self._check_independent("fuse", nest)
        dtype = nest[0].loop_var.dtype
        fused = Var("_".join(v.name for v in loops) + "_fused", dtype)
        mapping: dict[Var, PrimExpr] = {}
        inner_size: PrimExpr = IntImm(dtype, 1)
        for position, loop in reversed(list(enumerate(nest))):
            index = floordiv(fused, inner_size)
            if position > 0:
                index = floormod(index, cast(loop.extent, dtype))
            mapping[loop.loop_var] = loop.min + index
            inner_size = inner_size * cast(loop.extent, dtype)
        body = substitute(nest[-1].body, mapping)
        self._replace(loops[0], For(fused, 0, inner_size, ForKind.SERIAL, body))
        return fused

    def _check_independent(self, where: str, nest: list[For]) -> None:
        # A loop whose bounds use an enclosing loop's variable cannot be moved or merged.
        loop_vars = {loop.loop_var for loop in nest}
        for loop in nest:
            used = set(free_vars(loop.min)) | set(free_vars(loop.extent))
            if used & loop_vars:
                raise VMValueError(
                    f"Schedule.{where}: the bounds of loop {loop.loop_var.name!r} depend on "
                    f"another loop of the nest ({', '.join(sorted(v.name for v in used & loop_vars))})"
                )

    # ---- caching ----------------------------------------------------------------------------
    def cache_reduction(self, buffer_name: str) -> Buffer:
        """Accumulate the reduction into ``buffer_name`` in a one-element local buffer.

        ``C[i, j] = 0; for k: C[i, j] = C[i, j] + ...`` becomes ``acc[0] = 0; for k: acc[0] =
        acc[0] + ...; C[i, j] = acc[0]``, with ``acc`` allocated in ``"local"`` scope. Returns
        the local buffer.
        """
        return _cache_reduction(self, buffer_name)

    # ---- reorder -------------------------------------------------------------------------
    def reorder(self, *loops: Var) -> None:
        """Reorder loops of one perfect nest: they take the given order, outermost first.

        Loops of the nest that are not named keep their positions.
        """
        loops = tuple(self._loop("reorder", loop)[0].loop_var for loop in loops)
        if len(set(loops)) != len(loops):
            raise VMValueError("Schedule.reorder: a loop is named twice")
        if len(loops) < 2:
            return
        chains = [self._loop("reorder", loop)[1] for loop in loops]
        deepest = max(chains, key=len)
        for loop_var, chain in zip(loops, chains, strict=True):
            if chain[-1] not in deepest:
                raise VMValueError(
                    f"Schedule.reorder: loop {loop_var.name!r} is not in the same nest as "
                    f"{deepest[-1].loop_var.name!r}"
                )
        outermost = min(chains, key=len)[-1].loop_var
        nest = self._perfect_chain("reorder", outermost, deepest[-1].loop_var)
        self._check_independent("reorder", nest)
        named = set(loops)
        order = iter(loops)
        by_var = {loop.loop_var: loop for loop in nest}
        new_order = [by_var[next(order)] if loop.loop_var in named else loop for loop in nest]
        body = nest[-1].body
        for loop in reversed(new_order):
            body = loop.replace(body=body)
        self._replace(nest[0].loop_var, body)


# ---- caching a reduction in a local accumulator -------------------------------------------------
def _rewrite_loads(expr: PrimExpr, rewrite: Callable[[BufferLoad], PrimExpr | None]) -> PrimExpr:
    """Rebuild ``expr`` with some loads replaced (``rewrite`` returns None to keep one)."""
    done: dict[int, PrimExpr] = {}

    def visit(node: PrimExpr) -> None:
        if isinstance(node, BufferLoad):
            replacement = rewrite(node)
            if replacement is not None:
                done[id(node)] = replacement
                return
        done[id(node)] = node.with_operands(*(done[id(op)] for op in node.operands))

    post_order_visit(expr, visit)
    return done[id(expr)]


class _FindReductionInit(StmtVisitor):
    """Find ``seq(B[I] = init, <loop nest updating B[I]>)``, the shape te lowers to."""

    def __init__(self, buffer_name: str) -> None:
        self.buffer_name = buffer_name
        self.found: tuple[SeqStmt, int] | None = None

    def visit_seq_stmt_(self, stmt: SeqStmt) -> None:
        for position, (first, second) in enumerate(itertools.pairwise(stmt.seq)):
            is_init = isinstance(first, BufferStore) and first.buffer.name == self.buffer_name
            if is_init and isinstance(second, For) and self.found is None:
                self.found = (stmt, position)
        super().visit_seq_stmt_(stmt)


def _cache_reduction(schedule: Schedule, buffer_name: str) -> Buffer:
    """Accumulate a reduction into ``buffer_name`` in a one-element local buffer.

    ``C[i, j] = 0; for k: C[i, j] = C[i, j] + ...`` becomes
    ``acc[0] = 0; for k: acc[0] = acc[0] + ...; C[i, j] = acc[0]`` with ``acc`` allocated in
    ``"local"`` scope around it (TVM reaches the same code with ``cache_write(..., "local")``
    on a reduction block).
    """
    finder = _FindReductionInit(buffer_name)
    finder.visit_stmt(schedule.func.body)
    if finder.found is None:
        raise VMValueError(
            f"Schedule.cache_reduction: no reduction into {buffer_name!r} (a store of the "
            "initial value followed by the update loop) was found"
        )
    seq_stmt, position = finder.found
    init, update = seq_stmt.seq[position], seq_stmt.seq[position + 1]
    assert isinstance(init, BufferStore)
    target, indices = init.buffer, init.indices
    acc = Buffer(f"{target.name}_local", (1,), target.dtype, scope="local")
    zero = IntImm("int64", 0)

    def same_element(load_indices: tuple[PrimExpr, ...]) -> bool:
        return all(a == b for a, b in zip(load_indices, indices, strict=True))

    def to_acc(load: BufferLoad) -> PrimExpr | None:
        if load.buffer is not target:
            return None
        if not same_element(load.indices):
            raise VMValueError(
                f"Schedule.cache_reduction: the update reads {load} but the reduction "
                f"accumulates into {target.name}[{', '.join(map(str, indices))}]"
            )
        return acc[zero]

    class _ToLocal(StmtMutator):
        def visit_expr(self, expr: PrimExpr) -> PrimExpr:
            return _rewrite_loads(expr, to_acc)

        def visit_buffer_store_(self, stmt: BufferStore) -> Stmt:
            new = super().visit_buffer_store_(stmt)
            assert isinstance(new, BufferStore)
            if new.buffer is not target:
                return new
            if not same_element(new.indices):
                raise VMValueError(
                    f"Schedule.cache_reduction: the update writes {target.name} at "
                    f"({', '.join(map(str, new.indices))}), not the accumulated element"
                )
            return BufferStore(acc, new.value, [zero])

    local_update = _ToLocal().visit_stmt(update)
    cached = Allocate(
        acc,
        seq(
            BufferStore(acc, init.value, [zero]),
            local_update,
            BufferStore(target, acc[zero], indices),
        ),
    )
    new_seq = seq(*seq_stmt.seq[:position], cached, *seq_stmt.seq[position + 2 :])

    class _SwapSeq(StmtMutator):
        def visit_seq_stmt_(self, stmt: SeqStmt) -> Stmt:
            return new_seq if stmt is seq_stmt else super().visit_seq_stmt_(stmt)

    schedule.func = schedule.func.with_body(_SwapSeq().visit_stmt(schedule.func.body))
    return acc
