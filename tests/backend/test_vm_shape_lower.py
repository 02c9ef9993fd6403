"""VMShapeLower: boundary checks, the shape heap, derived dims, match_cast, return checks."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.backend.build import build
from relaxvm.backend.vm_shape_lower import VMShapeLower, lower_shapes
from relaxvm.errors import CompileError, VMError, VMTypeError, VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.ir.tir import PrimFunc

F32 = "float32"


def t(shape, dtype=F32):
    return rx.TensorStructInfo(list(shape), dtype)


def make_vm(mod, exec_mode, target=None):
    ex = build(mod, target, relax_pipeline=VMShapeLower(), exec_mode=exec_mode)
    return relaxvm.VirtualMachine(ex, relaxvm.cpu()), ex


def identity_module(*params, ret=None, num_input=None):
    bb = rx.BlockBuilder()
    attrs = {} if num_input is None else {"num_input": num_input}
    with bb.function("main", list(params), attrs=attrs):
        bb.emit_func_output(params[0] if ret is None else ret(*params))
    return bb.get()


def test_param_checks_name_function_parameter_and_annotation(exec_mode):
    n = SymVar("n")
    x, y = rx.Var("x", t([n, 4])), rx.Var("y", t([n, 4]))
    vm, _ = make_vm(identity_module(x, y), exec_mode)
    ok = np.zeros((3, 4), F32)
    assert vm["main"](ok, ok).shape == (3, 4)
    with pytest.raises(VMTypeError, match=r"fn=main, loc=param\[1\], param=y.*expect a Tensor"):
        vm["main"](ok, 5)
    with pytest.raises(
        VMValueError, match=r"param=x, annotation=R\.Tensor\(\(n, 4\).*ndim 2 but get 1"
    ):
        vm["main"](np.zeros(4, F32), ok)
    with pytest.raises(VMValueError, match=r"dtype float32 but get int32"):
        vm["main"](ok, ok.astype("int32"))
    with pytest.raises(
        VMError, match=r"param=y.*shape\[0\] mismatch to a previous populated value"
    ):
        vm["main"](ok, np.zeros((2, 4), F32))
    with pytest.raises(VMError, match=r"param=x.*shape\[1\] mismatch to specified constant"):
        vm["main"](np.zeros((3, 5), F32), ok)
    assert vm["main"](ok, ok).shape == (3, 4)  # a wrong input leaves the VM usable


def test_derived_dims_and_a_symbol_defined_by_a_later_parameter(exec_mode, interp):
    n = SymVar("n")
    # x's dims are n*2 and n//2+1; n itself is only defined by y, the later parameter.
    x = rx.Var("x", t([n * 2, n // 2 + 1]))
    y = rx.Var("y", t([n]))
    mod = identity_module(x, y, ret=lambda x, y: rx.ShapeExpr([n * 2, n // 2 + 1, n + 7]))
    vm, _ = make_vm(mod, exec_mode, interp)
    assert tuple(vm["main"](np.zeros((10, 3), F32), np.zeros(5, F32))) == (10, 3, 12)
    assert tuple(vm["main"](np.zeros((2, 1), F32), np.zeros(1, F32))) == (2, 1, 8)
    with pytest.raises(VMError, match=r"param=x.*shape\[1\] mismatch"):
        vm["main"](np.zeros((10, 4), F32), np.zeros(5, F32))
    lowered = lower_shapes(mod)
    shape_funcs = [f for _, f in lowered.functions.items() if isinstance(f, PrimFunc)]
    assert shape_funcs and all(f.attrs.get("tir.is_host_func") for f in shape_funcs)


def test_shape_and_prim_and_tuple_params(exec_mode):
    n = SymVar("n")
    s = rx.Var("s", rx.ShapeStructInfo([n, 2]))
    p = rx.Var("p", rx.PrimStructInfo(value=n))
    tup = rx.Var("tup", rx.TupleStructInfo([t([n]), rx.PrimStructInfo("float32")]))
    vm, _ = make_vm(identity_module(s, p, tup, ret=lambda s, p, tup: p), exec_mode)
    good = (relaxvm.tensor(np.zeros(4, F32)), 1.5)
    assert vm["main"](relaxvm.Shape([4, 2]), 4, good) == 4
    with pytest.raises(VMTypeError, match=r"param=s.*expect a Shape"):
        vm["main"]((4, 2), 4, good)
    with pytest.raises(VMError, match=r"param=p.*PrimValue mismatch to a previous populated value"):
        vm["main"](relaxvm.Shape([4, 2]), 5, good)
    with pytest.raises(
        VMValueError, match=r"param=tup.*Tuple with 2 elements, but get a Tuple with 1"
    ):
        vm["main"](relaxvm.Shape([4, 2]), 4, (good[0],))
    with pytest.raises(VMError, match=r"param=tup.*shape\[0\] mismatch"):
        vm["main"](relaxvm.Shape([4, 2]), 4, (relaxvm.tensor(np.zeros(3, F32)), 1.5))
    with pytest.raises(VMTypeError, match=r"param=tup.*expected dtype float32"):
        vm["main"](relaxvm.Shape([4, 2]), 4, (good[0], "no"))


def test_callable_param_is_checked(exec_mode):
    f = rx.Var("f", rx.FuncStructInfo([t([2])], t([2])))
    vm, _ = make_vm(identity_module(f), exec_mode)
    assert vm["main"](abs) is abs
    with pytest.raises(VMTypeError, match=r"param=f.*expect a Function"):
        vm["main"](3)


def test_match_cast_binds_new_symbols_and_checks(exec_mode):
    m = SymVar("m")
    x = rx.Var("x", rx.TensorStructInfo(None, F32, ndim=2))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        y = bb.match_cast(x, t([m, 3]), "y")
        bb.emit_func_output(rx.Tuple([y, rx.ShapeExpr([m * 3])]))
    mod = bb.get()
    from relaxvm.testing import interpreter_target, registered_target

    with registered_target(interpreter_target()):
        vm, _ = make_vm(mod, exec_mode, "interp")
        y, shape = vm["main"](np.zeros((5, 3), F32))
        assert y.shape == (5, 3) and tuple(shape) == (15,)
        with pytest.raises(VMError, match=r"loc=match_cast, var=y.*shape\[1\] mismatch"):
            vm["main"](np.zeros((5, 4), F32))


def test_return_value_is_checked_when_not_provable(exec_mode):
    n = SymVar("n")
    x = rx.Var("x", t([n]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(op.call_packed("test.backend.double", x, sinfo_args=rx.ObjectStructInfo()))
        y = bb.match_cast(out, rx.TensorStructInfo(None, F32, ndim=-1))
        bb.emit_func_output(y)
    func = bb.get()["main"]
    func = rx.Function(func.params, func.body, t([n]), func.is_pure, func.attrs)
    mod = rx.IRModule({"main": func})
    vm, ex = make_vm(mod, exec_mode)
    assert "loc=return" in str([c for c in ex.constants if isinstance(c, str)])
    np.testing.assert_array_equal(vm["main"](np.ones(3, F32)).numpy(), 2 * np.ones(3, F32))


def test_num_input_matches_inputs_first(exec_mode):
    n = SymVar("n")
    w = rx.Var("w", t([n, 2]))
    x = rx.Var("x", t([n]))
    # x is the only run-time input: n is bound from it, then w is checked against it.
    mod = identity_module(x, w, num_input=1)
    vm, _ = make_vm(mod, exec_mode)
    assert vm["main"](np.zeros(3, F32), np.zeros((3, 2), F32)).shape == (3,)
    with pytest.raises(VMError, match=r"param=w.*mismatch to a previous populated value"):
        vm["main"](np.zeros(3, F32), np.zeros((4, 2), F32))


def test_unbound_symbol_is_a_compile_error():
    n, k = SymVar("n"), SymVar("k")
    x = rx.Var("x", t([n]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        s = bb.emit(rx.ShapeExpr([k + 1]), "s")
        bb.emit_func_output(s)
    with pytest.raises(CompileError, match=r"function 'main', binding 's'.*\bk\b.*not bound"):
        lower_shapes(bb.get())


def test_no_heap_without_symbols():
    x = rx.Var("x", t([2, 3]))
    lowered = lower_shapes(identity_module(x))
    assert "alloc_shape_heap" not in str(lowered)
    assert "check_tensor_info" in str(lowered)


def test_err_ctx_can_be_left_out(exec_mode):
    x = rx.Var("x", t([2]))
    ex = build(identity_module(x), relax_pipeline=VMShapeLower(emit_err_ctx=False))
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    with pytest.raises(VMTypeError, match=r"^vm\.builtin\.check_tensor_info: expect a Tensor"):
        vm["main"]("nope")


def test_malformed_num_input_is_a_compile_error():
    x = rx.Var("x", t([2]))
    with pytest.raises(CompileError, match=r"num_input attribute is 3, but the function has 1"):
        lower_shapes(identity_module(x, num_input=3))
