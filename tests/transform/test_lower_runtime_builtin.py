"""LowerRuntimeBuiltin and ComputePrimValue against hand-built expected IR."""

from __future__ import annotations

import pytest

from relaxvm.errors import CompileError
from relaxvm.ir import cast
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.runtime import Device
from relaxvm.transform import ComputePrimValue, LowerRuntimeBuiltin

from ._lower_helpers import (
    VOID,
    Seq,
    assert_same,
    builtin_alloc,
    function,
    gv,
    kernel,
    mem_storage,
    mem_tensor,
    module,
    param,
    sym,
    tensor,
)


def _packed(name: str, args: list[rx.Expr], sinfo: rx.StructInfo) -> rx.Call:
    return rx.Call(rx.ExternFunc(name), args, None, [sinfo], sinfo)


def test_memory_ops_become_vm_ops() -> None:
    def build(lowered: bool) -> rx.Function:
        x = param("x", [2, 3])
        s = Seq()
        if lowered:
            storage = s.let("storage", op.vm.alloc_storage(rx.ShapeExpr([24]), 0, "uint8"))
            a = s.let("a", op.vm.alloc_tensor(storage, 0, rx.ShapeExpr([2, 3]), "float32"))
            s.void(op.vm.kill_object(storage))
            s.void(op.vm.kill_object(a))
        else:
            storage = s.let("storage", mem_storage(24))
            a = s.let("a", mem_tensor(storage, [2, 3]))
            s.void(op.memory.kill_storage(storage))
            s.void(op.memory.kill_tensor(a))
        return function([x], [s.block()], x)

    after = LowerRuntimeBuiltin()(module(main=build(False)))["main"]
    assert_same(after, build(True))
    storage_call = after.body.blocks[0].bindings[0].value
    # The storage's dtype becomes uint8 whatever the hint was, and the scope comes last.
    assert str(storage_call.args[2].value) == "uint8"
    assert storage_call.args[3].value == "global"


def test_call_tir_dyn_becomes_the_packed_builtin_with_flat_arguments() -> None:
    n = sym("n")
    mod = module(k=kernel())
    k = gv(mod, "k")
    x = param("x", [n])
    out = param("out", [n])
    s = Seq()
    s.void(op.vm.call_tir_dyn(k, [x, out, rx.ShapeExpr([n])]))
    mod["main"] = function([x, out], [s.block()], out)
    after = LowerRuntimeBuiltin()(mod)["main"]

    x2, out2 = param("x", [n]), param("out", [n])
    e = Seq()
    e.void(_packed("vm.builtin.call_tir_dyn", [k, x2, out2, rx.ShapeExpr([n])], VOID))
    assert_same(after, function([x2, out2], [e.block()], out2))


def test_value_ops_become_packed_builtins() -> None:
    def build(lowered: bool) -> rx.Function:
        x = param("x", [2, 3])
        ints = param("ints", [2], "int64")
        s = Seq()
        if lowered:
            r = s.let(
                "r", _packed("vm.builtin.reshape", [x, rx.ShapeExpr([6])], tensor([6])), tensor([6])
            )
            shp = s.let(
                "shp",
                _packed("vm.builtin.shape_of", [r], rx.ShapeStructInfo([6])),
                rx.ShapeStructInfo([6]),
            )
            t2s = s.let(
                "t2s",
                _packed("vm.builtin.tensor_to_shape", [ints], rx.ShapeStructInfo(ndim=2)),
                rx.ShapeStructInfo(ndim=2),
            )
            null = s.let(
                "null",
                _packed("vm.builtin.null_value", [], rx.ObjectStructInfo()),
                rx.ObjectStructInfo(),
            )
            moved = s.let(
                "moved",
                _packed(
                    "vm.builtin.to_device",
                    [x, rx.PrimValue(1), rx.PrimValue(0)],
                    rx.TensorStructInfo([2, 3], "float32", vdevice=Device(1, 0)),
                ),
                rx.TensorStructInfo([2, 3], "float32", vdevice=Device(1, 0)),
            )
        else:
            r = s.let("r", op.reshape(x, (6,)))
            shp = s.let("shp", op.shape_of(r))
            t2s = s.let("t2s", op.tensor_to_shape(ints))
            null = s.let("null", op.null_value())
            moved = s.let("moved", op.to_vdevice(x, Device(1, 0)))
        return function([x, ints], [s.block()], rx.Tuple([r, shp, t2s, null, moved]))

    after = LowerRuntimeBuiltin()(module(main=build(False)))["main"]
    assert_same(after, build(True))


def test_closures_become_make_closure_and_invoke_closure_with_context() -> None:
    y = param("y", [4])
    z = param("z", [4])
    mod = module(lifted=function([y, z], [], y))
    lifted = gv(mod, "lifted")

    def build(lowered: bool) -> rx.Function:
        x = param("x", [4])
        s = Seq()
        if lowered:
            clo = s.let(
                "clo",
                _packed("vm.builtin.make_closure", [lifted, x], rx.ObjectStructInfo()),
                rx.ObjectStructInfo(),
            )
            res = s.let(
                "res",
                op.call_builtin_with_ctx("vm.builtin.invoke_closure", [clo, x], tensor([4])),
                tensor([4]),
            )
        else:
            clo = s.let("clo", op.make_closure(lifted, [x]))
            res = s.let("res", op.invoke_closure(clo, [x], tensor([4])))
        return function([x], [s.block()], res)

    mod["main"] = build(False)
    after = LowerRuntimeBuiltin()(mod)["main"]
    assert_same(after, build(True))


def test_leftover_builtin_alloc_tensor_is_a_compile_error() -> None:
    x = param("x", [4])
    s = Seq()
    a = s.let("leftover", builtin_alloc([4]))
    mod = module(main=function([x], [s.block()], a))
    with pytest.raises(
        CompileError,
        match=r"LowerRuntimeBuiltin: function 'main', binding 'leftover': "
        r"R.builtin.alloc_tensor should have been lowered earlier.*LowerAllocTensor",
    ):
        LowerRuntimeBuiltin()(mod)


def test_functions_without_builtins_are_unchanged() -> None:
    x = param("x", [4])
    s = Seq()
    y = s.let("y", op.add(x, x))
    main = function([x], [s.block()], y)
    assert LowerRuntimeBuiltin()(module(main=main))["main"] is main


# ---- ComputePrimValue -------------------------------------------------------------------------
def test_compute_prim_value_folds_and_simplifies_symbolic_values() -> None:
    n = sym("n")
    x = param("x", [n])
    s = Seq()
    folded = s.let("folded", rx.PrimValue(n - n + 4))
    simplified = s.let("simplified", rx.PrimValue(n * 2 + n))
    kept = s.let("kept", rx.PrimValue(n))
    mod = module(main=function([x], [s.block()], rx.Tuple([folded, simplified, kept])))
    after = ComputePrimValue()(mod)["main"]
    values = [b.value.value for b in after.body.blocks[0].bindings]
    assert str(values[0]) == "4"
    assert str(values[1]) == str(n * 3)
    assert values[2] is n


def test_compute_prim_value_rejects_symbolic_floats() -> None:
    n = sym("n")
    x = param("x", [n])
    s = Seq()
    half = s.let("half", rx.PrimValue(cast(n, "float32") * 0.5))
    mod = module(main=function([x], [s.block()], half))
    with pytest.raises(
        CompileError, match=r"ComputePrimValue: function 'main', binding 'half'.*float32"
    ):
        ComputePrimValue()(mod)


def test_compute_prim_value_leaves_constants_alone() -> None:
    x = param("x", [4])
    s = Seq()
    c = s.let("c", rx.PrimValue(3))
    main = function([x], [s.block()], c)
    assert ComputePrimValue()(module(main=main))["main"] is main


def test_malformed_intrinsics_are_compile_errors() -> None:
    x = param("x", [4])
    s = Seq()
    moved = rx.Call(rx.Op.get("relax.to_vdevice"), [x], {"dst_vdevice": "gpu"}, (), tensor([4]))
    s.let("moved", moved, tensor([4]))
    mod = module(main=function([x], [s.block()], x))
    with pytest.raises(CompileError, match=r"binding 'moved'.*needs a Device dst_vdevice"):
        LowerRuntimeBuiltin()(mod)


def test_tuple_typed_closure_arguments_are_unpacked() -> None:
    y = param("y", [4])
    mod = module(lifted=function([y], [], y))
    packed = rx.Var("packed", rx.TupleStructInfo([tensor([4])]))
    e = Seq()
    e.let("clo", op.make_closure(gv(mod, "lifted"), packed))
    mod["main"] = function([packed], [e.block()], packed)
    after = LowerRuntimeBuiltin()(mod)["main"]
    field, clo = after.body.blocks[0].bindings
    assert isinstance(field.value, rx.TupleGetItem) and field.value.tuple_value is packed
    assert clo.value.op.global_symbol == "vm.builtin.make_closure"
    assert clo.value.args[1] is field.var
