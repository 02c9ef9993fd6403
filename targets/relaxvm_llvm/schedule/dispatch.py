"""Pick a schedule for each stage of a PrimFunc by the structure of its loop nests."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from relaxvm.errors import RelaxVMError
from relaxvm.ir import Var
from relaxvm.ir.tir import Allocate, Buffer, IfThenElse, PrimFunc, Stmt, seq
from relaxvm.ir.tir.stage_epilogue import Epilogue, find_epilogue
from relaxvm.ir.tir.stages import (
    Stage,
    loads_of,
    parse_stage,
    parse_stages,
    stage_reads,
    static_extent,
    vector_access,
)

from .channels import channel_tiles
from .config import CpuConfig, cpu_config
from .guards import has_guard, materialize_padding, unguard
from .injective import schedule_injective_stage
from .packing import no_prepacking, prepacked_packing
from .plan import TilePlan, plan_tile, transposed_operand
from .reduction import lane_width, schedule_reduction_stage
from .small import with_small_rows
from .tile import schedule_tiled_reduction

__all__ = [
    "SCHEDULED_ATTR",
    "ScheduleError",
    "schedule_conv2d",
    "schedule_injective",
    "schedule_matmul",
    "schedule_module",
    "schedule_pass",
    "schedule_pool",
    "schedule_prim_func",
    "schedule_reduction",
    "schedule_row_kernel",
]

#: The attribute a scheduled PrimFunc carries; schedule_prim_func leaves such functions alone.
SCHEDULED_ATTR = "relaxvm.scheduled"

#: ``op_pattern`` values (TVM's OpPatternKind) this module acts on.
OPAQUE_PATTERN = 8


class ScheduleError(RelaxVMError, ValueError):
    """A schedule was asked for a function that does not have the structure it needs."""


def _wants_tile(stage: Stage, epilogue: Epilogue, config: CpuConfig) -> bool:
    """Tile along the output's last axis when some input is contiguous along it, or when
    some input moves along it and the reduction cannot run in vector lanes instead."""
    assert stage.init is not None and stage.source is not None
    if not stage.init.indices:  # a reduction to a scalar has no output axis to tile
        return False
    col = cast(Var, stage.init.indices[-1])  # a loop variable: found among the loops below
    extent = next(lp.extent for lp in stage.loops if lp.loop_var is col)
    const = static_extent(extent)
    if const is not None and const < 2:
        return False
    access = {vector_access(load, col) for load in loads_of(stage.source)}
    if "contiguous" in access:
        return True
    return "strided" in access and lane_width(stage, epilogue, config) is None


#: Rows from which a dense ``x @ W.T`` packs ``W`` and runs register tiles (below, each
#: output is a vectorized dot product, with no copy of ``W``).
DENSE_MIN_ROWS = 16


def _dense_plan(stage: Stage, epilogue: Epilogue, config: CpuConfig) -> TilePlan | None:
    assert stage.init is not None
    if not stage.init.indices or transposed_operand(stage) is None or not config.pack:
        return None
    plan = plan_tile(stage, epilogue, config, dense=True)
    if plan is None or plan.row_var is None:
        return None
    if prepacked_packing(stage, plan) is not None:  # packed at compile time: any rows
        return plan
    rows = next(lp.extent for lp in stage.loops if lp.loop_var is plan.row_var)
    const = static_extent(rows)
    if const is not None and const < DENSE_MIN_ROWS:
        return None
    return plan


def _dense(stage: Stage, epilogue: Epilogue, plan: TilePlan, config: CpuConfig) -> Stmt:
    """Packed register tiles for enough rows, else vectorized dot products; with a symbolic
    row count both are emitted and chosen at run time. With ``W`` packed at compile time
    (:mod:`.prepack`) the stage is a plain matmul on the packed copy: the small-row path for
    few rows, the register tiles for many."""
    if prepacked_packing(stage, plan) is not None:
        return with_small_rows(stage, epilogue, plan, config)
    tiled = schedule_tiled_reduction(stage, epilogue, plan, config, dense=True)
    rows = next(lp.extent for lp in stage.loops if lp.loop_var is plan.row_var)
    if static_extent(rows) is not None:
        return tiled
    dots = schedule_reduction_stage(stage, epilogue, config)
    return IfThenElse(rows >= DENSE_MIN_ROWS, tiled, dots)


def _schedule(func: PrimFunc, config: CpuConfig, where: str) -> tuple[PrimFunc, list[str]]:
    scratch, stages = parse_stages(func)
    scratch_set = set(scratch)
    new_stmts: list[Stmt] = []
    dropped: set[Buffer] = set()
    skip: set[int] = set()
    used: list[str] = []
    for position, stage in enumerate(stages):
        if position in skip:
            continue
        if stage.kind == "injective":
            new_stmts.append(schedule_injective_stage(stage, config))
            used.append("injective")
        elif stage.kind == "reduction":
            assert stage.init is not None and stage.source is not None
            col = stage.init.indices[-1] if stage.init.indices else None
            padded = materialize_padding(stage) if isinstance(col, Var) else None
            if padded is not None:
                # A padding stage inlined into a convolution (FuseTIR): fill a padded copy
                # first, so the tiles read plain contiguous rows.
                stage, pad_buffer, fill = padded
                stages[position] = stage
                scratch.append(pad_buffer)
                new_stmts.append(schedule_injective_stage(parse_stage(fill), config))
                used.append("injective")
            assert stage.source is not None  # still so after the padding rewrite
            if isinstance(col, Var) and has_guard(stage.source, col):
                # Padded pooling: clamped loads and a select vectorize, a guard does not.
                stage = replace(stage, source=unguard(stage.source, col))
                stages[position] = stage
            epilogue = find_epilogue(stages, position, scratch_set)
            by_channel = channel_tiles(stage, epilogue, config)
            if by_channel is not None:
                # A convolution with a poor last axis: tiles over its output channels into a
                # channel-major scratch, then the epilogue stores the output from it.
                tiles = by_channel.stage
                assert tiles.init is not None
                direct = Epilogue(by_channel.scratch, tiles.init.indices, epilogue.acc,
                                  epilogue.acc, [], [])  # fmt: skip
                with no_prepacking():  # channel tiles read a rewritten stage
                    tiled = schedule_tiled_reduction(
                        tiles, direct, by_channel.plan, config, dense=True, clamp_rows=True
                    )
                new_stmts.append(tiled)
                new_stmts.append(schedule_injective_stage(by_channel.copy, config))
                scratch.append(by_channel.scratch)
                used.extend(["tiled", "injective"])
                skip.update(epilogue.inlined)
                dropped.update(epilogue.dropped)
                continue
            wants = _wants_tile(stage, epilogue, config)
            plan = plan_tile(stage, epilogue, config) if wants else None
            dense_plan = None if wants else _dense_plan(stage, epilogue, config)
            if plan is not None:
                new_stmts.append(with_small_rows(stage, epilogue, plan, config))
                used.append("tiled")
            elif dense_plan is not None:
                new_stmts.append(_dense(stage, epilogue, dense_plan, config))
                used.append("tiled")
            else:
                new_stmts.append(schedule_reduction_stage(stage, epilogue, config))
                used.append("reduction")
            skip.update(epilogue.inlined)
            dropped.update(epilogue.dropped)
        else:
            new_stmts.append(stage.stmt)
            used.append("opaque")
    body = seq(*new_stmts) if new_stmts else func.body
    still_read: set[Buffer] = set()
    for stmt in new_stmts:
        still_read |= stage_reads(stmt)
    for buffer in reversed(scratch):
        if buffer in dropped and buffer not in still_read:
            continue
        body = Allocate(buffer, body)
    return func.with_body(body).with_attr(SCHEDULED_ATTR, True), used


def _check(func: Any, where: str) -> PrimFunc:
    if not isinstance(func, PrimFunc):
        raise ScheduleError(f"{where}: expected a PrimFunc, got {type(func).__name__}")
    return func


def schedule_prim_func(func: PrimFunc, target: Any = None) -> PrimFunc:
    """The default CPU schedule of a PrimFunc, chosen stage by stage from its loop nests.

    Parameters
    ----------
    func : PrimFunc
        A kernel as ``te.create_prim_func`` or FuseTIR make it: one loop nest per stage.
    target : Target, dict, CpuConfig or None
        Decides the vector width (``-mcpu``/``-mattr``, else the host CPU) and thread count.

    Returns
    -------
    PrimFunc
        The scheduled function, computing the same values, with the ``relaxvm.scheduled``
        attribute set. Injective stages get a fused parallel outer loop and a vectorized
        inner loop; reductions whose output's last axis is contiguous in the inputs (matmul,
        batch matmul, convolution, pooling, reductions over outer axes) get register-blocked
        tiles with their elementwise consumers inlined; reductions along the contiguous
        innermost axis (row sums, softmax and norm statistics) accumulate in vector lanes.
        Functions marked ``op_pattern`` 8 (opaque), already scheduled, or not recognised
        are returned unchanged.
    """
    func = _check(func, "schedule_prim_func")
    if func.attrs.get(SCHEDULED_ATTR) or func.attrs.get("op_pattern") == OPAQUE_PATTERN:
        return func
    return _schedule(func, cpu_config(target), "schedule_prim_func")[0]


def _schedule_expecting(func: Any, target: Any, where: str, wanted: set[str]) -> PrimFunc:
    func = _check(func, where)
    scheduled, used = _schedule(func, cpu_config(target), where)
    if not wanted & set(used):
        raise ScheduleError(
            f"{where}: {func.name!r} has no stage of the expected form "
            f"({' or '.join(sorted(wanted))}); its stages are {used or ['none']}"
        )
    return scheduled


def schedule_injective(func: PrimFunc, target: Any = None) -> PrimFunc:
    """Schedule an injective/elementwise kernel (raises ScheduleError if it has none)."""
    return _schedule_expecting(func, target, "schedule_injective", {"injective"})


def schedule_reduction(func: PrimFunc, target: Any = None) -> PrimFunc:
    """Schedule a reduction kernel (sum/max/min/mean over any axes)."""
    return _schedule_expecting(func, target, "schedule_reduction", {"reduction", "tiled"})


def schedule_row_kernel(func: PrimFunc, target: Any = None) -> PrimFunc:
    """Schedule softmax / layer_norm / rms_norm style kernels: row reductions and
    elementwise stages, each parallel over rows with vectorized inner loops."""
    return _schedule_expecting(func, target, "schedule_row_kernel", {"reduction", "tiled"})


def schedule_matmul(func: PrimFunc, target: Any = None) -> PrimFunc:
    """Schedule matmul / linear / batch matmul (with any fused elementwise epilogue) as
    register-blocked tiles."""
    return _schedule_expecting(func, target, "schedule_matmul", {"tiled", "reduction"})


def schedule_conv2d(func: PrimFunc, target: Any = None) -> PrimFunc:
    """Schedule a direct NCHW convolution (padding stage, tiled reduction, epilogue)."""
    return _schedule_expecting(func, target, "schedule_conv2d", {"tiled", "reduction"})


def schedule_pool(func: PrimFunc, target: Any = None) -> PrimFunc:
    """Schedule pooling (max/avg over windows): parallel, vectorized along the output row."""
    return _schedule_expecting(func, target, "schedule_pool", {"tiled", "reduction"})


def schedule_module(mod: Any, target: Any = None) -> Any:
    """Apply :func:`schedule_prim_func` to every PrimFunc of a module.

    Parameters
    ----------
    mod : IRModule, dict of name to function, or PrimFunc
        Relax functions and other entries are kept as they are.
    target : Target, dict, CpuConfig or None

    Returns
    -------
    The same kind of container with scheduled PrimFuncs (an IRModule is copied, never
    changed in place).
    """
    config = cpu_config(target)
    if isinstance(mod, PrimFunc):
        return schedule_prim_func(mod, config)
    if isinstance(mod, dict):
        return {
            key: schedule_prim_func(f, config) if isinstance(f, PrimFunc) else f
            for key, f in mod.items()
        }
    if not hasattr(mod, "copy") or not hasattr(mod, "update_func"):
        raise ScheduleError(
            f"schedule_module: expected an IRModule, dict or PrimFunc, got {type(mod).__name__}"
        )
    result = mod.copy()
    for gvar, func in mod.items():
        if isinstance(func, PrimFunc):
            result.update_func(gvar, schedule_prim_func(func, config))
    return result


def schedule_pass(target: Any = None, prepack: bool = True) -> Any:
    """A module pass applying :func:`schedule_module` for ``target`` (what the ``llvm``
    target kind's ``relax_passes`` hook can return, so the default pipeline schedules every
    kernel after fusion).

    With ``prepack`` (and packing on in the target, ``-pack``), matmul-like kernels called
    with a constant weight first get a variant reading a copy of it packed at compile time
    (:mod:`.prepack`)."""
    from relaxvm.transform import module_pass

    from .prepack import prepack_module

    config = cpu_config(target)

    def run(mod: Any, ctx: Any) -> Any:
        if prepack and config.pack and hasattr(mod, "copy") and hasattr(mod, "update_func"):
            mod = prepack_module(mod, config)
        return schedule_module(mod, config)

    return module_pass(run, name="ScheduleCPU")
