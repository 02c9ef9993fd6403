"""IR semantics as TVM v0.23's: scalar (R.Prim) arithmetic, binary dtype rules, the remaining
BlockBuilder methods and the TVM spellings (analysis.well_formed, IRModule.from_expr, VDevice,
Device.index, tensor[:] = array)."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm import te
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import IRModule, analysis, op
from relaxvm.ir.relax.block_builder import BlockBuilder, BlockBuilderError
from relaxvm.ir.relax.op.registry import OpError
from relaxvm.ir.relax.vdevice import VDevice
from relaxvm.script import from_source


def prim(name: str, dtype: str = "int64") -> rx.Var:
    return rx.Var(name, rx.PrimStructInfo(dtype))


def tensor(shape: list, dtype: str = "float32") -> rx.TensorStructInfo:
    return rx.TensorStructInfo(shape, dtype)


def infer(call: rx.Call) -> rx.StructInfo:
    return BlockBuilder().normalize(call).struct_info


# ---- scalar arithmetic keeps R.Prim ----------------------------------------------------------
@pytest.mark.parametrize("builder", [op.add, op.subtract, op.multiply, op.floor_divide, op.maximum])
def test_prim_arith_prim_is_prim(builder) -> None:
    sinfo = infer(builder(prim("a"), prim("b")))
    assert isinstance(sinfo, rx.PrimStructInfo)
    assert str(sinfo.dtype) == "int64"
    assert sinfo.value is None  # TVM infers the dtype only


def test_prim_comparison_and_logical_are_prim_bool() -> None:
    assert str(infer(op.less(prim("a"), prim("b")))) == 'R.Prim("bool")'
    flag = prim("f", "bool")
    assert str(infer(op.logical_and(flag, flag))) == 'R.Prim("bool")'


def test_prim_with_tensor_broadcasts_as_shape_one() -> None:
    # TVM's InferStructInfoBroadcast sees a scalar as shape [1].
    x = rx.Var("x", tensor([2, 3]))
    s = rx.Var("s", tensor([]))
    assert str(infer(op.add(x, rx.PrimValue(1.5)))) == 'R.Tensor((2, 3), dtype="float32")'
    assert str(infer(op.add(s, rx.PrimValue(1.5)))) == 'R.Tensor((1,), dtype="float32")'
    assert str(infer(op.add(rx.PrimValue(1.5), x))) == 'R.Tensor((2, 3), dtype="float32")'


def test_prim_with_tensor_keeps_the_tensor_vdevice() -> None:
    dev = VDevice("llvm")
    x = rx.Var("x", rx.TensorStructInfo([2], "float32", vdevice=dev))
    sinfo = infer(op.add(rx.PrimValue(1.5), x))
    assert sinfo.vdevice == dev


# ---- dtype rules: equal dtypes, also for scalars (TVM's InferBinaryArithOpOutDtype) ---------
def test_mixed_dtypes_are_refused_for_scalars_and_tensors() -> None:
    x = rx.Var("x", tensor([2, 3]))
    with pytest.raises(OpError, match=r"relax.add: operands must have the same dtype"):
        infer(op.add(x, rx.PrimValue(1)))  # an int literal is int64
    with pytest.raises(OpError, match=r"relax.multiply: operands must have the same dtype"):
        infer(op.multiply(prim("a"), prim("b", "int32")))
    with pytest.raises(OpError, match=r"float32 and .*float16"):
        infer(op.subtract(x, rx.Var("h", tensor([2, 3], "float16"))))


def test_scalar_dtype_mismatch_names_the_scalar() -> None:
    x = rx.Var("x", tensor([2, 3]))
    with pytest.raises(OpError, match=r"got \(2, 3\) float32 and R.Prim int64"):
        infer(op.add(x, rx.PrimValue(1)))


def test_comparisons_accept_mixed_dtypes_as_tvm() -> None:
    # TVM's InferStructInfoBroadcastCMP checks no dtypes: the result is bool.
    x = rx.Var("x", tensor([3], "int32"))
    y = rx.Var("y", tensor([3], "float32"))
    assert str(infer(op.less(x, y))) == 'R.Tensor((3,), dtype="bool")'
    assert str(infer(op.equal(y, rx.PrimValue(1)))) == 'R.Tensor((3,), dtype="bool")'
    assert str(infer(op.not_equal(prim("a"), prim("b", "int32")))) == 'R.Prim("bool")'


MIXED_COMPARE = """
from relaxvm.script import ir as I, relax as R
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((3,), "int32"), y: R.Tensor((3,), "float32"), s: R.Tensor((3,), "int64")):
        a = R.less(x, y)
        b = R.equal(y, R.prim_value(1))
        c = R.greater(x, s)
        return (a, b, c)
"""


def test_mixed_dtype_comparisons_end_to_end_on_llvm() -> None:
    vm = relaxvm.VirtualMachine(
        relaxvm.compile(from_source(MIXED_COMPARE), target="llvm"), relaxvm.cpu()
    )
    x = np.array([1, 2, 3], "int32")
    y = np.array([1.5, 1.0, 3.0], "float32")
    s = np.array([0, 2, 9], "int64")
    a, b, c = vm["main"](relaxvm.tensor(x), relaxvm.tensor(y), relaxvm.tensor(s))
    np.testing.assert_array_equal(a.numpy(), x < y)
    np.testing.assert_array_equal(b.numpy(), y == 1)
    np.testing.assert_array_equal(c.numpy(), x > s)


def test_unknown_tensor_dtype_gives_unknown_result() -> None:
    x = rx.Var("x", rx.TensorStructInfo([2], None))
    assert infer(op.add(x, rx.PrimValue(1))).dtype is None


def test_non_tensor_operand_is_refused() -> None:
    shape = rx.ShapeExpr([2])
    with pytest.raises(OpError, match="operand 0 must be a tensor or a scalar"):
        infer(op.add(shape, rx.PrimValue(1)))


# ---- scalar arithmetic runs on the VM -------------------------------------------------------
SCALARS = """
from relaxvm.script import ir as I, relax as R
@I.ir_module
class Mod:
    @R.function
    def main(a: R.Prim("int64"), b: R.Prim("int64")):
        c = R.add(a, b)
        d = R.multiply(c, R.prim_value(3))
        e = R.floor_divide(a, b)
        f = R.less(a, b)
        g = R.add(R.prim_value(1.5), R.prim_value(2.0))
        return (d, e, f, g)
"""


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_scalar_arithmetic_end_to_end_on_llvm(exec_mode: str) -> None:
    mod = from_source(SCALARS)
    ret = mod["main"].ret_struct_info
    assert (
        str(ret) == 'R.Tuple(R.Prim("int64"), R.Prim("int64"), R.Prim("bool"), R.Prim("float32"))'
    )
    ex = relaxvm.compile(mod, target="llvm", exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    d, e, f, g = vm["main"](2, 5)
    assert (d, e, bool(f), g) == (21, 0, True, 3.5)
    d, e, f, _ = vm["main"](-7, 2)
    assert (d, e, bool(f)) == (-15, -4, True)


FLOAT_SCALARS = """
from relaxvm.script import ir as I, relax as R, tir as T
@I.ir_module
class Mod:
    @R.function
    def main(a: R.Prim("float32"), b: R.Prim("float32"), n: R.Prim("int64"), h: R.Prim("float64")):
        c = R.add(a, b)
        d = R.multiply(c, R.prim_value(T.float32(0.5)))
        e = R.divide(a, b)
        f = R.less(a, b)
        g = R.floor_mod(a, b)
        k = R.power(h, h)
        m = R.greater(n, h)
        return (d, e, f, g, k, m)
"""


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_run_time_float_scalar_arithmetic_stays_scalar(exec_mode: str) -> None:
    mod = from_source(FLOAT_SCALARS)
    assert str(mod["main"].ret_struct_info) == (
        'R.Tuple(R.Prim("float32"), R.Prim("float32"), R.Prim("bool"), R.Prim("float32"), '
        'R.Prim("float64"), R.Prim("bool"))'
    )
    vm = relaxvm.VirtualMachine(
        relaxvm.compile(mod, target="llvm", exec_mode=exec_mode), relaxvm.cpu()
    )
    for a, b, n, h in [(1.5, 2.25, 3, 1.5), (-7.0, 2.0, -1, 0.0), (0.1, 0.3, 0, -2.0)]:
        d, e, f, g, k, m = vm["main"](a, b, n, h)
        f32 = np.float32
        assert d == float((f32(a) + f32(b)) * f32(0.5))
        assert e == float(f32(a) / f32(b))  # rounded to float32, as TVM's float32 scalars
        assert f is (a < b) and m is (n > h)
        assert g == float(np.mod(f32(a), f32(b)))
        assert k == float(np.power(h, h))


def test_bool_scalars_of_float_comparisons_combine() -> None:
    src = """
from relaxvm.script import ir as I, relax as R
@I.ir_module
class Mod:
    @R.function
    def main(a: R.Prim("float32")):
        return R.logical_and(R.less(a, a), R.less(a, a))
"""
    ex = relaxvm.compile(from_source(src), target="llvm")
    assert relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"](1.0) is False


def test_bitwise_ops_on_run_time_bools() -> None:
    src = """
from relaxvm.script import ir as I, relax as R
@I.ir_module
class Mod:
    @R.function
    def main(a: R.Prim("float32"), b: R.Prim("float32")):
        return R.bitwise_xor(R.less(a, b), R.less(b, a))
"""
    vm = relaxvm.VirtualMachine(relaxvm.compile(from_source(src), target="llvm"), relaxvm.cpu())
    assert vm["main"](1.0, 2.0) is True and vm["main"](2.0, 2.0) is False


def test_prim_arith_runtime_errors() -> None:
    from relaxvm_ops.runtime import run_prim_arith

    with pytest.raises(relaxvm.errors.RelaxVMError, match="no scalar op 'atan2'"):
        run_prim_arith("atan2", "float32", "float32", 1.0, 2.0)
    with pytest.raises(relaxvm.errors.RelaxVMError, match="operand b is a str"):
        run_prim_arith("add", "float32", "float32", 1.0, "2")
    assert run_prim_arith("divide", "float32", "float32", 1.0, 0.0) == float("inf")


# ---- BlockBuilder ----------------------------------------------------------------------------
def test_call_te_returns_the_call_without_emitting() -> None:
    x = rx.Var("x", tensor([4]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        call = bb.call_te(lambda a: te.compute(a.shape, lambda i: a[i] * 2.0), x)
        assert isinstance(call, rx.Call) and call.op.name == "relax.call_tir"
        assert str(call.struct_info) == 'R.Tensor((4,), dtype="float32")'
        out = bb.emit(call)
        bb.emit_func_output(out)
    mod = bb.finalize()
    body = mod["main"].body
    assert len(body.blocks[0].bindings) == 1  # call_te bound nothing itself
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, target="llvm"), relaxvm.cpu())
    result = vm["main"](relaxvm.tensor(np.arange(4, dtype="float32")))
    np.testing.assert_array_equal(result.numpy(), [0, 2, 4, 6])


def test_emit_normalized_appends_the_binding_as_is() -> None:
    x = rx.Var("x", tensor([2]))
    y = rx.Var("y", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_normalized(rx.VarBinding(y, bb.normalize(op.add(x, x))))
        bb.emit_func_output(y)
    binding = bb.finalize()["main"].body.blocks[0].bindings[0]
    assert binding.var is y
    assert analysis.well_formed(bb.finalize())


def test_emit_normalized_errors() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with pytest.raises(BlockBuilderError, match="emit_normalized: called outside a function"):
        bb.emit_normalized(rx.VarBinding(rx.Var("y", tensor([2])), x))
    with bb.function("main", [x]):
        with pytest.raises(BlockBuilderError, match="expected a VarBinding or MatchCast"):
            bb.emit_normalized(x)
        lv = rx.DataflowVar("lv", tensor([2]))
        with pytest.raises(BlockBuilderError, match="dataflow variable 'lv' bound outside"):
            bb.emit_normalized(rx.VarBinding(lv, x))
        bb.emit_func_output(x)


def test_begin_and_end_scope() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    bb.begin_scope([x])
    bb.begin_scope()
    assert bb.scope_params() == [x]
    bb.end_scope()
    bb.end_scope()
    with pytest.raises(BlockBuilderError, match="end_scope: no scope is open"):
        bb.end_scope()
    with pytest.raises(BlockBuilderError, match=r"begin_scope: params\[0\] must be a relax Var"):
        bb.begin_scope([1])


def test_finalize_refuses_an_open_function() -> None:
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with (
        pytest.raises(BlockBuilderError, match="function 'main' is still being built"),
        bb.function("main", [x]),
    ):
        bb.finalize()


def test_if_in_a_dataflow_block_is_normalized_and_not_well_formed() -> None:
    cond = rx.Var("c", tensor([], "bool"))
    x = rx.Var("x", tensor([2]))
    bb = BlockBuilder()
    with bb.function("main", [cond, x]):
        with bb.dataflow():
            y = bb.emit(rx.If(cond, op.add(x, x), op.multiply(x, x)))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    mod = bb.finalize()
    if_node = mod["main"].body.blocks[0].bindings[0].value
    assert isinstance(if_node, rx.If)
    # The branches are SeqExprs of plain (non-dataflow) blocks, as TVM's normalizer makes.
    branch_var = if_node.true_branch.blocks[0].bindings[0].var
    assert type(branch_var) is rx.Var
    assert analysis.well_formed(mod) is False
    assert "an If may not appear inside a dataflow block" in str(analysis.well_formed_error(mod))


# ---- spellings -------------------------------------------------------------------------------
def test_analysis_well_formed_is_a_bool() -> None:
    x = rx.Var("x", tensor([2]))
    good = IRModule.from_expr(op.add(x, x))
    assert analysis.well_formed(good) is True
    assert analysis.well_formed_error(good) is None
    lv = rx.DataflowVar("lv", tensor([2]))
    bad = rx.Function([x], rx.SeqExpr([rx.BindingBlock([rx.VarBinding(lv, x)])], lv))
    assert analysis.well_formed(bad) is False
    with pytest.raises(VMTypeError, match="expected an IRModule or a relax Function"):
        analysis.well_formed(x)


def test_irmodule_from_expr() -> None:
    n = SymVar("n", "int64")
    x = rx.Var("x", tensor([n]))
    mod = IRModule.from_expr(op.multiply(x, x))
    assert [gv.name_hint for gv in mod.get_global_vars()] == ["main"]
    assert list(mod["main"].params) == [x]
    func = mod["main"]
    named = IRModule.from_expr(func.with_attr("global_symbol", "f"))
    assert [gv.name_hint for gv in named.get_global_vars()] == ["f"]
    with pytest.raises(VMTypeError, match="IRModule.from_expr: expected a relax expression"):
        IRModule.from_expr(3)


def test_vdevice() -> None:
    dev = VDevice("cuda -arch=sm_80", 1, "global")
    assert (dev.vdevice_id, dev.index, dev.kind, dev.memory_scope) == (1, 1, "cuda", "global")
    assert VDevice("llvm") == relaxvm.cpu(0)
    assert VDevice("llvm") != VDevice("llvm", memory_scope="shared")
    assert str(rx.TensorStructInfo([2], "float32", vdevice=VDevice("llvm"))).endswith(
        'vdevice="cpu:0")'
    )
    with pytest.raises(VMValueError, match="target kind 'tpu' has no known device"):
        VDevice("tpu")
    with pytest.raises(VMValueError, match="vdevice_id must be an int >= 0"):
        VDevice("llvm", -1)


def test_device_index() -> None:
    assert relaxvm.cpu(0).index == 0
    assert relaxvm.runtime.Device(2, 3).index == 3


def test_tensor_setitem_copies_in() -> None:
    t = relaxvm.tensor(np.zeros((2, 2), "float32"))
    t[:] = np.arange(4, dtype="float32").reshape(2, 2)
    np.testing.assert_array_equal(t.numpy(), [[0, 1], [2, 3]])
    t[:] = relaxvm.tensor(np.ones((2, 2), "float32"))
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 2)))
    t[:] = np.full((2, 2), 7, "int64")  # numpy values are converted, as TVM's copyfrom
    assert t.numpy().dtype == np.float32 and t.numpy()[0, 0] == 7
    with pytest.raises(VMValueError, match="shape \\(3,\\) does not match"):
        t[:] = np.zeros(3, "float32")
    with pytest.raises(VMTypeError, match="dtype int32 does not match the tensor's float32"):
        t[:] = relaxvm.tensor(np.zeros((2, 2), "int32"))
    with pytest.raises(VMValueError, match="only tensor\\[:\\] = value"):
        t[0] = np.zeros(2, "float32")
    with pytest.raises(VMTypeError, match="must be a Tensor or a numpy array, got list"):
        t[:] = [[1, 2], [3, 4]]
