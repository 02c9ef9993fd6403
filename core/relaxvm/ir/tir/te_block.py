"""One te compute stage as TVM's ``te.create_prim_func`` writes it: a loop nest around a block.

For a stage ``C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k))``::

    for i, j, k in T.grid(n, m, K):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            T.reads(A[v_i, v_k], B[v_k, v_j])
            T.writes(C[v_i, v_j])
            with T.init():
                C[v_i, v_j] = T.float32(0.0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]

The loops are the stage's own axis variables (spatial axes, then reduction axes); the block
has one iteration variable ``v_<axis name>`` per loop, bound to it, spatial (``"S"``) or
reduction (``"R"``). ``T.reads`` lists the buffers the body reads other than the output, in
order of first use, each as the element it reads (or the span of elements where one buffer is
read at several constant offsets); ``T.writes`` is the element written. These are the regions
TVM's access detection gives for such a block.

:func:`~relaxvm.ir.tir.lower_blocks.lower_blocks` turns this back into the plain loop nest
(``C[i, j] = 0`` before the reduction loops), which is what the schedules and code generators
read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..arith import Analyzer
from ..expr import IntImm, PrimExpr, Range, Var
from ..expr_functor import free_vars, post_order_visit, substitute
from ..op import const
from .block import Block, BlockRealize, BufferRegion, IterVar, IterVarType
from .buffer import Buffer, BufferLoad
from .stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    Stmt,
    seq,
)

__all__ = [
    "BlockNames",
    "StageAxis",
    "StageParts",
    "block_access_regions",
    "block_stage",
    "loop_stage",
]

#: One loop of a stage: its variable, its domain, and whether it is a reduction axis.
StageAxis = tuple[Var, Range, bool]
#: What builds a stage: its loops, how many are spatial, the stored value, and a reduction's
#: init and condition (``None`` for an injective stage).
StageParts = tuple[list[StageAxis], int, PrimExpr, "PrimExpr | None", "PrimExpr | None"]


class BlockNames:
    """Unique block names within one function, as TVM's ``FreshName``: ``C``, ``C_1``, ..."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def __call__(self, name: str) -> str:
        candidate, suffix = name, 0
        while candidate in self._used:
            suffix += 1
            candidate = f"{name}_{suffix}"
        self._used.add(candidate)
        return candidate


def block_stage(
    buffer: Buffer,
    axes: Sequence[StageAxis],
    spatial: int,
    value: PrimExpr,
    init: PrimExpr | None = None,
    condition: PrimExpr | None = None,
    *,
    name: str,
) -> Stmt:
    """The loop nest and block computing one stage into ``buffer``.

    Parameters
    ----------
    buffer : Buffer
        The stage's output.
    axes : sequence of (Var, Range, bool)
        The loops, outermost first: the ``spatial`` data axes (one per output dimension),
        then the reduction axes.
    spatial : int
        How many of ``axes`` are data axes.
    value : PrimExpr
        The value stored at ``buffer[spatial axes]``, over the axis variables: the element of
        an injective stage, or a reduction's update (``combine(buffer[...], source)``).
    init : PrimExpr, optional
        A reduction's starting value (``T.init()``); ``None`` for an injective stage.
    condition : PrimExpr, optional
        A reduction's ``where``: the update is made only where it holds.
    name : str
        The block's name (already unique in the function).
    """
    vmap: dict[Var, PrimExpr] = {}
    iter_vars: list[IterVar] = []
    for var, dom, is_reduce in axes:
        block_var = Var(f"v_{var.name}", var.dtype)
        kind = IterVarType.COMM_REDUCE if is_reduce else IterVarType.DATA_PAR
        iter_vars.append(IterVar(dom, block_var, kind))
        vmap[var] = block_var
    indices = [vmap[var] for var, _, _ in axes[:spatial]]
    read_roots = [substitute(value, vmap.get)]
    body: Stmt = BufferStore(buffer, read_roots[0], indices)
    if condition is not None:
        read_roots.append(substitute(condition, vmap.get))
        body = IfThenElse(read_roots[-1], body)
    init_stmt = None if init is None else BufferStore(buffer, substitute(init, vmap.get), indices)
    writes = [BufferRegion(buffer, [Range.from_min_extent(i, const(1, i.dtype)) for i in indices])]
    reads = _read_regions(read_roots, buffer)
    block = Block(iter_vars, reads, writes, name, body, init_stmt)
    stmt: Stmt = BlockRealize([var for var, _, _ in axes], True, block)
    for var, dom, _ in reversed(axes):
        stmt = For(var, dom.min, dom.extent, ForKind.SERIAL, stmt)
    return stmt


def loop_stage(
    buffer: Buffer,
    axes: Sequence[StageAxis],
    spatial: int,
    value: PrimExpr,
    init: PrimExpr | None = None,
    condition: PrimExpr | None = None,
) -> Stmt:
    """The plain loop nest :func:`block_stage`'s block lowers to (same parameters, no name):
    ``buffer[...] = value`` in the loops, or for a reduction ``buffer[...] = init`` followed
    by the reduction loops around the (conditional) update."""
    indices = [var for var, _, _ in axes[:spatial]]
    stmt: Stmt = BufferStore(buffer, value, indices)
    if condition is not None:
        stmt = IfThenElse(condition, stmt)
    for var, dom, _ in reversed(axes[spatial:]):
        stmt = For(var, dom.min, dom.extent, ForKind.SERIAL, stmt)
    if init is not None:
        stmt = seq(BufferStore(buffer, init, indices), stmt)
    for var, dom, _ in reversed(axes[:spatial]):
        stmt = For(var, dom.min, dom.extent, ForKind.SERIAL, stmt)
    return stmt


def _read_regions(roots: Sequence[PrimExpr], output: Buffer) -> list[BufferRegion]:
    """The regions of the buffers read by ``roots`` (all but ``output``), in first-use order."""
    accesses: dict[Buffer, list[tuple[PrimExpr, ...]]] = {}

    def note(node: PrimExpr) -> None:
        if isinstance(node, BufferLoad) and node.buffer is not output:
            accesses.setdefault(node.buffer, []).append(tuple(node.indices))

    for root in roots:
        post_order_visit(root, note)
    return [BufferRegion(buf, _cover(buf, found)) for buf, found in accesses.items()]


def _cover(buffer: Buffer, accesses: list[tuple[PrimExpr, ...]]) -> list[Range]:
    """Per dimension, the one index read, the span of indices at constant offsets from the
    first, or (anything else) the whole dimension."""
    return _cover_spans(buffer, [tuple((index, index) for index in found) for found in accesses])


def block_access_regions(block: Block) -> tuple[list[BufferRegion], list[BufferRegion]]:
    """The regions a block reads and writes, as TVM's script parser completes a block written
    without ``T.reads``/``T.writes``.

    The block's init and body are walked in order: each ``BufferLoad`` is a read and each
    ``BufferStore`` a write of the element it names, in terms of the block's iteration
    variables; the variables of loops inside the block are relaxed over their domains; a nested
    block contributes its own reads and writes, bound to its iteration values. Accesses to one
    buffer merge into the span that covers them (the whole dimension where the offsets between
    them are not constant). Buffers allocated inside the block are left out, an access to a
    ``T.match_buffer`` view counts against the viewed buffer, and a block with an init leaves
    the buffers it writes out of its reads (a reduction's output).

    Parameters
    ----------
    block : Block
        The block; its own ``reads``/``writes`` are ignored.

    Returns
    -------
    reads, writes : list of BufferRegion
        Each buffer once, in order of first access.
    """
    walker = _AccessWalker(block)
    if block.init is not None:
        walker.stmt(block.init)
    walker.stmt(block.body)
    writes = walker.regions(walker.writes)
    written = {region.buffer for region in writes} if block.init is not None else set()
    reads = [r for r in walker.regions(walker.reads) if r.buffer not in written]
    return reads, writes


#: A span of indices of one dimension, both ends included; None where it is unknown.
_Span = tuple[PrimExpr, PrimExpr] | None


class _AccessWalker:
    """Collects the accesses of one block, in TVM's visiting order (a store before its value,
    a load before its indices)."""

    def __init__(self, block: Block) -> None:
        self.reads: dict[Buffer, list[tuple[_Span, ...]]] = {}
        self.writes: dict[Buffer, list[tuple[_Span, ...]]] = {}
        self.hidden: set[Buffer] = set(block.alloc_buffers)
        self.views = {match.buffer: match.source for match in block.match_buffers}
        self.doms: dict[Var, tuple[PrimExpr, PrimExpr]] = {}  # loop var -> (first, last)
        self.lets: dict[Var, PrimExpr] = {}
        self.analyzer = Analyzer()

    def regions(self, found: dict[Buffer, list[tuple[_Span, ...]]]) -> list[BufferRegion]:
        return [
            BufferRegion(buf, _cover_spans(buf, spans))
            for buf, spans in found.items()
            if buf not in self.hidden
        ]

    # ---- statements and expressions --------------------------------------------------------
    def stmt(self, node: Stmt) -> None:
        if isinstance(node, BufferStore):
            self.note(self.writes, node.buffer, [(i, i) for i in node.indices])
            self.expr(node.value)
            for index in node.indices:
                self.expr(index)
        elif isinstance(node, For):
            self.expr(node.min)
            self.expr(node.extent)
            last = node.min + node.extent - 1
            self.doms[node.loop_var] = (node.min, last)
            self.stmt(node.body)
            del self.doms[node.loop_var]
        elif isinstance(node, LetStmt):
            self.expr(node.value)
            self.lets[node.var] = node.value
            self.stmt(node.body)
            del self.lets[node.var]
        elif isinstance(node, BlockRealize):
            self.nested(node)
        elif isinstance(node, (Allocate, DeclBuffer)):
            self.hidden.add(node.buffer)  # a scratch buffer of the block's own code
            self.stmt(node.body)
        else:
            if isinstance(node, Block):
                self.hidden.update(node.alloc_buffers)
            for name in node.fields:
                self.field(getattr(node, name))

    def field(self, value: object) -> None:
        if isinstance(value, Stmt):
            self.stmt(value)
        elif isinstance(value, PrimExpr):
            self.expr(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                self.field(item)

    def expr(self, root: PrimExpr) -> None:
        # Pre-order, left to right, as TVM's visitor: A before B in A[B[i]].
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, BufferLoad):
                self.note(self.reads, node.buffer, [(i, i) for i in node.indices])
            stack.extend(reversed(node.operands))

    def nested(self, realize: BlockRealize) -> None:
        inner = realize.block
        vmap = {
            iv.var: value for iv, value in zip(inner.iter_vars, realize.iter_values, strict=True)
        }
        for regions, found in ((inner.reads, self.reads), (inner.writes, self.writes)):
            for region in regions:
                spans = [
                    (
                        substitute(r.min, vmap.get),
                        substitute(r.min + r.extent - 1, vmap.get),
                    )
                    for r in region.region
                ]
                self.note(found, region.buffer, spans)

    # ---- one access ------------------------------------------------------------------------
    def note(
        self,
        found: dict[Buffer, list[tuple[_Span, ...]]],
        buffer: Buffer,
        spans: list[tuple[PrimExpr, PrimExpr]],
    ) -> None:
        relaxed = [self.relax(low, high) for low, high in spans]
        source = self.views.get(buffer)
        if source is not None:
            relaxed = _to_source(source, buffer, relaxed, self.analyzer)
            buffer = source.buffer
        found.setdefault(buffer, []).append(tuple(relaxed))

    def relax(self, low: PrimExpr, high: PrimExpr) -> _Span:
        """``[low, high]`` over every value of the enclosing loops inside the block."""
        if self.lets:
            low, high = self.unlet(low), self.unlet(high)
        if not self.doms:
            return low, high
        lowest, highest = _bound(low, self.doms, True), _bound(high, self.doms, False)
        if lowest is None or highest is None:
            return None
        if lowest is low and highest is high:
            return low, high
        return self.analyzer.simplify(lowest), self.analyzer.simplify(highest)

    def unlet(self, expr: PrimExpr) -> PrimExpr:
        for _ in range(len(self.lets) + 1):
            replaced = substitute(expr, self.lets.get)
            if replaced is expr:
                break
            expr = replaced
        return expr


def _bound(expr: PrimExpr, doms: dict[Var, tuple[PrimExpr, PrimExpr]], lower: bool) -> Any:
    """The least (``lower``) or greatest value of ``expr`` over the loops ``doms``, by putting
    each loop's first or last value in where ``expr`` is monotonic in it; None otherwise."""
    # Innermost loop first: its bounds may name the loops outside it.
    for var in reversed(list(doms)):
        if var not in free_vars(expr):
            continue
        first, last = doms[var]
        analyzer = Analyzer()
        try:
            analyzer.bind(var, Range.from_min_extent(first, last - first + 1))
            step = analyzer.simplify(substitute(expr, {var: var + 1}.get) - expr)
            bound = analyzer.const_int_bound(step)
        except Exception:  # a mixed-type or unanalyzable index: unknown
            return None
        if bound.min_value >= 0:
            rising = True
        elif bound.max_value <= 0:
            rising = False
        else:
            return None
        expr = substitute(expr, {var: first if rising == lower else last}.get)
    return expr


def _to_source(
    source: BufferRegion, view: Buffer, spans: list[_Span], analyzer: Analyzer
) -> list[_Span]:
    """Spans of a ``T.match_buffer`` view as spans of the buffer it views (the view's
    dimensions are the source region's last ones)."""
    skipped = len(source.region) - len(view.shape)
    out: list[_Span] = []
    for dim, whole in enumerate(source.region):
        end = whole.min + whole.extent - 1
        span = spans[dim - skipped] if dim >= skipped else None
        if span is None:
            out.append((whole.min, analyzer.simplify(end)))
        else:
            low, high = span
            out.append((analyzer.simplify(whole.min + low), analyzer.simplify(whole.min + high)))
    return out


def _cover_spans(buffer: Buffer, accesses: list[tuple[_Span, ...]]) -> list[Range]:
    """Per dimension, the one index accessed, the span covering accesses at constant offsets
    from the first, or (anything else) the whole dimension."""
    analyzer: Analyzer | None = None
    region: list[Range] = []
    for dim, extent_of_dim in enumerate(buffer.shape):
        spans = [span for access in accesses if (span := access[dim]) is not None]
        if len(spans) < len(accesses):
            region.append(Range.from_min_extent(const(0, extent_of_dim.dtype), extent_of_dim))
            continue
        first = spans[0]
        base = first[0]
        if len(spans) == 1 or all(span[0] is base and span[1] is base for span in spans):
            if first[1] is base:
                region.append(Range.from_min_extent(base, const(1, base.dtype)))
                continue
            if len(spans) == 1:
                analyzer = analyzer or Analyzer()
                extent = analyzer.simplify(first[1] - base + 1)
                region.append(Range.from_min_extent(base, extent))
                continue
        analyzer = analyzer or Analyzer()
        lows: list[int] = []
        highs: list[int] = []
        for span in spans:
            low, high = (_offset(end, base, analyzer) for end in span)
            if low is None or high is None:
                lows = []
                break
            lows.append(low)
            highs.append(high)
        if not lows:
            region.append(Range.from_min_extent(const(0, extent_of_dim.dtype), extent_of_dim))
            continue
        low, high = min(lows), max(highs)
        start = base if low == 0 else analyzer.simplify(base + low)
        region.append(Range.from_min_extent(start, const(high - low + 1, base.dtype)))
    return region


def _offset(expr: PrimExpr, base: PrimExpr, analyzer: Analyzer) -> int | None:
    if expr is base:
        return 0
    try:
        diff = analyzer.simplify(expr - base)
    except Exception:  # indices of different types: not a constant offset
        return None
    return diff.value if isinstance(diff, IntImm) else None
