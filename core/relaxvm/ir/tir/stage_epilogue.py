"""Inline elementwise consumers of a stage into it (TVM's ``compute_inline`` of the stages
FuseTIR leaves after a matmul or convolution: bias add, activation, scaling).

For a stage writing scratch buffer ``X[vs]`` followed by stages
``Y[us] = f(X[us], bias[...])`` and ``Z[ws] = g(Y[ws])``, the combined store is
``Z[vs] = g(f(ACC, bias[...]))`` in the first stage's variables, where ``ACC`` stands for the
value the first stage computes. The inlined scratch buffers are no longer needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relaxvm.ir import PrimExpr, Var
from relaxvm.ir.expr_functor import post_order_visit, substitute
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import Buffer, BufferLoad

from .stages import Stage, loads_of, stage_reads

__all__ = ["Epilogue", "find_epilogue", "rewrite_loads"]


def rewrite_loads(expr: PrimExpr, rewrite: Callable[[BufferLoad], PrimExpr | None]) -> PrimExpr:
    """Rebuild ``expr`` bottom-up with some loads replaced (``rewrite`` returns None to keep
    a load)."""
    done: dict[int, PrimExpr] = {}

    def visit(node: PrimExpr) -> None:
        if isinstance(node, BufferLoad):
            new_indices = [done[id(i)] for i in node.indices]
            load = node.with_operands(node.buffer.data, *new_indices)
            assert isinstance(load, BufferLoad)
            replacement = rewrite(load)
            done[id(node)] = load if replacement is None else replacement
            return
        done[id(node)] = node.with_operands(*(done[id(op)] for op in node.operands))

    post_order_visit(expr, visit)
    return done[id(expr)]


@dataclass
class Epilogue:
    """What a stage finally stores: ``buffer[indices] = value``, with ``acc`` in ``value``
    standing for the stage's own result at that element."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    value: PrimExpr
    acc: Var
    inlined: list[int]  # positions of the consumer stages folded in
    dropped: list[Buffer]  # scratch buffers no longer written or read


def _same_indices(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def find_epilogue(stages: list[Stage], position: int, scratch: set[Buffer]) -> Epilogue:
    """The stores of stage ``position`` with its elementwise consumers inlined.

    A consumer qualifies when it is the next stage, is injective over the same shape, reads
    the inlined buffers only at its own store indices, and no later stage reads them.
    """
    stage = stages[position]
    assert (stage.store is not None and stage.init is not None) or stage.kind == "injective"
    store = stage.store
    assert store is not None
    indices = stage.init.indices if stage.init is not None else store.indices
    shape = store.buffer.shape
    extents = {loop.loop_var: loop.extent for loop in stage.loops}
    acc = Var("acc_value", store.buffer.dtype)
    values: dict[Buffer, PrimExpr] = {store.buffer: acc}
    current = store.buffer
    inlined: list[int] = []
    first_reads = stage_reads(stage.stmt)
    for later in range(position + 1, len(stages)):
        if current not in scratch:
            break
        consumer = stages[later]
        if consumer.kind != "injective" or consumer.store is None:
            break
        c_store = consumer.store
        if len(c_store.indices) != len(indices) or c_store.buffer in values:
            break
        if c_store.buffer in first_reads:  # it would overwrite an input still being read
            break
        if not all(
            structural_equal(a, b) for a, b in zip(c_store.buffer.shape, shape, strict=True)
        ):
            break
        c_extents = {loop.loop_var: loop.extent for loop in consumer.loops}
        vmap: dict[Var, PrimExpr] = {}
        for c_var, s_var in zip(c_store.indices, indices, strict=True):
            assert isinstance(c_var, Var) and isinstance(s_var, Var)
            if not structural_equal(c_extents[c_var], extents[s_var]):
                break
            vmap[c_var] = s_var
        if len(vmap) != len(indices):
            break
        reads = [load for load in loads_of(c_store.value) if load.buffer in values]
        if not reads or any(not _same_indices(load.indices, c_store.indices) for load in reads):
            break
        later_reads: set[Buffer] = set()
        for rest in stages[later + 1 :]:
            later_reads |= stage_reads(rest.stmt)
        if any(buf in later_reads for buf in values):
            break
        moved = substitute(c_store.value, vmap)

        def to_value(load: BufferLoad) -> PrimExpr | None:
            return values.get(load.buffer)

        values[c_store.buffer] = rewrite_loads(moved, to_value)
        current = c_store.buffer
        inlined.append(later)
    dropped = [buf for buf in values if buf is not current]
    return Epilogue(current, tuple(indices), values[current], acc, inlined, dropped)
