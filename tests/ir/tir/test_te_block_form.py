"""te.create_prim_func's block form (TVM's): names, iteration variables, regions, and that
lowering the blocks gives back exactly the loop nests of te.create_loop_func."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMValueError
from relaxvm.ir import Var, tir
from relaxvm.ir.tir import Block, BlockRealize, For, IterVarType, te
from relaxvm.ir.tir.lower_blocks import has_blocks
from relaxvm.script import from_source

RNG = np.random.default_rng(7)


def _blocks(func: tir.PrimFunc) -> list[Block]:
    found: list[Block] = []
    tir.post_order_visit(func.body, lambda n: found.append(n) if isinstance(n, Block) else None)
    return found


def _region_text(block: Block, role: str) -> list[str]:
    return [
        f"{r.buffer.name}[{', '.join(f'{x.min}:+{x.extent}' for x in r.region)}]"
        for r in getattr(block, role)
    ]


def test_injective_stage_is_one_block_bound_to_its_loops() -> None:
    n = Var("n", "int64")
    a = te.placeholder((n, 4), name="A")
    b = te.compute((n, 4), lambda i, j: a[i, j] * 2.0, name="B")
    func = te.create_prim_func([a, b])
    assert func.attrs["tir.noalias"] is True and func.attrs["global_symbol"] == "main"
    loops = func.body
    assert isinstance(loops, For) and loops.loop_var.name == "i"
    realize = loops.body.body
    assert isinstance(realize, BlockRealize)
    block = realize.block
    assert block.name_hint == "B" and block.init is None
    assert [iv.var.name for iv in block.iter_vars] == ["v_i", "v_j"]
    assert {iv.iter_type for iv in block.iter_vars} == {IterVarType.DATA_PAR}
    assert list(realize.iter_values) == [loops.loop_var, loops.body.loop_var]
    assert _region_text(block, "reads") == ["A[v_i:+1, v_j:+1]"]
    assert _region_text(block, "writes") == ["B[v_i:+1, v_j:+1]"]
    x, out = RNG.standard_normal((3, 4)).astype("float32"), np.zeros((3, 4), "float32")
    tir.run_prim_func(func, x, out)
    np.testing.assert_allclose(out, x * 2)


def test_reduction_has_reduce_iter_vars_init_and_reads_without_the_output() -> None:
    a = te.placeholder((3, 8), name="A")
    k = te.reduce_axis((2, 7), name="k")
    out = te.compute((3,), lambda i: te.sum(a[i, k], axis=k, where=k > 3), name="S")
    func = te.create_prim_func([a, out])
    (block,) = _blocks(func)
    kinds = [iv.iter_type for iv in block.iter_vars]
    assert kinds == [IterVarType.DATA_PAR, IterVarType.COMM_REDUCE]
    assert int(block.iter_vars[1].dom.min) == 2 and int(block.iter_vars[1].dom.extent) == 5
    assert block.init is not None
    assert _region_text(block, "reads") == ["A[v_i:+1, v_k:+1]"]
    assert _region_text(block, "writes") == ["S[v_i:+1]"]
    x, got = RNG.standard_normal((3, 8)).astype("float32"), np.full(3, np.nan, "float32")
    tir.run_prim_func(func, x, got)
    np.testing.assert_allclose(got, x[:, 4:7].sum(axis=1), rtol=1e-5)


def test_repeated_stage_names_get_suffixes_and_intermediates_are_scratch() -> None:
    a = te.placeholder((6,), name="A")
    t = te.compute((6,), lambda i: a[i] + 1.0, name="T")
    u = te.compute((6,), lambda i: t[i] * 3.0, name="T")
    func = te.create_prim_func([a, u])
    assert [b.name_hint for b in _blocks(func)] == ["T", "T_1"]
    assert isinstance(func.body, tir.Allocate) and func.body.buffer is t.buffer
    assert "T.alloc_buffer" in func.script()
    x, got = RNG.standard_normal(6).astype("float32"), np.zeros(6, "float32")
    tir.run_prim_func(func, x, got)
    np.testing.assert_allclose(got, (x + 1) * 3, rtol=1e-6)


def test_reads_at_constant_offsets_cover_a_span_others_the_dimension() -> None:
    a = te.placeholder((8, 5), name="A")
    near = te.compute((7, 5), lambda i, j: a[i, j] + a[i + 1, j], name="N")
    flip = te.compute((8, 5), lambda i, j: a[i, j] + a[7 - i, j], name="F")
    (near_block,) = _blocks(te.create_prim_func([a, near]))
    (flip_block,) = _blocks(te.create_prim_func([a, flip]))
    assert _region_text(near_block, "reads") == ["A[v_i:+2, v_j:+1]"]
    assert _region_text(flip_block, "reads") == ["A[0:+8, v_j:+1]"]


def _kernels() -> list[tuple[str, list[te.Tensor]]]:
    n = Var("n", "int64")
    a = te.placeholder((n, 8), name="A")
    b = te.placeholder((8, 6), name="B")
    c = te.placeholder((n, 8), name="C")
    g, beta = te.placeholder((8,), name="g"), te.placeholder((8,), name="beta")
    k = te.reduce_axis((1, 7), "k")
    masked = te.compute((n,), lambda i: te.max(a[i, k], axis=k, where=k < 5), name="M")
    return [
        ("add", [a, c, topi.add(a, c)]),
        ("matmul", [a, b, topi.nn.matmul(a, b)]),
        ("softmax", [a, topi.nn.softmax(a)]),
        ("prod", [a, topi.prod(a, axis=1)]),
        ("masked_max", [a, masked]),
        ("layer_norm", [a, g, beta, topi.nn.layer_norm(a, g, beta, axis=[1])]),
    ]


@pytest.mark.parametrize(("name", "args"), _kernels(), ids=[k for k, _ in _kernels()])
def test_lowered_blocks_are_the_loop_form(name: str, args: list[te.Tensor]) -> None:
    blocks = te.create_prim_func(args, name=name)
    loops = te.create_loop_func(args, name=name)
    assert has_blocks(blocks) and not has_blocks(loops)
    # Not just equivalent: the same loop nest (the schedules pattern-match it).
    tir.assert_structural_equal(tir.lower_blocks(blocks), loops)
    shapes = [
        [3 if isinstance(d, Var) else int(d) for d in t.shape]
        for t in args
        if isinstance(t, te.Tensor)
    ]
    inputs = [RNG.standard_normal(s).astype("float32") for s in shapes[:-1]]
    out_a = np.zeros(shapes[-1], "float32")
    out_b = np.full(shapes[-1], np.nan, "float32")
    tir.run_prim_func(blocks, *inputs, out_a)
    tir.run_prim_func(loops, *inputs, out_b)
    np.testing.assert_array_equal(out_a, out_b)
    assert not np.isnan(out_a).any()


def test_create_loop_func_checks_its_arguments_like_create_prim_func() -> None:
    a = te.placeholder((4,), name="A")
    b = te.compute((4,), lambda i: a[i] + 1.0, name="B")
    with pytest.raises(VMValueError, match="create_loop_func: placeholder 'A' is used but not"):
        te.create_loop_func([b])


@pytest.mark.parametrize(("name", "args"), _kernels(), ids=[k for k, _ in _kernels()])
def test_block_form_prints_and_parses_back(name: str, args: list[te.Tensor]) -> None:
    func = te.create_prim_func(args, name=name)
    text = func.script()
    assert "with T.block(" in text and "T.reads(" in text and "T.writes(" in text
    tir.assert_structural_equal(from_source(text), func)
