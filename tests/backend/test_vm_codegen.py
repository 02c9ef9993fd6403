"""VMCodeGen on hand-lowered modules: registers, control flow, tuples, calls, constants."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.backend.build import build
from relaxvm.backend.vm_codegen import VMCodeGen
from relaxvm.backend.vm_shape_lower import VMShapeLower
from relaxvm.errors import CompileError
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op

F32 = "float32"


def t(shape, dtype=F32):
    return rx.TensorStructInfo(list(shape), dtype)


def packed(name, *args, sinfo=None):
    return op.call_packed(name, *args, sinfo_args=sinfo if sinfo is not None else ())


def run(mod, exec_mode, *args, func="main", pipeline=None):
    ex = build(mod, None, relax_pipeline=pipeline, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    return vm[func](*args), ex


def test_params_take_the_first_registers_and_packed_calls_run(exec_mode):
    x, y = rx.Var("x", t([2, 3])), rx.Var("y", t([2, 3]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, y]):
        z = bb.emit(packed("test.backend.add", x, y, sinfo=t([2, 3])))
        w = bb.emit(packed("test.backend.double", z, sinfo=t([2, 3])))
        bb.emit_func_output(w)
    a, b = np.ones((2, 3), F32), np.arange(6, dtype=F32).reshape(2, 3)
    out, ex = run(bb.get(), exec_mode, a, b)
    np.testing.assert_allclose(out.numpy(), (a + b) * 2)
    text = ex.as_text()
    assert "call  test.backend.add in: %0, %1" in text
    assert ex.exec_mode == exec_mode


def test_nested_tuples_and_tuple_getitem(exec_mode):
    x = rx.Var("x", t([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        inner = bb.emit(rx.Tuple([x, rx.const(np.float32(3.5))]))
        outer = bb.emit(rx.Tuple([inner, x]))
        first = bb.emit(rx.TupleGetItem(outer, 0))
        item = bb.emit(rx.TupleGetItem(first, 1))
        bb.emit_func_output(rx.Tuple([item, outer]))
    a = np.array([1, 2], F32)
    (item, (inner, again)), _ = run(bb.get(), exec_mode, a)
    assert float(item.numpy()) == 3.5
    np.testing.assert_array_equal(inner[0].numpy(), a)
    np.testing.assert_array_equal(again.numpy(), a)


def _branchy(cond_sinfo):
    c = rx.Var("c", cond_sinfo)
    x = rx.Var("x", t([3]))
    bb = rx.BlockBuilder()
    with bb.function("main", [c, x]):
        then_value = packed("test.backend.double", x, sinfo=t([3]))
        then_var = rx.Var("then", t([3]))
        then_branch = rx.SeqExpr([rx.BindingBlock([rx.VarBinding(then_var, then_value)])], then_var)
        result = bb.emit(rx.If(c, then_branch, rx.SeqExpr([], x)))
        bb.emit_func_output(result)
    return bb.get()


def test_if_on_a_prim_bool_merges_branches_with_copy(exec_mode):
    mod = _branchy(rx.PrimStructInfo("bool"))
    a = np.array([1, 2, 3], F32)
    ex = build(mod, relax_pipeline=None, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    np.testing.assert_array_equal(vm["main"](True, a).numpy(), a * 2)
    np.testing.assert_array_equal(vm["main"](False, a).numpy(), a)
    text = ex.as_text()
    assert "If " in text and "goto" in text.lower() and text.count("vm.builtin.copy") >= 2


def test_if_on_a_bool_tensor_reads_the_condition(exec_mode):
    mod = _branchy(rx.TensorStructInfo([], "bool"))
    a = np.array([1, 2, 3], F32)
    ex = build(mod, relax_pipeline=None, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    assert "vm.builtin.read_if_cond" in ex.as_text()
    np.testing.assert_array_equal(vm["main"](np.array(True), a).numpy(), a * 2)
    np.testing.assert_array_equal(vm["main"](np.array(False), a).numpy(), a)


def test_recursion_between_relax_functions(exec_mode):
    # count(n) = n if n == 0 else count(n - 1) + 1, with prim values from packed calls.
    n = rx.Var("n", rx.PrimStructInfo("int64"))
    bb = rx.BlockBuilder()
    count = rx.GlobalVar("count")
    with bb.function("count", [n]):
        done = bb.emit(packed("test.backend.is_zero", n, sinfo=rx.PrimStructInfo("bool")))
        minus = rx.Var("m", rx.PrimStructInfo("int64"))
        rec = rx.Var("r", rx.PrimStructInfo("int64"))
        plus = rx.Var("p", rx.PrimStructInfo("int64"))
        else_branch = rx.SeqExpr(
            [
                rx.BindingBlock(
                    [
                        rx.VarBinding(
                            minus, packed("test.backend.dec", n, sinfo=rx.PrimStructInfo("int64"))
                        ),
                        rx.VarBinding(
                            rec, rx.Call(count, [minus], struct_info=rx.PrimStructInfo("int64"))
                        ),
                        rx.VarBinding(
                            plus, packed("test.backend.inc", rec, sinfo=rx.PrimStructInfo("int64"))
                        ),
                    ]
                )
            ],
            plus,
        )
        out = bb.emit(rx.If(done, rx.SeqExpr([], n), else_branch))
        bb.emit_func_output(out)
    mod = bb.get()
    relaxvm.register_func("test.backend.is_zero", lambda v: v == 0, override=True)
    relaxvm.register_func("test.backend.dec", lambda v: v - 1, override=True)
    relaxvm.register_func("test.backend.inc", lambda v: v + 1, override=True)
    ex = build(mod, relax_pipeline=None, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    assert vm["count"](0) == 0
    assert vm["count"](25) == 25
    with pytest.raises(relaxvm.errors.VMError, match="maximum call depth exceeded"):
        vm["count"](100_000)
    assert vm["count"](3) == 3  # still usable


def test_constants_strings_dtypes_and_shapes_are_returned(exec_mode):
    bb = rx.BlockBuilder()
    with bb.function("main", []):
        bb.emit_func_output(
            rx.Tuple(
                [
                    rx.StringImm("hello"),
                    rx.DataTypeImm("float16"),
                    rx.ShapeExpr([2, 3]),
                    rx.PrimValue(7),
                    rx.PrimValue(rx.const(1.5).data.numpy().item()),
                    rx.const(np.arange(4, dtype="int32")),
                ]
            )
        )
    (s, d, shape, i, f, c), ex = run(bb.get(), exec_mode)
    assert (s, str(d), tuple(shape), i, f) == ("hello", "float16", (2, 3), 7, 1.5)
    assert isinstance(shape, relaxvm.Shape) and isinstance(d, relaxvm.DataType)
    np.testing.assert_array_equal(c.numpy(), np.arange(4, dtype="int32"))
    assert len(ex.constants) >= 3


def test_closures_capture_values(exec_mode):
    # add_to(y, x) = x + y, lifted; main makes a closure over x and calls it.
    bb = rx.BlockBuilder()
    y, cap = rx.Var("y", t([2])), rx.Var("x", t([2]))
    with bb.function("add_to", [y, cap]):
        bb.emit_func_output(bb.emit(packed("test.backend.add", y, cap, sinfo=t([2]))))
    gv = bb.get().get_global_var("add_to")
    x, z = rx.Var("x", t([2])), rx.Var("z", t([2]))
    with bb.function("main", [x, z]):
        clo = bb.emit(op.make_closure(gv, [x]))
        out = bb.emit(op.invoke_closure(clo, [z], sinfo_args=t([2])))
        bb.emit_func_output(rx.Tuple([out, clo]))
    mod = bb.get()
    ex = build(mod, relax_pipeline=None, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    a, b = np.array([1, 2], F32), np.array([10, 20], F32)
    out, closure = vm["main"](a, b)
    np.testing.assert_array_equal(out.numpy(), a + b)
    again = vm.invoke_closure(closure, relaxvm.tensor(b))
    np.testing.assert_array_equal(again.numpy(), a + b)


def test_vm_memory_ops_and_builtin_with_ctx(exec_mode):
    x, y = rx.Var("x", t([2, 2])), rx.Var("y", t([2, 2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, y]):
        storage = bb.emit(op.vm.alloc_storage(rx.ShapeExpr([16]), 0, "uint8"))
        out = bb.emit(op.vm.alloc_tensor(storage, 0, rx.ShapeExpr([2, 2]), F32))
        bb.emit(packed("test.backend.add_dps", x, y, out, sinfo=rx.TupleStructInfo([])))
        bb.emit(op.vm.kill_object(storage))
        echo = bb.emit(
            op.call_builtin_with_ctx(
                "test.backend.echo", [rx.PrimValue(3)], sinfo_args=rx.ObjectStructInfo()
            )
        )
        bb.emit_func_output(rx.Tuple([out, echo]))
    a = np.ones((2, 2), F32)
    (out, echo), ex = run(bb.get(), exec_mode, a, a)
    np.testing.assert_array_equal(out.numpy(), a * 2)
    assert isinstance(echo[0], relaxvm.VirtualMachine) and echo[1] == 3
    text = ex.as_text()
    assert "vm.builtin.alloc_storage in: %vm" in text and "vm.builtin.null_value" in text


def test_unlowered_op_is_a_compile_error_naming_function_and_binding():
    x = rx.Var("x", t([2]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.emit(op.add(x, x), "y")
        bb.emit_func_output(y)
    with pytest.raises(CompileError, match=r"function 'main', binding 'y'.*relax.add"):
        VMCodeGen().run(bb.get())


def test_symbolic_shape_without_shape_lowering_is_a_compile_error():
    from relaxvm.ir import Var as SymVar

    n = SymVar("n")
    x = rx.Var("x", t([n]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        s = bb.emit(rx.ShapeExpr([n, 2]), "s")
        bb.emit_func_output(s)
    with pytest.raises(CompileError, match=r"binding 's'.*symbolic dimension n.*VMShapeLower"):
        VMCodeGen().run(bb.get())
    ex = build(bb.get(), relax_pipeline=VMShapeLower())
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    assert tuple(vm["main"](np.zeros(5, F32))) == (5, 2)
