"""A ``T.block`` written without ``T.reads``/``T.writes`` gets them from its code, as TVM's
script parser completes it (ScriptComplete): the same regions te.create_prim_func writes, loops
inside the block relaxed, a reduction's output left out of its reads."""

from __future__ import annotations

import numpy as np

from relaxvm.ir.tir import (
    Block,
    PrimFunc,
    assert_structural_equal,
    post_order_visit,
    structural_equal,
    te,
)
from relaxvm.script import from_source


def _blocks(func: PrimFunc) -> dict[str, Block]:
    found: dict[str, Block] = {}

    def note(node: object) -> None:
        if isinstance(node, Block):
            found[node.name_hint] = node

    post_order_visit(func.body, note)
    return found


def _regions(block: Block, role: str) -> list[str]:
    return [
        f"{r.buffer.name}[{', '.join(f'{x.min}:+{x.extent}' for x in r.region)}]"
        for r in getattr(block, role)
    ]


def _roundtrip(func: PrimFunc) -> None:
    assert_structural_equal(from_source(str(func)), func)


MATMUL = """
@T.prim_func(private=True)
def main(A: T.Buffer((T.int64(8), T.int64(6)), "float32"),
         B: T.Buffer((T.int64(6), T.int64(5)), "float32"),
         C: T.Buffer((T.int64(8), T.int64(5)), "float32")):
    T.func_attr({"tir.noalias": True})
    for i, j, k in T.grid(T.int64(8), T.int64(5), T.int64(6)):
        with T.block("C"):
            v_i, v_j, v_k = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[v_i, v_j] = T.float32(0.0)
            C[v_i, v_j] = C[v_i, v_j] + A[v_i, v_k] * B[v_k, v_j]
"""


def test_reduction_block_reads_its_inputs_and_writes_its_output() -> None:
    func = from_source(MATMUL)
    block = _blocks(func)["C"]
    # With an init, the output (read by the update) is not among the reads.
    assert _regions(block, "reads") == ["A[v_i:+1, v_k:+1]", "B[v_k:+1, v_j:+1]"]
    assert _regions(block, "writes") == ["C[v_i:+1, v_j:+1]"]
    printed = str(func)
    assert "T.reads(A[v_i, v_k], B[v_k, v_j])" in printed
    assert "T.writes(C[v_i, v_j])" in printed
    _roundtrip(func)
    a = np.arange(48, dtype="float32").reshape(8, 6)
    b = np.linspace(-1, 1, 30, dtype="float32").reshape(6, 5)
    c = np.zeros((8, 5), "float32")
    func(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_script_block_equals_the_te_kernel() -> None:
    a = te.placeholder((8, 6), name="A")
    b = te.placeholder((6, 5), name="B")
    k = te.reduce_axis((0, 6), name="k")
    c = te.compute((8, 5), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    made = te.create_prim_func([a, b, c])
    parsed = from_source(MATMUL.replace("(private=True)", ""))
    assert_structural_equal(parsed, made)
    # Left with no regions, the block would differ from te's (so the check has teeth).
    bare = str(parsed).replace("T.reads(A[v_i, v_k], B[v_k, v_j])", "T.reads()")
    assert not structural_equal(from_source(bare), made)


def test_without_init_the_updated_buffer_is_read_too() -> None:
    func = from_source(
        """
@T.prim_func
def acc(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = B[vi] + A[vi]
"""
    )
    block = _blocks(func)["B"]
    assert _regions(block, "reads") == ["B[vi:+1]", "A[vi:+1]"]
    assert _regions(block, "writes") == ["B[vi:+1]"]
    _roundtrip(func)


def test_loops_inside_a_block_are_relaxed_over_their_domains() -> None:
    func = from_source(
        """
@T.prim_func
def tiles(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            for k, j in T.grid(4, 8):
                B[vi * 4 + k] = B[vi * 4 + k] + A[vi * 4 + 3 - k, j]
"""
    )
    block = _blocks(func)["B"]
    assert _regions(block, "reads") == ["B[vi * 4:+4]", "A[vi * 4:+4, 0:+8]"]
    assert _regions(block, "writes") == ["B[vi * 4:+4]"]
    _roundtrip(func)


def test_nested_blocks_contribute_their_regions_and_scratch_is_left_out() -> None:
    func = from_source(
        """
@T.prim_func
def rows(A: T.Buffer((4, 6), "float32"), B: T.Buffer((4, 6), "float32")):
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            X = T.alloc_buffer((6,), "float32")
            for j in range(6):
                with T.block("load"):
                    vj = T.axis.spatial(6, j)
                    X[vj] = A[vi, vj] * T.float32(2)
            for j in range(6):
                with T.block("store"):
                    vj = T.axis.spatial(6, j)
                    B[vi, vj] = X[vj]
"""
    )
    blocks = _blocks(func)
    assert _regions(blocks["row"], "reads") == ["A[vi:+1, 0:+6]"]
    assert _regions(blocks["row"], "writes") == ["B[vi:+1, 0:+6]"]
    assert _regions(blocks["load"], "writes") == ["X[vj:+1]"]
    assert _regions(blocks["store"], "reads") == ["X[vj:+1]"]
    _roundtrip(func)
    a = np.arange(24, dtype="float32").reshape(4, 6)
    b = np.zeros((4, 6), "float32")
    func(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_explicit_regions_are_kept_and_the_root_block_stays_empty() -> None:
    func = from_source(
        """
@T.prim_func
def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    with T.block("root"):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                T.reads()
                B[vi] = A[vi]
"""
    )
    blocks = _blocks(func)
    # T.reads() with no regions means none (TVM detects only what the script leaves out).
    assert _regions(blocks["B"], "reads") == []
    assert _regions(blocks["B"], "writes") == ["B[vi:+1]"]
    assert _regions(blocks["root"], "reads") == [] == _regions(blocks["root"], "writes")
    _roundtrip(func)


def test_symbolic_inner_loop_gives_a_symbolic_extent() -> None:
    func = from_source(
        """
@T.prim_func
def rowsum(a: T.handle, B: T.Buffer((4,), "float32")):
    n = T.int64()
    A = T.match_buffer(a, (4, n), "float32")
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = T.float32(0)
            for k in range(n):
                B[vi] = B[vi] + A[vi, k]
"""
    )
    block = _blocks(func)["B"]
    assert _regions(block, "reads") == ["B[vi:+1]", "A[vi:+1, 0:+n]"]
    _roundtrip(func)
