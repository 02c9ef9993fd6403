"""Print then parse: ``from_source(mod.script())`` is structurally equal to ``mod``.

Every module here is built with the BlockBuilder, ``emit_te`` or the IR constructors (never
parsed), so these tests check the printer against the parser. Each case also checks that
printing the parsed module gives the same text again.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from relaxvm import te, tir
from relaxvm.ir import SizeVar
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.runtime import cpu
from relaxvm.script import from_source

F32 = "float32"


def _roundtrip(mod: rx.IRModule) -> None:
    text = mod.script()
    parsed = from_source(text)
    rx.assert_structural_equal(parsed, mod)
    assert parsed.script() == text


def _tensor(shape: list, dtype: str = F32) -> rx.TensorStructInfo:
    return rx.TensorStructInfo(shape, dtype)


# ---- modules built with the BlockBuilder ----------------------------------------------------------
def seed_module() -> rx.IRModule:
    x = rx.Var("x", _tensor([3, 4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(op.add(x, x))
        bb.emit_func_output(out)
    return bb.get()


def emit_te_module() -> rx.IRModule:
    n = SymVar("n")
    x = rx.Var("x", _tensor([n, 4]))
    w = rx.Var("w", _tensor([4, 4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(op.matmul(x, w))

            def row_sum(a: te.Tensor) -> te.Tensor:
                k = te.reduce_axis((0, 4), name="k")
                sq = te.compute(a.shape, lambda i, j: a[i, j] * a[i, j], name="sq")
                return te.compute((a.shape[0],), lambda i: te.sum(sq[i, k], axis=k), name="s")

            s = bb.emit_te(row_sum, y, primfunc_name_hint="row_sum")

            def plus_one(a: te.Tensor) -> te.Tensor:
                return te.compute((3, 4), lambda i, j: a[i, j] + 1.0)

            z = bb.emit_te(plus_one, w)
            out = bb.emit_output(rx.Tuple([s, z]))
        bb.emit_func_output(out)
    return bb.get()


def tir_vars_module() -> rx.IRModule:
    x = rx.Var("x", rx.TensorStructInfo(dtype=F32, ndim=1))
    m = SymVar("m")
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.match_cast(x, _tensor([m]))
        shape = rx.ShapeExpr([m * 2])
        out = bb.emit_te(
            lambda a, s: te.compute(s, lambda i: a[i // 2]), y, shape, primfunc_name_hint="rep"
        )
        bb.emit_func_output(out)
    return bb.get()


def ops_module() -> rx.IRModule:
    n = SymVar("n")
    x = rx.Var("x", _tensor([n, 4]))
    img = rx.Var("img", _tensor([1, 3, 8, 8]))
    wgt = rx.Var("wgt", _tensor([2, 3, 3, 3]))
    idx = rx.Var("idx", _tensor([2], "int64"))
    gamma = rx.Var("gamma", _tensor([4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, img, wgt, idx, gamma]):
        with bb.dataflow():
            calls = [
                op.sum(x, axis=[1], keepdims=True),
                op.mean(x),
                op.argmax(x, axis=1),
                op.variance(x, axis=0, keepdims=False),
                op.astype(x, "float16"),
                op.clip(x, 0.0, 6.0),
                op.where(op.less(x, x), x, op.negative(x)),
                op.reshape(x, (-1, 2)),
                op.permute_dims(x, [1, 0]),
                op.permute_dims(x),
                op.expand_dims(x, [0]),
                op.squeeze(op.expand_dims(x, 0), axis=[0]),
                op.flatten(x),
                op.concat([x, x], axis=1),
                op.split(x, 2, axis=1),
                op.split(x, [1, 3], axis=1),
                op.strided_slice(x, axes=[1], begin=[0], end=[2]),
                op.take(x, idx, axis=1),
                op.broadcast_to(gamma, (3, 4)),
                op.full((2, 2), rx.const(1.5, F32), F32),
                op.zeros((2,), "int32"),
                op.ones_like(x),
                op.arange(0, 8, 2, dtype="int64"),
                op.cumsum(x, axis=1),
                op.linear(x, rx.const(np.ones((5, 4), F32)), None),
                op.nn.conv2d(img, wgt, strides=1, padding=1),
                op.nn.max_pool2d(img, pool_size=2, strides=2),
                op.nn.avg_pool2d(img, pool_size=2, strides=2, ceil_mode=True),
                op.nn.adaptive_avg_pool2d(img, output_size=1),
                op.nn.softmax(x, axis=1),
                op.nn.log_softmax(x),
                op.nn.layer_norm(x, gamma, gamma, axes=[-1], epsilon=1e-6),
                op.nn.rms_norm(x, gamma),
                op.nn.gelu(x),
                op.shape_of(x),
            ]
            results = [bb.emit(call) for call in calls]
            out = bb.emit_output(rx.Tuple(results))
        bb.emit_func_output(out)
    return bb.get()


def structural_ops_module() -> rx.IRModule:
    x = rx.Var("x", _tensor([2, 3]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x], pure=False):
        a = bb.emit(op.call_dps_packed("my_ext", [x], _tensor([2, 3])))
        b = bb.emit(op.call_pure_packed("my_pure", a, sinfo_args=_tensor([2, 3])))
        c = bb.emit(op.call_packed("my_impure", b, sinfo_args=[rx.ObjectStructInfo()]))
        bb.emit(op.print(a, b, format="{} {}"))
        bb.emit(op.assert_op(rx.const(True, "bool"), [x], format="x={}"))
        bb.emit(op.null_value())
        bb.emit_func_output(rx.Tuple([b, c]))
    return bb.get()


def functions_module() -> rx.IRModule:
    """Calls between functions, recursion, private functions and attributes."""
    x = rx.Var("x", _tensor([4]))
    bb = rx.BlockBuilder()
    with bb.function("helper", [x], attrs={"custom": 7}, private=True):
        bb.emit_func_output(bb.emit(op.exp(x)))
    helper = bb.get().get_global_var("helper")
    y = rx.Var("y", _tensor([4]))
    with bb.function("main", [y]):
        z = bb.emit(rx.Call(helper, [y]))
        bb.emit_func_output(z)
    return bb.get()


# ---- modules built from IR nodes -------------------------------------------------------------------
def leaves_module() -> rx.IRModule:
    n = SymVar("n")
    x = rx.Var("x", _tensor([n]))
    values = [
        rx.const(2.5, F32),
        rx.const(np.arange(6, dtype="int32").reshape(2, 3)),
        rx.const([True, False], "bool"),
        rx.ShapeExpr([n, 4]),
        rx.PrimValue(n + 1),
        rx.PrimValue(tir.IntImm("int32", 3)),
        rx.PrimValue(tir.FloatImm("float32", 0.5)),
        rx.StringImm('quote " and \\ backslash'),
        rx.DataTypeImm("float16"),
        rx.Tuple([]),
        rx.Tuple([x]),
    ]
    bindings = []
    for index, value in enumerate(values):
        bindings.append(rx.VarBinding(rx.Var(f"v{index}", value.struct_info), value))
    pair = rx.Var("pair", rx.TupleStructInfo([x.struct_info, x.struct_info]))
    bindings.append(rx.VarBinding(pair, rx.Tuple([x, x])))
    first = rx.Var("first", x.struct_info)
    bindings.append(rx.VarBinding(first, rx.TupleGetItem(pair, 0)))
    body = rx.SeqExpr([rx.BindingBlock(bindings)], first)
    return rx.IRModule({"main": rx.Function([x], body, attrs={"global_symbol": "main"})})


def control_flow_module() -> rx.IRModule:
    """If with both branches, match_cast defining a new variable, a nested function."""
    m = SymVar("m")
    cond = rx.Var("cond", _tensor([], "bool"))
    x = rx.Var("x", rx.TensorStructInfo(dtype=F32, ndim=1))
    cast = rx.Var("cast", _tensor([m]))
    then_value = rx.Var("then_value", _tensor([m]))
    else_value = rx.Var("else_value", _tensor([m]))
    branch = rx.If(
        cond,
        rx.SeqExpr(
            [rx.BindingBlock([rx.VarBinding(then_value, rx.Call(rx.Op.get("relax.exp"), [cast]))])],
            then_value,
        ),
        rx.SeqExpr(
            [rx.BindingBlock([rx.VarBinding(else_value, rx.Call(rx.Op.get("relax.log"), [cast]))])],
            else_value,
        ),
    )
    chosen = rx.Var("chosen", _tensor([m]))
    inner_param = rx.Var("a", _tensor([m]))
    inner_out = rx.Var("b", _tensor([m]))
    inner = rx.Function(
        [inner_param],
        rx.SeqExpr(
            [
                rx.BindingBlock(
                    [rx.VarBinding(inner_out, rx.Call(rx.Op.get("relax.add"), [inner_param, cast]))]
                )
            ],
            inner_out,
        ),
        _tensor([m]),
    )
    closure = rx.Var("inner", inner.struct_info)
    result = rx.Var("result", _tensor([m]))
    block = rx.BindingBlock(
        [
            rx.MatchCast(cast, x, _tensor([m])),
            rx.VarBinding(chosen, branch),
            rx.VarBinding(closure, inner),
            rx.VarBinding(result, rx.Call(closure, [chosen])),
        ]
    )
    func = rx.Function([cond, x], rx.SeqExpr([block], result), attrs={"global_symbol": "main"})
    return rx.IRModule({"main": func})


def struct_info_module() -> rx.IRModule:
    n = SymVar("n")
    params = [
        rx.Var("a", rx.TensorStructInfo(dtype=F32, ndim=2)),
        rx.Var("b", rx.TensorStructInfo(dtype=None)),
        rx.Var("c", rx.TensorStructInfo([n, n * 2], "int8")),
        rx.Var("d", rx.ShapeStructInfo([n, 3])),
        rx.Var("e", rx.PrimStructInfo("float32")),
        rx.Var("f", rx.PrimStructInfo(value=n)),
        rx.Var("g", rx.TupleStructInfo([rx.ObjectStructInfo(), rx.ShapeStructInfo(ndim=-1)])),
        rx.Var("h", rx.FuncStructInfo([_tensor([2])], _tensor([2]))),
        rx.Var("i", rx.FuncStructInfo.opaque_func(_tensor([2]), purity=False)),
        rx.Var("k", rx.TupleStructInfo([])),
    ]
    func = rx.Function(params, rx.SeqExpr([], params[2]), attrs={"global_symbol": "main"})
    return rx.IRModule({"main": func})


def duplicate_names_module() -> rx.IRModule:
    x = rx.Var("x", _tensor([2]))
    x2 = rx.Var("x", _tensor([2]))
    n1, n2 = SymVar("n"), SymVar("n")
    y = rx.Var("y", _tensor([n1]))
    z = rx.Var("y", _tensor([n2]))
    block = rx.BindingBlock([rx.VarBinding(x2, rx.Call(rx.Op.get("relax.add"), [x, x]))])
    func = rx.Function([x, y, z], rx.SeqExpr([block], x2), attrs={"global_symbol": "main"})
    return rx.IRModule({"main": func})


def misc_module() -> rx.IRModule:
    """Recursion, several blocks, reserved names, unusual dtypes and constants."""
    n = SymVar("n")
    x = rx.Var("cls", _tensor([n]))  # a name the script itself needs: printed as cls_
    pv = rx.Var("pv", rx.PrimStructInfo("float64"))
    dims = rx.Var("dims", _tensor([tir.IntImm("int32", 3)], "float16"))
    on_cpu = rx.Var("on_cpu", rx.TensorStructInfo([2], F32, vdevice=cpu(0)))
    flow = rx.DataflowVar("flow", _tensor([n]))
    out = rx.Var("out", _tensor([n]))
    again = rx.Var("again", _tensor([n]))
    parts = rx.Var("parts", rx.TupleStructInfo([_tensor([1]), _tensor([1])]))
    part = rx.Var("part", _tensor([1]))
    ext = rx.Var("ext", rx.FuncStructInfo.opaque_func())
    flag = rx.Var("flag", rx.PrimStructInfo(value=tir.IntImm("bool", 1)))
    consts = [
        rx.const(np.linspace(0, 1, 100).astype(F32)),
        rx.const(np.array([np.nan, np.inf, -0.0], F32)),
        rx.const(np.array([0.1, 2.5, -3], "float16")),
        rx.const(np.array([1, 255], "uint8")),
        rx.const(np.array(7, "int64")),
    ]
    const_vars = [rx.Var(f"k{i}", c.struct_info) for i, c in enumerate(consts)]
    main = rx.GlobalVar("main")
    two = rx.Var("two", _tensor([2]))
    blocks = [
        rx.DataflowBlock([rx.VarBinding(flow, op.exp(x)), rx.VarBinding(out, op.add(flow, x))]),
        rx.BindingBlock(
            [
                rx.VarBinding(again, rx.Call(main, [out, pv, dims, on_cpu])),
                rx.VarBinding(two, rx.const(np.ones(2, F32))),
                rx.VarBinding(parts, op.split(two, 2)),
                rx.VarBinding(part, rx.TupleGetItem(parts, 1)),
                rx.VarBinding(ext, rx.ExternFunc("my.packed")),
                rx.VarBinding(flag, rx.PrimValue(tir.IntImm("bool", 1))),
                *(rx.VarBinding(v, c) for v, c in zip(const_vars, consts, strict=True)),
            ]
        ),
    ]
    func = rx.Function(
        [x, pv, dims, on_cpu],
        rx.SeqExpr(blocks, again),
        _tensor([n]),
        attrs={"global_symbol": "main"},
    )
    return rx.IRModule({"main": func})


# ---- hand-written TIR -----------------------------------------------------------------------------
def tir_module() -> rx.IRModule:
    n = SymVar("n")
    a = tir.Buffer("A", (n, 8), F32)
    b = tir.Buffer("B", (n, 8), F32)
    i, j, k, t = SymVar("i"), SymVar("j"), SymVar("k"), SymVar("t")
    scratch = tir.Buffer("tmp", (8,), F32, scope="local")
    v = SymVar("v", "float32")
    body = tir.For(
        i,
        0,
        n,
        tir.ForKind.PARALLEL,
        tir.Allocate(
            scratch,
            tir.seq(
                tir.For(j, 0, 8, tir.ForKind.VECTORIZED, scratch.vstore([j], tir.exp(a[i, j]))),
                tir.For(
                    k,
                    2,
                    4,
                    tir.ForKind.UNROLLED,
                    tir.LetStmt(
                        v,
                        tir.Select(k < 4, scratch[k], tir.Cast("float32", k)),
                        tir.IfThenElse(
                            v > 0.5,
                            b.vstore([i, k], tir.sqrt(v) + tir.if_then_else(v > 1.0, v, 2.0)),
                            b.vstore([i, k], tir.pow(v, 2.0)),
                        ),
                    ),
                ),
                tir.For(t, 0, 4, tir.ForKind.SERIAL, tir.Evaluate(0), annotations={"note": 1}),
            ),
        ),
    )
    func = tir.PrimFunc([a, b], body, attrs={"global_symbol": "kernel"})
    m = SymVar("m", "int32")
    c = tir.Buffer("C", (16,), "int32")
    q = SymVar("q", "int32")
    gpu = tir.For(
        q,
        0,
        16,
        tir.ForKind.THREAD_BINDING,
        c.vstore([q], q * m + tir.IntImm("int32", 3)),
        thread_binding="threadIdx.x",
    )
    gpu_func = tir.PrimFunc([c, m], gpu)
    return rx.IRModule({"kernel": func, "gpu": gpu_func})


CASES: dict[str, Callable[[], rx.IRModule]] = {
    "seed": seed_module,
    "emit_te": emit_te_module,
    "tir_vars": tir_vars_module,
    "ops": ops_module,
    "structural_ops": structural_ops_module,
    "functions": functions_module,
    "leaves": leaves_module,
    "control_flow": control_flow_module,
    "struct_info": struct_info_module,
    "duplicate_names": duplicate_names_module,
    "tir": tir_module,
    "misc": misc_module,
}


@pytest.mark.parametrize("case", list(CASES))
def test_roundtrip(case: str) -> None:
    _roundtrip(CASES[case]())


def test_tensor_with_shape_variable_roundtrips() -> None:
    shape = rx.Var("shape", rx.ShapeStructInfo(ndim=2))
    x = rx.Var("x", rx.TensorStructInfo(shape, F32))
    func = rx.Function([shape, x], rx.SeqExpr([], x), attrs={"global_symbol": "main"})
    assert 'x: R.Tensor(shape, dtype="float32")' in func.script()
    _roundtrip(rx.IRModule({"main": func}))


def test_module_attrs_roundtrip() -> None:
    mod = seed_module().with_attr("note", "hi")
    assert '    I.module_attrs({"note": "hi"})' in mod.script()
    _roundtrip(mod)


def test_to_vdevice_roundtrip() -> None:
    x = rx.Var("x", _tensor([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(op.to_vdevice(x, cpu(0))))
    _roundtrip(bb.get())


def test_size_var_declaration_roundtrips() -> None:
    n = SizeVar("n")
    x = rx.Var("x", _tensor([n]))
    func = rx.Function([x], rx.SeqExpr([], x), attrs={"global_symbol": "main"})
    _roundtrip(rx.IRModule({"main": func}))


def _scheduled_matmul(kind: str) -> tir.PrimFunc:
    n = SymVar("n")
    a = te.placeholder((n, 5), name="A")
    b = te.placeholder((5, 7), name="B")
    k = te.reduce_axis((0, 5), name="k")
    c = te.compute((n, 7), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_loop_func([a, b, c]))
    i, j = sch.get_loops("C")
    if kind == "split_guarded":
        sch.split(i, [None, 4])
        sch.vectorize(sch.split(k, [None, 3])[1])
    elif kind == "fuse_parallel":
        sch.parallel(sch.fuse(i, j))
    else:
        sch.split(k, [None, 2])
        sch.cache_reduction("C")
        sch.bind(sch.split(j, [None, 7])[1], "threadIdx.x")
    return sch.func


@pytest.mark.parametrize("kind", ["split_guarded", "fuse_parallel", "cache_bind"])
def test_scheduled_kernels_roundtrip(kind: str) -> None:
    _roundtrip(rx.IRModule({"main": _scheduled_matmul(kind)}))


def test_standalone_function_text_parses_back() -> None:
    mod = emit_te_module()
    for gvar in mod.get_global_vars():
        func = mod[gvar]
        text = func.script() if isinstance(func, tir.PrimFunc) else func.script(gvar.name_hint)
        assert text.startswith("# from relaxvm.script import")
        if isinstance(func, tir.PrimFunc):
            parsed = from_source(text)
            parsed_func = parsed[gvar.name_hint] if isinstance(parsed, rx.IRModule) else parsed
            assert tir.structural_equal(parsed_func, func)


def test_function_attribute_values_roundtrip() -> None:
    x = rx.Var("x", _tensor([2]))
    attrs = {
        "global_symbol": "main",
        "n": tir.IntImm("int64", 4),
        "values": [1, 2.5, "s", None],
        "flag": True,
        "nested": {"a": 1},
    }
    func = rx.Function([x], rx.SeqExpr([], x), attrs=attrs)
    text = rx.IRModule({"main": func}).script()
    assert 'R.func_attr({"flag": True, "n": T.int64(4), "nested": {"a": 1}, ' in text
    _roundtrip(rx.IRModule({"main": func}))


@pytest.mark.parametrize("case", ["seed", "emit_te"])
def test_legalized_and_fused_modules_roundtrip(case: str) -> None:
    from relaxvm.transform.pipelines import zero_pipeline

    _roundtrip(zero_pipeline()(CASES[case]()))
