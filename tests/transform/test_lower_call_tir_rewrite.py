"""CallTIRRewrite: explicit output allocation and direct destination-passing calls."""

from __future__ import annotations

import pytest

from relaxvm.errors import CompileError
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.transform import CallTIRRewrite

from ._lower_helpers import (
    F32,
    VOID,
    Seq,
    assert_same,
    builtin_alloc,
    call,
    function,
    gv,
    kernel,
    module,
    param,
    sym,
    tensor,
)


def _one_kernel_module(main_builder: object) -> rx.IRModule:
    mod = module(exp=kernel(2))
    mod["main"] = main_builder(gv(mod, "exp"))  # type: ignore[operator]
    return mod


def test_call_tir_allocates_the_output_and_calls_the_primfunc() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [2, 3])
        s = Seq()
        y = s.let("y", op.call_tir(exp, [x], tensor([2, 3])))
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    exp = gv(mod, "exp")
    x = param("x", [2, 3])
    s = Seq()
    alloc = s.let("alloc", builtin_alloc([2, 3]))
    s.void(call(exp, x, alloc))
    y = s.let("y", alloc)
    assert_same(after, function([x], [s.block()], y))


def test_tuple_outputs_are_all_allocated_and_appended() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [4])
        s = Seq()
        out = rx.TupleStructInfo([tensor([4]), tensor([2], "int32")])
        y = s.let("y", op.call_tir(exp, [x, x], [tensor([4]), tensor([2], "int32")]), out)
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    x = param("x", [4])
    s = Seq()
    a0 = s.let("alloc", builtin_alloc([4]))
    a1 = s.let("alloc", builtin_alloc([2], "int32"))
    s.void(call(gv(mod, "exp"), x, x, a0, a1))
    y = s.let("y", rx.Tuple([a0, a1]))
    assert_same(after, function([x], [s.block()], y))


def test_symbolic_output_shapes_are_allocated_symbolically() -> None:
    n = sym("n")

    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [n, 3])
        s = Seq()
        y = s.let("y", op.call_tir(exp, [x], tensor([n * 2, 3])))
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    alloc = after.body.blocks[0].bindings[0].value
    assert alloc.op.name == "relax.builtin.alloc_tensor"
    shape = alloc.args[0]
    assert isinstance(shape, rx.ShapeExpr)
    assert str(shape.values[0]) == str(n * 2)


def test_call_tir_with_tir_vars_becomes_call_tir_dyn() -> None:
    n = sym("n")

    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [n])
        s = Seq()
        y = s.let("y", op.call_tir(exp, [x], tensor([n]), tir_vars=rx.ShapeExpr([n])))
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    x = param("x", [n])
    s = Seq()
    alloc = s.let("alloc", builtin_alloc([n]))
    s.void(op.vm.call_tir_dyn(gv(mod, "exp"), [x, alloc, rx.ShapeExpr([n])]))
    y = s.let("y", alloc)
    assert_same(after, function([x], [s.block()], y))


def test_call_tir_inplace_reuses_inputs_and_allocates_the_rest() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [4])
        w = param("w", [4])
        s = Seq()
        out = [tensor([4]), tensor([4])]
        y = s.let("y", op.call_tir_inplace(exp, [x, w], [1, -1], out), rx.TupleStructInfo(out))
        return function([x, w], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    x, w = param("x", [4]), param("w", [4])
    s = Seq()
    alloc = s.let("alloc", builtin_alloc([4]))
    s.void(call(gv(mod, "exp"), x, w, alloc))
    y = s.let("y", rx.Tuple([w, alloc]))
    assert_same(after, function([x, w], [s.block()], y))


def test_single_inplace_output_is_the_argument_itself() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [4])
        s = Seq()
        y = s.let("y", op.call_tir_inplace(exp, [x], 0, tensor([4])))
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    x = param("x", [4])
    s = Seq()
    s.void(call(gv(mod, "exp"), x))
    y = s.let("y", x)
    assert_same(after, function([x], [s.block()], y))


def test_call_dps_packed_calls_the_extern_func_directly() -> None:
    x = param("x", [3])
    s = Seq()
    y = s.let("y", op.call_dps_packed("test.add_one", [x], tensor([3])))
    mod = module(main=function([x], [s.block()], y))
    after = CallTIRRewrite()(mod)["main"]
    x2 = param("x", [3])
    e = Seq()
    alloc = e.let("alloc", builtin_alloc([3]))
    e.void(rx.Call(rx.ExternFunc("test.add_one"), [x2, alloc], None, [VOID]))
    y2 = e.let("y", alloc)
    assert_same(after, function([x2], [e.block()], y2))


def test_tuple_typed_argument_variable_is_unpacked() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [2])
        s = Seq()
        t = s.let("t", rx.Tuple([x, x]))
        call_tir = rx.Call(rx.Op.get("relax.call_tir"), [exp, t], None, [tensor([2])])
        y = s.let("y", call_tir, tensor([2]))
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    after = CallTIRRewrite()(mod)["main"]
    bindings = after.body.blocks[0].bindings
    kernel_call = next(b.value for b in bindings if b.var.name_hint == "_")
    assert len(kernel_call.args) == 3
    first = kernel_call.args[0]
    producer = next(b.value for b in bindings if b.var is first)
    assert isinstance(producer, rx.TupleGetItem) and producer.index == 0


def test_unknown_output_shape_is_a_compile_error_naming_function_and_binding() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [2])
        s = Seq()
        y = s.let("result", op.call_tir(exp, [x], tensor(None, F32, ndim=1)))
        return function([x], [s.block()], y, attrs={"global_symbol": "entry"})

    mod = _one_kernel_module(main)
    with pytest.raises(
        CompileError, match=r"CallTIRRewrite: function 'entry', binding 'result'.*no known shape"
    ):
        CallTIRRewrite()(mod)


def test_bad_inplace_index_is_a_compile_error() -> None:
    def main(exp: rx.GlobalVar) -> rx.Function:
        x = param("x", [2])
        call_ = rx.Call(
            rx.Op.get("relax.call_tir_inplace"),
            [exp, rx.Tuple([x])],
            {"inplace_indices": (3,)},
            [tensor([2])],
        )
        s = Seq()
        y = s.let("y", call_, tensor([2]))
        return function([x], [s.block()], y)

    mod = _one_kernel_module(main)
    with pytest.raises(CompileError, match=r"inplace_indices\[0\] = 3 is not an argument index"):
        CallTIRRewrite()(mod)


def test_functions_without_dps_calls_are_unchanged() -> None:
    x = param("x", [2])
    s = Seq()
    y = s.let("y", op.add(x, x))
    main = function([x], [s.block()], y)
    after = CallTIRRewrite()(module(main=main))
    assert after["main"] is main
