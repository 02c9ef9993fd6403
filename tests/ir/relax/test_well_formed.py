"""The well-formedness checker: a valid module passes, and each rule has its message."""

from __future__ import annotations

import re

import pytest

from relaxvm.errors import RelaxVMError, VMTypeError
from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    IRModule,
    MatchCast,
    Op,
    PrimStructInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeStructInfo,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    WellFormedError,
    is_well_formed,
    well_formed,
)

ADD = Op.get("relax.add")
F32_4 = TensorStructInfo([4], "float32")


def tvar(name: str, sinfo: object = F32_4) -> Var:
    return Var(name, sinfo)  # type: ignore[arg-type]


def main_module(*blocks: BindingBlock, body: object, params: list[Var]) -> IRModule:
    func = Function(params, SeqExpr(list(blocks), body))  # type: ignore[arg-type]
    return IRModule({"main": func})


def expect_error(mod_or_func: object, message: str) -> None:
    with pytest.raises(WellFormedError, match=re.escape(message)):
        well_formed(mod_or_func)  # type: ignore[arg-type]
    assert not is_well_formed(mod_or_func)  # type: ignore[arg-type]


def test_error_type_and_hierarchy() -> None:
    assert issubclass(WellFormedError, RelaxVMError)
    assert issubclass(WellFormedError, ValueError)
    with pytest.raises(VMTypeError, match=r"expected an IRModule or a relax Function, got int"):
        well_formed(3)  # type: ignore[arg-type]


def test_valid_module_passes() -> None:
    n, m = TirVar("n"), TirVar("m")
    # helper(a: R.Tensor((n,))) with a dataflow block whose output leaves the block.
    a = Var("a", TensorStructInfo([n], "float32"))
    lv = DataflowVar("lv", TensorStructInfo([n], "float32"))
    gv = Var("gv", TensorStructInfo([n], "float32"))
    helper_body = SeqExpr(
        [DataflowBlock([VarBinding(lv, Call(ADD, [a, a])), VarBinding(gv, Call(ADD, [lv, a]))])],
        gv,
    )
    helper = Function([a], helper_body, attrs={"global_symbol": "helper"})
    # main: match_cast defines m; an If (outside dataflow) with SeqExpr branches; a call to
    # helper through its GlobalVar; a packed call; tuples; a nested function capturing x.
    x = Var("x", TensorStructInfo(ndim=1, dtype="float32"))
    cond = Var("cond", TensorStructInfo([], "bool"))
    y = Var("y", TensorStructInfo([m], "float32"))
    z = Var("z", TensorStructInfo([m], "float32"))
    branch_value = Var("t", TensorStructInfo([m], "float32"))
    chosen = Var("chosen", TensorStructInfo([m], "float32"))
    pair = Var("pair", None)
    first = Var("first", TensorStructInfo([m], "float32"))
    inner_param = Var("p", TensorStructInfo([m], "float32"))
    q = Var("q", TensorStructInfo([m], "float32"))
    inner_body = SeqExpr([BindingBlock([VarBinding(q, Call(ADD, [inner_param, x]))])], q)
    inner = Function([inner_param], inner_body)
    closure = Var("closure", inner.struct_info)
    shape = Var("shape", ShapeStructInfo([m]))
    bindings = [
        MatchCast(y, x, TensorStructInfo([m], "float32")),
        VarBinding(z, Call(GlobalVar("helper"), [y])),
        VarBinding(
            chosen,
            If(
                cond,
                SeqExpr(
                    [BindingBlock([VarBinding(branch_value, Call(ADD, [z, y]))])], branch_value
                ),
                SeqExpr([], z),
            ),
        ),
        VarBinding(pair, Tuple([chosen, PrimValue(m)])),
        VarBinding(first, TupleGetItem(pair, 0)),
        VarBinding(closure, inner),
        VarBinding(shape, ShapeExpr([m])),
    ]
    out = Var("out", TensorStructInfo([m], "float32"))
    bindings.append(
        VarBinding(out, Call(ExternFunc("my.packed"), [first, shape], sinfo_args=[out.struct_info]))
    )
    main = Function([x, cond], SeqExpr([BindingBlock(bindings)], out))
    mod = IRModule({"main": main, "helper": helper})
    well_formed(mod, check_struct_info=False)  # `pair` has no struct info
    assert is_well_formed(helper)
    with pytest.raises(WellFormedError, match=r"variable 'pair' has no struct info"):
        well_formed(mod)


def test_use_before_definition_names_function_and_binding() -> None:
    x, z, y = tvar("x"), tvar("z"), tvar("y")
    mod = main_module(BindingBlock([VarBinding(y, Call(ADD, [x, z]))]), body=y, params=[x])
    expect_error(
        mod,
        "in function 'main', binding 'y = R.add(x, z)': variable 'z' is used before it is defined",
    )


def test_variable_defined_twice() -> None:
    x, y = tvar("x"), tvar("y")
    block = BindingBlock([VarBinding(y, Call(ADD, [x, x])), VarBinding(y, Call(ADD, [y, x]))])
    expect_error(
        main_module(block, body=y, params=[x]),
        "in function 'main', binding 'y = R.add(y, x)': variable 'y' is defined more than once",
    )
    shadow = BindingBlock([VarBinding(x, Call(ADD, [x, x]))])
    expect_error(main_module(shadow, body=x, params=[x]), "variable 'x' is defined more than once")


def test_dataflow_var_used_after_its_block() -> None:
    x, y = tvar("x"), tvar("y")
    lv = DataflowVar("lv", F32_4)
    blocks = (
        DataflowBlock([VarBinding(lv, Call(ADD, [x, x]))]),
        BindingBlock([VarBinding(y, Call(ADD, [lv, x]))]),
    )
    expect_error(
        main_module(*blocks, body=y, params=[x]),
        "in function 'main', binding 'y = R.add(lv, x)': dataflow variable 'lv' is used outside "
        "the dataflow block that defines it",
    )


def test_seq_expr_result_uses_block_local_dataflow_var() -> None:
    x, lv = tvar("x"), DataflowVar("lv", F32_4)
    block = DataflowBlock([VarBinding(lv, Call(ADD, [x, x]))])
    expect_error(
        main_module(block, body=lv, params=[x]),
        "in function 'main', result 'lv': dataflow variable 'lv' is used outside the dataflow "
        "block that defines it",
    )


def test_dataflow_var_defined_outside_a_dataflow_block_or_as_parameter() -> None:
    x, lv = tvar("x"), DataflowVar("lv", F32_4)
    block = BindingBlock([VarBinding(lv, Call(ADD, [x, x]))])
    expect_error(
        main_module(block, body=x, params=[x]),
        "binding 'lv = R.add(x, x)': dataflow variable 'lv' is defined outside a dataflow block",
    )
    expect_error(
        main_module(body=lv, params=[lv]),
        "in function 'main', parameter 'lv': parameter 'lv' is a DataflowVar",
    )


def test_plain_vars_in_a_dataflow_block_are_its_outputs() -> None:
    x, gv, lv = tvar("x"), tvar("gv"), DataflowVar("lv", F32_4)
    block = DataflowBlock([VarBinding(lv, Call(ADD, [x, x])), VarBinding(gv, Call(ADD, [lv, lv]))])
    well_formed(main_module(block, body=gv, params=[x]))


def test_symbolic_var_used_before_definition() -> None:
    n, m = TirVar("n"), TirVar("m")
    x = tvar("x", TensorStructInfo([n], "float32"))
    y = tvar("y", TensorStructInfo([m], "float32"))
    block = BindingBlock([VarBinding(y, Call(ADD, [x, x]))])
    expect_error(
        main_module(block, body=y, params=[x]),
        "in function 'main', binding 'y = R.add(x, x)': symbolic variable 'm' is used before it "
        "is defined",
    )
    # In a call's sinfo_args too.
    out = tvar("out", TensorStructInfo([n], "float32"))
    call = Call(ExternFunc("f"), [x], sinfo_args=[TensorStructInfo([m * 2], "float32")])
    expect_error(
        main_module(BindingBlock([VarBinding(out, call)]), body=out, params=[x]),
        "symbolic variable 'm' is used before it is defined",
    )


def test_parameters_define_bare_symbolic_dims_for_each_other() -> None:
    n = TirVar("n")
    doubled = tvar("x", TensorStructInfo([n * 2], "float32"))
    plain = tvar("y", TensorStructInfo([n], "float32"))
    well_formed(main_module(body=doubled, params=[doubled, plain]))
    only_compound = tvar("x", TensorStructInfo([n * 2], "float32"))
    expect_error(
        main_module(body=only_compound, params=[only_compound]),
        "in function 'main', parameter 'x': symbolic variable 'n' is used before it is defined",
    )
    value_param = tvar("k", PrimStructInfo(value=n))
    well_formed(main_module(body=doubled, params=[doubled, value_param]))


def test_match_cast_defines_symbolic_vars_for_later_bindings() -> None:
    m = TirVar("m")
    x = tvar("x", TensorStructInfo(ndim=1, dtype="float32"))
    y = tvar("y", TensorStructInfo([m], "float32"))
    z = tvar("z", TensorStructInfo([m], "float32"))
    good = BindingBlock(
        [MatchCast(y, x, TensorStructInfo([m], "float32")), VarBinding(z, Call(ADD, [y, y]))]
    )
    well_formed(main_module(good, body=z, params=[x]))
    bad = BindingBlock(
        [VarBinding(z, Call(ADD, [x, x])), MatchCast(y, x, TensorStructInfo([m], "float32"))]
    )
    expect_error(main_module(bad, body=z, params=[x]), "symbolic variable 'm' is used before")


def test_shape_variable_in_annotation_must_be_defined() -> None:
    x = tvar("x")
    shape = Var("s", ShapeStructInfo(ndim=1))
    y = tvar("y", TensorStructInfo(shape, "float32"))
    block = BindingBlock([VarBinding(y, Call(ADD, [x, x]))])
    expect_error(
        main_module(block, body=y, params=[x]), "variable 's' is used before it is defined"
    )


def test_global_var_must_name_a_module_function() -> None:
    x, y = tvar("x"), tvar("y")
    block = BindingBlock([VarBinding(y, Call(GlobalVar("missing"), [x]))])
    mod = main_module(block, body=y, params=[x])
    expect_error(
        mod,
        "in function 'main', binding 'y = cls.missing(x)': GlobalVar 'missing' does not name a "
        "function of the module (functions: main)",
    )
    well_formed(mod["main"])  # a lone function has no module to check against


def test_global_symbol_must_match_global_var_name() -> None:
    x = tvar("x")
    func = Function([x], SeqExpr([], x), attrs={"global_symbol": "other"})
    expect_error(
        IRModule({"main": func}),
        "in function 'main': its global_symbol attribute 'other' differs from its GlobalVar "
        "name 'main'",
    )


def test_function_body_must_be_a_seq_expr() -> None:
    x = tvar("x")
    expect_error(
        IRModule({"main": Function([x], Call(ADD, [x, x]))}),
        "in function 'main', body 'R.add(x, x)': the body must be a SeqExpr",
    )


def test_if_rules() -> None:
    x, cond, y = tvar("x"), tvar("c", TensorStructInfo([], "bool")), tvar("y")
    in_dataflow = DataflowBlock([VarBinding(y, If(cond, SeqExpr([], x), SeqExpr([], x)))])
    expect_error(
        main_module(in_dataflow, body=y, params=[x, cond]),
        "an If may not appear inside a dataflow block",
    )
    bare_branch = BindingBlock([VarBinding(y, If(cond, x, SeqExpr([], x)))])
    expect_error(
        main_module(bare_branch, body=y, params=[x, cond]),
        "the true branch of an If must be a SeqExpr, got Var",
    )
    # A variable bound inside a branch is not visible after the If.
    inner = tvar("inner")
    branch = SeqExpr([BindingBlock([VarBinding(inner, Call(ADD, [x, x]))])], inner)
    z = tvar("z")
    leaks = BindingBlock(
        [VarBinding(y, If(cond, branch, SeqExpr([], x))), VarBinding(z, Call(ADD, [inner, y]))]
    )
    expect_error(
        main_module(leaks, body=z, params=[x, cond]),
        "binding 'z = R.add(inner, y)': variable 'inner' is used outside the scope that defines it",
    )


def test_nested_function_errors_name_the_inner_function() -> None:
    x, p, q = tvar("x"), tvar("p"), tvar("q")
    inner = Function([p], SeqExpr([BindingBlock([VarBinding(q, Call(ADD, [p, x]))])], q))
    local = Var("inner", inner.struct_info)
    well_formed(main_module(BindingBlock([VarBinding(local, inner)]), body=x, params=[x]))
    stray = tvar("stray")
    broken = Function([p], SeqExpr([BindingBlock([VarBinding(q, Call(ADD, [p, stray]))])], q))
    local = Var("inner", broken.struct_info)
    expect_error(
        main_module(BindingBlock([VarBinding(local, broken)]), body=x, params=[x]),
        "in function 'main.inner', binding 'q = R.add(p, stray)': variable 'stray' is used "
        "before it is defined",
    )


def test_nested_seq_expr_inside_a_dataflow_block_keeps_the_block_dataflow() -> None:
    x, gv = tvar("x"), tvar("gv")
    lv, inner = DataflowVar("lv", F32_4), tvar("inner")
    nested = SeqExpr([BindingBlock([VarBinding(inner, Call(ADD, [x, x]))])], inner)
    later = DataflowVar("later", F32_4)
    block = DataflowBlock(
        [VarBinding(lv, nested), VarBinding(later, Call(ADD, [lv, x])), VarBinding(gv, later)]
    )
    well_formed(main_module(block, body=gv, params=[x]))
