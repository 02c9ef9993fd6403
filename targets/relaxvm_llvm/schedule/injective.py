"""Schedule for injective and elementwise stages: fused parallel outer loop, vectorized inner.

``Y[i, j] = f(A[i, j], B[j], ...)`` becomes::

    for ij_fused in T.parallel(n):               # all loops but the output's last axis
        for j_o in range(m // 32):
            for j_v in T.vectorized(32):         # contiguous lanes
                Y[i, j_o * 32 + j_v] = ...
        for j_t in range(m % 32):                # tail (vectorized when m is a constant)
            ...

The vector axis is the loop indexing the output's last dimension. It is vectorized only when
every load either ignores it or reads consecutive elements along it (a transpose's strided
read stays a scalar loop, which LLVM may still vectorize), and never for bool data or
guarded loads (``if_then_else``), whose vector forms would need masking.
"""

from __future__ import annotations

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.expr_functor import free_vars, post_order_visit
from relaxvm.ir.expr_nodes import GE, GT, LE, LT, And, CmpExpr
from relaxvm.ir.op import max_expr, min_expr
from relaxvm.ir.tir import (
    BufferLoad,
    BufferStore,
    Call,
    For,
    ForKind,
    Stmt,
    if_then_else,
    seq,
    substitute,
)
from relaxvm.ir.tir.stage_epilogue import rewrite_loads
from relaxvm.ir.tir.stages import Stage, loads_of, static_extent, vector_access

from .config import CpuConfig
from .guards import has_guard, unguard
from .indexing import simplify_index
from .loops import estimate_ops, fused_grid, product, vector_loop

__all__ = ["schedule_injective_stage", "vector_width_for"]


def _has_if_then_else(expr: PrimExpr, var: Var | None) -> bool:
    """Whether ``expr`` has an ``if_then_else`` whose condition depends on ``var`` (any, for
    None): its vector form would evaluate both branches in every lane."""
    found = False

    def visit(node: PrimExpr) -> None:
        nonlocal found
        is_guard = isinstance(node, Call) and node.op == "tir.if_then_else"
        if is_guard and (var is None or var in free_vars(node.args[0])):  # type: ignore[attr-defined]
            found = True

    post_order_visit(expr, visit)
    return found


def vector_width_for(
    exprs: list[PrimExpr], store_dtype: object, config: CpuConfig, var: Var | None = None
) -> int | None:
    """Lanes per vector for a body mixing these dtypes (the widest type decides), or None
    when it must not be vectorized along ``var``: bool data, or loads guarded by a condition
    on ``var``."""
    bits = [int(getattr(store_dtype, "bits", 0) or 0)]
    for expr in exprs:
        if _has_if_then_else(expr, var):
            return None
        for load in loads_of(expr):
            bits.append(load.buffer.dtype.bits)
    if min(bits) <= 1 or "bool" in str(store_dtype):
        return None
    return max(1, config.vector_bits // max(bits))


def _vectorizable(store: BufferStore, var: Var, gathers: bool = False) -> bool:
    """Contiguous stores; loads contiguous or invariant, or (``gathers``) anything."""
    if vector_access(store, var) != "contiguous":
        return False
    if gathers:
        return True
    return all(vector_access(load, var) != "strided" for load in loads_of(store.value))


def _bound(cmp: PrimExpr, var: Var) -> tuple[str, PrimExpr] | None:
    """``("lo", a)`` for ``var >= a`` (or ``var > a - 1``), ``("hi", b)`` for ``var < b``."""
    if not isinstance(cmp, (GE, GT, LE, LT)):
        return None
    a, b = cmp.a, cmp.b
    flipped = {GE: LE, GT: LT, LE: GE, LT: GT}
    kind: type[CmpExpr] = type(cmp)
    if b is var and var not in free_vars(a):
        a, b, kind = b, a, flipped[kind]
    if a is not var or var in free_vars(b):
        return None
    if kind is GE:
        return "lo", b
    if kind is GT:
        return "lo", b + 1
    if kind is LT:
        return "hi", b
    return "hi", b + 1


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _partition(
    value: PrimExpr, var: Var, extent: PrimExpr
) -> list[tuple[PrimExpr, PrimExpr, PrimExpr]] | None:
    """Split ``if_then_else(lo <= var < hi and rest, then, else)`` (padding) into the loop
    ranges below, inside and above ``[lo, hi)``, so no lane tests the range: ``(start,
    extent, value)`` per range, or None when the value is not of that form."""
    if not (isinstance(value, Call) and value.op == "tir.if_then_else"):
        return None
    cond, then, other = value.args
    lows: list[PrimExpr] = []
    highs: list[PrimExpr] = []
    rest: list[PrimExpr] = []
    for part in _conjuncts(cond):
        if var not in free_vars(part):
            rest.append(part)
            continue
        bound = _bound(part, var)
        if bound is None:
            return None
        (lows if bound[0] == "lo" else highs).append(bound[1])
    if not lows and not highs:
        return None
    zero = IntImm(str(var.dtype), 0)
    lo: PrimExpr = zero
    for low in lows:
        lo = max_expr(lo, low)
    lo = min_expr(lo, extent)
    hi: PrimExpr = extent
    for high in highs:
        hi = min_expr(hi, high)
    hi = max_expr(hi, lo)
    inside = then
    if rest:
        guard = rest[0]
        for extra in rest[1:]:
            guard = guard & extra
        inside = if_then_else(guard, then, other)
    simplify = Analyzer().simplify
    lo, hi = simplify(lo), simplify(hi)
    return [(zero, lo, other), (lo, simplify(hi - lo), inside), (hi, simplify(extent - hi), other)]


def _simplified_loads(store: BufferStore, extents: dict[Var, PrimExpr]) -> BufferStore:
    """``store`` with the flat-index divisions of its loads resolved (:mod:`.indexing`):
    a fused reshape then reads plain, often contiguous, indices."""

    def simplify(load: BufferLoad) -> PrimExpr | None:
        indices = [simplify_index(index, extents) for index in load.indices]
        if all(new is old for new, old in zip(indices, load.indices, strict=True)):
            return None
        return BufferLoad(load.buffer, tuple(indices))

    value = rewrite_loads(store.value, simplify)
    return store if value is store.value else BufferStore(store.buffer, value, store.indices)


def schedule_injective_stage(stage: Stage, config: CpuConfig) -> Stmt:
    """The scheduled loop nest of one injective stage (see the module docstring)."""
    store = stage.store
    assert store is not None and stage.kind == "injective"
    extents = {loop.loop_var: loop.extent for loop in stage.loops}
    store = _simplified_loads(store, extents)
    inner = store.indices[-1]
    assert isinstance(inner, Var)
    outer = [(loop.loop_var, loop.extent) for loop in stage.loops if loop.loop_var is not inner]
    # Loops of extent 1 disappear (their variable is 0).
    unit = {v: IntImm(str(v.dtype), 0) for v, e in outer if static_extent(e) == 1}
    if unit:
        substituted = substitute(store, unit)
        assert isinstance(substituted, BufferStore)
        store = substituted
        outer = [(v, e) for v, e in outer if v not in unit]
    dtype = str(inner.dtype)
    inner_extent = extents[inner]
    segments = _partition(store.value, inner, inner_extent)
    gathers = False
    if segments is None:
        value = store.value
        if has_guard(value, inner):
            # Clamped loads (gathers) and a select vectorize; a guarded load does not.
            value, gathers = unguard(value, inner), True
        segments = [(IntImm(dtype, 0), inner_extent, value)]

    total = product([e for _, e in outer] + [inner_extent])
    total_const = static_extent(total) if total is not None else None
    work = (total_const or 0) * estimate_ops(store.value)
    go_parallel = config.num_threads > 1 and (total_const is None or work >= config.parallel_cutoff)
    chunk_parallel = go_parallel and not outer and len(segments) == 1

    parts: list[Stmt] = []
    for start, extent, value in segments:
        if static_extent(extent) == 0:
            continue
        seg_store = BufferStore(store.buffer, value, store.indices)
        width = vector_width_for([value], store.buffer.dtype, config, inner)
        vectorize = width is not None and _vectorizable(seg_store, inner, gathers)
        lanes = width or 1
        # Two vectors per chunk: enough independent work per iteration for a streaming body.
        const = static_extent(extent)
        chunk = lanes * 2 if const is None or const >= lanes * 4 else lanes
        if not vectorize or chunk < 2:
            loop_var = Var(inner.name, inner.dtype)
            kind = ForKind.PARALLEL if chunk_parallel else ForKind.SERIAL
            body = substitute(seg_store, {inner: start + loop_var})
            parts.append(For(loop_var, 0, extent, kind, body))
            continue

        def make(index: PrimExpr, seg: BufferStore = seg_store) -> Stmt:
            return substitute(seg, {inner: index})

        stmt, _ = vector_loop(
            inner.name, dtype, extent, chunk, make, start=start,
            chunk_kind=ForKind.PARALLEL if chunk_parallel else ForKind.SERIAL,
        )  # fmt: skip
        parts.append(stmt)
    inner_stmt = seq(*parts) if parts else seq()
    if not outer:
        return inner_stmt
    kind = ForKind.PARALLEL if go_parallel else ForKind.SERIAL
    name = "_".join(v.name for v, _ in outer) + "_fused"
    stmt, _ = fused_grid(name, outer, inner_stmt, kind)
    return stmt
