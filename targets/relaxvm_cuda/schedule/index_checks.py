"""Fold an index-validation prologue into the loads it guards.

Legalized gathers (``take``, ``gather_elements``, ``gather_nd``) start with a loop nest that
only validates the user's indices (the largest wrapped index, then ``T.check_index`` over
every index when it is out of range) before the stage that reads
``x[T.Select(i < 0, i + E, i)]``. The prologue is a serial loop nest: it would keep the whole
kernel in one thread. Here it is dropped and each guarded ``Select`` becomes
``T.check_index(i, E, axis, op)`` at the load: the thread that meets a bad index reports it
(the same message, naming the same op, axis and index) and leaves before reading, so no
load is ever out of bounds. Where several indices are bad, which one is reported may differ
from the serial order (on a GPU the first failure to reach the error slot wins).
"""

from __future__ import annotations

from collections.abc import Callable

from relaxvm.ir import LT, Add, IntImm, PrimExpr, Select
from relaxvm.ir.op import cast
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    StmtMutator,
    post_order_visit,
)
from relaxvm.ir.tir.intrin import CheckIndex, check_index
from relaxvm.ir.tir.stages import Stage, parse_stage

__all__ = ["fold_index_checks"]

#: One validated index: its buffer, the constant positions of its indices, the extent, the
#: axis and the op code.
_Check = tuple[Buffer, tuple[int | None, ...], PrimExpr, IntImm, IntImm]


def _pattern(load: BufferLoad) -> tuple[int | None, ...]:
    return tuple(i.value if isinstance(i, IntImm) else None for i in load.indices)


def _validation_checks(stage: Stage) -> list[_Check] | None:
    """The checks of a stage that only validates indices (it stores only into buffers it
    allocates itself), else None."""
    if stage.kind != "opaque":
        return None
    own: set[Buffer] = set()
    stores: list[BufferStore] = []
    checks: list[_Check] = []
    bad: list[object] = []

    def visit(node: object) -> None:
        if isinstance(node, Allocate):
            own.add(node.buffer)
        elif isinstance(node, BufferStore):
            stores.append(node)
        elif hasattr(node, "value") and isinstance(getattr(node, "value", None), CheckIndex):
            call = node.value  # type: ignore[attr-defined]
            index, extent, axis, op = call.args
            if not isinstance(index, BufferLoad):
                bad.append(node)
                return
            checks.append((index.buffer, _pattern(index), extent, axis, op))

    post_order_visit(stage.stmt, visit)
    if bad or not checks or any(store.buffer not in own for store in stores):
        return None
    return checks


def _rebuild(expr: PrimExpr, rewrite: Callable[[PrimExpr], PrimExpr | None]) -> PrimExpr:
    from relaxvm.ir.expr_functor import post_order_visit as visit_expr

    done: dict[int, PrimExpr] = {}

    def visit(node: PrimExpr) -> None:
        if isinstance(node, BufferLoad):
            new = node.with_operands(node.buffer.data, *(done[id(i)] for i in node.indices))
        else:
            new = node.with_operands(*(done[id(op)] for op in node.operands))
        replaced = rewrite(new)
        done[id(node)] = new if replaced is None else replaced

    visit_expr(expr, visit)
    return done[id(expr)]


def _guarded_load(node: PrimExpr) -> tuple[BufferLoad, PrimExpr] | None:
    """``(i, E)`` when ``node`` is ``T.Select(i < 0, i + E, i)`` for a load ``i``."""
    if not isinstance(node, Select) or not isinstance(node.false_value, BufferLoad):
        return None
    load = node.false_value
    cond, wrapped = node.condition, node.true_value
    if not (isinstance(cond, LT) and structural_equal(cond.a, load)):
        return None
    if not (isinstance(cond.b, IntImm) and cond.b.value == 0):
        return None
    if not (isinstance(wrapped, Add) and structural_equal(wrapped.a, load)):
        return None
    return load, wrapped.b


def fold_index_checks(stages: list[Stage]) -> list[Stage] | None:
    """The stages with every validation prologue folded into the loads it guards, or None
    when there is none or one of its checks guards no load (nothing would check it)."""
    checks: list[_Check] = []
    rest: list[Stage] = []
    for stage in stages:
        found = _validation_checks(stage)
        if found is None:
            rest.append(stage)
        else:
            checks += found
    if not checks:
        return None
    used: set[int] = set()

    def to_check(node: PrimExpr) -> PrimExpr | None:
        guarded = _guarded_load(node)
        if guarded is None:
            return None
        load, extent = guarded
        matches = [
            k
            for k, (buffer, pattern, e, _, _) in enumerate(checks)
            if buffer is load.buffer and pattern == _pattern(load) and structural_equal(e, extent)
        ]
        if len(matches) != 1:
            return None
        k = matches[0]
        used.add(k)
        _, _, _, axis, op = checks[k]
        checked = check_index(load, extent, axis, op)  # int64, like the wrapped index
        return checked if checked.dtype == node.dtype else cast(checked, node.dtype)

    class _Fold(StmtMutator):
        def visit_expr(self, expr: PrimExpr) -> PrimExpr:
            return _rebuild(expr, to_check)

    folded = [parse_stage(_Fold().visit_stmt(stage.stmt)) for stage in rest]
    if len(used) != len(checks):
        return None
    return folded
