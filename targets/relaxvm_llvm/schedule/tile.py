"""Register-blocked reduction tiles: the matmul, batch-matmul, convolution and pooling
kernel, with its elementwise epilogue kept in registers.

A reduction stage ``Y[..., r, ..., v] = sum_k f(...)`` is computed one *tile* at a time: ``R``
consecutive values of a *row* axis ``r`` times ``V`` consecutive values of the output's last
(contiguous) axis ``v``. The tile's accumulators live in a small ``local`` buffer ``acc[R, V]``
which LLVM keeps in vector registers: rows are unrolled in the TIR itself, columns are a
vectorized loop of constant extent, so every access to ``acc`` has a constant offset::

    acc[r, 0:V] = init                                   # per unrolled row r
    for k in ...:                                        # reduction loops, innermost work
        acc[0, 0:V] += A[i0 + 0, k] * B[k, j0 : j0 + V]  # one broadcast, one vector FMA
        ...                                              # rows 1 .. R-1 reuse the B vector
    Z[i0 + r, j0 : j0 + V] = epilogue(acc[r, 0:V])       # bias, activation, in registers

The row axis is a spatial axis that some vector load does *not* depend on (so that load is
reused across the R rows: ``i`` for matmul, the output channel for NCHW convolution); without
one, ``R = 1`` and more columns are used. The loops outside the tile (batch, row tiles) are
fused into one parallel loop. Edges: a constant remainder gets one smaller tile; with a
symbolic row count the last tile clamps its rows to the last row (recomputing it, so one tile
shape serves every count); a symbolic column remainder runs one column at a time. Accumulation order over ``k`` is unchanged,
so results match the unscheduled function up to FMA contraction.

For large problems the reused operand is first copied tile by tile (:mod:`.packing`), so the
inner loop streams consecutive memory, and the columns are split into blocks whose slice of
that operand stays in L2; the column block is the outermost loop of the parallel grid. When
the blocks share out evenly between the threads, the grid is the blocks alone and each block
packs its own slice first (in the cache of the thread that uses it, with no separate copy
pass and barrier); otherwise the copy runs before the grid. A dense ``x @ W.T``
(``W[j, k]``) is tiled the same way once ``W`` is packed. Few rows take the unpacked path of
:mod:`.small` instead (chosen at run time for a symbolic row count). A constant operand is
packed once at compile time instead (:mod:`.prepack`): the tiles, tails included, then read
the packed parameter and nothing is copied per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.expr_functor import substitute
from relaxvm.ir.op import floordiv, floormod, min_expr
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    SeqStmt,
    Stmt,
    seq,
)
from relaxvm.ir.tir import substitute as substitute_stmt
from relaxvm.ir.tir.stage_epilogue import Epilogue
from relaxvm.ir.tir.stages import COMBINE, Stage, static_extent, vector_access

from .config import SMALL_PARALLEL_FACTOR, CpuConfig
from .loops import fused_grid, product
from .packing import Packing, choose_packing, column_blocks
from .plan import TilePlan, plan_tile, transposed_operand

__all__ = ["TilePlan", "plan_tile", "schedule_tiled_reduction", "transposed_operand"]


class _TileBuilder:
    """Emits the tiles of one reduction stage (its loops, epilogue, packing, blocks)."""

    def __init__(self, stage: Stage, epilogue: Epilogue, plan: TilePlan) -> None:
        assert stage.init is not None and stage.source is not None and stage.combiner
        self.stage, self.epilogue, self.plan = stage, epilogue, plan
        # The planner only tiles stages whose output's last index is a loop variable.
        self.col_var = cast(Var, stage.init.indices[-1])
        self.dtype = stage.init.buffer.dtype
        self.combine = COMBINE[stage.combiner]
        self.blocks: tuple[int, int, int] | None = None
        self.pack: Packing | None = None
        # With a symbolic row count the last tile clamps its rows to the last one: rows past
        # the end recompute (and store the same value into) the last row, so one tile
        # shape serves every row count (half the code for LLVM to compile).
        self.row_limit: PrimExpr | None = None
        # Each column block packs its own tiles of the operand (see _packs_per_block).
        self.pack_in_blocks = False
        # A constant row remainder runs as a clamped last tile (see schedule_tiled_reduction).
        self.clamp_rows = False

    def _fresh_reduce_loops(self) -> tuple[list[For], dict[Var, PrimExpr]]:
        # Every tile defines its own reduction loop variables (no variable is bound twice).
        mapping: dict[Var, PrimExpr] = {
            loop.loop_var: Var(loop.loop_var.name, loop.loop_var.dtype)
            for loop in self.stage.reduce_loops
        }
        return list(self.stage.reduce_loops), mapping

    def tile(
        self,
        row_base: PrimExpr | None,
        rows: int,
        col_base: PrimExpr,
        cols: int,
        vec: bool,
        packed: PrimExpr | None = None,
    ) -> Stmt:
        """One tile: rows ``row_base + 0..rows-1`` by columns ``col_base + 0..cols-1``."""
        stage, epi = self.stage, self.epilogue
        assert stage.init is not None and stage.source is not None
        acc = Buffer(f"{stage.init.buffer.name}_acc", (rows, cols), self.dtype, scope="local")
        col_dtype = str(self.col_var.dtype)
        kind = ForKind.VECTORIZED if vec and cols > 1 else ForKind.SERIAL
        red_loops, red_map = self._fresh_reduce_loops()

        def row_map(r: int, lane: PrimExpr) -> dict[Var, PrimExpr]:
            mapping: dict[Var, PrimExpr] = {self.col_var: col_base + lane}
            if self.plan.row_var is not None and row_base is not None:
                row = row_base + r
                if self.row_limit is not None:
                    row = min_expr(row, self.row_limit)
                mapping[self.plan.row_var] = row
            return mapping

        # Columns go in chunks of one native vector each: LLVM handles <8 x float> well but
        # odd-sized vectors such as <24 x float> poorly.
        width = self.plan.lanes if kind == ForKind.VECTORIZED else cols
        chunks = [(start, min(width, cols - start)) for start in range(0, cols, width)]

        # The chunk being emitted: (its first column in the tile, its lane variable).
        current: list[tuple[int, Var]] = []

        def per_row(make: Callable[[int, PrimExpr, IntImm], Stmt]) -> Stmt:
            parts = []
            for r in range(rows):
                for start, count in chunks:
                    lane = Var(f"{self.col_var.name}_v", col_dtype)
                    column = lane + start if start else lane
                    loop_kind = kind if count > 1 else ForKind.SERIAL
                    current[:] = [(start, lane)]
                    parts.append(
                        For(lane, 0, count, loop_kind, make(r, column, IntImm("int64", r)))
                    )
            return seq(*parts)

        def init(r: int, lane: PrimExpr, rr: IntImm) -> Stmt:
            value = substitute(stage.init.value, row_map(r, lane))  # type: ignore[union-attr]
            return BufferStore(acc, value, [rr, lane])

        source_expr = stage.source
        pack = self.pack
        # A copy packed at compile time replaces the operand in every tile (tails included);
        # one packed here covers the tiles given their tile index ``packed``.
        use_pack = pack is not None and (packed is not None or pack.prepacked)
        if use_pack:
            assert pack is not None
            source_expr = pack.rewrite(source_expr, pack.panel)

        def update(r: int, lane: PrimExpr, rr: IntImm) -> Stmt:
            mapping = {**row_map(r, lane), **red_map}
            if use_pack:
                assert pack is not None
                mapping.update(self._packed_lane(pack, packed, col_base, *current[0]))
            source = substitute(source_expr, mapping)  # type: ignore[arg-type]
            return BufferStore(acc, self.combine(acc[rr, lane], source), [rr, lane])

        def store(r: int, lane: PrimExpr, rr: IntImm) -> Stmt:
            mapping = row_map(r, lane)
            value = substitute(epi.value, {**mapping, epi.acc: acc[rr, lane]})
            indices = [substitute(i, mapping) for i in epi.indices]
            return BufferStore(epi.buffer, value, indices)

        body: Stmt = per_row(update)
        for loop in reversed(red_loops):
            new_var = red_map[loop.loop_var]
            assert isinstance(new_var, Var)
            body = For(new_var, 0, loop.extent, ForKind.SERIAL, body)
        return Allocate(acc, seq(per_row(init), body, per_row(store)))

    @staticmethod
    def _packed_lane(
        pack: Packing, packed: PrimExpr | None, col_base: PrimExpr, start: int, lane: Var
    ) -> dict[Var, PrimExpr]:
        """Where a chunk of lanes (columns ``col_base + start + lane``) lies in the packed
        copy: its tile and the lane in it. ``packed`` is the tile at ``col_base`` when the
        tile starts one; otherwise (tails, wider tiles of the small-row path) both come from
        the column. A chunk (at most one vector, starting at a multiple of the vector
        width, which divides ``pack.cols``) never straddles two tiles, so the lanes stay
        consecutive."""
        cols = pack.cols
        if packed is not None:
            tile = packed + start // cols if start >= cols else packed
            offset: PrimExpr | int = start % cols
        else:
            column = col_base + start if start else col_base
            tile = floordiv(column, cols)
            offset = floormod(column, cols)
        if isinstance(offset, int) and offset == 0:
            return {pack.panel: tile, pack.lane: lane}
        return {pack.panel: tile, pack.lane: lane + offset}

    # ---- columns ------------------------------------------------------------------------
    def columns(self, row_base: PrimExpr | None, rows: int, block: Var | None) -> Stmt:
        """Every column tile for the given rows; with column blocking, only block ``block``
        (the last block index covers the columns left over after the full blocks)."""
        dtype = str(self.col_var.dtype)
        extent = self._extent(self.col_var)
        if self.blocks is None or block is None:
            return self._range(row_base, rows, IntImm(dtype, 0), extent)
        block_cols, full_blocks, left = self.blocks
        tile_var = Var(f"{self.col_var.name}_o", dtype)
        cols = self.plan.cols
        index = block * (block_cols // cols) + tile_var
        body = self.tile(row_base, rows, block * block_cols + tile_var * cols, cols, True, index)
        full: Stmt = For(tile_var, 0, block_cols // cols, ForKind.SERIAL, body)
        if block_cols == cols:
            full = substitute_stmt(body, {tile_var: IntImm(dtype, 0)})
        if not left:
            return full
        rest = self._range(
            row_base, rows, IntImm(dtype, full_blocks * block_cols), IntImm(dtype, left)
        )
        return IfThenElse(block < full_blocks, full, rest)

    def _range(
        self, row_base: PrimExpr | None, rows: int, start: PrimExpr, extent: PrimExpr
    ) -> Stmt:
        cols = self.plan.cols
        dtype = str(self.col_var.dtype)
        const = static_extent(extent)
        if const is not None:
            full, rest = divmod(const, cols)
            parts: list[Stmt] = []
            if full == 1:
                parts.append(self.tile(row_base, rows, start, cols, True, floordiv(start, cols)))
            elif full > 1:
                chunk_var = Var(f"{self.col_var.name}_o", dtype)
                index = floordiv(start, cols) + chunk_var
                inner = self.tile(row_base, rows, start + chunk_var * cols, cols, True, index)
                parts.append(For(chunk_var, 0, full, ForKind.SERIAL, inner))
            if rest:
                parts.append(self.tile(row_base, rows, start + full * cols, rest, True))
            return seq(*parts)
        chunk_var = Var(f"{self.col_var.name}_o", dtype)
        full_expr = floordiv(extent, cols)
        main = For(
            chunk_var, 0, full_expr, ForKind.SERIAL,
            self.tile(
                row_base, rows, start + chunk_var * cols, cols, True,
                floordiv(start, cols) + chunk_var,
            ),
        )  # fmt: skip
        tail_var = Var(f"{self.col_var.name}_t", dtype)
        done = start + full_expr * cols
        tail = For(
            tail_var, 0, min_expr(extent - full_expr * cols, cols - 1), ForKind.SERIAL,
            self.tile(row_base, rows, done + tail_var, 1, False),
        )  # fmt: skip
        return seq(main, tail)

    def _extent(self, var: PrimExpr) -> PrimExpr:
        for loop in self.stage.loops:
            if loop.loop_var is var:
                return loop.extent
        raise KeyError(var)


def schedule_tiled_reduction(
    stage: Stage,
    epilogue: Epilogue,
    plan: TilePlan,
    config: CpuConfig,
    dense: bool = False,
    clamp_rows: bool = False,
) -> Stmt:
    """The scheduled statement for a reduction stage (and its inlined epilogue); ``dense``
    packs the transposed operand of ``x @ W.T`` (see :func:`transposed_operand`).
    With ``clamp_rows``, a constant row count that is not a multiple of the tile's rows ends
    with a clamped last tile, as a symbolic count does, instead of a second, smaller tile:
    half the code to compile, a few rows computed twice."""
    builder = _TileBuilder(stage, epilogue, plan)
    builder.clamp_rows = clamp_rows
    builder.blocks = column_blocks(stage, plan, config)
    builder.pack = choose_packing(stage, plan, config, dense)
    if dense and builder.pack is None:
        raise ValueError("schedule_tiled_reduction: a dense stage needs its operand packed")
    stmt = _tiled(builder, stage, plan, config)
    if builder.pack is None or builder.pack.prepacked:
        return stmt
    pack = builder.pack
    if builder.pack_in_blocks:
        return Allocate(pack.buffer, stmt)
    return Allocate(pack.buffer, seq(pack.stage(config.num_threads > 1), stmt))


#: Above this many (static) rows the operand is packed once, before the parallel loop; with
#: fewer (or a symbolic count: batched inference) each column block packs its own slice
#: (64 x 512 x 512: 91 vs 57 GFLOP/s measured on 2 cores).
PACK_IN_BLOCKS_MAX_ROWS = 128


def _packs_per_block(builder: _TileBuilder, config: CpuConfig) -> bool:
    """Whether each column block packs its own slice of the operand inside the parallel loop
    (the grid is then the blocks alone): the thread that uses a packed slice makes it, in
    its own cache, with no separate pass, launch and barrier for the copy. Only when the
    blocks share out evenly between the threads (or there are plenty of them), and only for
    an operand contiguous along the columns: the transposed ``W`` of ``x @ W.T`` is packed by
    gathers, which the whole-operand copy does at half the cost (measured, 512 x 512)."""
    if builder.pack is None or builder.blocks is None or config.num_threads < 2:
        return False
    if builder.pack.prepacked:  # packed at compile time: nothing to copy per block
        return False
    if vector_access(builder.pack.load, builder.col_var) != "contiguous":
        return False
    row_var = builder.plan.row_var
    rows = builder._extent(row_var) if row_var is not None else None
    if isinstance(rows, IntImm) and rows.value > PACK_IN_BLOCKS_MAX_ROWS:
        # Many rows: each block's row tiles are long work, and one whole-operand pack shared
        # by every thread wins (512 x 512 x 512: 107 vs 81 GFLOP/s measured on 2 cores).
        return False
    count = builder.blocks[1] + (1 if builder.blocks[2] else 0)
    return count % config.num_threads == 0 or count >= 4 * config.num_threads


def _tiled(builder: _TileBuilder, stage: Stage, plan: TilePlan, config: CpuConfig) -> Stmt:
    col_var = builder.col_var
    outer = [loop for loop in stage.loops if loop.loop_var is not col_var]
    # Loops of extent 1 disappear (their variable is 0).
    unit: dict[Var, PrimExpr] = {}
    kept = []
    for loop in outer:
        if static_extent(loop.extent) == 1 and loop.loop_var is not plan.row_var:
            unit[loop.loop_var] = IntImm(str(loop.loop_var.dtype), 0)
        else:
            kept.append(loop)
    work = product([loop.extent for loop in stage.loops + stage.reduce_loops])
    work_const = static_extent(work) if work is not None else None
    parallel = config.num_threads > 1 and (
        work_const is None or work_const >= config.parallel_cutoff
    )
    kind = ForKind.PARALLEL if parallel else ForKind.SERIAL

    # The parallel grid: the loops above the row axis, the column block (when blocking), the
    # row tiles and the loops below them when there are no edge rows.
    row_pos = next((k for k, lp in enumerate(kept) if lp.loop_var is plan.row_var), None)
    above = kept if row_pos is None else kept[:row_pos]
    below = [] if row_pos is None else kept[row_pos + 1 :]
    grid = [(lp.loop_var, lp.extent) for lp in above]
    dtype = str(col_var.dtype)
    block_var: Var | None = None
    block_count: PrimExpr | None = None
    if builder.blocks is not None:
        block_var = Var(f"{col_var.name}_b", dtype)
        block_count = IntImm(dtype, builder.blocks[1] + (1 if builder.blocks[2] else 0))
        builder.pack_in_blocks = (
            row_pos is not None and parallel and _packs_per_block(builder, config)
        )
        if not builder.pack_in_blocks:
            grid.append((block_var, block_count))

    def finish(inner: list[tuple[Var, PrimExpr]], body: Stmt) -> Stmt:
        """The loops around the tiles: one parallel grid, or the column blocks in parallel
        with each one's packing and a serial grid of its tiles."""
        if not builder.pack_in_blocks:
            stmt, _ = fused_grid("fused", inner, body, kind)
        else:
            assert block_var is not None and block_count is not None and builder.pack
            assert builder.blocks is not None
            per_block = builder.blocks[0] // plan.cols
            first = block_var * per_block
            tiles = builder.pack.tiles
            count: PrimExpr = IntImm(dtype, per_block)
            if builder.blocks[2]:  # the last block holds fewer (maybe no) whole tiles
                count = min_expr(tiles - first, per_block)
            fill = builder.pack.stage_block(first, count)
            nest, _ = fused_grid("fused", inner, body, ForKind.SERIAL)
            stmt = For(block_var, 0, block_count, ForKind.PARALLEL, seq(fill, nest))
        return substitute_stmt(stmt, unit) if unit else stmt

    def below_nest(row_base: PrimExpr | None, rows: int) -> Stmt:
        body = builder.columns(row_base, rows, block_var)
        for loop in reversed(below):
            body = For(loop.loop_var, 0, loop.extent, ForKind.SERIAL, body)
        return body

    if row_pos is None:
        body = below_nest(None, 1)
        if grid:
            stmt, _ = fused_grid("fused", grid, body, kind)
        else:
            # One output row (a batch-1 layer): its column tiles alone are the parallel loop.
            wide = (
                work_const is None or work_const >= SMALL_PARALLEL_FACTOR * config.parallel_cutoff
            )
            stmt = _parallel_outermost(body) if parallel and wide else body
        return substitute_stmt(stmt, unit) if unit else stmt

    row_var = plan.row_var
    assert row_var is not None
    rows = plan.rows
    row_extent = kept[row_pos].extent
    row_dtype = str(row_var.dtype)
    row_const = static_extent(row_extent)
    tile_var = Var(f"{row_var.name}_o", row_dtype)
    below_grid = [(lp.loop_var, lp.extent) for lp in below]
    if row_const is not None and (row_const % rows == 0 or not builder.clamp_rows):
        # Constant rows: the loops below the row axis join the parallel grid (for a
        # convolution, output-channel tiles times output rows), and an edge tile of the
        # remaining rows is one more grid iteration rather than a serial epilogue.
        full, rest = divmod(row_const, rows)
        columns: Stmt = builder.columns(tile_var * rows, rows, block_var)
        if rest:
            edge = builder.columns(IntImm(row_dtype, full * rows), rest, block_var)
            columns = IfThenElse(tile_var < full, columns, edge) if full else edge
        count = IntImm(row_dtype, full + (1 if rest else 0))
        return finish([*grid, (tile_var, count), *below_grid], columns)
    builder.row_limit = row_extent - 1
    tiles = floordiv(row_extent + (rows - 1), rows)
    if row_const is not None:
        tiles = IntImm(row_dtype, -(-row_const // rows))
    columns = builder.columns(tile_var * rows, rows, block_var)
    return finish([*grid, (tile_var, tiles), *below_grid], columns)


def _parallel_outermost(stmt: Stmt) -> Stmt:
    """Make the first loop of ``stmt`` (the column tiles of a one-row output) parallel."""
    if isinstance(stmt, For):
        return stmt.replace(kind=ForKind.PARALLEL)
    if isinstance(stmt, SeqStmt) and isinstance(stmt.seq[0], For):
        return SeqStmt([stmt.seq[0].replace(kind=ForKind.PARALLEL), *stmt.seq[1:]])
    return stmt
