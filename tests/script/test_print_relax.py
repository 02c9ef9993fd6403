"""Golden text of the Relax script printer: ``IRModule.script()``, ``Function.script()``, str()."""

from __future__ import annotations

import numpy as np

from relaxvm import te
from relaxvm.ir import IntImm
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.ir.relax.text import RelaxPrinter
from relaxvm.runtime import cpu

F32 = "float32"
HEADER_IRT = (
    "# from relaxvm.script import ir as I\n"
    "# from relaxvm.script import relax as R\n"
    "# from relaxvm.script import tir as T\n"
)
HEADER_IR = "# from relaxvm.script import ir as I\n# from relaxvm.script import relax as R\n"


def _tensor(shape: list, dtype: str = F32) -> rx.TensorStructInfo:
    return rx.TensorStructInfo(shape, dtype)


def _func(params: list, bindings: list, result: rx.Expr, **kwargs: object) -> rx.Function:
    body = rx.SeqExpr([rx.BindingBlock(bindings)] if bindings else [], result)
    return rx.Function(params, body, **kwargs)  # type: ignore[arg-type]


def test_seed_module_prints_as_tvmscript() -> None:
    x = rx.Var("x", _tensor([3, 4]))
    bb = rx.BlockBuilder()

    def add(a: te.Tensor, b: te.Tensor) -> te.Tensor:
        return te.compute((3, 4), lambda i, j: a[i, j] + b[i, j], name="C")

    with bb.function("main", [x]):
        with bb.dataflow():
            lv = bb.emit_te(add, x, x)
            y = bb.emit(op.add(lv, x))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    expected = HEADER_IRT + (
        "\n"
        "@I.ir_module\n"
        "class Module:\n"
        "    @T.prim_func(private=True)\n"
        '    def add(x: T.Buffer((T.int64(3), T.int64(4)), "float32"), '
        'C: T.Buffer((T.int64(3), T.int64(4)), "float32")):\n'
        '        T.func_attr({"tir.noalias": True})\n'
        "        for i, j in T.grid(T.int64(3), T.int64(4)):\n"
        '            with T.block("C"):\n'
        '                v_i, v_j = T.axis.remap("SS", [i, j])\n'
        "                T.reads(x[v_i, v_j])\n"
        "                T.writes(C[v_i, v_j])\n"
        "                C[v_i, v_j] = x[v_i, v_j] + x[v_i, v_j]\n"
        "\n"
        "    @R.function\n"
        '    def main(x: R.Tensor((3, 4), dtype="float32")) -> R.Tensor((3, 4), dtype="float32"):\n'
        "        with R.dataflow():\n"
        '            lv = R.call_tir(cls.add, (x,), out_sinfo=R.Tensor((3, 4), dtype="float32"))\n'
        '            lv1: R.Tensor((3, 4), dtype="float32") = R.add(lv, x)\n'
        '            gv: R.Tensor((3, 4), dtype="float32") = lv1\n'
        "            R.output(gv)\n"
        "        return gv\n"
    )
    mod = bb.get()
    assert mod.script() == expected
    assert str(mod) == expected


def test_symbolic_dims_are_strings_in_the_signature_and_declared_in_the_body() -> None:
    n, m = SymVar("n"), SymVar("m")
    x = rx.Var("x", _tensor([n, n * 2]))
    y = rx.Var("y", rx.TensorStructInfo(dtype=F32, ndim=1))
    cast = rx.Var("cast", _tensor([m]))
    shape = rx.Var("s", rx.ShapeStructInfo([n, m]))
    func = _func(
        [x, y],
        [rx.MatchCast(cast, y, _tensor([m])), rx.VarBinding(shape, rx.ShapeExpr([n, m]))],
        cast,
        attrs={"global_symbol": "main"},
    )
    assert func.script().splitlines() == [
        "# from relaxvm.script import relax as R",
        "# from relaxvm.script import tir as T",
        "",
        "@R.function",
        'def main(x: R.Tensor(("n", "n * 2"), dtype="float32"), y: R.Tensor(dtype="float32", '
        'ndim=1)) -> R.Tensor(("m",), dtype="float32"):',
        "    n = T.int64()",
        "    m = T.int64()",
        '    cast: R.Tensor((m,), dtype="float32") = R.match_cast(y, R.Tensor((m,), '
        'dtype="float32"))',
        "    s: R.Shape([n, m]) = R.shape([n, m])",
        "    return cast",
    ]


def test_decorators_attributes_and_purity() -> None:
    x = rx.Var("x", _tensor([2]))
    private = _func([x], [], x, attrs={"custom": "yes", "level": 2})
    impure = _func([x], [], x, is_pure=False, attrs={"global_symbol": "f"})
    renamed = _func([x], [], x, attrs={"global_symbol": "exported"})
    mod = rx.IRModule({"helper": private, "f": impure, "g": renamed})
    lines = mod.script().splitlines()
    assert lines[3:] == [
        "@I.ir_module",
        "class Module:",
        "    @R.function(pure=False)",
        '    def f(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
        "        return x",
        "",
        "    @R.function",
        '    def g(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
        '        R.func_attr({"global_symbol": "exported"})',
        "        return x",
        "",
        "    @R.function(private=True)",
        '    def helper(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
        '        R.func_attr({"custom": "yes", "level": 2})',
        "        return x",
    ]
    # Standalone, a function without a global_symbol is private and named main.
    assert private.script().splitlines()[2] == "@R.function(private=True)"
    assert private.script().splitlines()[3].startswith("def main(")
    assert impure.script(name="other").splitlines()[2:4] == [
        "@R.function(pure=False)",
        'def other(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
    ]


def test_leaves_and_constants() -> None:
    n = SymVar("n")
    printer = RelaxPrinter()
    assert printer.expr(rx.const(1.5, F32)) == 'R.const(1.5, "float32")'
    assert printer.expr(rx.const(np.arange(4, dtype="int32").reshape(2, 2))) == (
        'R.const([[0, 1], [2, 3]], "int32")'
    )
    assert printer.expr(rx.const([np.nan, -np.inf], F32)) == (
        'R.const([float("nan"), float("-inf")], "float32")'
    )
    big = rx.const(np.zeros((3, 4), F32))
    assert printer.expr(big).count("0.0") == 12  # scripts print every element
    assert str(big) == "R.const(<3x4 float32 tensor>)"  # messages summarize
    assert printer.expr(rx.ShapeExpr([n, 4])) == "R.shape([n, 4])"
    assert printer.expr(rx.PrimValue(IntImm("int32", 3))) == "R.prim_value(T.int32(3))"
    assert printer.expr(rx.PrimValue(0.5)) == "R.prim_value(T.float32(0.5))"
    assert printer.expr(rx.StringImm('a "b"\n')) == 'R.str("a \\"b\\"\\n")'
    assert printer.expr(rx.DataTypeImm("float16")) == 'R.dtype("float16")'
    x = rx.Var("x", _tensor([2]))
    assert printer.expr(rx.Tuple([])) == "()"
    assert printer.expr(rx.Tuple([x])) == "(x,)"
    assert printer.expr(rx.TupleGetItem(rx.Tuple([x, x]), 1)) == "(x, x)[1]"
    assert printer.expr(rx.ExternFunc("vm.builtin.f")) == 'R.ExternFunc("vm.builtin.f")'
    assert printer.expr(rx.GlobalVar("lambda")) == "cls.lambda_"


def test_struct_info_forms() -> None:
    n = SymVar("n")
    shape_var = rx.Var("s", rx.ShapeStructInfo(ndim=2))
    printer = RelaxPrinter()
    cases = {
        rx.TensorStructInfo([n, 4], F32): 'R.Tensor((n, 4), dtype="float32")',
        rx.TensorStructInfo([], "bool"): 'R.Tensor((), dtype="bool")',
        rx.TensorStructInfo(dtype=F32, ndim=2): 'R.Tensor(dtype="float32", ndim=2)',
        rx.TensorStructInfo(dtype=None, ndim=3): "R.Tensor(ndim=3)",
        rx.TensorStructInfo(dtype=None): "R.Tensor",
        rx.TensorStructInfo(shape_var, F32): 'R.Tensor(s, dtype="float32")',
        rx.TensorStructInfo([2], F32, vdevice=cpu(0)): (
            'R.Tensor((2,), dtype="float32", vdevice="cpu:0")'
        ),
        rx.ShapeStructInfo([n, 3]): "R.Shape([n, 3])",
        rx.ShapeStructInfo(ndim=-1): "R.Shape(ndim=-1)",
        rx.PrimStructInfo("int32"): 'R.Prim("int32")',
        rx.PrimStructInfo(value=n * 2): "R.Prim(value=n * 2)",
        rx.TupleStructInfo([]): "R.Tuple",
        rx.TupleStructInfo([rx.ObjectStructInfo(), rx.PrimStructInfo("bool")]): (
            'R.Tuple(R.Object, R.Prim("bool"))'
        ),
        rx.FuncStructInfo([rx.ObjectStructInfo()], rx.ObjectStructInfo()): (
            "R.Callable((R.Object,), R.Object)"
        ),
        rx.FuncStructInfo([], rx.ObjectStructInfo(), purity=False): (
            "R.Callable((), R.Object, purity=False)"
        ),
        rx.FuncStructInfo.opaque_func(): "R.Callable(purity=False)",
        rx.FuncStructInfo.opaque_func(_tensor([2]), purity=True): (
            'R.Callable(ret=R.Tensor((2,), dtype="float32"))'
        ),
    }
    for info, text in cases.items():
        assert printer.sinfo(info) == text


def test_if_prints_both_branches_and_collapses_the_result_binding() -> None:
    cond = rx.Var("c", _tensor([], "bool"))
    x = rx.Var("x", _tensor([2]))
    then_value = rx.Var("t", _tensor([2]))
    branch = rx.If(
        cond,
        rx.SeqExpr([rx.BindingBlock([rx.VarBinding(then_value, op.exp(x))])], then_value),
        rx.SeqExpr([], x),
    )
    out = rx.Var("out", _tensor([2]))
    func = _func([cond, x], [rx.VarBinding(out, branch)], out, attrs={"global_symbol": "main"})
    assert func.script().splitlines()[4:] == [
        "    if c:",
        '        out: R.Tensor((2,), dtype="float32") = R.exp(x)',
        "    else:",
        '        out: R.Tensor((2,), dtype="float32") = x',
        "    return out",
    ]


def test_nested_function_and_closure_calls() -> None:
    x = rx.Var("x", _tensor([2]))
    a = rx.Var("a", _tensor([2]))
    inner = _func([a], [], a)
    f = rx.Var("f", inner.struct_info)
    y = rx.Var("y", _tensor([2]))
    clo = rx.Var("clo", rx.ObjectStructInfo())
    z = rx.Var("z", _tensor([2]))
    gv = rx.GlobalVar("helper")
    func = _func(
        [x],
        [
            rx.VarBinding(f, inner),
            rx.VarBinding(y, rx.Call(f, [x])),
            rx.VarBinding(clo, op.make_closure(gv, [x])),
            rx.VarBinding(z, op.invoke_closure(clo, [y], _tensor([2]))),
        ],
        z,
        attrs={"global_symbol": "main"},
    )
    assert func.script().splitlines()[3:] == [
        'def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
        "    @R.function",
        '    def f(a: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):',
        "        return a",
        '    y: R.Tensor((2,), dtype="float32") = f(x)',
        "    clo: R.Object = R.make_closure(cls.helper, (x,))",
        '    z: R.Tensor((2,), dtype="float32") = R.invoke_closure(clo, (y,), '
        'sinfo_args=(R.Tensor((2,), dtype="float32"),))',
        "    return z",
    ]


def test_packed_calls_and_dps_calls() -> None:
    x = rx.Var("x", _tensor([2]))
    printer = RelaxPrinter()
    out = _tensor([2])
    assert printer.call(op.call_packed("f", x, sinfo_args=[out])) == (
        'R.call_packed("f", x, sinfo_args=(R.Tensor((2,), dtype="float32"),))'
    )
    assert printer.call(op.call_packed("g", x)) == 'R.call_packed("g", x)'
    assert printer.call(op.call_dps_packed("h", [x], [out, out])) == (
        'R.call_dps_packed("h", (x,), out_sinfo=[R.Tensor((2,), dtype="float32"), '
        'R.Tensor((2,), dtype="float32")])'
    )
    # A tuple-valued variable is passed as it is (a lone tensor would become ``(x,)``).
    xs = rx.Var("xs", rx.TupleStructInfo([out]))
    assert printer.call(op.call_tir(rx.GlobalVar("k"), xs, rx.TupleStructInfo([out]))) == (
        'R.call_tir(cls.k, xs, out_sinfo=R.Tuple(R.Tensor((2,), dtype="float32")))'
    )
    assert printer.call(op.sum(x, axis=[0], keepdims=True)) == ("R.sum(x, axis=[0], keepdims=True)")
    assert printer.call(rx.Call(rx.Op.get("custom.op"), [x])) == 'R.Op("custom.op")(x)'


def test_distinct_variables_with_one_name_print_distinctly() -> None:
    n1, n2 = SymVar("n"), SymVar("n")
    x1 = rx.Var("x", _tensor([n1]))
    x2 = rx.Var("x", _tensor([n2]))
    shadow = rx.Var("R", _tensor([n1]))
    func = _func([x1, x2], [rx.VarBinding(shadow, op.add(x1, x1))], shadow)
    lines = func.script().splitlines()
    assert lines[4] == (
        'def main(x: R.Tensor(("n",), dtype="float32"), x_1: R.Tensor(("n_1",), '
        'dtype="float32")) -> R.Tensor(("n",), dtype="float32"):'
    )
    assert lines[5:7] == ["    n = T.int64()", "    n_1 = T.int64()"]
    assert lines[7] == '    R_1: R.Tensor((n,), dtype="float32") = R.add(x, x)'


def test_one_line_text_for_messages() -> None:
    x = rx.Var("x", _tensor([2]))
    y = rx.Var("y", _tensor([2]))
    binding = rx.VarBinding(y, op.add(x, x))
    assert str(binding) == "y = R.add(x, x)"
    assert str(op.add(y, x)) == "R.add(y, x)"
    assert str(rx.BindingBlock([binding])) == 'y: R.Tensor((2,), dtype="float32") = R.add(x, x)'
    flow = rx.DataflowBlock([binding])
    assert str(flow).splitlines()[-1] == "    R.output(y)"


def test_module_attrs_and_empty_module() -> None:
    assert rx.IRModule().script() == (
        "# from relaxvm.script import ir as I\n\n@I.ir_module\nclass Module:\n    pass\n"
    )
    mod = rx.IRModule(attrs={"name": "m", "sizes": [1, 2]})
    assert '    I.module_attrs({"name": "m", "sizes": [1, 2]})' in mod.script()
    assert HEADER_IR not in mod.script()  # nothing uses R
