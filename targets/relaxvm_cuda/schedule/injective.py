"""The injective schedule: the output's index space flattened and spread over blocks of
threads, with a bounds guard for the last block.

Where the output and some inputs are read and written at the same (compact, row-major)
element, each thread handles :func:`vector_lanes` consecutive elements (4 for 32-bit types,
8 for 16-bit ones: 16 bytes) in a ``vectorized`` loop whose variable *is* the flat index::

    for b in blockIdx.x: for t in threadIdx.x:
        if b*T + t < ceil(N / L):
            for flat in T.vectorized((b*T + t)*L, L):
                if flat < N:                         # symbolic N only: the tail
                    i, j = flat // cols, flat % cols # let-bound, row-major
                    out[i, j] = a[i, j] + bias[j]

The PTX generator (:mod:`relaxvm_cuda.codegen_vector`) recognizes that form and turns the
accesses at the flat element into one 128-bit load or store per buffer when the thread's
vector is whole and its addresses aligned (checked by each thread: unaligned views and the
tail use element accesses); other operands (broadcasts, gathers) are loaded element by
element. Anywhere else (the interpreter, the CPU) the loop runs element by element. A static
extent that is not a multiple of the lanes, or other element types, keep one element per
thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.structural import structural_equal
from relaxvm.ir.tir import (
    Buffer,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    Stmt,
)
from relaxvm.ir.tir.stages import Stage, loads_of

from .common import BLOCK_THREADS, element_per_thread, flat_grid, let_indices, product

__all__ = ["VECTOR_BYTES", "contiguous_buffers", "injective_kernel", "vector_lanes"]

#: Bytes one thread moves per buffer in a vector access (PTX's widest load, ``.v4.b32``).
VECTOR_BYTES = 16


def _compact(buffer: Buffer) -> bool:
    return (
        not buffer.strides
        and isinstance(buffer.elem_offset, IntImm)
        and (buffer.elem_offset.value == 0)
    )


def contiguous_buffers(store: BufferStore) -> list[Buffer]:
    """The buffers ``store`` accesses at its own element: the stored one and every loaded
    buffer of the same shape read at exactly the store's (variable) indices, all compact."""
    indices = store.indices
    if not indices or not all(isinstance(index, Var) for index in indices):
        return []
    if len({id(index) for index in indices}) != len(indices) or not _compact(store.buffer):
        return []
    shape = store.buffer.shape
    found = [store.buffer]
    for load in loads_of(store.value):
        buffer = load.buffer
        if (
            buffer not in found
            and _compact(buffer)
            and len(load.indices) == len(indices)
            and all(a is b for a, b in zip(load.indices, indices, strict=True))
            and len(buffer.shape) == len(shape)
            and all(structural_equal(a, b) for a, b in zip(buffer.shape, shape, strict=True))
        ):
            found.append(buffer)
    return found


def vector_lanes(store: BufferStore) -> int:
    """Elements per thread for ``store``'s contiguous accesses: 16 bytes of the widest of
    their element types when all are 16- or 32-bit numbers (not bool), else 1."""
    buffers = contiguous_buffers(store)
    if not buffers:
        return 1
    bits = [b.dtype.bits for b in buffers]
    if any(b.dtype.lanes != 1 or str(b.dtype) == "bool" for b in buffers):
        return 1
    if not all(n in (16, 32) for n in bits):
        return 1
    return VECTOR_BYTES // (max(bits) // 8)


def _vector_kernel(
    loop_vars: Sequence[Var],
    extents: Sequence[PrimExpr],
    store: BufferStore,
    lanes: int,
    threads: int,
) -> Stmt | None:
    total = product(extents)
    static = isinstance(total, IntImm)
    if static and total.value % lanes != 0:  # type: ignore[attr-defined]
        return None  # a static odd extent: one element per thread (no tail code)
    shape = store.buffer.shape
    indices = store.indices
    same = len(indices) == len(loop_vars) and all(
        a is b for a, b in zip(indices, loop_vars, strict=False)
    )
    if not same:
        return None  # the store is not at the loops' element, in their order
    if len(shape) != len(extents):
        return None
    if not all(structural_equal(a, b) for a, b in zip(shape, extents, strict=True)):
        return None
    vectors = (
        IntImm("int64", total.value // lanes)  # type: ignore[attr-defined]
        if static
        else (total + (lanes - 1)) // lanes
    )

    def thread(q: PrimExpr) -> Stmt:
        flat = Var("flat", "int64")
        body = let_indices(flat, loop_vars, extents, store)
        if not static:  # the last vector may be partial: its lanes past the end do nothing
            body = IfThenElse(flat < total, body)
        vector = For(flat, q * lanes, lanes, ForKind.VECTORIZED, body)
        if isinstance(vectors, IntImm) and vectors.value % threads == 0:
            return vector
        return IfThenElse(q < vectors, vector)

    return flat_grid(vectors, thread, threads)


def injective_kernel(stage: Stage, threads: int = BLOCK_THREADS) -> Stmt:
    """The stage over blocks of ``threads`` threads: :func:`vector_lanes` consecutive elements
    per thread where its accesses allow (see the module docstring), else one."""
    assert stage.store is not None
    loop_vars = [loop.loop_var for loop in stage.loops]
    extents = [loop.extent for loop in stage.loops]
    zero_min = all(isinstance(lp.min, IntImm) and lp.min.value == 0 for lp in stage.loops)
    if zero_min and isinstance(stage.stmt, For) and _is_nest_of(stage.stmt, stage.store):
        lanes = vector_lanes(stage.store)
        if lanes > 1:
            kernel = _vector_kernel(loop_vars, extents, stage.store, lanes, threads)
            if kernel is not None:
                return kernel
    return element_per_thread(loop_vars, extents, stage.store, threads)


def _is_nest_of(stmt: Stmt, store: BufferStore) -> bool:
    """Whether ``stmt`` is a perfect loop nest around ``store`` alone."""
    node: Stmt = stmt
    while isinstance(node, For):
        node = node.body
    return node is store
