"""Schedules for reductions that are not tiled: along the contiguous innermost axis
(``sum``/``max`` of each row, softmax and norm statistics), or anything guarded.

Along a contiguous axis the reduction runs in ``L`` independent lanes (a vectorized loop of
constant extent over a ``local`` buffer), combined at the end: this reassociates the
reduction, which is exact for ``max``/``min`` and integer sums and changes float sums only by
rounding (as numpy's pairwise summation does)::

    for i in T.parallel(n):
        lanes[0:L] = identity
        for k_o in range(m // L):
            lanes[0:L] = lanes[0:L] + A[i, k_o * L : k_o * L + L]
        for k_t in range(m % L):
            lanes[0] = lanes[0] + A[i, m // L * L + k_t]
        acc = init
        for l in range(L): acc = acc + lanes[l]
        Y[i] = epilogue(acc)

Float ``max``/``min`` propagate NaN (numpy's semantics, see docs/ops.md), which lengthens
each accumulator's dependency chain: they use four vectors of lanes instead of two, and fold
them in halving vector steps (``lanes[0:L/2] = max(lanes[0:L/2], lanes[L/2:L])``, ...)
rather than in ``L`` serial scalar steps. Both are exact for max/min in any order.

Otherwise each output element accumulates in a one-element local buffer, with the outer
loops fused and parallel.
"""

from __future__ import annotations

import math

from relaxvm.ir import FloatImm, IntImm, PrimExpr, Var
from relaxvm.ir.dtype import dtype_int_range, is_float_dtype
from relaxvm.ir.expr_functor import substitute
from relaxvm.ir.op import floordiv
from relaxvm.ir.tir import Allocate, Buffer, BufferStore, For, ForKind, IfThenElse, Stmt, seq
from relaxvm.ir.tir.stage_epilogue import Epilogue
from relaxvm.ir.tir.stages import COMBINE, Stage, loads_of, static_extent, vector_access

from .config import CpuConfig
from .injective import vector_width_for
from .loops import fused_grid, product

__all__ = ["lane_width", "schedule_reduction_stage"]


def _identity(combiner: str, dtype: object) -> PrimExpr:
    text = str(dtype)
    if combiner == "sum":
        return FloatImm(text, 0.0) if is_float_dtype(dtype) else IntImm(text, 0)  # type: ignore[arg-type]
    if is_float_dtype(dtype):  # type: ignore[arg-type]
        return FloatImm(text, -math.inf if combiner == "max" else math.inf)
    low, high = dtype_int_range(dtype)  # type: ignore[arg-type]
    return IntImm(text, low if combiner == "max" else high)


def _tree_fold(combiner: str, lane_buf: Buffer, acc: Buffer, lanes: int, k: Var) -> Stmt:
    """``acc = combine(acc, lanes[0..L))`` as halving vector steps.

    max/min are exact in any order, so the lanes fold pairwise (``L/2`` lanes, then ``L/4``,
    ...) in vector instructions instead of a serial chain of ``L`` scalar steps: a
    NaN-propagating float max is a compare and a blend (codegen_math.float_max), so the
    serial chain would cost as much as the row itself on short rows.
    """
    combine = COMBINE[combiner]
    zero = IntImm("int64", 0)
    steps: list[Stmt] = []
    half = lanes // 2
    while half >= 1:
        v = Var(f"{k.name}_h{half}", str(k.dtype))
        kind = ForKind.VECTORIZED if half > 1 else ForKind.SERIAL
        update = BufferStore(lane_buf, combine(lane_buf[v], lane_buf[v + half]), [v])
        steps.append(For(v, 0, half, kind, update))
        half //= 2
    steps.append(BufferStore(acc, combine(acc[zero], lane_buf[zero]), [zero]))
    return seq(*steps)


def lane_width(stage: Stage, epilogue: Epilogue, config: CpuConfig) -> int | None:
    """Lanes to accumulate a reduction along its innermost (contiguous) axis in, or None when
    that axis is not contiguous in the inputs, too short, guarded, or the data is bool."""
    if stage.condition is not None or not stage.reduce_loops:
        return None
    assert stage.source is not None and stage.init is not None
    inner = stage.reduce_loops[-1].loop_var
    width = vector_width_for([stage.source, epilogue.value], stage.init.buffer.dtype, config)
    if width is None or width < 2:
        return None
    accesses = [vector_access(load, inner) for load in loads_of(stage.source)]
    if "strided" in accesses or "contiguous" not in accesses:
        return None
    extent = static_extent(stage.reduce_loops[-1].extent)
    lanes = width * 2 if extent is None or extent >= width * 4 else width
    float_minmax = stage.combiner in ("max", "min") and is_float_dtype(stage.init.buffer.dtype)
    if float_minmax and (extent is None or extent >= width * 8):
        # A NaN-propagating float max is a compare, a mask `or` and a blend on each
        # accumulator's dependency chain (codegen_math.float_max), a longer chain than the one
        # `vmaxps` of a NaN-dropping max: four independent vectors hide its latency.
        lanes = width * 4
    if extent is not None and extent < lanes:
        return None
    return lanes


def schedule_reduction_stage(stage: Stage, epilogue: Epilogue, config: CpuConfig) -> Stmt:
    """The scheduled statement for one reduction stage (see the module docstring)."""
    assert stage.kind == "reduction" and stage.init is not None and stage.source is not None
    assert stage.combiner is not None
    dtype = stage.init.buffer.dtype
    combine = COMBINE[stage.combiner]
    acc = Buffer(f"{stage.init.buffer.name}_acc", (1,), dtype, scope="local")
    zero = IntImm("int64", 0)
    lanes = lane_width(stage, epilogue, config)
    outer_reduce = stage.reduce_loops if lanes is None else stage.reduce_loops[:-1]

    parts: list[Stmt] = [BufferStore(acc, stage.init.value, [zero])]
    if lanes is None:
        update: Stmt = BufferStore(acc, combine(acc[zero], stage.source), [zero])
        if stage.condition is not None:
            update = IfThenElse(stage.condition, update)
        body = update
        for loop in reversed(outer_reduce):
            body = For(loop.loop_var, 0, loop.extent, ForKind.SERIAL, body)
        parts.append(body)
        inner_stmt: Stmt = seq(*parts)
    else:
        inner_loop = stage.reduce_loops[-1]
        k = inner_loop.loop_var
        k_dtype = str(k.dtype)
        lane_buf = Buffer(f"{stage.init.buffer.name}_lanes", (lanes,), dtype, scope="local")
        lane = Var(f"{k.name}_v", k_dtype)
        chunk = Var(f"{k.name}_o", k_dtype)
        tail = Var(f"{k.name}_t", k_dtype)
        extent = inner_loop.extent
        const = static_extent(extent)
        full: PrimExpr = (
            IntImm(k_dtype, const // lanes) if const is not None else floordiv(extent, lanes)
        )
        done = full * lanes
        vec_update = BufferStore(
            lane_buf,
            combine(lane_buf[lane], substitute(stage.source, {k: chunk * lanes + lane})),
            [lane],
        )
        red: Stmt = For(
            chunk, 0, full, ForKind.SERIAL, For(lane, 0, lanes, ForKind.VECTORIZED, vec_update)
        )
        if const is None or const % lanes:
            tail_update = BufferStore(
                lane_buf,
                combine(lane_buf[zero], substitute(stage.source, {k: done + tail})),
                [zero],
            )
            red = seq(red, For(tail, 0, extent - done, ForKind.SERIAL, tail_update))
        for loop in reversed(outer_reduce):
            red = For(loop.loop_var, 0, loop.extent, ForKind.SERIAL, red)
        init_lane = Var(f"{k.name}_i", k_dtype)
        fold_lane = Var(f"{k.name}_l", k_dtype)
        lane_init = For(
            init_lane, 0, lanes, ForKind.VECTORIZED,
            BufferStore(lane_buf, _identity(stage.combiner, dtype), [init_lane]),
        )  # fmt: skip
        fold: Stmt = For(
            fold_lane, 0, lanes, ForKind.SERIAL,
            BufferStore(acc, combine(acc[zero], lane_buf[fold_lane]), [zero]),
        )  # fmt: skip
        if stage.combiner in ("max", "min") and lanes & (lanes - 1) == 0:
            fold = _tree_fold(stage.combiner, lane_buf, acc, lanes, k)
        inner_stmt = Allocate(lane_buf, seq(lane_init, red, *parts, fold))
    final = BufferStore(
        epilogue.buffer, substitute(epilogue.value, {epilogue.acc: acc[zero]}), epilogue.indices
    )
    nest: Stmt = Allocate(acc, seq(inner_stmt, final))
    grid = [(loop.loop_var, loop.extent) for loop in stage.loops]
    work = product([loop.extent for loop in stage.loops + stage.reduce_loops])
    work_const = static_extent(work) if work is not None else None
    parallel = config.num_threads > 1 and (
        work_const is None or work_const >= config.parallel_cutoff
    )
    stmt, _ = fused_grid("fused", grid, nest, ForKind.PARALLEL if parallel else ForKind.SERIAL)
    return stmt
