"""The memory / VM ops the lowering passes emit: builders, argument kinds, inference, errors."""

from __future__ import annotations

import pytest

from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    DataTypeImm,
    ExternFunc,
    ObjectStructInfo,
    PrimValue,
    ShapeExpr,
    StringImm,
    TensorStructInfo,
    Tuple,
    TupleStructInfo,
    Var,
    op,
)
from relaxvm.ir.relax.op import OpError, get_op_info, infer


def test_builtin_alloc_tensor_builds_tvm_argument_kinds() -> None:
    call = op.builtin.alloc_tensor((2, 3), "float32", 0)
    assert call.op.name == "relax.builtin.alloc_tensor"  # type: ignore[attr-defined]
    shape, dtype, device, scope = call.args
    assert isinstance(shape, ShapeExpr) and [int(v) for v in shape.values] == [2, 3]
    assert isinstance(dtype, DataTypeImm) and str(dtype.value) == "float32"
    assert isinstance(device, PrimValue) and int(device.value) == 0  # type: ignore[call-overload]
    assert isinstance(scope, StringImm) and scope.value == "global"
    sinfo = infer(call)
    assert isinstance(sinfo, TensorStructInfo)
    assert str(sinfo.dtype) == "float32"
    assert [int(v) for v in sinfo.shape_values] == [2, 3]  # type: ignore[union-attr]


def test_builtin_alloc_tensor_symbolic_and_rank_only_shapes() -> None:
    n = TirVar("n", "int64")
    sinfo = infer(op.builtin.alloc_tensor(ShapeExpr([n, 4]), "int32", 0))
    assert isinstance(sinfo, TensorStructInfo)
    assert sinfo.shape_values is not None and sinfo.shape_values[0] is n
    from relaxvm.ir.relax import ShapeStructInfo

    s = Var("s", ShapeStructInfo(ndim=3))
    ranked = infer(op.builtin.alloc_tensor(s, "float32", 0))
    assert isinstance(ranked, TensorStructInfo) and ranked.ndim == 3


def test_memory_ops_infer_object_tensor_and_void() -> None:
    storage_call = op.memory.alloc_storage(ShapeExpr([96]), 0, "global", "float32")
    assert [type(a) for a in storage_call.args] == [ShapeExpr, PrimValue, StringImm, DataTypeImm]
    assert isinstance(infer(storage_call), ObjectStructInfo)
    storage = Var("storage", ObjectStructInfo())
    tensor_call = op.memory.alloc_tensor(storage, 0, (4, 6), "float32")
    sinfo = infer(tensor_call)
    assert isinstance(sinfo, TensorStructInfo) and sinfo.ndim == 2
    x = Var("x", TensorStructInfo([4, 6], "float32"))
    for kill in (op.memory.kill_tensor(x), op.memory.kill_storage(storage)):
        out = infer(kill)
        assert isinstance(out, TupleStructInfo) and out.fields == ()
        assert get_op_info(kill.op.name).purity is False  # type: ignore[attr-defined]


def test_vm_ops_argument_order_follows_tvm() -> None:
    call = op.vm.alloc_storage(ShapeExpr([64]), 0, "uint8")
    assert [type(a) for a in call.args] == [ShapeExpr, PrimValue, DataTypeImm, StringImm]
    assert isinstance(infer(call), ObjectStructInfo)
    storage = Var("s", ObjectStructInfo())
    tensor = infer(op.vm.alloc_tensor(storage, 0, (16,), "float32"))
    assert isinstance(tensor, TensorStructInfo) and tensor.ndim == 1
    out = infer(op.vm.kill_object(storage))
    assert isinstance(out, TupleStructInfo) and not out.fields


def test_call_tir_dyn_needs_a_trailing_shape() -> None:
    x = Var("x", TensorStructInfo([4], "float32"))
    f = ExternFunc("kernel")
    ok = infer(op.vm.call_tir_dyn(f, [x, x, ShapeExpr([4])]))
    assert isinstance(ok, TupleStructInfo) and not ok.fields
    with pytest.raises(OpError, match=r"relax.vm.call_tir_dyn: the last element .* shape"):
        infer(op.vm.call_tir_dyn(f, [x, x]))


def test_call_builtin_with_ctx_declares_result() -> None:
    x = Var("x", TensorStructInfo([4], "float32"))
    declared = TensorStructInfo([4], "float32")
    call = op.call_builtin_with_ctx("vm.builtin.invoke_closure", [x], declared)
    assert isinstance(call.args[0], ExternFunc)
    assert isinstance(call.args[1], Tuple)
    assert infer(call) is declared
    assert isinstance(infer(op.call_builtin_with_ctx("f", [x])), ObjectStructInfo)


def test_wrong_argument_kinds_are_errors_naming_the_op() -> None:
    with pytest.raises(OpError, match=r"relax.builtin.alloc_tensor: runtime_device_index"):
        op.builtin.alloc_tensor((2,), "float32", "cpu")
    with pytest.raises(OpError, match=r"relax.memory.alloc_storage: invalid dtype"):
        op.memory.alloc_storage((8,), 0, "global", "notadtype")
    with pytest.raises(OpError, match=r"storage_scope must be a str"):
        op.memory.alloc_storage((8,), 0, 3, "uint8")
    x = Var("x", TensorStructInfo([4], "float32"))
    from relaxvm.ir.relax import Call, Op

    bad = Call(Op.get("relax.memory.alloc_tensor"), [x, PrimValue(0), ShapeExpr([4]), x])
    with pytest.raises(OpError, match=r"relax.memory.alloc_tensor: storage .* storage object"):
        infer(bad)
    storage = Var("s", ObjectStructInfo())
    bad_dtype = Call(
        Op.get("relax.memory.alloc_tensor"), [storage, PrimValue(0), ShapeExpr([4]), x]
    )
    with pytest.raises(OpError, match=r"dtype \(argument 3\) must be a DataTypeImm"):
        infer(bad_dtype)
    with pytest.raises(OpError, match=r"func must be an ExternFunc"):
        infer(Call(Op.get("relax.call_builtin_with_ctx"), [x, Tuple([])]))


def test_invoke_pure_closure_is_pure_and_declared() -> None:
    from relaxvm.ir.relax import FuncStructInfo

    clo = Var("clo", FuncStructInfo([TensorStructInfo([4], "float32")], ObjectStructInfo()))
    x = Var("x", TensorStructInfo([4], "float32"))
    call = op.invoke_pure_closure(clo, [x], TensorStructInfo([4], "float32"))
    assert get_op_info("relax.invoke_pure_closure").purity is True
    assert isinstance(infer(call), TensorStructInfo)
