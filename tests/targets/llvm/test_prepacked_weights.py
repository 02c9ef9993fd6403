"""Constant weights packed at compile time (``relaxvm_llvm.schedule.prepack``).

A matmul-like kernel called with a constant ``B`` gets a variant reading ``B``'s tile-major
copy, made once with numpy: checked against numpy (compiled, odd sizes, static and symbolic
row counts, both row paths), against the unscheduled kernel with the interpreter, for shared
constants, mixed constant / parameter call sites, an ONNX MLP against onnxruntime, and
through save / load.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, Constant, TensorStructInfo, Var, const
from relaxvm.ir.relax import op as R
from relaxvm.ir.tir import For, ForKind, PrimFunc, post_order_visit, run_prim_func
from relaxvm.target import Target
from relaxvm_llvm.schedule import CpuConfig
from relaxvm_llvm.schedule import workloads as wl
from relaxvm_llvm.schedule.dispatch import schedule_pass
from relaxvm_llvm.schedule.packing import PackLayout
from relaxvm_llvm.schedule.prepack import PREPACKED_SUFFIX, pack_array, prepack_prim_func

AVX2 = CpuConfig(vector_bits=256, num_threads=2, parallel_cutoff=0)
SSE = CpuConfig(vector_bits=128, num_threads=2, parallel_cutoff=0)
ROWS = (1, 2, 7, 16, 32, 64)
K, N = 259, 517


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 7 * sum(shape)).standard_normal(shape).astype("float32")


W = _rand(K, N, seed=1)
BIAS = _rand(N, seed=2)


def _linear_module(rows: Any, weight: np.ndarray = W, bias: np.ndarray = BIAS) -> Any:
    """``relu(x @ W + b)`` with constant ``W`` and ``b``."""
    x = Var("x", TensorStructInfo([rows, weight.shape[0]], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.nn.relu(R.add(R.matmul(x, const(weight)), const(bias))))
        bb.emit_func_output(out)
    return bb.get()


def _prim_funcs(mod: Any) -> dict[str, PrimFunc]:
    return {gvar.name_hint: f for gvar, f in mod.items() if isinstance(f, PrimFunc)}


def _scheduled(mod: Any, target: str = "llvm") -> Any:
    fused = relaxvm.transform.get_pipeline("zero")(mod)
    return schedule_pass(Target(target))(fused)


def _constants(mod: Any) -> list[Constant]:
    found: list[Constant] = []

    class _Find(relaxvm.ir.relax.expr_functor.ExprVisitor):
        def visit_leaf_(self, expr: Any) -> None:
            if isinstance(expr, Constant) and all(c is not expr for c in found):
                found.append(expr)

    for _, func in mod.items():
        if isinstance(func, relaxvm.ir.relax.Function):
            _Find().visit_expr(func)
    return found


def _vm(ex: Any) -> Any:
    return relaxvm.VirtualMachine(ex, relaxvm.cpu())


# ---- the numpy packing ------------------------------------------------------------------------
def test_pack_array_matches_the_definition() -> None:
    b = _rand(5, 11)  # B[k, n]
    layout = PackLayout(cols=4, columns=11, red_extents=(5,), axes=(("k", 0), ("n", 0)))
    packed = pack_array(b, layout)
    assert packed.shape == (3, 5, 4) and packed.dtype == b.dtype
    for t in range(3):
        for k in range(5):
            for lane in range(4):
                col = t * 4 + lane
                assert packed[t, k, lane] == (b[k, col] if col < 11 else 0)
    # W[n, k] (a dense operand), a constant leading index, an unused reduction axis.
    w = _rand(2, 11, 5)
    layout = PackLayout(4, 11, (5, 3), (("c", 1), ("n", 0), ("k", 0)))
    packed = pack_array(w, layout)
    assert packed.shape == (3, 5, 3, 4)
    np.testing.assert_array_equal(packed[2, 4, 1, :3], w[1, 8:11, 4])
    np.testing.assert_array_equal(packed[2, :, :, 3], 0)
    np.testing.assert_array_equal(packed[1, :, 0], packed[1, :, 2])


def test_pack_array_rejects_a_rank_mismatch() -> None:
    layout = PackLayout(4, 11, (5,), (("k", 0), ("n", 0)))
    with pytest.raises(ValueError, match="3-d data for a 2-d layout"):
        pack_array(np.zeros((1, 5, 11), "float32"), layout)


# ---- kernel variants, with the interpreter ----------------------------------------------------
@pytest.mark.parametrize("config", [AVX2, SSE], ids=["avx2", "sse"])
@pytest.mark.parametrize("rows", [1, 3, 7, 20, "n"])
def test_variant_matches_the_unscheduled_kernel(config: CpuConfig, rows: Any) -> None:
    m = SymVar("n") if rows == "n" else rows
    func = wl.matmul(m, 37, 19, bias=True, relu=True)  # A[m, 19] @ B[19, 37]
    made = prepack_prim_func(func, [1], config)
    assert made is not None
    variant, layouts = made
    packed_buffer = variant.buffer_map[variant.params[1]]
    assert [d.value for d in packed_buffer.shape] == list(layouts[1].shape)
    assert layouts[1].columns == 37 and layouts[1].shape[0] * layouts[1].cols >= 37
    for count in [3, 7, 20] if rows == "n" else [rows]:
        a, b, bias = _rand(count, 19), _rand(19, 37, seed=3), _rand(37, seed=4)
        want = np.zeros((count, 37), "float32")
        got = np.zeros((count, 37), "float32")
        run_prim_func(func, a, b, bias, want)
        run_prim_func(variant, a, pack_array(b, layouts[1]), bias, got)
        np.testing.assert_array_equal(got, want)


def test_dense_variant_matches_the_unscheduled_kernel() -> None:
    n = SymVar("n")
    func = wl.dense(n, 21, 13)  # A[n, 13] @ W[21, 13].T
    made = prepack_prim_func(func, [1], AVX2)
    assert made is not None
    variant, layouts = made
    assert layouts[1].axes == (("n", 0), ("k", 0))
    for count in (1, 2, 9):
        a, w = _rand(count, 13), _rand(21, 13, seed=5)
        want, got = np.zeros((count, 21), "float32"), np.zeros((count, 21), "float32")
        run_prim_func(func, a, w, want)
        run_prim_func(variant, a, pack_array(w, layouts[1]), got)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_variant_has_no_packing_loop() -> None:
    func = wl.matmul(SymVar("n"), 512, 512)
    made = prepack_prim_func(func, [1], AVX2)
    assert made is not None
    text = made[0].script()
    assert "B_packed" in text  # the parameter
    stores: list[str] = []
    post_order_visit(
        made[0].body,
        lambda s: (
            stores.append(s.buffer.name) if hasattr(s, "buffer") and hasattr(s, "value") else None
        ),
    )
    assert "B_packed" not in stores  # nothing fills it at run time


def test_a_non_packable_operand_is_not_offered() -> None:
    # The left operand is read along the reduction, not in column tiles: nothing to pack.
    assert prepack_prim_func(wl.matmul(SymVar("n"), 64, 64), [0], AVX2) is None


# ---- the Relax pass ---------------------------------------------------------------------------
def test_pass_replaces_the_kernel_and_packs_the_constant() -> None:
    mod = _scheduled(_linear_module(SymVar("n")))
    funcs = _prim_funcs(mod)
    assert list(funcs) == ["fused_matmul_add_relu" + PREPACKED_SUFFIX]  # the original is gone
    variant = next(iter(funcs.values()))
    assert variant.attrs["global_symbol"] == "fused_matmul_add_relu" + PREPACKED_SUFFIX
    packed = next(f for f in variant.params if "packed" in f.name)
    shape = tuple(d.value for d in variant.buffer_map[packed].shape)
    tiles, depth, cols = shape
    assert depth == K and tiles * cols >= N > (tiles - 1) * cols
    constants = {tuple(c.data.shape): c for c in _constants(mod)}
    assert shape in constants and (K, N) not in constants
    data = constants[shape].data.numpy()
    assert data.dtype == np.float32
    np.testing.assert_array_equal(data[0, :, :cols], W[:, :cols])
    np.testing.assert_array_equal(data[-1, :, N - (tiles - 1) * cols :], 0)


def test_pass_is_deterministic() -> None:
    first = _scheduled(_linear_module(SymVar("n"))).script()
    assert _scheduled(_linear_module(SymVar("n"))).script() == first


def test_pass_is_off_without_packing() -> None:
    mod = _scheduled(_linear_module(SymVar("n")), "llvm -pack=0")
    assert list(_prim_funcs(mod)) == ["fused_matmul_add_relu"]
    mod = schedule_pass(Target("llvm"), prepack=False)(
        relaxvm.transform.get_pipeline("zero")(_linear_module(8))
    )
    assert list(_prim_funcs(mod)) == ["fused_matmul_add_relu"]


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_linear_symbolic_batch_against_numpy(exec_mode: str) -> None:
    ex = relaxvm.compile(_linear_module(SymVar("n")), "llvm", exec_mode=exec_mode)
    assert any(PREPACKED_SUFFIX in name for name in ex.as_text().split())
    main = _vm(ex)["main"]
    for rows in ROWS:
        x = _rand(rows, K, seed=rows)
        got = main(relaxvm.tensor(x)).numpy()
        np.testing.assert_allclose(got, np.maximum(x @ W + BIAS, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 2, 7, 32])
def test_linear_static_batch_against_numpy(rows: int) -> None:
    ex = relaxvm.compile(_linear_module(rows), "llvm")
    assert PREPACKED_SUFFIX in ex.as_text()
    x = _rand(rows, K, seed=rows)
    got = _vm(ex)["main"](relaxvm.tensor(x)).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ W + BIAS, 0), rtol=1e-4, atol=1e-4)


def test_matmul_without_epilogue_small_shapes() -> None:
    # Fewer columns than one vector, and a one-column weight.
    for k, n in ((9, 5), (33, 1), (64, 24)):
        w = _rand(k, n, seed=k)
        x = Var("x", TensorStructInfo([SymVar("n"), k], "float32"))
        bb = BlockBuilder()
        with bb.function("main", [x]):
            with bb.dataflow():
                out = bb.emit_output(R.matmul(x, const(w)))
            bb.emit_func_output(out)
        main = _vm(relaxvm.compile(bb.get(), "llvm"))["main"]
        for rows in (1, 6, 17):
            xv = _rand(rows, k, seed=rows)
            got = main(relaxvm.tensor(xv)).numpy()
            np.testing.assert_allclose(got, xv @ w, rtol=1e-4, atol=1e-4)


def test_batched_input_with_a_constant_weight() -> None:
    w = _rand(45, 70, seed=13)
    x = Var("x", TensorStructInfo([3, SymVar("n"), 45], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(R.matmul(x, const(w)))
        bb.emit_func_output(out)
    ex = relaxvm.compile(bb.get(), "llvm")
    assert PREPACKED_SUFFIX in ex.as_text()
    main = _vm(ex)["main"]
    for rows in (1, 9):
        xv = _rand(3, rows, 45, seed=rows)
        got = main(relaxvm.tensor(xv)).numpy()
        np.testing.assert_allclose(got, xv @ w, rtol=1e-4, atol=1e-4)


def test_same_constant_twice_is_packed_once() -> None:
    square = _rand(K, K, seed=9)
    x = Var("x", TensorStructInfo([SymVar("n"), K], "float32"))
    bb = BlockBuilder()
    w = const(square)
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.matmul(x, w)))
            out = bb.emit_output(R.matmul(h, w))
        bb.emit_func_output(out)
    mod = _scheduled(bb.get())
    packed = [c for c in _constants(mod) if c.data.ndim == 3]
    assert len(packed) == 1
    assert all(PREPACKED_SUFFIX in name for name in _prim_funcs(mod))
    main = _vm(relaxvm.compile(bb.get(), "llvm"))["main"]
    for rows in (1, 33):
        xv = _rand(rows, K, seed=rows)
        want = np.maximum(xv @ square, 0) @ square
        np.testing.assert_allclose(main(relaxvm.tensor(xv)).numpy(), want, rtol=1e-3, atol=1e-3)


def _two_sites_module() -> tuple[Any, np.ndarray]:
    """One kernel called twice: once with a constant ``B``, once with a parameter."""
    wc = _rand(40, 67, seed=11)
    n = SymVar("n")
    x = Var("x", TensorStructInfo([n, 40], "float32"))
    wp = Var("wp", TensorStructInfo([40, 67], "float32"))
    bb = BlockBuilder()
    with bb.function("main", [x, wp]):
        gvar = bb.add_func(wl.matmul(n, 67, 40), "mm")
        out_sinfo = TensorStructInfo([n, 67], "float32")
        with bb.dataflow():
            a = bb.emit(R.call_tir(gvar, [x, const(wc)], out_sinfo))
            b = bb.emit(R.call_tir(gvar, [x, wp], out_sinfo))
            out = bb.emit_output(relaxvm.ir.relax.Tuple([a, b]))
        bb.emit_func_output(out)
    return bb.get(), wc


def test_constant_and_parameter_sites_keep_both_kernels() -> None:
    mod, wc = _two_sites_module()
    funcs = _prim_funcs(_scheduled(mod))
    assert {"mm", "mm" + PREPACKED_SUFFIX} <= set(funcs)
    main = _vm(relaxvm.compile(mod, "llvm"))["main"]
    wp = _rand(40, 67, seed=12)
    for rows in (1, 3, 20):
        xv = _rand(rows, 40, seed=rows)
        got = main(relaxvm.tensor(xv), relaxvm.tensor(wp))
        np.testing.assert_allclose(got[0].numpy(), xv @ wc, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got[1].numpy(), xv @ wp, rtol=1e-4, atol=1e-4)


def test_save_load_round_trip(tmp_path: Any) -> None:
    ex = relaxvm.compile(_linear_module(SymVar("n")), "llvm")
    path = tmp_path / "prepacked.rvm"
    ex.export_library(str(path))
    loaded = relaxvm.load_module(str(path))
    assert PREPACKED_SUFFIX in loaded.as_text()
    x = _rand(9, K, seed=9)
    want = _vm(ex)["main"](relaxvm.tensor(x)).numpy()
    got = _vm(loaded)["main"](relaxvm.tensor(x)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.maximum(x @ W + BIAS, 0), rtol=1e-4, atol=1e-4)


# ---- an imported model ------------------------------------------------------------------------
def test_onnx_mlp_against_onnxruntime() -> None:
    pytest.importorskip("onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    from relaxvm.frontend.onnx import from_onnx
    from relaxvm.testing.onnx_models import mlp_model, random_inputs

    model = mlp_model(in_features=67, hidden=(129, 65), out_features=10)
    mod = from_onnx(model)
    funcs = _prim_funcs(_scheduled(mod))
    assert sum(PREPACKED_SUFFIX in name for name in funcs) == 3  # every layer
    main = _vm(relaxvm.compile(mod, "llvm"))["main"]
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    for batch in (1, 2, 7, 32):
        inputs = random_inputs(model, {"N": batch}, seed=batch)
        (want,) = session.run(None, inputs)
        got = main(*[relaxvm.tensor(v) for v in inputs.values()]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _parallel_loops(func: PrimFunc) -> int:
    count = [0]

    def visit(node: Any) -> None:
        if isinstance(node, For) and node.kind == ForKind.PARALLEL:
            count[0] += 1

    post_order_visit(func.body, visit)
    return count[0]


def test_many_rows_variant_keeps_a_parallel_grid() -> None:
    made = prepack_prim_func(wl.matmul(256, 512, 512), [1], AVX2)
    assert made is not None and _parallel_loops(made[0]) >= 1
