"""Turn guarded loads into clamped loads and a select, so they vectorize.

``if_then_else(cond, A[i, j], v)`` (padding in pooling and convolution) reads ``A`` only
when ``cond`` holds; its vector form would have to mask the load. When ``cond`` varies along
the vector axis, the schedules rewrite it as ``Select(cond, A[clamp(i), clamp(j)], v)``: every
index is clamped into the buffer, so the load is always in bounds, and the select discards the
lanes where ``cond`` is false. The value is the same in every lane that is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from relaxvm.ir import FloatImm, IntImm, PrimExpr, Select, Var
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.expr_functor import free_vars, post_order_visit
from relaxvm.ir.expr_nodes import GE, GT, LE, LT, And, CmpExpr
from relaxvm.ir.op import max_expr, min_expr
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import Buffer, BufferLoad, BufferStore, Call, For, ForKind, Stmt, if_then_else
from relaxvm.ir.tir.stage_epilogue import rewrite_loads
from relaxvm.ir.tir.stages import Stage, static_extent

__all__ = ["has_guard", "materialize_padding", "unguard"]


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _is_guard(node: PrimExpr, var: Var) -> bool:
    return (
        isinstance(node, Call) and node.op == "tir.if_then_else" and var in free_vars(node.args[0])
    )


def has_guard(expr: PrimExpr, var: Var) -> bool:
    """Whether ``expr`` has an ``if_then_else`` whose condition depends on ``var``."""
    found = False

    def visit(node: PrimExpr) -> None:
        nonlocal found
        found = found or _is_guard(node, var)

    post_order_visit(expr, visit)
    return found


def _clamper(cond: PrimExpr) -> Callable[[BufferLoad], PrimExpr]:
    guarded = set(free_vars(cond))

    def clamp(load: BufferLoad) -> PrimExpr:
        indices = []
        for index, extent in zip(load.indices, load.buffer.shape, strict=True):
            if set(free_vars(index)) & guarded:  # only indices the condition protects
                zero = IntImm(str(index.dtype), 0)
                index = max_expr(min_expr(index, extent - 1), zero)
            indices.append(index)
        return BufferLoad(load.buffer, tuple(indices))

    return clamp


def unguard(expr: PrimExpr, var: Var) -> PrimExpr:
    """``expr`` with each ``if_then_else`` whose condition depends on ``var`` replaced by a
    select over clamped loads (see the module docstring)."""
    done: dict[int, PrimExpr] = {}

    def visit(node: PrimExpr) -> None:
        operands = [done[id(op)] for op in node.operands]
        if _is_guard(node, var):
            cond, then, other = operands
            clamp = _clamper(cond)
            then = rewrite_loads(then, clamp)
            other = rewrite_loads(other, clamp)
            done[id(node)] = Select(cond, then, other)
            return
        if isinstance(node, BufferLoad):
            done[id(node)] = node.with_operands(node.buffer.data, *operands[1:])
            return
        done[id(node)] = node.with_operands(*operands) if operands else node

    post_order_visit(expr, visit)
    return done[id(expr)]


def _bound_check(part: PrimExpr, index: PrimExpr, extent: PrimExpr) -> str | None:
    """``"lo"`` for ``index >= 0``, ``"hi"`` for ``index < extent`` (either spelling)."""
    if not isinstance(part, (GE, GT, LE, LT)):
        return None
    a, b = part.a, part.b
    kind: type[CmpExpr] = type(part)
    if structural_equal(b, index) and not structural_equal(a, index):
        a, b, kind = b, a, {GE: LE, GT: LT, LE: GE, LT: GT}[kind]
    if not structural_equal(a, index):
        return None
    value = static_extent(b)
    if kind is GE and value == 0:
        return "lo"
    if kind is GT and value == -1:
        return "lo"
    if kind is LT and structural_equal(b, extent):
        return "hi"
    if kind is LE and value is not None and static_extent(extent) == value + 1:
        return "hi"
    return None


def _padding_of(guard: Call, analyzer: Analyzer) -> tuple[list[int], list[int]] | None:
    """Per dimension, how far the guarded load reaches below 0 and past the end, when the
    guard is exactly its bounds check; None otherwise."""
    cond, then, other = guard.args
    if not isinstance(then, BufferLoad) or not isinstance(other, (FloatImm, IntImm)):
        return None
    load = then
    maybe_shape = [static_extent(e) for e in load.buffer.shape]
    shape = [e for e in maybe_shape if e is not None]
    if len(shape) != len(maybe_shape):
        return None
    checked: set[tuple[int, str]] = set()
    for part in _conjuncts(cond):
        found = None
        for dim, (index, extent) in enumerate(zip(load.indices, load.buffer.shape, strict=True)):
            side = _bound_check(part, index, extent)
            if side is not None:
                found = (dim, side)
                break
        if found is None:
            return None
        checked.add(found)
    low, high = [], []
    for dim, (index, size) in enumerate(zip(load.indices, shape, strict=True)):
        bound = analyzer.const_int_bound(index)
        below = max(0, -int(bound.min_value))
        above = max(0, int(bound.max_value) - (size - 1))
        if (below and (dim, "lo") not in checked) or (above and (dim, "hi") not in checked):
            return None  # an unguarded side would read out of bounds
        low.append(below)
        high.append(above)
    return low, high


def materialize_padding(stage: Stage) -> tuple[Stage, Buffer, Stmt] | None:
    """Undo the inlining of a padding stage into a reduction (FuseTIR inlines ``pad_temp``
    into the convolution): ``if_then_else(in_bounds(B[idx]), B[idx], c)`` in the source
    becomes ``P[idx + low]`` with ``P`` the padded copy of ``B``, filled by a new stage.

    Returns the rewritten stage, ``P`` and the stage filling it; None when the source has
    no such guard or a loop bound is symbolic.
    """
    assert stage.source is not None
    analyzer = Analyzer()
    for loop in stage.loops + stage.reduce_loops:
        extent = static_extent(loop.extent)
        if extent is None or extent < 1:
            return None
        analyzer.update(loop.loop_var, 0, extent - 1)
    guards: list[Call] = []

    def visit(node: PrimExpr) -> None:
        if isinstance(node, Call) and node.op == "tir.if_then_else":
            guards.append(node)

    post_order_visit(stage.source, visit)
    if not guards:
        return None
    guard = guards[0]
    padding = _padding_of(guard, analyzer)
    if padding is None or (not any(padding[0]) and not any(padding[1])):
        return None
    low, high = padding
    load = guard.args[1]
    assert isinstance(load, BufferLoad)
    source = load.buffer
    shape = [int(e.value) + lo + hi for e, lo, hi in zip(source.shape, low, high, strict=True)]  # type: ignore[attr-defined]
    padded = Buffer(f"{source.name}_pad", shape, source.dtype)
    dtype = str(load.indices[0].dtype) if load.indices else "int64"
    axes = [Var(f"p{dim}", dtype) for dim in range(len(shape))]
    inside: list[PrimExpr] = []
    for axis, lo, hi, size in zip(axes, low, high, source.shape, strict=True):
        if lo:
            inside.append(axis >= lo)
        if hi:
            inside.append(axis < size + lo)
    condition = inside[0]
    for extra in inside[1:]:
        condition = condition & extra
    value = if_then_else(
        condition,
        BufferLoad(
            source, tuple(axis - lo if lo else axis for axis, lo in zip(axes, low, strict=True))
        ),
        guard.args[2],
    )
    fill: Stmt = BufferStore(padded, value, axes)
    for axis, extent in reversed(list(zip(axes, shape, strict=True))):
        fill = For(axis, 0, extent, ForKind.SERIAL, fill)
    replacement = BufferLoad(
        padded,
        tuple(index + lo if lo else index for index, lo in zip(load.indices, low, strict=True)),
    )

    done: dict[int, PrimExpr] = {}

    def rebuild(node: PrimExpr) -> None:
        if node is guard or (
            isinstance(node, Call)
            and node.op == "tir.if_then_else"
            and structural_equal(node, guard)
        ):
            done[id(node)] = replacement
            return
        operands = [done[id(op)] for op in node.operands]
        if isinstance(node, BufferLoad):
            done[id(node)] = node.with_operands(node.buffer.data, *operands[1:])
            return
        done[id(node)] = node.with_operands(*operands) if operands else node

    post_order_visit(stage.source, rebuild)
    return replace(stage, source=done[id(stage.source)]), padded, fill
