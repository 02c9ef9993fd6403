"""Pick a GPU schedule for a legalized (or fused) PrimFunc from its stages.

The stages are read by the core stage parser (:func:`relaxvm.ir.tir.stages.parse_stages`). A
prologue that only validates indices (gathers) is folded into the loads it guards
(:mod:`.index_checks`), and injective stages writing scratch are inlined into their readers
(recomputed where read: no global scratch, no launch per stage). Then:

* one injective stage left: :func:`.injective.injective_kernel`;
* one sum of products (matmul, batch matmul, dense, convolution) with elementwise consumers:
  :func:`.matmul.gemm_kernel` (shared-memory tiles, register blocking);
* one reduction over a small constant window with many outputs (pooling):
  :func:`.small_reduce.small_reduction_kernel` (a thread per output);
* reductions with row-compatible stages: :func:`.rows.row_kernel`;
* independent injective stages (several outputs): one launch, each thread computing its
  element of each (:func:`.parallel.independent_injective_kernel`);
* one opaque loop nest whose outer loops are independent (scans, argmax, per-line sorts):
  those loops over threads (:func:`.parallel.outer_parallel_kernel`, "outer_parallel");
* stages sharing leading axes, with per-row scratch small enough for shared memory
  (median, attention, group norm, losses reduced to a scalar): :func:`.row_blocks.
  row_blocks_kernel`, a block per row (kind "rows");
* anything else (opaque loop nests, scans, sorts, several unrelated stages): the whole
  function in one thread (:func:`.fallback.single_thread`).
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import IntImm, Var
from relaxvm.ir.expr_functor import substitute
from relaxvm.ir.tir import Allocate, Buffer, BufferLoad, BufferStore, PrimFunc, Stmt, seq
from relaxvm.ir.tir.stages import Stage, parse_stage, parse_stages

from .common import BLOCK_THREADS, product, rewrite_stmt_loads
from .fallback import has_thread_binding, single_thread
from .index_checks import fold_index_checks
from .injective import injective_kernel
from .matmul import gemm_kernel, plan_gemm
from .parallel import independent_injective_kernel, outer_parallel_kernel
from .row_blocks import plan_row_blocks, row_blocks_kernel
from .rows import plan_rows, row_kernel
from .small_reduce import plan_small_reduction, small_reduction_kernel

__all__ = [
    "GPU_SCHEDULE_ATTR",
    "schedule_kind",
    "schedule_module",
    "schedule_pass",
    "schedule_prim_func",
]

#: The attribute naming the schedule a PrimFunc got ("injective", "gemm", "small_reduction",
#: "rows", "outer_parallel", "single_thread").
GPU_SCHEDULE_ATTR = "relaxvm.gpu_schedule"


def _inline_injective(
    scratch: list[Buffer], stages: list[Stage]
) -> tuple[list[Buffer], list[Stage]]:
    """Inline every injective stage that writes a scratch buffer (once) into its readers."""
    stages = list(stages)
    scratch = list(scratch)
    changed = True
    while changed:
        changed = False
        for position, stage in enumerate(stages):
            buffer = stage.buffer
            if stage.kind != "injective" or buffer not in scratch:
                continue
            if sum(1 for s in stages if s.buffer is buffer) != 1:
                continue
            assert stage.store is not None
            store = stage.store
            index_vars = [index for index in store.indices if isinstance(index, Var)]

            def inline(load: BufferLoad, buffer: Buffer = buffer, store: Any = store,
                       index_vars: list[Var] = index_vars) -> Any:  # fmt: skip
                if load.buffer is not buffer:
                    return None
                mapping = dict(zip(index_vars, load.indices, strict=True))
                return substitute(store.value, mapping)

            rest = [
                parse_stage(rewrite_stmt_loads(s.stmt, inline)) if k > position else s
                for k, s in enumerate(stages)
                if k != position
            ]
            stages = rest
            scratch.remove(buffer)
            changed = True
            break
    return scratch, stages


def _opaque(stages: list[Stage]) -> bool:
    """Whether a stage is opaque beyond a bare store (``out[()] = total / n``), which only
    :func:`.row_blocks.plan_row_blocks` takes."""
    return any(s.kind == "opaque" and not isinstance(s.stmt, BufferStore) for s in stages)


def _many_outputs(stage: Stage) -> bool:
    """Whether a reduction has enough outputs (a symbolic count, or a block's worth) for a
    thread per output to beat a block per output."""
    outputs = product([loop.extent for loop in stage.loops])
    return not isinstance(outputs, IntImm) or outputs.value >= BLOCK_THREADS


def _wrap(body: Stmt, scratch: list[Buffer]) -> Stmt:
    for buffer in reversed(scratch):
        body = Allocate(buffer, body)
    return body


def schedule_prim_func(func: PrimFunc, target: Any = None) -> PrimFunc:
    """The GPU schedule of ``func`` (see the module docstring); a function that already binds
    threads is returned unchanged, and so is a host function (``tir.is_host_func``: the
    shape functions, which the ``llvm`` target compiles). The result carries
    :data:`GPU_SCHEDULE_ATTR`."""
    if has_thread_binding(func) or func.attrs.get("tir.is_host_func"):
        return func
    scratch, stages = parse_stages(func)
    folded = fold_index_checks(stages)
    if folded is not None:  # gathers: each load checks its own index
        stages = folded
    if len(stages) == 1 and stages[0].kind == "opaque":
        nest = outer_parallel_kernel(scratch, stages[0].stmt)
        if nest is not None:
            return func.with_body(nest).with_attr(GPU_SCHEDULE_ATTR, "outer_parallel")
    if _opaque(stages) or not stages:
        return single_thread(func).with_attr(GPU_SCHEDULE_ATTR, "single_thread")
    scratch, stages = _inline_injective(scratch, stages)
    if _opaque(stages):
        return single_thread(func).with_attr(GPU_SCHEDULE_ATTR, "single_thread")
    if len(stages) == 1 and stages[0].kind == "injective" and not scratch:
        body = injective_kernel(stages[0])
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "injective")
    gemm = plan_gemm(stages, scratch)
    if gemm is not None:
        body = _wrap(gemm_kernel(gemm), [])
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "gemm")
    small = plan_small_reduction(stages, scratch)
    if small is not None and _many_outputs(stages[0]):
        body = small_reduction_kernel(small)
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "small_reduction")
    plan = plan_rows(stages, scratch)
    if plan is not None:
        body = row_kernel(stages, plan)
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "rows")
    if small is not None:  # few outputs, but the stages do not fit a row kernel
        body = small_reduction_kernel(small)
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "small_reduction")
    if not scratch and all(s.kind == "injective" for s in stages):
        # Independent injective stages (a split's outputs): one launch over the largest.
        kernel = independent_injective_kernel(stages)
        if kernel is not None:
            return func.with_body(kernel).with_attr(GPU_SCHEDULE_ATTR, "injective")
    blocks = plan_row_blocks(stages, scratch)
    if blocks is not None:
        body = row_blocks_kernel(stages, blocks)
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "rows")
    if not scratch and all(s.kind == "injective" for s in stages):
        body = _wrap(seq(*(s.stmt for s in stages)), scratch)
        return single_thread(func.with_body(body)).with_attr(GPU_SCHEDULE_ATTR, "single_thread")
    return single_thread(func).with_attr(GPU_SCHEDULE_ATTR, "single_thread")


def schedule_kind(func: PrimFunc) -> str:
    """The schedule :func:`schedule_prim_func` chose for ``func`` ("" if none)."""
    return str(func.attrs.get(GPU_SCHEDULE_ATTR, ""))


def schedule_module(mod: Any, target: Any = None) -> Any:
    """:func:`schedule_prim_func` on every PrimFunc of an IRModule (copied), a dict or a
    PrimFunc."""
    if isinstance(mod, PrimFunc):
        return schedule_prim_func(mod, target)
    if isinstance(mod, dict):
        return {
            k: schedule_prim_func(f, target) if isinstance(f, PrimFunc) else f
            for k, f in mod.items()
        }
    result = mod.copy()
    for gvar, func in mod.items():
        if isinstance(func, PrimFunc):
            result.update_func(gvar, schedule_prim_func(func, target))
    return result


def schedule_pass(target: Any = None) -> Any:
    """A module pass applying :func:`schedule_module` for ``target``: what the ``cuda`` target
    kind's ``relax_passes`` hook returns, so the default pipeline binds every fused kernel's
    loops to blocks and threads after fusion."""
    from relaxvm.transform import module_pass

    def run(mod: Any, ctx: Any) -> Any:
        return schedule_module(mod, target)

    return module_pass(run, name="ScheduleGPU")
