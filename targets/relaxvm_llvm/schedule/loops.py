"""Loop-building helpers shared by the schedules: vector loops with tails, fused grids,
work estimates."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.expr_functor import post_order_visit
from relaxvm.ir.op import floordiv, floormod
from relaxvm.ir.tir import BufferLoad, Call, For, ForKind, Stmt, seq
from relaxvm.ir.tir.stages import static_extent

__all__ = ["estimate_ops", "fused_grid", "product", "vector_loop"]

BodyFn = Callable[[PrimExpr], Stmt]

# Rough cost, in simple operations, of an intrinsic call (exp, tanh...) per element.
_CALL_COST = 8


def product(values: Sequence[PrimExpr]) -> PrimExpr | None:
    """The product of extents, or None for an empty list."""
    result: PrimExpr | None = None
    for value in values:
        result = value if result is None else result * value
    return result


def estimate_ops(expr: PrimExpr) -> int:
    """Scalar operations to evaluate ``expr`` once (at least 1); calls count extra."""
    count = 0

    def visit(node: PrimExpr) -> None:
        nonlocal count
        if isinstance(node, Call):
            count += _CALL_COST
        elif node.operands and not isinstance(node, BufferLoad):
            count += 1

    post_order_visit(expr, visit)
    return max(1, count)


def vector_loop(
    name: str,
    dtype: str,
    extent: PrimExpr,
    width: int,
    body: BodyFn,
    start: PrimExpr | int = 0,
    vectorize: bool = True,
    chunk_kind: ForKind = ForKind.SERIAL,
) -> tuple[Stmt, Var | None]:
    """``for x in range(start, start + extent): body(x)`` as chunks of ``width`` lanes.

    The chunk loop runs ``extent // width`` times around a vectorized loop of constant extent
    ``width``; the remaining ``extent % width`` iterations follow in a tail loop (vectorized
    too when the remainder is a constant). Returns the statement and the chunk loop's
    variable (None when there is no chunk loop: a single chunk or a constant extent below
    ``width``), so the caller can make it parallel.
    """
    kind = ForKind.VECTORIZED if vectorize else ForKind.SERIAL
    base = start if isinstance(start, PrimExpr) else IntImm(dtype, start)
    const = static_extent(extent)

    def lanes(var_name: str, count: int, offset: PrimExpr) -> Stmt:
        lane = Var(var_name, dtype)
        lane_kind = kind if count > 1 else ForKind.SERIAL
        return For(lane, 0, count, lane_kind, body(offset + lane))

    if const is not None:
        chunks, rest = divmod(const, width)
        parts: list[Stmt] = []
        chunk_var = None
        if chunks == 1:
            parts.append(lanes(f"{name}_v", width, base))
        elif chunks > 1:
            chunk_var = Var(f"{name}_o", dtype)
            inner = lanes(f"{name}_v", width, base + chunk_var * width)
            parts.append(For(chunk_var, 0, chunks, chunk_kind, inner))
        if rest:
            parts.append(lanes(f"{name}_t", rest, base + chunks * width))
        return seq(*parts) if parts else seq(), chunk_var
    chunk_var = Var(f"{name}_o", dtype)
    chunks_expr = floordiv(extent, width)
    main = For(
        chunk_var, 0, chunks_expr, chunk_kind, lanes(f"{name}_v", width, base + chunk_var * width)
    )
    tail_var = Var(f"{name}_t", dtype)
    done = chunks_expr * width
    tail = For(tail_var, 0, extent - done, ForKind.SERIAL, body(base + done + tail_var))
    return seq(main, tail), chunk_var


def fused_grid(
    name: str,
    grid: Sequence[tuple[Var, PrimExpr]],
    body: Stmt,
    kind: ForKind = ForKind.SERIAL,
) -> tuple[Stmt, Var | None]:
    """One loop over the product of ``grid``'s extents, recovering each variable by
    division and modulo (its loop becomes a ``LetStmt``-free substitution in ``body``).

    Returns the loop and its variable; with an empty grid, ``body`` and None.
    """
    from relaxvm.ir.tir import substitute

    if not grid:
        return body, None
    if len(grid) == 1:
        var, extent = grid[0]
        return For(var, 0, extent, kind, body), var
    dtype = str(grid[0][0].dtype)
    fused = Var(name, dtype)
    if any(static_extent(extent) == 0 for _, extent in grid):
        # An empty tensor: the loop runs no iteration, and recovering the variables would
        # divide by the zero extent, so they become 0 in a body that never executes.
        empty = {var: IntImm(str(var.dtype), 0) for var, _ in grid}
        return For(fused, 0, IntImm(dtype, 0), kind, substitute(body, empty)), fused
    mapping: dict[Var, PrimExpr] = {}
    inner: PrimExpr = IntImm(dtype, 1)
    for position, (var, extent) in reversed(list(enumerate(grid))):
        index = fused if static_extent(inner) == 1 else floordiv(fused, inner)
        if position > 0:
            index = floormod(index, extent)
        mapping[var] = index
        inner = extent if static_extent(inner) == 1 else inner * extent
    total = math.prod(static_extent(e) or 0 for _, e in grid)
    extent_expr: PrimExpr = IntImm(dtype, total) if total else inner
    return For(fused, 0, extent_expr, kind, substitute(body, mapping)), fused
