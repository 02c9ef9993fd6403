"""``.script()`` of bare Relax nodes, as TVM prints them: with ``verbose_expr=True`` the free
variables (and their symbolic dims) are declared first; statements print as statements."""

from __future__ import annotations

from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    GlobalVar,
    If,
    MatchCast,
    SeqExpr,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    op,
)


def tvar(name: str, dim: SymVar | int, cls: type = Var) -> Var:
    return cls(name, TensorStructInfo([1, dim, 3], "float32"))


def lines(node: object) -> list[str]:
    return node.script(verbose_expr=True).splitlines()  # type: ignore[attr-defined]


def test_a_variable_is_declared_after_its_symbolic_dims() -> None:
    x = SymVar("x")
    for cls in (Var, DataflowVar):
        assert lines(tvar("a", x, cls)) == [
            "x = T.int64()",
            'a: R.Tensor((1, x, 3), dtype="float32")',
            "a",
        ]


def test_each_variable_declares_its_dims_in_order_of_first_use() -> None:
    x, y = SymVar("x"), SymVar("y")
    a, b = tvar("a", x), tvar("b", y)
    assert lines(TupleGetItem(Tuple([a, b, a]), 0)) == [
        "x = T.int64()",
        'a: R.Tensor((1, x, 3), dtype="float32")',
        "y = T.int64()",
        'b: R.Tensor((1, y, 3), dtype="float32")',
        "(a, b, a)[0]",
    ]


def test_a_call_of_a_module_function_prints_its_bare_name() -> None:
    x = SymVar("x")
    a = tvar("a", x)
    call = op.call_tir(GlobalVar("tir_func"), [a], a.struct_info, tir_vars=[x])
    assert lines(call)[-1] == (
        'R.call_tir(tir_func, (a,), out_sinfo=R.Tensor((1, x, 3), dtype="float32"), '
        "tir_vars=R.shape([x]))"
    )


def test_bindings_print_annotated_after_the_free_variables() -> None:
    x = SymVar("x")
    a, b, c = tvar("a", x), tvar("b", x), tvar("c", x)
    block = BindingBlock([VarBinding(b, op.sin(a)), VarBinding(c, op.sin(b))])
    assert lines(block) == [
        "x = T.int64()",
        'a: R.Tensor((1, x, 3), dtype="float32")',
        'b: R.Tensor((1, x, 3), dtype="float32") = R.sin(a)',
        'c: R.Tensor((1, x, 3), dtype="float32") = R.sin(b)',
    ]
    assert lines(VarBinding(b, op.sin(a)))[-1] == (
        'b: R.Tensor((1, x, 3), dtype="float32") = R.sin(a)'
    )
    fixed = Var("b", TensorStructInfo([1, 5, 3], "float32"))
    cast = MatchCast(fixed, a, TensorStructInfo([1, 5, 3], "float32"))
    assert lines(cast)[-1] == (
        'b: R.Tensor((1, 5, 3), dtype="float32") = R.match_cast(a, R.Tensor((1, 5, 3), '
        'dtype="float32"))'
    )


def test_a_sequence_prints_its_dataflow_block_then_its_result() -> None:
    x = SymVar("x")
    a, b, c = tvar("a", x), tvar("b", x, DataflowVar), tvar("c", x)
    seq = SeqExpr([DataflowBlock([VarBinding(b, op.sin(a)), VarBinding(c, op.sin(b))])], c)
    assert lines(seq) == [
        "x = T.int64()",
        'a: R.Tensor((1, x, 3), dtype="float32")',
        "with R.dataflow():",
        '    b: R.Tensor((1, x, 3), dtype="float32") = R.sin(a)',
        '    c: R.Tensor((1, x, 3), dtype="float32") = R.sin(b)',
        "    R.output(c)",
        "c",
    ]


def test_an_if_prints_as_python_with_branch_declarations() -> None:
    cond = Var("a", TensorStructInfo([], "bool"))
    b = Var("b", TensorStructInfo([1, 2, 3], "float32"))
    c = Var("c", TensorStructInfo([1, 2, 3], "float32"))
    node = If(cond, SeqExpr([], b), SeqExpr([], c))
    assert lines(node) == [
        'a: R.Tensor((), dtype="bool")',
        "if a:",
        '    b: R.Tensor((1, 2, 3), dtype="float32")',
        "    b",
        "else:",
        '    c: R.Tensor((1, 2, 3), dtype="float32")',
        "    c",
    ]
    assert node.script().splitlines() == ["if a:", "    b", "else:", "    c"]
    # str() stays the one-line form used in messages.
    assert str(node).startswith("R.If(a, ")


def test_variables_named_like_the_namespaces_are_numbered() -> None:
    x = SymVar("x")
    r, t = tvar("R", x), tvar("T", x)
    assert lines(VarBinding(t, op.sin(r)))[-2:] == [
        'R_1: R.Tensor((1, x, 3), dtype="float32")',
        'T_1: R.Tensor((1, x, 3), dtype="float32") = R.sin(R_1)',
    ]


def test_without_verbose_expr_an_expression_prints_alone() -> None:
    a = tvar("a", SymVar("x"))
    assert Tuple([a, a]).script() == "(a, a)"
