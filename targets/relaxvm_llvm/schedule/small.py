"""The small-row path of matmul-like reductions: few rows, no packing, wide column tiles.

A register tile of ``R x V`` (:mod:`.tile`) pays off when many rows reuse each packed panel
of the right-hand operand. With one or a few rows (a batch-1 MLP layer, a matrix-vector
product in disguise) the packing copy costs as much as the product itself, and a 6-row tile
clamped to a 1-row input computes the same row six times. This path instead computes::

    for jt in T.parallel(N // V):                 # column tiles (parallel for big layers)
        for i in range(n):                        # the few rows, serially
            acc[0:V] = init
            for k in range(K):                    # W rows streamed where they lie
                acc[0:V] += x[i, k] * W[k, jt * V : jt * V + V]
            out[i, jt * V : jt * V + V] = epilogue(acc[0:V])

with ``V`` many vectors wide (8 x 8 floats with AVX2), so each broadcast of ``x[i, k]``
feeds many independent FMAs and ``W`` is read once per row, in long contiguous runs, with no
copy. Putting the column tiles outermost keeps a tile's ``K x V`` slice of ``W`` in cache while
the rows reuse it, and gives each thread its own slice of ``W`` (no shared cache lines in
the output either). The column tiles run in parallel only when the smallest call (one row
for a symbolic count) has several times the parallel cutoff of work
(:data:`~.config.SMALL_PARALLEL_FACTOR`): a 512 x 512 layer at batch 1 stays on one core.
Static row counts up to the register tile's rows (6 with AVX2) use one
exact ``n``-row tile (narrower, so its accumulators stay in registers); symbolic ones
one-row tiles, and :func:`with_small_rows` chooses between this path and the
packed tiles at run time. When ``W`` is a constant packed at compile time (:mod:`.prepack`),
this path reads the packed copy too (the same one the packed tiles read).
"""

from __future__ import annotations

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.op import floordiv
from relaxvm.ir.tir import For, ForKind, IfThenElse, Stmt, seq
from relaxvm.ir.tir import substitute as substitute_stmt
from relaxvm.ir.tir.stage_epilogue import Epilogue
from relaxvm.ir.tir.stages import Stage, static_extent

from .config import SMALL_PARALLEL_FACTOR, CpuConfig
from .loops import fused_grid, product
from .packing import prepacked_packing
from .plan import TilePlan
from .tile import _TileBuilder, schedule_tiled_reduction

__all__ = [
    "SMALL_PARALLEL_FACTOR",
    "SMALL_ROWS",
    "row_extent",
    "schedule_small_rows",
    "small_plan",
    "with_small_rows",
]

#: Symbolic row counts below which a matmul-like stage takes the small-row path (measured on
#: a 2-core AVX2 machine with 512 x 512 weights: from 5 rows on, the packed 6-row tiles are as
#: fast, and they win more the more rows there are).
SMALL_ROWS = 5

#: Vectors of accumulators in a one-row tile (64 floats with AVX2): eight independent FMA
#: chains per broadcast, all in registers, and each ``k`` reads 256 contiguous bytes of a W
#: row (4 cache lines, enough for the prefetcher across the row stride). Measured against 4,
#: 6, 16, 32 and 64 vectors at batch 1 and 3 (512 x 512): 8 was as fast as any, 4 about 10%
#: slower.
SMALL_VECTORS = 8


def row_extent(stage: Stage, plan: TilePlan) -> PrimExpr | None:
    """The extent of the tile's row axis (None without a row axis)."""
    if plan.row_var is None:
        return None
    return next(lp.extent for lp in stage.loops if lp.loop_var is plan.row_var)


def small_plan(stage: Stage, plan: TilePlan, config: CpuConfig) -> TilePlan | None:
    """The small-row tile for ``stage`` (whose packed tile is ``plan``), or None when the
    stage has no row axis or always has enough rows for the packed tiles."""
    rows = row_extent(stage, plan)
    if rows is None:
        return None
    const = static_extent(rows)
    # Static counts the register tile covers exactly (plan.rows is already clamped to them)
    # are small; larger ones have a 6-row tile and an edge tile, with no copy below 4 tiles.
    if const is not None and const > plan.rows:
        return None
    assert stage.init is not None
    col_var = stage.init.indices[-1]
    col_extent = next(lp.extent for lp in stage.loops if lp.loop_var is col_var)
    col_const = static_extent(col_extent)
    tile_rows = const if const is not None else 1
    if tile_rows == 1:
        vectors = SMALL_VECTORS
    else:
        # Exact static rows share each W vector; their accumulators must stay in registers
        # (leaving some for the W vectors and the broadcasts).
        vectors = max(2, (config.vector_registers - 4) // tile_rows)
    cols = plan.lanes * vectors
    if col_const is not None:
        # Enough column tiles for every thread (they are the parallel loop).
        while cols > plan.lanes * 4 and col_const // cols < config.num_threads:
            cols = max(plan.lanes * 4, cols // 2 // plan.lanes * plan.lanes)
        if col_const < cols:
            cols = col_const if col_const <= plan.lanes else (col_const // plan.lanes) * plan.lanes
    return TilePlan(plan.row_var, tile_rows, cols, plan.lanes)


def schedule_small_rows(
    stage: Stage,
    epilogue: Epilogue,
    plan: TilePlan,
    config: CpuConfig,
    layout: TilePlan | None = None,
) -> Stmt:
    """The small-row path (see the module docstring) for a stage and ``plan`` from
    :func:`small_plan`. An operand packed at compile time (:mod:`.prepack`) is read from
    its packed tiles of ``layout.cols`` columns (the packed register tile's plan, which the
    many-row path of the same kernel reads too): each ``k`` then reads a few consecutive
    runs of the packed copy instead of a slice of one row of ``W``."""
    assert stage.init is not None and plan.row_var is not None
    builder = _TileBuilder(stage, epilogue, plan)
    builder.pack = prepacked_packing(stage, layout or plan)
    col_var = builder.col_var
    dtype = str(col_var.dtype)
    row_var = plan.row_var
    unit: dict[Var, PrimExpr] = {}
    kept: list[For] = []
    for loop in stage.loops:
        if loop.loop_var is col_var:
            continue
        if static_extent(loop.extent) == 1 and loop.loop_var is not row_var:
            unit[loop.loop_var] = IntImm(str(loop.loop_var.dtype), 0)
        else:
            kept.append(loop)
    row_pos = next(k for k, lp in enumerate(kept) if lp.loop_var is row_var)
    above, row_loop, below = kept[:row_pos], kept[row_pos], kept[row_pos + 1 :]
    rows_const = static_extent(row_loop.extent)
    col_extent = builder._extent(col_var)
    col_const = static_extent(col_extent)

    def rows_nest(col_base: PrimExpr, cols: int, vec: bool, tile: PrimExpr | None = None) -> Stmt:
        # ``tile``: the packed tile at ``col_base`` (a prepacked operand's tiles divide ours).
        if rows_const is not None:  # one exact tile covers every row
            zero = IntImm(str(row_var.dtype), 0)
            body = builder.tile(zero, rows_const, col_base, cols, vec, tile)
        else:
            row = Var(row_var.name, row_var.dtype)
            body = For(row, 0, row_loop.extent, ForKind.SERIAL,
                       builder.tile(row, 1, col_base, cols, vec, tile))  # fmt: skip
        return body

    def packed_tile(first: PrimExpr) -> PrimExpr | None:
        """The packed tile at column tile ``first`` when our tiles start packed ones."""
        pack = builder.pack
        if pack is None or plan.cols % pack.cols:
            return None
        return first * (plan.cols // pack.cols)

    # Work of the smallest call (one row when the count is symbolic): the column tiles run
    # in parallel only when that reaches SMALL_PARALLEL_FACTOR times the parallel cutoff
    # (the pool itself skips busy cores and never waits for a helper that has not started).
    per_row = product([lp.extent for lp in [*above, *below, *stage.reduce_loops]] + [col_extent])
    per_row_const = static_extent(per_row) if per_row is not None else None
    work = per_row_const * (rows_const or 1) if per_row_const is not None else None
    parallel = config.num_threads > 1 and (
        work is None or work >= SMALL_PARALLEL_FACTOR * config.parallel_cutoff
    )
    kind = ForKind.PARALLEL if parallel else ForKind.SERIAL
    grid = [(lp.loop_var, lp.extent) for lp in above]
    below_grid = [(lp.loop_var, lp.extent) for lp in below]
    tile_var = Var(f"{col_var.name}_o", dtype)
    cols = plan.cols
    if col_const is not None:
        full, rest = divmod(col_const, cols)
        body = rows_nest(tile_var * cols, cols, True, packed_tile(tile_var))
        if rest:
            edge = rows_nest(
                IntImm(dtype, full * cols), rest, True, packed_tile(IntImm(dtype, full))
            )
            body = IfThenElse(tile_var < full, body, edge) if full else edge
        count: PrimExpr = IntImm(dtype, full + (1 if rest else 0))
        stmt, _ = fused_grid("fused", [*grid, (tile_var, count), *below_grid], body, kind)
    else:
        full_expr = floordiv(col_extent, cols)
        main, _ = fused_grid(
            "fused", [*grid, (tile_var, full_expr), *below_grid],
            rows_nest(tile_var * cols, cols, True, packed_tile(tile_var)), kind,
        )  # fmt: skip
        # The last columns, one at a time (fewer than one tile).
        tail_var = Var(f"{col_var.name}_t", dtype)
        tail: Stmt = For(tail_var, 0, col_extent - full_expr * cols, ForKind.SERIAL,
                         rows_nest(full_expr * cols + tail_var, 1, False))  # fmt: skip
        for loop in reversed([*above, *below]):
            tail = For(loop.loop_var, 0, loop.extent, ForKind.SERIAL, tail)
        stmt = seq(main, tail)
    return substitute_stmt(stmt, unit) if unit else stmt


def with_small_rows(stage: Stage, epilogue: Epilogue, plan: TilePlan, config: CpuConfig) -> Stmt:
    """A matmul-like stage: the small-row path for few rows, the packed register tiles for
    many, chosen at run time (``IfThenElse`` on the row count) when the count is symbolic."""
    small = small_plan(stage, plan, config)
    if small is None:
        return schedule_tiled_reduction(stage, epilogue, plan, config)
    rows = row_extent(stage, plan)
    assert rows is not None
    if static_extent(rows) is not None:
        return schedule_small_rows(stage, epilogue, small, config, plan)
    return IfThenElse(
        rows < SMALL_ROWS,
        schedule_small_rows(stage, epilogue, small, config, plan),
        schedule_tiled_reduction(stage, epilogue, plan, config),
    )
