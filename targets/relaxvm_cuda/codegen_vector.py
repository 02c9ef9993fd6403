"""128-bit global loads and stores for the injective schedule's vectorized loops.

:func:`relaxvm_cuda.schedule.injective.injective_kernel` gives each thread ``L`` consecutive
elements in a loop of the form (the loop variable is the flat element index)::

    for flat in T.vectorized(base, L):
        if flat < N:                             # only when N may not be a multiple of L
            <let i, j, ... = flat unflattened row-major over out's shape>
            out[i, j, ...] = value

The loop is recognized by structure (rebuilt and compared, so nothing is taken on trust: TIR
recompiled from an untrusted file gets the same checks). The stored buffer and every buffer
loaded at exactly ``[i, j, ...]`` with the same shape (compact, no offset) are accessed at
elements ``base .. base+L-1``. Each thread computes its ``L`` elements once, unrolled, and
moves them with one ``<L x T>`` load or store per such buffer, aligned to its whole width
(LLVM's NVPTX backend emits ``ld.global.v4.b32`` / ``st.global.v4.b32``, ``.nc`` for
read-only inputs), when the vector is whole and every such address is aligned to the
vector's width (checked by each thread: a tensor may view storage from any offset).
Otherwise the same computed lanes are loaded and stored element by element, and in a partial
vector (the tail) the lanes past the end compute the last element again and store nothing,
so they never read out of bounds. Other operands (broadcasts, gathers) are loaded element by
element.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import expr_nodes as nodes
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import Buffer, BufferStore, For, IfThenElse, LetStmt, Stmt
from relaxvm_llvm.lltypes import I32, I64, Lane, mem_type

from .schedule.common import let_indices
from .schedule.injective import VECTOR_BYTES, contiguous_buffers

if TYPE_CHECKING:
    from .codegen_func import PTXFunctionCodegen

__all__ = ["VectorLoop", "emit_vector_loop", "match_vector_loop"]


class VectorLoop:
    """A recognized vector loop: its store, let bindings, contiguous buffers, lanes and the
    end of the index space (None when every lane is in range)."""

    def __init__(
        self,
        loop: For,
        store: BufferStore,
        lets: list[tuple[Var, PrimExpr]],
        buffers: list[Buffer],
        lanes: int,
        limit: PrimExpr | None,
    ) -> None:
        self.loop = loop
        self.store = store
        self.lets = lets
        self.buffers = buffers
        self.lanes = lanes
        self.limit = limit


def match_vector_loop(stmt: For) -> VectorLoop | None:
    """The :class:`VectorLoop` of ``stmt`` if it has the injective schedule's form (see the
    module docstring) with 16- or 32-bit elements fitting 16 bytes, else None."""
    if not isinstance(stmt.extent, IntImm) or stmt.loop_var.dtype.bits != 64:
        return None
    lanes = int(stmt.extent.value)
    if lanes not in (2, 4, 8):
        return None
    body, limit = stmt.body, None
    if isinstance(body, IfThenElse):
        cond = body.condition
        if body.else_case is not None or not isinstance(cond, nodes.LT):
            return None
        if cond.a is not stmt.loop_var or cond.b.dtype != stmt.loop_var.dtype:
            return None
        body, limit = body.then_case, cond.b
    lets: list[tuple[Var, PrimExpr]] = []
    node: Stmt = body
    while isinstance(node, LetStmt):
        lets.append((node.var, node.value))
        node = node.body
    if not isinstance(node, BufferStore):
        return None
    store = node
    buffers = contiguous_buffers(store)
    if not buffers:
        return None
    for buffer in buffers:
        bits = buffer.dtype.bits
        if str(buffer.dtype) == "bool" or buffer.dtype.lanes != 1 or bits not in (16, 32):
            return None
        if lanes * bits // 8 > VECTOR_BYTES:
            return None
    indices = [index for index in store.indices if isinstance(index, Var)]
    expected = let_indices(stmt.loop_var, indices, store.buffer.shape, store)
    if not structural_equal(body, expected):
        return None
    return VectorLoop(stmt, store, lets, buffers, lanes, limit)


def _width(buffer: Buffer, lanes: int) -> int:
    return lanes * (buffer.dtype.bits // 8)


def emit_vector_loop(gen: PTXFunctionCodegen, vector: VectorLoop) -> None:
    """Emit ``vector`` (see the module docstring)."""
    b = gen.builder
    loop, lanes, store = vector.loop, vector.lanes, vector.store
    start = gen.scalar(loop.min)
    flats = [start] + [b.add(start, ir.Constant(I64, k), flags=("nsw",)) for k in range(1, lanes)]
    inside: list[ir.Value] = []
    fast: ir.Value = ir.Constant(ir.IntType(1), 1)
    if vector.limit is not None:  # lanes past the end redo the last element, stored by none
        limit = gen.scalar(vector.limit)
        last = b.sub(limit, ir.Constant(I64, 1))
        inside = [b.icmp_signed("<", flat, limit) for flat in flats]
        flats = [b.select(ok, flat, last) for ok, flat in zip(inside, flats, strict=True)]
        fast = inside[-1]
    for buffer in vector.buffers:
        address = b.ptrtoint(gen.element_ptr(buffer, start), I64)
        low = b.and_(address, ir.Constant(I64, _width(buffer, lanes) - 1))
        fast = b.and_(fast, b.icmp_unsigned("==", low, ir.Constant(I64, 0)))
    loaded = _load_vectors(gen, vector, fast, start, flats)
    variables = [loop.loop_var, *(var for var, _ in vector.lets)]
    saved = {var: gen.env.get(var) for var in variables}
    out_type = ir.VectorType(mem_type(store.buffer.dtype), lanes)
    result: ir.Value = ir.Constant(out_type, ir.Undefined)
    try:
        for k in range(lanes):
            gen.env[loop.loop_var] = Lane(Lane.SCALAR, flats[k])
            for var, value in vector.lets:  # indices of the other operands; dead code if none
                gen.env[var] = gen.emit(value)
            gen.lane_loads = (
                store.indices,
                {buf: b.extract_element(vec, I32(k)) for buf, vec in loaded.items()},
            )
            try:
                item = gen.scalar(store.value)
            finally:
                gen.lane_loads = None
            result = b.insert_element(result, item, I32(k))
    finally:
        for var, before in saved.items():
            gen._restore(var, before)
    align = store.buffer.dtype.bits // 8
    with b.if_else(fast, likely=True) as (whole, by_element):
        with whole:
            pointer = b.bitcast(gen.element_ptr(store.buffer, start), out_type.as_pointer())
            b.store(result, pointer, align=_width(store.buffer, lanes))
        with by_element:
            for k in range(lanes):
                item = b.extract_element(result, I32(k))
                if inside:
                    with b.if_then(inside[k]):
                        b.store(item, gen.element_ptr(store.buffer, flats[k]), align=align)
                else:
                    b.store(item, gen.element_ptr(store.buffer, flats[k]), align=align)


def _load_vectors(
    gen: PTXFunctionCodegen,
    vector: VectorLoop,
    fast: ir.Value,
    start: ir.Value,
    flats: list[ir.Value],
) -> dict[Buffer, ir.Value]:
    """Each contiguous input's ``L`` elements as one vector: a vector load when ``fast``, else
    element loads (at the clamped lanes)."""
    inputs = vector.buffers[1:]
    if not inputs:
        return {}
    b, lanes = gen.builder, vector.lanes
    types = [ir.VectorType(mem_type(buffer.dtype), lanes) for buffer in inputs]
    whole_values: list[ir.Value] = []
    element_values: list[ir.Value] = []
    with b.if_else(fast, likely=True) as (whole, by_element):
        with whole:
            for buffer, vty in zip(inputs, types, strict=True):
                pointer = b.bitcast(gen.element_ptr(buffer, start), vty.as_pointer())
                whole_values.append(b.load(pointer, align=_width(buffer, lanes)))
            whole_block = b.block
        with by_element:
            for buffer, vty in zip(inputs, types, strict=True):
                value: ir.Value = ir.Constant(vty, ir.Undefined)
                align = buffer.dtype.bits // 8
                for k, flat in enumerate(flats):
                    item = b.load(gen.element_ptr(buffer, flat), align=align)
                    value = b.insert_element(value, item, I32(k))
                element_values.append(value)
            element_block = b.block
    loaded: dict[Buffer, ir.Value] = {}
    for buffer, vty, a, c in zip(inputs, types, whole_values, element_values, strict=True):
        phi = b.phi(vty)
        phi.add_incoming(a, whole_block)
        phi.add_incoming(c, element_block)
        loaded[buffer] = phi
    return loaded
