"""Choosing a register tile for a reduction stage: the row axis, rows ``R`` and columns
``V`` (see :mod:`.tile`)."""

from __future__ import annotations

from relaxvm.ir import PrimExpr, Var
from relaxvm.ir.expr_functor import free_vars
from relaxvm.ir.tir import BufferLoad
from relaxvm.ir.tir.stage_epilogue import Epilogue
from relaxvm.ir.tir.stages import Stage, loads_of, static_extent, vector_access

from .config import CpuConfig
from .injective import vector_width_for

__all__ = ["TilePlan", "plan_tile", "transposed_operand"]


class TilePlan:
    """The tile shape chosen for a stage: row axis and rows ``R``, columns ``V``, lanes."""

    def __init__(self, row_var: Var | None, rows: int, cols: int, lanes: int) -> None:
        self.row_var, self.rows, self.cols, self.lanes = row_var, rows, cols, lanes

    def __repr__(self) -> str:
        row = self.row_var.name if self.row_var is not None else "-"
        return f"TilePlan(row={row}, R={self.rows}, V={self.cols}, lanes={self.lanes})"


def transposed_operand(stage: Stage) -> BufferLoad | None:
    """The load a dense (``x @ W.T``) reduction reads along its innermost reduction axis but
    across the output's columns, ``W[j, k]``: a tile can use it once it is packed as
    ``[tile, k, lane]``. None when there is no such load."""
    assert stage.init is not None and stage.source is not None
    if not stage.reduce_loops:
        return None
    col_var = stage.init.indices[-1]
    assert isinstance(col_var, Var)
    inner = stage.reduce_loops[-1].loop_var
    allowed = {lp.loop_var for lp in stage.reduce_loops} | {col_var}
    for load in loads_of(stage.source):
        used = {v for v in free_vars(load) if str(v.dtype) != "handle"}
        if (
            vector_access(load, col_var) == "strided"
            and vector_access(load, inner) == "contiguous"
            and used <= allowed
        ):
            return load
    return None


def plan_tile(
    stage: Stage, epilogue: Epilogue, config: CpuConfig, dense: bool = False
) -> TilePlan | None:
    """Choose the tile for a reduction stage, or None when the stage cannot be tiled
    (a guarded update, a strided read along the output's last axis, bool data)."""
    if stage.kind != "reduction" or stage.condition is not None:
        return None
    assert stage.source is not None and stage.init is not None
    col_var = stage.init.indices[-1]
    assert isinstance(col_var, Var)
    exprs = [stage.source, stage.init.value, epilogue.value]
    lanes = vector_width_for(exprs, stage.init.buffer.dtype, config)
    if lanes is None or lanes < 2:
        return None
    # Loads strided along the columns (a stride-2 convolution) become gathers; the epilogue
    # and the initial value must still be plain vectors.
    for expr in exprs[1:]:
        for load in loads_of(expr):
            if vector_access(load, col_var) == "strided":
                return None
    extents = {loop.loop_var: loop.extent for loop in stage.loops}
    vector_loads = [
        load for load in loads_of(stage.source) if vector_access(load, col_var) == "contiguous"
    ]
    if dense:  # the transposed operand will be packed into contiguous tiles
        transposed = transposed_operand(stage)
        if transposed is None:
            return None
        vector_loads.append(transposed)
    col_const = static_extent(extents[col_var])
    row_var = None
    for loop in reversed(stage.loops):
        var = loop.loop_var
        const = static_extent(loop.extent)
        if var is col_var or (const is not None and const < 2):
            continue
        if any(var not in free_vars_of_load(load) for load in vector_loads):
            row_var = var
            break
    if row_var is not None:
        # rows x vectors accumulators, plus the B vectors and one broadcast, must fit in
        # the register file: 8x2 of 32 registers (AVX-512), 6x2 of 16 (AVX2).
        default = (8, 2) if config.vector_registers >= 32 else (6, 2)
        rows, vectors = config.tile or default
        row_const = static_extent(extents[row_var])
        if row_const is not None:
            rows = min(rows, row_const)
    else:
        # No reuse across rows (a matrix-vector product, pooling, a sum over an outer
        # axis): with a deep reduction, stream whole rows of the input through a wide
        # accumulator that stays in L1; with a shallow one, a few vectors in registers.
        depth = 1
        for loop in stage.reduce_loops:
            depth *= static_extent(loop.extent) or 1024
        rows, vectors = 1, (64 if depth >= 64 else 4)
        # The column tiles are then the only parallel loop (a batch-1 layer): leave one per
        # thread rather than one tile as wide as the output.
        while (
            col_const is not None
            and vectors > 4
            and col_const // (lanes * vectors) < config.num_threads
        ):
            vectors //= 2
    cols = lanes * vectors
    if col_const is not None and col_const < cols:
        cols = col_const if col_const <= lanes else (col_const // lanes) * lanes
    return TilePlan(row_var, rows, cols, lanes)


def free_vars_of_load(load: PrimExpr) -> set[Var]:
    """The variables an access depends on."""
    return set(free_vars(load))
