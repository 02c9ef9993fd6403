"""Contractions (matmul, batch matmul, dense, convolution as an implicit GEMM) tiled in shared
memory with register blocking.

A sum reduction whose source is a product ``a * b`` (possibly under a cast) is read as a
GEMM: the spatial variables only ``a`` uses are the *M* side, those only ``b`` uses the *N*
side, the rest (used by both, or by neither) the batch; the reduction variables, flattened,
are *K*. A matmul has M = (i,), N = (j,), K = (k,); a convolution NCHW has M = (co,),
N = (n, oh, ow) and K = (ci, kh, kw), with the padding and strides inside ``b``'s index
expressions (an implicit GEMM: the im2col matrix is never built). The side holding the
output's last axis is N, so consecutive threads store consecutive elements.

Each block computes a ``BM x BN`` tile (16 to 128 a side, by the sizes; a symbolic side
facing a static one of at most 64 gets 64, for more blocks) of one batch element
with 256 threads (16 x 16), each thread a ``BM/16 x BN/16`` micro-tile (up to 8 x 8) kept in
registers (the unrolled loops index a local array with constants, which LLVM promotes to
registers), its rows and columns in groups of 4 adjacent ones so that its shared-memory
reads are 16-byte vector loads. For every ``BK = 16`` slice of K, the block stages ``a``
(BK x BM, padded against bank conflicts) and ``b`` (BK x BN) in shared memory, zero-filled
outside the matrix, then each thread multiplies the slice's rows into its micro-tile while
its share of the next slice is already loading into registers. Elementwise consumers (bias,
activation) are folded into the final store
(:func:`relaxvm.ir.tir.stage_epilogue.find_epilogue`); out-of-range elements of the last
tiles are guarded.

Fewer than :data:`FILL_BLOCKS` blocks would leave most multiprocessors idle: a static
product that small takes the smaller :data:`SMALL_TILE` tiling outright, and a product with
a symbolic side holds both tilings in one kernel and picks one at each launch (the grid
size follows the choice).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from relaxvm.ir import IntImm, Mul, PrimExpr, Var
from relaxvm.ir.expr_functor import free_vars, substitute
from relaxvm.ir.op import cast, const, max_expr, min_expr
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    Stmt,
    seq,
)
from relaxvm.ir.tir.intrin_gpu import storage_sync
from relaxvm.ir.tir.stage_epilogue import Epilogue, find_epilogue
from relaxvm.ir.tir.stages import Stage

from .common import bound_loop, ceildiv, let_indices, product

__all__ = ["GemmPlan", "gemm_kernel", "plan_gemm"]

#: Threads per block (a 16 x 16 grid) and the depth of a K slice.
SIDE = 16
BK = 16
#: Fewer blocks than this leave multiprocessors idle (an H100/H200 has 132, an A100 108):
#: the small tiling below then spreads the work wider.
FILL_BLOCKS = 128
#: (bm, bn, bk) of the small tiling: a 2 x 4 micro-tile per thread, so a skinny product (a
#: batch of 64 rows) runs as many short blocks instead of a few long ones. Measured on an
#: H200 (the 512-wide MLP of benchmarks/bench_cuda.py, three such products per call): batch
#: 64 in 83 us against 235 us with the large tiling alone, batch 1024 in 136 us against 240;
#: one output per thread (16 x 16, K slices of 64) was as fast at 64 but 354 us at 1024.
SMALL_TILE = (32, 64, 16)


@dataclass
class GemmPlan:
    """A contraction read as a batched GEMM (see the module docstring)."""

    stage: Stage
    epilogue: Epilogue
    a: PrimExpr  # the operand over (batch, M, K)
    b: PrimExpr  # the operand over (batch, N, K)
    template: PrimExpr  # the source with ``a``/``b`` replaced by ``va``/``vb``
    va: Var
    vb: Var
    batch: list[For]
    m: list[For]
    n: list[For]
    bm: int
    bn: int
    bk: int = BK  # the depth of a K slice
    #: (bm, bn, bk) for launches whose extents leave ``bm x bn`` tiles too few blocks.
    small: tuple[int, int, int] | None = None


def _split_product(source: PrimExpr) -> tuple[PrimExpr, PrimExpr, PrimExpr, Var, Var] | None:
    from relaxvm.ir import Cast

    outer = None
    node = source
    if isinstance(node, Cast):
        outer, node = node, node.value
    if not isinstance(node, Mul):
        return None
    a, b = node.a, node.b
    va, vb = Var("a_value", a.dtype), Var("b_value", b.dtype)
    template: PrimExpr = node.with_operands(va, vb)
    if outer is not None:
        template = outer.with_operands(template)
    return a, b, template, va, vb


def _tile(extent: PrimExpr) -> int:
    """The tile edge for a side of ``extent`` elements: the smallest of 16, 32, 64 that
    holds it, 64 up to 255, else 128 (also when symbolic: an 8-wide micro-tile per thread,
    64 products per 16 shared-memory reads, where a large matrix needs them; 64 when the
    other side is narrow, see :func:`plan_gemm`)."""
    if isinstance(extent, IntImm):
        for size in (16, 32, 64):
            if extent.value <= size:
                return size
        if extent.value < 256:
            return 64
    return 128


def plan_gemm(stages: list[Stage], scratch: list[Buffer]) -> GemmPlan | None:
    """A :class:`GemmPlan` when the function is one contraction and its elementwise
    consumers, else None."""
    if not stages or stages[0].kind != "reduction" or stages[0].combiner != "sum":
        return None
    stage = stages[0]
    if stage.condition is not None or stage.source is None or stage.init is None:
        return None
    split = _split_product(stage.source)
    if split is None:
        return None
    a, b, template, va, vb = split
    epilogue = find_epilogue(stages, 0, set(scratch))
    if len(epilogue.inlined) != len(stages) - 1 or set(scratch) - set(epilogue.dropped):
        return None
    spatial = list(stage.loops)
    if not spatial:
        return None
    reduce_vars = {loop.loop_var for loop in stage.reduce_loops}
    a_vars, b_vars = set(free_vars(a)), set(free_vars(b))
    if not (a_vars & reduce_vars) or not (b_vars & reduce_vars):
        return None  # not a contraction over the reduction
    m_side = [lp for lp in spatial if lp.loop_var in a_vars and lp.loop_var not in b_vars]
    n_side = [lp for lp in spatial if lp.loop_var in b_vars and lp.loop_var not in a_vars]
    batch = [lp for lp in spatial if lp not in m_side and lp not in n_side]
    last = spatial[-1]
    if last in m_side:  # the output's last axis on N: coalesced stores
        a, b, va, vb, m_side, n_side = b, a, vb, va, n_side, m_side
    big_m = product([lp.extent for lp in m_side])
    big_n = product([lp.extent for lp in n_side])
    bm, bn = _tile(big_m), _tile(big_n)
    # A symbolic side facing a narrow static one (one tile of at most 64): 64-wide tiles
    # instead of 128, so a skinny product (many rows, few columns) launches twice the blocks
    # to fill the multiprocessors, with a 4-wide micro-tile that still reuses each read.
    if not isinstance(big_m, IntImm) and isinstance(big_n, IntImm) and bn <= 64:
        bm = 64
    if not isinstance(big_n, IntImm) and isinstance(big_m, IntImm) and bm <= 64:
        bn = 64
    plan = GemmPlan(stage, epilogue, a, b, template, va, vb, batch, m_side, n_side, bm, bn)
    sides = (big_m, big_n, *(lp.extent for lp in batch))
    small = (min(bm, SMALL_TILE[0]), min(bn, SMALL_TILE[1]), SMALL_TILE[2])
    if small == (bm, bn, BK):
        return plan
    if all(isinstance(e, IntImm) for e in sides):
        # Static: the small tiling outright when the large one leaves the GPU mostly idle.
        blocks = product([*sides[2:], ceildiv(big_m, bm), ceildiv(big_n, bn)])
        if isinstance(blocks, IntImm) and blocks.value < FILL_BLOCKS:
            plan.bm, plan.bn, plan.bk = small
        return plan
    plan.small = small
    return plan


def _unrolled(name: str, extent: int, make: Callable[[Var], Stmt]) -> For:
    var = Var(name, "int64")
    return For(var, 0, extent, ForKind.UNROLLED, make(var))


def gemm_kernel(plan: GemmPlan) -> Stmt:
    """The tiled kernel of ``plan`` (see the module docstring).

    With ``plan.small`` set (a symbolic side), the kernel holds two tilings and picks one
    per launch from the extents: ``plan.small``'s when ``plan``'s own would launch fewer
    than :data:`FILL_BLOCKS` blocks (a small batch leaves most multiprocessors idle, and
    the few busy ones run long K loops), else ``plan``'s. The choice is uniform over the
    block, so the barriers inside either branch are reached by every thread."""
    threads = SIDE * SIDE
    big_blocks, big_thread = _tile_program(plan, plan.bm, plan.bn, plan.bk)
    if plan.small is None:
        nblocks, thread = big_blocks, big_thread
    else:
        small_blocks, small_thread = _tile_program(plan, *plan.small)
        few = big_blocks < FILL_BLOCKS
        # select(few, small, big) in the arithmetic a launch extent may use (an integer
        # indicator from min/max): the grid is computed from it at every launch.
        use_small = min_expr(max_expr(FILL_BLOCKS - big_blocks, 0), 1)
        nblocks = use_small * small_blocks + (1 - use_small) * big_blocks

        def thread(block: Var, tid: Var) -> Stmt:
            return IfThenElse(few, small_thread(block, tid), big_thread(block, tid))

    return bound_loop(
        "blockIdx_x",
        cast(nblocks, "int64"),
        "blockIdx.x",
        lambda block: bound_loop("threadIdx_x", threads, "threadIdx.x", lambda t: thread(block, t)),
    )


def _tile_program(
    plan: GemmPlan, bm: int, bn: int, bk: int
) -> tuple[PrimExpr, Callable[[Var, Var], Stmt]]:
    """The block count and the per-thread program of ``plan`` tiled ``bm x bn`` with K
    slices of ``bk``."""
    stage, ep = plan.stage, plan.epilogue
    assert stage.init is not None
    threads = SIDE * SIDE
    rm, rn = bm // SIDE, bn // SIDE
    m_vars = [lp.loop_var for lp in plan.m]
    n_vars = [lp.loop_var for lp in plan.n]
    b_vars = [lp.loop_var for lp in plan.batch]
    k_vars = [lp.loop_var for lp in stage.reduce_loops]
    m_ext = [lp.extent for lp in plan.m]
    n_ext = [lp.extent for lp in plan.n]
    b_ext = [lp.extent for lp in plan.batch]
    k_ext = [lp.extent for lp in stage.reduce_loops]
    big_m, big_n, big_k = product(m_ext), product(n_ext), product(k_ext)
    tiles_m, tiles_n = ceildiv(big_m, bm), ceildiv(big_n, bn)
    nblocks = product([*b_ext, tiles_m, tiles_n])
    acc_dtype = stage.init.buffer.dtype
    # A thread's rows (columns) come in groups of up to 4 adjacent ones, so its reads of a
    # slice row are 16-byte aligned runs that LLVM merges into vector loads (ld.shared.v4:
    # a quarter of the shared-memory instructions per multiply-add). ``a``'s rows are padded
    # against bank conflicts of its transposed stores: by 4 (keeping that alignment) where
    # the groups are 4 wide, else by 1.
    gm, gn = min(4, rm), min(4, rn)
    s_a = Buffer("a_tile", (bk, bm + (4 if gm == 4 else 1)), plan.a.dtype, scope="shared")
    s_b = Buffer("b_tile", (bk, bn), plan.b.dtype, scope="shared")
    acc = Buffer("acc", (rm * rn,), acc_dtype, scope="local")
    a_reg = Buffer("a_reg", (rm,), plan.a.dtype, scope="local")
    b_reg = Buffer("b_reg", (rn,), plan.b.dtype, scope="local")
    # The next K slice, loaded from global memory while the current one is multiplied.
    next_a = Buffer("a_next", (bm * bk // threads,), plan.a.dtype, scope="local")
    next_b = Buffer("b_next", (bn * bk // threads,), plan.b.dtype, scope="local")

    def thread(block: Var, tid: Var) -> Stmt:
        tile_n = block % tiles_n
        rest = block // tiles_n
        tile_m = rest % tiles_m
        flat_batch = rest // tiles_m
        ty, tx = tid // SIDE, tid % SIDE
        kt = Var("k_tile", "int64")

        def place(e: PrimExpr, edge: int, m_major: bool) -> tuple[PrimExpr, PrimExpr]:
            # a: K fastest across threads (A[i, k] rows are contiguous in k); b: N fastest.
            return (e % bk, e // bk) if m_major else (e // edge, e % edge)

        def fetch(staging: Buffer, value: PrimExpr, edge: int, vars_: list[Var],
                  extents: list[PrimExpr], total: PrimExpr, tile: PrimExpr, m_major: bool,
                  k_tile: PrimExpr) -> Stmt:  # fmt: skip
            """Load this thread's share of K slice ``k_tile`` into registers (zero outside
            the matrix: past the last slice every element is outside, so nothing is read)."""

            def body(step: Var) -> Stmt:
                kk, mm = place(step * threads + tid, edge, m_major)
                row, k = tile * edge + mm, k_tile * bk + kk
                inside = (row < total) & (k < big_k)
                stmt = let_indices(row, vars_, extents, let_indices(k, k_vars, k_ext,
                                   BufferStore(staging, value, [step])))  # fmt: skip
                return IfThenElse(
                    inside, stmt, BufferStore(staging, const(0, staging.dtype), [step])
                )

            return _unrolled("ld", edge * bk // threads, make=body)

        def commit(staging: Buffer, tile_buf: Buffer, edge: int, m_major: bool) -> Stmt:
            def body(step: Var) -> Stmt:
                kk, mm = place(step * threads + tid, edge, m_major)
                return BufferStore(tile_buf, staging[step], [kk, mm])

            return _unrolled("st", edge * bk // threads, make=body)

        fetch_a = functools.partial(fetch, next_a, plan.a, bm, m_vars, m_ext, big_m, tile_m, True)
        fetch_b = functools.partial(fetch, next_b, plan.b, bn, n_vars, n_ext, big_n, tile_n, False)

        def step(kk: Var) -> Stmt:
            fill_a = _unrolled(
                "r", rm, make=lambda r: BufferStore(a_reg, s_a[kk, _spread(ty, r, gm)], [r])
            )
            fill_b = _unrolled(
                "c", rn, make=lambda c: BufferStore(b_reg, s_b[kk, _spread(tx, c, gn)], [c])
            )

            def fma(r: Var, c: Var) -> Stmt:
                term = substitute(plan.template, {plan.va: a_reg[r], plan.vb: b_reg[c]})
                return BufferStore(acc, acc[r * rn + c] + term, [r * rn + c])

            update = _unrolled("r", rm, make=lambda r: _unrolled("c", rn, make=lambda c: fma(r, c)))
            return seq(fill_a, fill_b, update)

        k_loop: Stmt = For(
            kt,
            0,
            ceildiv(big_k, bk),
            ForKind.SERIAL,
            seq(
                commit(next_a, s_a, bm, True),
                commit(next_b, s_b, bn, False),
                Evaluate(storage_sync()),
                # The next slice's global loads are issued before this slice's FMAs and
                # consumed by the next iteration's commit: their latency hides behind them.
                fetch_a(kt + 1),
                fetch_b(kt + 1),
                _unrolled_k(bk, step),
                Evaluate(storage_sync()),
            ),
        )
        k_loop = seq(fetch_a(const(0, "int64")), fetch_b(const(0, "int64")), k_loop)
        zero = _unrolled("z", rm * rn, make=lambda z: BufferStore(acc, const(0, acc_dtype), [z]))

        def store(r: Var, c: Var) -> Stmt:
            row = tile_m * bm + _spread(ty, r, gm)
            col = tile_n * bn + _spread(tx, c, gn)
            result = stage.init.value + acc[r * rn + c]  # type: ignore[union-attr]
            value = substitute(ep.value, {ep.acc: result})
            out = BufferStore(ep.buffer, value, list(ep.indices))
            bound = let_indices(row, m_vars, m_ext, let_indices(col, n_vars, n_ext, out))
            return IfThenElse((row < big_m) & (col < big_n), bound)

        stores = _unrolled("r", rm, make=lambda r: _unrolled("c", rn, make=lambda c: store(r, c)))
        body = seq(zero, k_loop, stores)
        body = Allocate(acc, Allocate(a_reg, Allocate(b_reg, body)))
        body = Allocate(next_a, Allocate(next_b, body))
        body = let_indices(flat_batch, b_vars, b_ext, body) if b_vars else body
        return Allocate(s_a, Allocate(s_b, body))

    return nblocks, thread


def _spread(thread: PrimExpr, r: PrimExpr, group: int) -> PrimExpr:
    """The offset in the tile of a thread's ``r``-th row (or column): groups of ``group``
    adjacent ones, the groups of the ``SIDE`` threads side by side (``group`` 1: strided)."""
    return (r // group) * (SIDE * group) + thread * group + r % group


def _unrolled_k(bk: int, step: Callable[[Var], Stmt]) -> For:
    # Unrolled: every shared-memory address of the slice is a constant offset from the
    # thread's base, and the loads of one step can be issued ahead of the previous FMAs.
    kk = Var("kk", "int64")
    return For(kk, 0, bk, ForKind.UNROLLED, step(kk))
