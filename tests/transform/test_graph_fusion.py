"""AnnotateTIROpPattern, FuseOps and FuseTIR: groups, fused kernel structure, numerics."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _graph_helpers import F32, legalizations, run_relax, tensor  # noqa: F401

from relaxvm.ir import relax as rx
from relaxvm.ir import tir
from relaxvm.ir.relax import op
from relaxvm.ir.tir import te
from relaxvm.transform import (
    AnnotateTIROpPattern,
    FuseOps,
    FuseTIR,
    LegalizeOps,
    PassContext,
    Sequential,
)
from relaxvm.transform.annotate_op_pattern import analyze_op_pattern
from relaxvm.transform.fuse_ops import can_fuse


def _kernel(fcompute, *shapes):
    args = [te.placeholder(s, F32, name=f"A{i}") for i, s in enumerate(shapes)]
    out = fcompute(*args)
    return tir.te.create_prim_func([*args, out])


@pytest.mark.parametrize(
    ("fcompute", "shapes", "kind"),
    [
        (lambda a: te.compute(a.shape, lambda i, j: a[i, j] * 2.0), [(3, 4)], 0),
        (lambda a, b: te.compute((3, 4), lambda i, j: a[i, j] + b[j]), [(3, 4), (4,)], 1),
        (lambda a: te.compute((4, 3), lambda i, j: a[j, i]), [(3, 4)], 2),
    ],
)
def test_annotate_classifies_loop_nests(fcompute, shapes, kind):
    assert analyze_op_pattern(_kernel(fcompute, *shapes)) == kind


def _sum_rows(a):
    k = te.reduce_axis((0, 4), "k")
    return te.compute((3,), lambda i: te.sum(a[i, k], axis=k))


def _matmul(a, b):
    k = te.reduce_axis((0, 4), "k")
    return te.compute((3, 5), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k))


def test_annotate_reduction_kinds():
    assert analyze_op_pattern(_kernel(_sum_rows, (3, 4))) == 3
    assert analyze_op_pattern(_kernel(_matmul, (3, 4), (4, 5))) == 4


def test_annotate_scan_is_opaque():
    a = tir.Buffer("a", (4,), F32)
    out = tir.Buffer("out", (4,), F32)
    i = tir.Var("i", "int64")
    body = tir.For(i, 1, 3, tir.ForKind.SERIAL, tir.BufferStore(out, out[i - 1] + a[i], [i]))
    assert analyze_op_pattern(tir.PrimFunc([a, out], body)) == 8


def test_annotate_pass_keeps_existing_tags():
    func = _kernel(lambda a: te.compute(a.shape, lambda i, j: a[i, j]), (2, 2))
    mod = rx.IRModule({"k": func, "tagged": func.with_attr("op_pattern", 8)})
    out = AnnotateTIROpPattern()(mod)
    assert out["k"].attrs["op_pattern"] == 0
    assert out["tagged"].attrs["op_pattern"] == 8


def test_can_fuse_rules():
    assert can_fuse(0, 2) and can_fuse(1, 3) and can_fuse(4, 0) and can_fuse(4, 1)
    assert not can_fuse(4, 2) and not can_fuse(3, 0) and not can_fuse(2, 3)
    assert not can_fuse(8, 0) and not can_fuse(0, 8)


def _mlp_mod(extra_exp: bool = False) -> rx.IRModule:
    x, w, b = rx.Var("x", tensor([4, 8])), rx.Var("w", tensor([8, 3])), rx.Var("b", tensor([3]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            y = bb.emit(op.matmul(x, w))
            z = bb.emit(op.add(y, b))
            r = bb.emit(op.nn.relu(z))
            if extra_exp:
                r = bb.emit(op.sum(op.exp(r), axis=[1]))
            out = bb.emit_output(r)
        bb.emit_func_output(out)
    return LegalizeOps()(bb.get())


def _inputs():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s).astype(F32) for s in ((4, 8), (8, 3), (3,))]


@pytest.mark.usefixtures("legalizations")
def test_fuse_ops_groups_matmul_bias_relu():
    mod = _mlp_mod()
    fused = FuseOps()(AnnotateTIROpPattern()(mod))
    func = fused["fused_matmul_add_relu"]
    assert func.attrs["Primitive"] is True
    assert "global_symbol" not in func.attrs

    # The expected fused function, built with the BlockBuilder.
    x, w, b = rx.Var("x", tensor([4, 8])), rx.Var("w", tensor([8, 3])), rx.Var("b", tensor([3]))
    bb = rx.BlockBuilder(mod)
    with bb.function("fused_matmul_add_relu", [x, w, b], {"Primitive": True}, private=True):
        with bb.dataflow():
            s = tensor([4, 3])
            lv0 = bb.emit(op.call_tir(mod.get_global_var("matmul"), [x, w], s))
            lv1 = bb.emit(op.call_tir(mod.get_global_var("add"), [lv0, b], s))
            gv = bb.emit_output(op.call_tir(mod.get_global_var("relu"), [lv1], s))
        bb.emit_func_output(gv)
    rx.assert_structural_equal(func, bb.get()["fused_matmul_add_relu"])
    binding = fused["main"].body.blocks[0].bindings[0]
    assert binding.value.op.name_hint == "fused_matmul_add_relu"


@pytest.mark.usefixtures("legalizations")
def test_fuse_tir_makes_one_kernel_with_local_accumulator():
    mod = _mlp_mod()
    out = Sequential([AnnotateTIROpPattern(), FuseOps(), FuseTIR()])(mod)
    assert sorted(g.name_hint for g, _ in out) == ["fused_matmul_add_relu", "main"]
    kernel = out["fused_matmul_add_relu"]
    assert kernel.attrs["op_pattern"] == 4
    assert kernel.attrs["global_symbol"] == "fused_matmul_add_relu"
    # for i, j: Allocate(local acc) { acc[0] = 0; for k: acc += ...; out[i, j] = ... }
    outer = kernel.body
    assert isinstance(outer, tir.For) and isinstance(outer.body, tir.For)
    alloc = outer.body.body
    assert isinstance(alloc, tir.Allocate) and alloc.buffer.scope == "local"
    init, reduce_loop, epilogue = alloc.body.seq
    assert isinstance(init, tir.BufferStore) and init.buffer is alloc.buffer
    assert isinstance(reduce_loop, tir.For)
    assert isinstance(epilogue, tir.BufferStore) and epilogue.buffer.name == "T_relu"
    binding = out["main"].body.blocks[0].bindings[0]
    assert binding.value.op.name == "relax.call_tir"
    assert [a.name_hint for a in binding.value.args[1].fields] == ["x", "w", "b"]
    args = _inputs()
    np.testing.assert_allclose(
        run_relax(out, "main", *args), run_relax(mod, "main", *args), rtol=1e-6
    )


@pytest.mark.usefixtures("legalizations")
def test_fusion_reduction_after_anchor_stays_separate():
    mod = _mlp_mod(extra_exp=True)
    out = Sequential([AnnotateTIROpPattern(), FuseOps(), FuseTIR()])(mod)
    names = sorted(g.name_hint for g, _ in out)
    assert names == ["fused_matmul_add_relu_exp", "main", "sum"]
    args = _inputs()
    np.testing.assert_allclose(
        run_relax(out, "main", *args), run_relax(mod, "main", *args), rtol=1e-5
    )


@pytest.mark.usefixtures("legalizations")
def test_elementwise_chain_inlines_into_reduction():
    x = rx.Var("x", tensor([3, 5]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit(op.exp(x))
            m = bb.emit(op.multiply(e, x))
            s = bb.emit_output(op.sum(m, axis=[1]))
        bb.emit_func_output(s)
    mod = LegalizeOps()(bb.get())
    out = Sequential([FuseOps(), FuseTIR()])(mod)
    kernel = out["fused_exp_multiply_sum"]
    assert kernel.attrs["op_pattern"] == 3
    assert not isinstance(kernel.body, tir.Allocate)  # exp and multiply were inlined
    xs = np.random.default_rng(2).standard_normal((3, 5)).astype(F32)
    np.testing.assert_allclose(run_relax(out, "main", xs), (np.exp(xs) * xs).sum(1), rtol=1e-5)


@pytest.mark.usefixtures("legalizations")
def test_diamond_fuses_through_its_post_dominator():
    x = rx.Var("x", tensor([4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit(op.exp(x))
            a = bb.emit(op.add(e, x))  # e has two uses, both reaching `m`
            m = bb.emit(op.multiply(a, e))
            r = bb.emit_output(op.nn.relu(m))
        bb.emit_func_output(r)
    mod = LegalizeOps()(bb.get())
    fused = FuseOps()(mod)
    (binding,) = fused["main"].body.blocks[0].bindings
    assert binding.value.op.name_hint == "fused_exp_add_multiply_relu"
    out = FuseTIR()(fused)
    kernel = out["fused_exp_add_multiply_relu"]
    assert not isinstance(kernel.body, tir.Allocate)  # every stage inlined into one nest
    xs = np.linspace(-1, 1, 4).astype(F32)
    want = np.maximum((np.exp(xs) + xs) * np.exp(xs), 0)
    np.testing.assert_allclose(run_relax(out, "main", xs), want, rtol=1e-6)


@pytest.mark.usefixtures("legalizations")
def test_no_fusion_of_values_used_outside_the_group():
    x = rx.Var("x", tensor([4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            e = bb.emit_output(op.exp(x))  # a block output: escapes
            a = bb.emit(op.add(e, x))
            r = bb.emit_output(op.nn.relu(a))
        bb.emit_func_output(rx.Tuple([e, r]))
    mod = LegalizeOps()(bb.get())
    fused = FuseOps()(mod)
    callees = [b.value.op for b in fused["main"].body.blocks[0].bindings]
    assert callees[0].name == "relax.call_tir"  # exp stays alone
    assert callees[1].name_hint == "fused_add_relu"
    assert len(callees) == 2


@pytest.mark.usefixtures("legalizations")
def test_fuse_ops_opt_level_zero_does_nothing():
    mod = _mlp_mod()
    with PassContext(opt_level=0):
        assert FuseOps()(mod) is mod
    assert FuseOps(fuse_opt_level=0)(mod) is mod
    with pytest.raises(ValueError, match="fuse_opt_level"):
        FuseOps(fuse_opt_level=-2)


def test_fusion_with_real_plugin_if_available():
    from relaxvm.registry import extensions

    table = extensions.list_legalizations()
    needed = [("relax.matmul", None), ("relax.add", None), ("relax.nn.relu", None)]
    if not all(k in table for k in needed):
        pytest.skip("relaxvm_ops has not registered matmul/add/relu yet")
    x, w, b = rx.Var("x", tensor([4, 8])), rx.Var("w", tensor([8, 3])), rx.Var("b", tensor([3]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            out = bb.emit_output(op.nn.relu(op.add(op.matmul(x, w), b)))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    fused = Sequential([AnnotateTIROpPattern(), FuseOps(), FuseTIR()])(mod)
    (binding,) = fused["main"].body.blocks[0].bindings
    assert binding.value.op.name == "relax.call_tir"
    args = _inputs()
    np.testing.assert_allclose(
        run_relax(fused, "main", *args), np.maximum(args[0] @ args[1] + args[2], 0), rtol=1e-5
    )


def _plugin_or_skip(*ops):
    from relaxvm.registry import extensions

    table = extensions.list_legalizations()
    missing = [name for name in ops if (name, None) not in table]
    if missing:
        pytest.skip(f"relaxvm_ops has not registered {missing} yet")


_FUSION_PIPELINE = [AnnotateTIROpPattern(), FuseOps(), FuseTIR()]


def test_fusion_symbolic_shapes_with_plugin():
    _plugin_or_skip("relax.matmul", "relax.add", "relax.nn.relu", "relax.sum", "relax.exp")
    n = tir.Var("n", "int64")
    x = rx.Var("x", rx.TensorStructInfo([n, 8], F32))
    w, b = rx.Var("w", tensor([8, 4])), rx.Var("b", tensor([4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            y = bb.emit(op.nn.relu(op.add(op.matmul(x, w), b)))
            out = bb.emit_output(rx.Tuple([op.exp(op.sum(y, axis=[1])), y]))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    fused = Sequential(_FUSION_PIPELINE)(mod)
    rx.well_formed(fused)
    kernel = fused["fused_matmul_add_relu"]
    assert kernel.attrs["op_pattern"] == 4
    for rows in (1, 5):
        args = [np.random.default_rng(rows).standard_normal(s).astype(F32) for s in
                ((rows, 8), (8, 4), (4,))]  # fmt: skip
        for got, want in zip(
            run_relax(fused, "main", *args), run_relax(mod, "main", *args), strict=True
        ):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fusion_multi_output_root_and_repeated_kernel():
    _plugin_or_skip("relax.add", "relax.split", "relax.multiply")
    x, y, z = rx.Var("x", tensor([4, 6])), rx.Var("y", tensor([4, 6])), rx.Var("z", tensor([6]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, y, z]):
        with bb.dataflow():
            a = bb.emit(op.add(op.add(x, y), op.add(x, z)))  # one kernel, used twice
            s = bb.emit(op.split(a, 3, axis=1))
            t0, t2 = bb.emit(rx.TupleGetItem(s, 0)), bb.emit(rx.TupleGetItem(s, 2))
            out = bb.emit_output(op.multiply(t0, t2))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    fused = Sequential(_FUSION_PIPELINE)(mod)
    rx.well_formed(fused)
    call = fused["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_tir"
    assert len(call.sinfo_args[0].fields) == 3
    kernel = fused[call.args[0].name_hint]
    assert len(kernel.params) == 6  # x, y, z and the three split outputs
    assert not isinstance(kernel.body, tir.Allocate)  # the adds were inlined
    args = [np.random.default_rng(3).standard_normal(s).astype(F32) for s in
            ((4, 6), (4, 6), (6,))]  # fmt: skip
    np.testing.assert_allclose(run_relax(fused, "main", *args), run_relax(mod, "main", *args))


def test_fusion_model_with_plugin_matches_unfused():
    _plugin_or_skip(
        "relax.matmul", "relax.add", "relax.nn.gelu", "relax.nn.layer_norm", "relax.nn.softmax",
        "relax.reshape", "relax.multiply", "relax.mean", "relax.nn.conv2d", "relax.nn.relu",
        "relax.nn.max_pool2d",
    )  # fmt: skip
    from relaxvm.transform import DeadCodeElimination, FoldConstant, RewriteDataflowReshape

    x, w, b = rx.Var("x", tensor([4, 8])), rx.Var("w", tensor([8, 16])), rx.Var("b", tensor([16]))
    g, be = rx.Var("g", tensor([16])), rx.Var("be", tensor([16]))
    img, k = rx.Var("img", tensor([1, 2, 6, 6])), rx.Var("k", tensor([3, 2, 3, 3]))
    cb = rx.Var("cb", tensor([1, 3, 1, 1]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w, b, g, be, img, k, cb]):
        with bb.dataflow():
            y = bb.emit(op.nn.gelu(op.add(op.matmul(x, w), b)))
            y = bb.emit(op.nn.softmax(op.nn.layer_norm(y, g, be, axes=[-1]), axis=-1))
            y = bb.emit(op.reshape(y, [8, 8]))
            two = rx.const(np.full((8, 8), 2.0, F32))
            y = bb.emit(op.mean(op.multiply(y, op.add(two, two)), axis=[1]))
            c = bb.emit(op.nn.relu(op.add(op.nn.conv2d(img, k), cb)))
            c = bb.emit(op.nn.max_pool2d(c, pool_size=[2, 2], strides=[2, 2]))
            out = bb.emit_output(rx.Tuple([y, c]))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    pipeline = Sequential(
        [AnnotateTIROpPattern(), FoldConstant(), FuseOps(), FuseTIR(), RewriteDataflowReshape(),
         DeadCodeElimination()]
    )  # fmt: skip
    fused = pipeline(mod)
    rx.well_formed(fused)
    names = {gv.name_hint for gv, _ in fused}
    assert "fused_matmul_add_gelu" in names
    assert any(name.startswith("fused_conv2d_add") for name in names)
    values = [b.value for b in fused["main"].body.blocks[0].bindings]
    assert any(getattr(v, "op", None) is rx.Op.get("relax.reshape") for v in values)
    rng = np.random.default_rng(4)
    shapes = [(4, 8), (8, 16), (16,), (16,), (16,), (1, 2, 6, 6), (3, 2, 3, 3), (1, 3, 1, 1)]
    args = [rng.standard_normal(s).astype(F32) for s in shapes]
    for got, want in zip(
        run_relax(fused, "main", *args), run_relax(mod, "main", *args), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_injective_producer_does_not_steal_elementwise_from_reduction():
    _plugin_or_skip("relax.reshape", "relax.multiply", "relax.sum")
    x = rx.Var("x", tensor([4, 6]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            r = bb.emit(op.reshape(x, [6, 4]))
            m = bb.emit(op.multiply(r, r))
            out = bb.emit_output(op.sum(m, axis=[1]))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    fused = Sequential([AnnotateTIROpPattern(), FuseOps()])(mod)
    callees = [b.value.args[0].name_hint if b.value.op.name == "relax.call_tir" else None
               for b in fused["main"].body.blocks[0].bindings
               if isinstance(b.value.op, rx.Op)]  # fmt: skip
    fused_calls = [b.value.op.name_hint for b in fused["main"].body.blocks[0].bindings
                   if isinstance(b.value.op, rx.GlobalVar)]  # fmt: skip
    # As in TVM: multiply joins the reduction in phase 0; the reshape stays alone.
    assert fused_calls == ["fused_multiply_sum"]
    assert callees == ["reshape"]


@pytest.mark.usefixtures("legalizations")
def test_identical_groups_share_one_fused_kernel():
    x = rx.Var("x", tensor([4, 4]))
    w1, w2 = rx.Var("w1", tensor([4, 4])), rx.Var("w2", tensor([4, 4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w1, w2]):
        with bb.dataflow():
            h = bb.emit(op.nn.relu(op.matmul(x, w1)))
            out = bb.emit_output(op.nn.relu(op.matmul(h, w2)))
        bb.emit_func_output(out)
    mod = LegalizeOps()(bb.get())
    fused = FuseOps()(mod)
    assert {"fused_matmul_relu", "fused_matmul_relu1"} <= {g.name_hint for g, _ in fused}
    out = FuseTIR()(fused)
    assert sorted(g.name_hint for g, _ in out) == ["fused_matmul_relu", "main"]
    callees = {b.value.args[0].name_hint for b in out["main"].body.blocks[0].bindings
               if getattr(b.value.op, "name", "") == "relax.call_tir"}  # fmt: skip
    assert callees == {"fused_matmul_relu"}
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((4, 4)).astype(F32) for _ in range(3)]
    want = np.maximum(np.maximum(args[0] @ args[1], 0) @ args[2], 0)
    np.testing.assert_allclose(run_relax(out, "main", *args), want, rtol=1e-5)


@pytest.mark.usefixtures("legalizations")
def test_fused_matmul_bias_relu_structure_is_pinned():
    """The exact loop nest the LLVM schedules match (docs/passes_graph.md)."""
    out = Sequential([AnnotateTIROpPattern(), FuseOps(), FuseTIR()])(_mlp_mod())
    x = tir.Buffer("x", (4, 8), F32)
    w = tir.Buffer("w", (8, 3), F32)
    b = tir.Buffer("b", (3,), F32)
    res = tir.Buffer("T_relu", (4, 3), F32)
    acc = tir.Buffer("T_matmul_local", (1,), F32, scope="local")
    i, j, k = (tir.Var(n, "int64") for n in "ijk")
    zero = tir.const(0, "int64")
    body = tir.Allocate(
        acc,
        tir.seq(
            tir.BufferStore(acc, tir.const(0.0, F32), [zero]),
            tir.For(k, 0, 8, tir.ForKind.SERIAL,
                    tir.BufferStore(acc, acc[zero] + x[i, k] * w[k, j], [zero])),
            tir.BufferStore(res, tir.max(acc[zero] + b[j], tir.const(0.0, F32)), [i, j]),
        ),
    )  # fmt: skip
    nest = tir.For(i, 0, 4, tir.ForKind.SERIAL, tir.For(j, 0, 3, tir.ForKind.SERIAL, body))
    attrs = {
        "global_symbol": "fused_matmul_add_relu",
        "tir.noalias": True,
        "op_pattern": 4,
        "fused": True,
    }
    expected = tir.PrimFunc([x, w, b, res], nest, attrs=attrs)
    assert tir.structural_equal(out["fused_matmul_add_relu"], expected), out[
        "fused_matmul_add_relu"
    ].script()
