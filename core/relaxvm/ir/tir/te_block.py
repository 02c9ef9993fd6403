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

from ..arith import Analyzer
from ..expr import IntImm, PrimExpr, Range, Var
from ..expr_functor import post_order_visit, substitute
from ..op import const
from .block import Block, BlockRealize, BufferRegion, IterVar, IterVarType
from .buffer import Buffer, BufferLoad
from .stmt import BufferStore, For, ForKind, IfThenElse, Stmt, seq

__all__ = ["BlockNames", "StageAxis", "StageParts", "block_stage", "loop_stage"]

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
    analyzer: Analyzer | None = None
    region: list[Range] = []
    for dim, first in enumerate(accesses[0]):
        others = [access[dim] for access in accesses[1:] if access[dim] is not first]
        if not others:
            region.append(Range.from_min_extent(first, const(1, first.dtype)))
            continue
        analyzer = analyzer or Analyzer()
        offsets = [0]
        for index in others:
            diff = analyzer.simplify(index - first)
            if not isinstance(diff, IntImm):
                offsets = []
                break
            offsets.append(diff.value)
        if not offsets:
            extent = buffer.shape[dim]
            region.append(Range.from_min_extent(const(0, extent.dtype), extent))
            continue
        low, high = min(offsets), max(offsets)
        start = first if low == 0 else analyzer.simplify(first + low)
        region.append(Range.from_min_extent(start, const(high - low + 1, first.dtype)))
    return region
