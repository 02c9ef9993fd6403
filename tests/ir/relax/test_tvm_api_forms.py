"""TVM's Python API forms on the Relax IR: ``TensorStructInfo``'s parameter order and default
dtype, ``TypeError`` from op inference for a wrong argument kind or dtype, ``t[i]`` and
unpacking on tuple variables, ``ShapeExpr[i]``, ``ExternFunc.attrs``, the argument forms of
``call_tir`` / ``call_dps_packed``, and the Relax type classes (docs/tvm_compat.md)."""

from __future__ import annotations

import pytest

from relaxvm import relax
from relaxvm.errors import VMTypeError
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, ShapeExpr, TupleGetItem
from relaxvm.ir.relax.op import OpError, OpTypeError
from relaxvm.ir.relax.vdevice import VDevice


def _var(shape, dtype="float32", name="x"):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype))


# ---- TensorStructInfo(shape, dtype="float32", vdevice, ndim, span) ---------------------------
def test_tensor_struct_info_takes_tvm_parameter_order():
    dev = VDevice("llvm")
    sinfo = relax.TensorStructInfo([2, 3], "float16", dev)
    assert sinfo.vdevice is dev and sinfo.ndim == 2 and str(sinfo.dtype) == "float16"
    rank_only = relax.TensorStructInfo(None, "int32", None, 3)
    assert rank_only.ndim == 3 and rank_only.shape is None


def test_tensor_struct_info_dtype_defaults_to_float32_as_tvm():
    assert str(relax.TensorStructInfo([2]).dtype) == "float32"
    assert relax.TensorStructInfo([2], None).dtype is None
    assert relax.TensorStructInfo([2], "").dtype is None
    assert relax.TensorStructInfo(ndim=2).dtype == relax.TensorStructInfo([2, 2]).dtype


def test_ndim_in_the_old_third_position_is_refused_with_a_hint():
    with pytest.raises(VMTypeError, match=r"vdevice must be a Device, got int \(pass ndim by"):
        relax.TensorStructInfo(None, "float32", 2)  # type: ignore[arg-type]


# ---- TypeError for a wrong argument kind or dtype ---------------------------------------------
def _normalize(call):
    return BlockBuilder().normalize(call)


def test_wrong_argument_kind_is_a_type_error_and_an_op_error():
    shape = relax.Var("s", relax.ShapeStructInfo([2, 3]))
    with pytest.raises(TypeError, match="relax.tan: x must be a tensor") as info:
        _normalize(relax.op.tan(shape))
    assert isinstance(info.value, OpTypeError)
    assert isinstance(info.value, OpError) and isinstance(info.value, ValueError)
    with pytest.raises(TypeError, match="relax.add: operand 0 must be a tensor or a scalar"):
        _normalize(relax.op.add(shape, _var([2, 3])))


def test_dtype_errors_are_type_errors():
    with pytest.raises(TypeError, match="relax.add: operands must have the same dtype"):
        _normalize(relax.op.add(_var([2, 3]), _var([2, 3], "int32")))
    with pytest.raises(TypeError, match="relax.sqrt: x must have a float dtype"):
        _normalize(relax.op.sqrt(_var([2], "int64")))
    cond = _var([2], "float32", "c")
    with pytest.raises(TypeError, match="relax.where: condition must be bool"):
        _normalize(relax.op.where(cond, _var([2]), _var([2])))


def test_a_list_where_an_int_axis_is_expected_is_a_type_error():
    with pytest.raises(TypeError, match="relax.nn.softmax: axis must be an int"):
        relax.op.nn.softmax(_var([2, 3, 4]), axis=[1, 2])


def test_shape_errors_stay_value_errors():
    with pytest.raises(OpError, match="relax.reshape") as info:
        _normalize(relax.op.reshape(_var([2, 3]), (4, 2)))
    assert not isinstance(info.value, TypeError)


# ---- indexing ---------------------------------------------------------------------------------
def test_tuple_variable_indexing_and_unpacking():
    n = SymVar("n", "int64")
    first, second = relax.TensorStructInfo([n, 2], "float16"), relax.TensorStructInfo([n])
    pair = relax.Var("pair", relax.TupleStructInfo([first, second]))
    item = pair[1]
    assert isinstance(item, TupleGetItem) and item.index == 1
    assert item.struct_info == second
    a, b = pair
    assert (a.index, b.index) == (0, 1) and a.struct_info == first
    with pytest.raises(IndexError, match=r"pair\[2\]: index out of range"):
        pair[2]
    with pytest.raises(ValueError, match="not enough values to unpack"):
        _a, _b, _c = pair


def test_unpacking_a_tensor_variable_is_refused():
    with pytest.raises(VMTypeError, match="cannot unpack x: only a variable with a TupleStruct"):
        _a, _b = _var([2, 3])
    with pytest.raises(VMTypeError, match="TupleGetItem: the value indexed is not a tuple"):
        _var([2, 3])[0]


def test_shape_expr_indexing():
    n = SymVar("n", "int64")
    shape = ShapeExpr([n, 4])
    assert shape[0] is n and int(shape[1].value) == 4 and len(shape) == 2
    assert [str(v) for v in shape] == ["n", "4"]
    assert bool(ShapeExpr([])) and len(ShapeExpr([])) == 0


def test_extern_func_has_empty_attrs():
    func = relax.ExternFunc("my_ext")
    assert dict(func.attrs) == {}
    with pytest.raises(TypeError):
        func.attrs["x"] = 1  # type: ignore[index]


# ---- call_tir / call_dps_packed argument forms --------------------------------------------------
def test_call_tir_accepts_a_single_argument_and_a_list_of_tir_vars():
    m = SymVar("m", "int64")
    x = _var([1, m, 3])
    call = relax.call_tir(relax.GlobalVar("f"), args=x, out_sinfo=x.struct_info, tir_vars=[m])
    assert list(call.args[1].fields) == [x]
    assert isinstance(call.args[2], ShapeExpr) and call.args[2].values == (m,)
    assert _normalize(call).struct_info == x.struct_info


def test_call_dps_packed_accepts_a_name_and_a_single_argument():
    x = _var([4])
    call = relax.call_dps_packed("my_dps_func", args=x, out_sinfo=x.struct_info)
    assert call.args[0].global_symbol == "my_dps_func"
    assert list(call.args[1].fields) == [x]


def test_call_tir_keeps_a_tuple_valued_argument():
    out = relax.TensorStructInfo([2])
    xs = relax.Var("xs", relax.TupleStructInfo([out]))
    assert relax.call_tir(relax.GlobalVar("f"), xs, out).args[1] is xs


# ---- Relax types ------------------------------------------------------------------------------
def test_relax_types_print_and_compare():
    assert relax.ShapeType(ndim=3).script() == "R.Shape(ndim=3)"
    assert relax.ShapeType() == relax.ShapeType() and relax.ShapeType(2) != relax.ShapeType(3)
    assert str(relax.ObjectType()) == "R.Object"
    assert str(relax.PackedFuncType()) == "R.PackedFunc"
    tensor = relax.TensorType(3, "int32")
    assert (tensor.ndim, tensor.dtype) == (3, "int32")
    assert str(relax.TensorType()) == 'R.Tensor(ndim=-1, dtype="float32")'
    assert str(relax.TensorType(2, "")) == "R.Tensor(ndim=2)"
    fields = [relax.ShapeType(ndim=3), relax.ObjectType()]
    assert str(relax.TupleType(fields)) == "R.Tuple(R.Shape(ndim=3), R.Object)"
    func = relax.FuncType([relax.ObjectType()], relax.TensorType(ndim=1))
    assert str(func) == 'R.Callable((R.Object,), R.Tensor(ndim=1, dtype="float32"))'
    assert hash(relax.TupleType(fields)) == hash(relax.TupleType(list(fields)))
