"""Pick a GPU schedule for a legalized (or fused) PrimFunc from its stages.

The stages are read by the LLVM target's CPU-independent parser
(:func:`relaxvm.ir.tir.stages.parse_stages`). Injective stages writing scratch are
inlined into their readers first (recomputed where read: no global scratch, no launch per
stage). Then:

* one injective stage left: :func:`.injective.injective_kernel`;
* reductions with row-compatible stages: :func:`.rows.row_kernel`;
* anything else (opaque loop nests, scans, sorts, several unrelated stages): the whole
  function in one thread (:func:`.fallback.single_thread`).
"""

from __future__ import annotations

from typing import Any

from relaxvm.ir import Var
from relaxvm.ir.expr_functor import substitute
from relaxvm.ir.tir import Allocate, Buffer, BufferLoad, PrimFunc, Stmt, seq
from relaxvm.ir.tir.stages import Stage, parse_stage, parse_stages

from .common import rewrite_stmt_loads
from .fallback import has_thread_binding, single_thread
from .injective import injective_kernel
from .rows import plan_rows, row_kernel

__all__ = [
    "GPU_SCHEDULE_ATTR",
    "schedule_kind",
    "schedule_module",
    "schedule_pass",
    "schedule_prim_func",
]

#: The attribute naming the schedule a PrimFunc got ("injective", "rows", "single_thread").
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


def _wrap(body: Stmt, scratch: list[Buffer]) -> Stmt:
    for buffer in reversed(scratch):
        body = Allocate(buffer, body)
    return body


def schedule_prim_func(func: PrimFunc, target: Any = None) -> PrimFunc:
    """The GPU schedule of ``func`` (see the module docstring); a function that already binds
    threads is returned unchanged. The result carries :data:`GPU_SCHEDULE_ATTR`."""
    if has_thread_binding(func):
        return func
    scratch, stages = parse_stages(func)
    if any(s.kind == "opaque" for s in stages) or not stages:
        return single_thread(func).with_attr(GPU_SCHEDULE_ATTR, "single_thread")
    scratch, stages = _inline_injective(scratch, stages)
    if any(s.kind == "opaque" for s in stages):
        return single_thread(func).with_attr(GPU_SCHEDULE_ATTR, "single_thread")
    if len(stages) == 1 and stages[0].kind == "injective" and not scratch:
        body = injective_kernel(stages[0])
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "injective")
    plan = plan_rows(stages, scratch)
    if plan is not None:
        body = row_kernel(stages, plan)
        return func.with_body(body).with_attr(GPU_SCHEDULE_ATTR, "rows")
    if not scratch and all(s.kind == "injective" for s in stages):
        # Independent injective stages (a split's outputs): one launch each is not
        # expressible in one kernel, so they run one after another in a single thread.
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
