"""Relax expression nodes: construction, derived struct info, immutability and text."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import IntImm
from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    FuncStructInfo,
    Function,
    GlobalVar,
    If,
    MatchCast,
    ObjectStructInfo,
    Op,
    PrimStructInfo,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    ShapeStructInfo,
    Span,
    StringImm,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
    const,
    update_struct_info,
)


def tensor_var(name: str, shape: list, dtype: str = "float32") -> Var:
    return Var(name, TensorStructInfo(shape, dtype))


def test_vars_have_identity_semantics() -> None:
    a, b = Var("x"), Var("x")
    assert a != b and a == a
    assert len({a, b}) == 2
    assert a.name_hint == "x" and a.struct_info is None
    lv = DataflowVar("lv", TensorStructInfo(dtype=None, ndim=1))
    assert isinstance(lv, Var) and str(lv) == "lv"
    with pytest.raises(VMTypeError, match=r"Var: name must be a non-empty str"):
        Var("")


def test_op_is_interned_by_name() -> None:
    add = Op.get("relax.add")
    assert add is Op.get("relax.add") is Op("relax.add")
    assert add is not Op.get("relax.multiply")
    assert add.name == "relax.add" and str(add) == "R.add"
    assert str(Op.get("custom.thing")) == 'R.Op("custom.thing")'


def test_constant_derives_static_struct_info() -> None:
    data = relaxvm.tensor(np.arange(6, dtype="int32").reshape(2, 3))
    node = Constant(data)
    assert node.struct_info == TensorStructInfo([2, 3], "int32")
    assert str(node) == 'R.const([[0, 1, 2], [3, 4, 5]], "int32")'
    assert const(1.5).struct_info == TensorStructInfo([], "float32")
    assert const([1, 2], "int8").data.dtype == "int8"
    assert str(const(np.zeros((3, 4)))) == "R.const(<3x4 float64 tensor>)"
    with pytest.raises(VMTypeError, match=r"Constant: data must be a relaxvm Tensor"):
        Constant(np.zeros(2))  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match=r"const: the tensor has dtype int32, not float32"):
        const(data, "float32")


def test_leaf_struct_info() -> None:
    n = TirVar("n")
    shape = ShapeExpr([n, 4])
    assert shape.struct_info == ShapeStructInfo([n, 4])
    assert shape.values[1] == IntImm("int64", 4)
    assert str(shape) == "R.shape([n, 4])"
    prim = PrimValue(n + 1)
    assert prim.struct_info == PrimStructInfo(value=n + 1)
    assert str(prim) == "R.prim_value(n + 1)"
    assert PrimValue(3).struct_info == PrimStructInfo(value=3)
    assert (
        StringImm("hi").struct_info == ObjectStructInfo() and str(StringImm("hi")) == 'R.str("hi")'
    )
    assert DataTypeImm("float16").value == "float16"
    assert str(DataTypeImm("float16")) == 'R.dtype("float16")'
    extern = ExternFunc("vm.builtin.alloc_storage")
    assert isinstance(extern.struct_info, FuncStructInfo) and extern.struct_info.is_opaque
    with pytest.raises(VMTypeError, match=r"DataTypeImm: .*cannot parse"):
        DataTypeImm("nope")
    with pytest.raises(VMTypeError, match=r"ShapeExpr: dimension 0 must be an int"):
        ShapeExpr([1.5])


def test_tuple_and_get_item() -> None:
    x = tensor_var("x", [2])
    s = Var("s", ShapeStructInfo(ndim=1))
    tup = Tuple([x, s])
    assert tup.struct_info == TupleStructInfo([x.struct_info, s.struct_info])
    assert len(tup) == 2 and tup[0] is x
    assert str(tup) == "(x, s)" and str(Tuple([x])) == "(x,)"
    item = TupleGetItem(tup, 1)
    assert item.struct_info == s.struct_info and str(item) == "(x, s)[1]"
    assert Tuple([x, Var("unknown")]).struct_info is None
    with pytest.raises(VMValueError, match=r"index 2 is out of range for R.Tuple\(.*\), which"):
        TupleGetItem(tup, 2)
    with pytest.raises(VMTypeError, match=r"the value indexed is not a tuple"):
        TupleGetItem(x, 0)
    with pytest.raises(VMTypeError, match=r"Tuple: field 1: expected a Relax expression"):
        Tuple([x, 3])  # type: ignore[list-item]


def test_call_node() -> None:
    x = tensor_var("x", [4])
    call = Call(Op.get("relax.sum"), [x], attrs={"axis": [0], "keepdims": False}, sinfo_args=())
    assert call.struct_info is None  # inference is the normalizer's job
    assert call.attrs["axis"] == [0]
    assert str(call) == "R.sum(x, axis=[0], keepdims=False)"
    with pytest.raises(TypeError):
        call.attrs["axis"] = [1]  # type: ignore[index]
    packed = Call(ExternFunc("my.func"), [x], sinfo_args=[TensorStructInfo([4], "float32")])
    assert str(packed) == (
        'R.call_packed("my.func", x, sinfo_args=(R.Tensor((4,), dtype="float32"),))'
    )
    assert str(Call(GlobalVar("helper"), [x])) == "cls.helper(x)"
    two = Call(
        ExternFunc("f"),
        [],
        sinfo_args=[TensorStructInfo(dtype=None, ndim=1), TensorStructInfo(dtype=None)],
    )
    assert str(two) == 'R.call_packed("f", sinfo_args=(R.Tensor(ndim=1), R.Tensor))'
    with pytest.raises(VMTypeError, match=r"Call: op must be an Op, GlobalVar, ExternFunc or Var"):
        Call(StringImm("add"), [x])
    with pytest.raises(VMTypeError, match=r"Call: argument 0: expected a Relax expression"):
        Call(Op.get("relax.add"), ["x"])  # type: ignore[list-item]
    with pytest.raises(VMTypeError, match=r"Call: sinfo_args\[0\] must be a StructInfo"):
        Call(Op.get("relax.add"), [x], sinfo_args=["R.Tensor"])  # type: ignore[list-item]


def test_bindings_blocks_seq_and_function_struct_info() -> None:
    n = TirVar("n")
    x = tensor_var("x", [n])
    lv = DataflowVar("lv", TensorStructInfo([n], "float32"))
    gv = tensor_var("gv", [n])
    block = DataflowBlock(
        [
            VarBinding(lv, Call(Op.get("relax.exp"), [x])),
            VarBinding(gv, Call(Op.get("relax.exp"), [lv])),
        ]
    )
    seq = SeqExpr([block], gv)
    assert seq.struct_info == gv.struct_info
    func = Function([x], seq, attrs={"global_symbol": "main"})
    assert func.ret_struct_info == gv.struct_info  # taken from the body
    assert func.struct_info == FuncStructInfo([x.struct_info], gv.struct_info, purity=True)
    assert func.attrs["global_symbol"] == "main"
    text = str(func)
    assert text.splitlines()[:6] == [
        "# from relaxvm.script import relax as R",
        "# from relaxvm.script import tir as T",
        "",
        "@R.function",
        'def main(x: R.Tensor(("n",), dtype="float32")) -> R.Tensor(("n",), dtype="float32"):',
        "    n = T.int64()",
    ]
    assert "        R.output(gv)" in text and text.endswith("    return gv")
    impure = Function([x], seq, ObjectStructInfo(), is_pure=False)
    assert impure.struct_info == FuncStructInfo([x.struct_info], ObjectStructInfo(), False)
    assert "@R.function(pure=False, private=True)" in str(impure)
    renamed = func.with_attr("global_symbol", "other")
    assert renamed.attrs["global_symbol"] == "other" and func.attrs["global_symbol"] == "main"
    assert renamed.body is func.body
    assert "global_symbol" not in func.without_attr("global_symbol").attrs


def test_match_cast_and_if_printing() -> None:
    m = TirVar("m")
    x = Var("x", TensorStructInfo(dtype=None, ndim=1))
    y = Var("y", TensorStructInfo([m], "float32"))
    cast = MatchCast(y, x, TensorStructInfo([m], "float32"))
    assert str(cast) == 'y = R.match_cast(x, R.Tensor((m,), dtype="float32"))'
    cond = Var("c", TensorStructInfo([], "bool"))
    branch = If(cond, SeqExpr([], x), SeqExpr([BindingBlock([cast])], y))
    out = Var("out", TensorStructInfo(dtype=None, ndim=1))
    text = str(SeqExpr([BindingBlock([VarBinding(out, branch)])], out))
    assert text.splitlines() == [
        "if c:",
        "    out: R.Tensor(ndim=1) = x",
        "else:",
        '    y: R.Tensor((m,), dtype="float32") = R.match_cast(x, R.Tensor((m,), dtype="float32"))',
        "    out: R.Tensor(ndim=1) = y",
        "return out",
    ]
    with pytest.raises(VMTypeError, match=r"MatchCast: struct_info must be a StructInfo"):
        MatchCast(y, x, "R.Tensor")  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match=r"VarBinding: var must be a Relax Var"):
        VarBinding(GlobalVar("g"), x)  # type: ignore[arg-type]
    with pytest.raises(VMTypeError, match=r"BindingBlock: binding 0 must be a VarBinding"):
        BindingBlock([x])  # type: ignore[list-item]
    with pytest.raises(VMTypeError, match=r"SeqExpr: block 0 must be a BindingBlock"):
        SeqExpr([cast], x)  # type: ignore[list-item]


def test_function_parameter_errors() -> None:
    x = tensor_var("x", [2])
    with pytest.raises(VMValueError, match=r"parameter 0 \('y'\) needs struct info"):
        Function([Var("y")], SeqExpr([], x))
    with pytest.raises(VMTypeError, match=r"parameter 1 must be a Relax Var, got GlobalVar"):
        Function([x, GlobalVar("g")], SeqExpr([], x))  # type: ignore[list-item]
    with pytest.raises(VMTypeError, match=r"ret_struct_info must be a StructInfo"):
        Function([x], SeqExpr([], x), "R.Tensor")  # type: ignore[arg-type]


def test_nodes_are_immutable_and_struct_info_is_filled_once() -> None:
    x = tensor_var("x", [2])
    call = Call(Op.get("relax.exp"), [x])
    with pytest.raises(AttributeError, match=r"Call is immutable"):
        call.args = ()  # type: ignore[misc]
    update_struct_info(call, x.struct_info)
    assert call.struct_info is x.struct_info
    with pytest.raises(AttributeError, match=r"already has struct info"):
        update_struct_info(call, ObjectStructInfo())
    with pytest.raises(VMTypeError, match=r"expected a StructInfo, got str"):
        update_struct_info(Call(Op.get("relax.exp"), [x]), "R.Tensor")  # type: ignore[arg-type]


def test_span_is_kept_and_printed() -> None:
    span = Span("model.py", 3, 9)
    x = Var("x", TensorStructInfo(dtype=None, ndim=1), span=span)
    assert x.span == Span("model.py", 3, 9) and str(x.span) == "model.py:3:9"
    assert ShapeExpr([1], span=span).span is span
    with pytest.raises(VMTypeError, match=r"span must be a Span"):
        Var("x", span="model.py:3")  # type: ignore[arg-type]


def test_copies_are_the_original_node() -> None:
    x = tensor_var("x", [2])
    call = Call(Op.get("relax.exp"), [x])
    assert copy.copy(x) is x and copy.deepcopy(call) is call
