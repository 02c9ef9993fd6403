"""Data layout for the tiles: packing the reused operand tile by tile, and column blocks
sized for the L2 cache (see :mod:`.tile`).

When the operand is a constant of the model, :mod:`.prepack` packs it once at compile time:
inside :func:`prepacking`, :func:`choose_packing` turns a load of an *offered* parameter
buffer into a :class:`Packing` whose buffer is a new parameter (``prepacked``), with no copy
stage; :attr:`Packing.layout` says how to build it from the original with numpy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.expr_functor import free_vars, substitute
from relaxvm.ir.op import floordiv
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import Buffer, BufferLoad, BufferStore, For, ForKind, Stmt
from relaxvm.ir.tir.stage_epilogue import rewrite_loads
from relaxvm.ir.tir.stages import Stage, loads_of, static_extent, vector_access

from .config import CpuConfig
from .plan import TilePlan, transposed_operand

__all__ = [
    "PackLayout",
    "Packing",
    "Prepacking",
    "choose_packing",
    "column_blocks",
    "no_prepacking",
    "prepacked_packing",
    "prepacking",
]


@dataclass(frozen=True)
class PackLayout:
    """How a packed copy is built from the operand ``B``:
    ``packed[t, k0, ..., lane] = B[idx]`` where ``axes[d]`` says what index ``d`` of ``B`` is:
    ``("k", i)`` the ``i``-th reduction loop, ``("n", 0)`` the column ``t * cols + lane``, or
    ``("c", value)`` a constant. Columns past ``columns`` (the last, partial tile) are zero."""

    cols: int
    columns: int
    red_extents: tuple[int, ...]
    axes: tuple[tuple[str, int], ...]

    @property
    def tiles(self) -> int:
        """Tiles in the packed copy: every column, the last tile padded."""
        return -(-self.columns // self.cols)

    @property
    def shape(self) -> tuple[int, ...]:
        """The packed copy's shape, ``(tiles, *red_extents, cols)``."""
        return (self.tiles, *self.red_extents, self.cols)


@dataclass
class Prepacking:
    """The state of one :func:`prepacking` scope: the parameter buffers offered, and the
    packed buffer (with its layout) made for each one the schedules chose to read packed.
    A buffer asked for with two different layouts is a conflict (left unpacked)."""

    offered: frozenset[Buffer]
    made: dict[Buffer, tuple[PackLayout, Buffer]] = field(default_factory=dict)
    conflicts: set[Buffer] = field(default_factory=set)


_PREPACKING: ContextVar[Prepacking | None] = ContextVar("relaxvm_llvm_prepacking", default=None)


@contextmanager
def prepacking(buffers: Iterable[Buffer]) -> Iterator[Prepacking]:
    """Within the block, schedules read the offered parameter buffers from packed copies
    made at compile time (see :mod:`.prepack`) wherever they can."""
    state = Prepacking(frozenset(buffers))
    token = _PREPACKING.set(state)
    try:
        yield state
    finally:
        _PREPACKING.reset(token)


@contextmanager
def no_prepacking() -> Iterator[None]:
    """Within the block, nothing is offered (schedules whose layouts :mod:`.prepack` does
    not handle)."""
    token = _PREPACKING.set(None)
    try:
        yield
    finally:
        _PREPACKING.reset(token)


class Packing:
    """A copy of the reused operand (``B`` of a matmul) laid out tile by tile,
    ``packed[tile, k..., lane] = B[k..., tile * V + lane]``, so the tile's inner loop reads
    consecutive memory instead of one row of ``B`` per ``k`` (fewer TLB misses, sequential
    prefetch).

    With ``prepacked`` (a parameter buffer made by :func:`prepacked_packing`), the copy was
    made at compile time: there is no copy stage, and the last tile is padded with zeros."""

    def __init__(
        self,
        load: BufferLoad,
        stage: Stage,
        plan: TilePlan,
        col_var: Var,
        prepacked: Buffer | None = None,
    ) -> None:
        self.load, self.col_var, self.cols = load, col_var, plan.cols
        extent = next(lp.extent for lp in stage.loops if lp.loop_var is col_var)
        dtype = str(col_var.dtype)
        self.tiles: PrimExpr = floordiv(extent, plan.cols)
        self.red_vars = [lp.loop_var for lp in stage.reduce_loops]
        self.red_extents = [lp.extent for lp in stage.reduce_loops]
        self.prepacked = prepacked is not None
        if prepacked is not None:
            self.buffer = prepacked
            self.tiles = prepacked.shape[0]
        else:
            self.buffer = Buffer(
                f"{load.buffer.name}_packed",
                (self.tiles, *self.red_extents, plan.cols),
                load.buffer.dtype,
            )
        self.tile_var = Var("pack_tile", dtype)
        self.lane = Var("pack_lane", dtype)
        # The tile index in a rewritten source when the caller substitutes it later.
        self.panel = Var("pack_panel", dtype)

    def rewrite(self, source: PrimExpr, tile: PrimExpr) -> PrimExpr:
        """``source`` reading the packed copy for tile ``tile`` (lanes as ``self.lane``)."""
        target = self.load

        def swap(load: BufferLoad) -> PrimExpr | None:
            if load.buffer is target.buffer and all(
                structural_equal(a, b) for a, b in zip(load.indices, target.indices, strict=True)
            ):
                return self.buffer[tuple([tile, *self.red_vars, self.lane])]
            return None

        return rewrite_loads(source, swap)

    def stage(self, parallel: bool) -> Stmt:
        """The loop nest filling the packed copy."""
        lane = Var("pack_v", self.lane.dtype)
        value = substitute(self.load, {self.col_var: self.tile_var * self.cols + lane})
        red = [Var(v.name, v.dtype) for v in self.red_vars]
        value = substitute(value, dict(zip(self.red_vars, red, strict=True)))
        body: Stmt = For(
            lane, 0, self.cols, ForKind.VECTORIZED,
            BufferStore(self.buffer, value, [self.tile_var, *red, lane]),
        )  # fmt: skip
        for var, extent in reversed(list(zip(red, self.red_extents, strict=True))):
            body = For(var, 0, extent, ForKind.SERIAL, body)
        kind = ForKind.PARALLEL if parallel else ForKind.SERIAL
        return For(self.tile_var, 0, self.tiles, kind, body)

    def stage_block(self, first: PrimExpr, count: PrimExpr) -> Stmt:
        """Fill tiles ``first .. first + count - 1`` only (one column block), reduction
        loops outermost: each ``k`` reads ``count * V`` consecutive elements of a row of the
        operand, where the whole-operand copy reads ``V`` per row."""
        dtype = str(self.lane.dtype)
        lane, tile = Var("pack_v", dtype), Var("pack_t", dtype)
        red = [Var(v.name, v.dtype) for v in self.red_vars]
        column = (first + tile) * self.cols + lane
        value = substitute(self.load, {self.col_var: column})
        value = substitute(value, dict(zip(self.red_vars, red, strict=True)))
        body: Stmt = For(
            lane, 0, self.cols, ForKind.VECTORIZED,
            BufferStore(self.buffer, value, [first + tile, *red, lane]),
        )  # fmt: skip
        body = For(tile, 0, count, ForKind.SERIAL, body)
        for var, extent in reversed(list(zip(red, self.red_extents, strict=True))):
            body = For(var, 0, extent, ForKind.SERIAL, body)
        return body


def choose_packing(
    stage: Stage, plan: TilePlan, config: CpuConfig, dense: bool = False
) -> Packing | None:
    """Pack the reused operand when the tile reads it row by row from a wide matrix and
    enough row tiles reuse each packed tile to pay for the copy; a dense reduction's
    transposed operand is always packed. An operand offered by :func:`prepacking` is read
    from its packed parameter whenever its indices allow (no copy to pay for)."""
    prepacked = prepacked_packing(stage, plan)
    if prepacked is not None:
        return prepacked
    if plan.row_var is None or not (config.pack or dense):
        return None
    assert stage.init is not None and stage.source is not None
    col_var = stage.init.indices[-1]
    assert isinstance(col_var, Var)
    if dense:
        transposed = transposed_operand(stage)
        return None if transposed is None else Packing(transposed, stage, plan, col_var)
    extents = {lp.loop_var: lp.extent for lp in stage.loops}
    rows = static_extent(extents[plan.row_var])
    if rows is not None and rows < 4 * plan.rows:
        return None
    cols = static_extent(extents[col_var])
    if cols is not None and cols < 2 * plan.cols:
        return None
    red_vars = {lp.loop_var for lp in stage.reduce_loops}
    depth = 1
    for lp in stage.reduce_loops:
        depth *= static_extent(lp.extent) or 1024
    if depth < 64:
        return None
    for load in loads_of(stage.source):
        if vector_access(load, col_var) != "contiguous":
            continue
        used = {v for v in free_vars(load) if str(v.dtype) != "handle"}
        if plan.row_var in used or not used <= red_vars | {col_var}:
            continue
        return Packing(load, stage, plan, col_var)
    return None


def column_blocks(stage: Stage, plan: TilePlan, config: CpuConfig) -> tuple[int, int, int] | None:
    """``(block_cols, full_blocks, leftover)`` when the columns are split into blocks whose
    slice of the reused operand (``K x block_cols``) stays in the L2 cache, else None."""
    if plan.row_var is None:
        return None
    assert stage.init is not None
    col_var = stage.init.indices[-1]
    extent = next(lp.extent for lp in stage.loops if lp.loop_var is col_var)
    n = static_extent(extent)
    depth = 1
    for loop in stage.reduce_loops:
        const = static_extent(loop.extent)
        depth *= const if const is not None else 1024
    if n is None:
        return None
    itemsize = max(1, stage.init.buffer.dtype.bits // 8)
    tiles = max(1, config.l2_bytes // 2 // (depth * itemsize * plan.cols))
    block_cols = tiles * plan.cols
    if n < 2 * block_cols:
        return None
    full_blocks, left = divmod(n, block_cols)
    return block_cols, full_blocks, left


def _layout(load: BufferLoad, stage: Stage, col_var: Var, cols: int) -> PackLayout | None:
    """The layout of a compile-time packed copy of ``load``'s buffer, or None when its
    indices are not plain loop variables and constants or an extent is symbolic."""
    red = [lp.loop_var for lp in stage.reduce_loops]
    extents = [static_extent(lp.extent) for lp in stage.reduce_loops]
    columns = static_extent(next(lp.extent for lp in stage.loops if lp.loop_var is col_var))
    if columns is None or any(e is None for e in extents):
        return None
    if any(static_extent(d) is None for d in load.buffer.shape):
        return None
    axes: list[tuple[str, int]] = []
    for index in load.indices:
        if isinstance(index, IntImm):
            axes.append(("c", index.value))
        elif index is col_var:
            axes.append(("n", 0))
        elif isinstance(index, Var) and any(index is v for v in red):
            axes.append(("k", next(i for i, v in enumerate(red) if v is index)))
        else:
            return None
    if sum(1 for a in axes if a[0] == "n") != 1 or len(set(axes)) != len(axes):
        return None
    return PackLayout(cols, columns, tuple(e for e in extents if e is not None), tuple(axes))


def prepacked_packing(stage: Stage, plan: TilePlan) -> Packing | None:
    """The :class:`Packing` of an operand offered by :func:`prepacking` (read from a packed
    parameter made at compile time), or None (no scope, nothing offered, or no load of an
    offered buffer whose layout can be packed)."""
    state = _PREPACKING.get()
    if state is None or not state.offered:
        return None
    assert stage.init is not None and stage.source is not None
    col_var = stage.init.indices[-1]
    if not isinstance(col_var, Var):
        return None
    for load in loads_of(stage.source):
        if load.buffer not in state.offered or load.buffer in state.conflicts:
            continue
        layout = _layout(load, stage, col_var, plan.cols)
        if layout is None:
            continue
        made = state.made.get(load.buffer)
        if made is None:
            dtype = str(col_var.dtype)
            shape = [IntImm(dtype, d) for d in layout.shape]
            packed = Buffer(f"{load.buffer.name}_packed", shape, load.buffer.dtype)
            made = state.made[load.buffer] = (layout, packed)
        elif made[0] != layout:
            state.conflicts.add(load.buffer)
            continue
        return Packing(load, stage, plan, col_var, prepacked=made[1])
    return None
