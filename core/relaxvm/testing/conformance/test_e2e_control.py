"""End to end in both exec modes: branches, recursion, closures, tuples, values, effects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm

from ...errors import VMError, VMTypeError
from ...registry import extensions
from .helpers import MakeVM, registered_funcs

HEADER = "from relaxvm.script import ir as I, relax as R, tir as T\n"


def test_if_on_a_bool_tensor_and_on_a_prim_bool(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def on_tensor(c: R.Tensor((), "bool"), x: R.Tensor((3,), "float32")):
        if c:
            y = R.multiply(x, x)
        else:
            y = R.negative(x)
        return y

    @R.function
    def on_prim(c: R.Prim("bool"), x: R.Tensor((3,), "float32")):
        if c:
            y = R.add(x, x)
        else:
            y = x
        return y
"""
    )
    x = np.array([1, -2, 3], "float32")
    np.testing.assert_array_equal(vm["on_tensor"](np.array(True), x).numpy(), x * x)
    np.testing.assert_array_equal(vm["on_tensor"](np.array(False), x).numpy(), -x)
    np.testing.assert_array_equal(vm["on_prim"](True, x).numpy(), x + x)
    np.testing.assert_array_equal(vm["on_prim"](False, x).numpy(), x)
    with pytest.raises(VMTypeError, match=r"param=c.*expected dtype bool"):
        vm["on_prim"](np.array(True), x)


def test_recursion(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def fact(n: R.Prim(value="k"), acc: R.Tensor((), "float32")) -> R.Tensor((), "float32"):
        k = T.int64()
        cls = M
        if R.prim_value(k <= 1):
            r = acc
        else:
            r = cls.fact(R.prim_value(k - 1), R.multiply(acc, R.const(2.0, "float32")))
        return r
"""
    )
    assert float(vm["fact"](1, np.array(3.0, "float32")).numpy()) == 3.0
    assert float(vm["fact"](6, np.array(1.0, "float32")).numpy()) == 32.0
    with pytest.raises(VMError, match=r"maximum (call|recursion) depth"):
        vm["fact"](10**6, np.array(1.0, "float32"))
    assert float(vm["fact"](2, np.array(1.0, "float32")).numpy()) == 2.0


def test_closures_capturing_variables(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")):
        @R.function
        def add_x(z: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return R.add(z, x)

        out = add_x(y)
        return (out, add_x)
"""
    )
    x, y = np.array([1, 2], "float32"), np.array([10, 20], "float32")
    out, closure = vm["main"](x, y)
    np.testing.assert_array_equal(out.numpy(), x + y)
    again = vm.invoke_closure(closure, relaxvm.tensor(np.array([5, 5], "float32")))
    np.testing.assert_array_equal(again.numpy(), x + 5)


def test_nested_tuples_in_and_out(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(t: R.Tuple(R.Tensor((2,), "float32"), R.Tuple(R.Tensor((2,), "float32"), R.Prim("int64")))):
        a = t[0]
        inner = t[1]
        b = inner[0]
        s = R.add(a, b)
        return ((s, inner[1]), (a,), t)
"""
    )
    a, b = np.ones(2, "float32"), np.full(2, 2, "float32")
    arg = (relaxvm.tensor(a), (relaxvm.tensor(b), 7))
    (s, seven), (a_again,), whole = vm["main"](arg)
    np.testing.assert_array_equal(s.numpy(), a + b)
    assert seven == 7 and whole[1][1] == 7
    np.testing.assert_array_equal(a_again.numpy(), a)
    with pytest.raises(ValueError, match=r"param=t.*Tuple with 2 elements, but get a Tuple with 1"):
        vm["main"]((relaxvm.tensor(a),))


def test_match_cast(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor("float32", ndim=2)):
        m = T.int64()
        y = R.match_cast(x, R.Tensor((m, 3), "float32"))
        z = R.add(y, y)
        return (z, R.shape([m * 3]))
"""
    )
    x = np.ones((4, 3), "float32")
    z, shape = vm["main"](x)
    np.testing.assert_array_equal(z.numpy(), x + x)
    assert tuple(shape) == (12,)
    with pytest.raises(VMError, match=r"match_cast.*shape\[1\] mismatch to specified constant"):
        vm["main"](np.ones((4, 2), "float32"))


def test_returning_shapes_prim_values_strings_and_dtypes(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 2), "float32")):
        n = T.int64()
        return (R.shape([n, 2]), R.prim_value(n + 1), R.str("hello"), R.dtype("float16"), R.prim_value(2.5))
"""
    )
    shape, n1, text, dtype, half = vm["main"](np.zeros((5, 2), "float32"))
    assert tuple(shape) == (5, 2) and isinstance(shape, relaxvm.Shape)
    assert n1 == 6 and text == "hello" and str(dtype) == "float16" and half == 2.5


def test_print_and_assert(make_vm: MakeVM, capsys: pytest.CaptureFixture[str]) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), "float32"), ok: R.Tensor((), "bool")):
        R.print(x, format="x = {}")
        R.assert_op(ok, format="the flag was not set")
        return x
"""
    )
    x = np.array([1, 2], "float32")
    vm["main"](x, np.array(True))
    assert "x = [1. 2.]" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="the flag was not set"):
        vm["main"](x, np.array(False))
    vm["main"](x, np.array(True))


def test_return_annotation_is_checked(make_vm: MakeVM) -> None:
    # The script parser refuses a body that does not provably match the annotation, so the
    # function is built directly: the check then happens at run time.
    from ...ir import Var as SymVar
    from ...ir import relax as rx

    n = SymVar("n")
    x = rx.Var("x", rx.TensorStructInfo([n], "float32"))
    y = rx.Var("y", rx.TensorStructInfo(None, "float32", ndim=1))
    call = rx.op.call_packed("relaxvm.conformance.fixed", x, sinfo_args=y.struct_info)
    body = rx.SeqExpr([rx.BindingBlock([rx.VarBinding(y, call)])], y)
    func = rx.Function([x], body, rx.TensorStructInfo([n], "float32"), is_pure=False)

    def fixed(x: Any) -> relaxvm.Tensor:
        return relaxvm.tensor(np.zeros(3, "float32"))

    with registered_funcs(fixed=fixed):
        vm = make_vm(rx.IRModule({"main": func}))
        assert vm["main"](np.zeros(3, "float32")).shape == (3,)
        with pytest.raises(VMError, match=r"fn=main, loc=return.*shape\[0\] mismatch"):
            vm["main"](np.zeros(4, "float32"))
        assert vm["main"](np.zeros(3, "float32")).shape == (3,)


def test_save_and_load_give_identical_results(
    target: str, exec_mode: str, target_device: relaxvm.Device, tmp_path: Path
) -> None:
    from ...script import from_source

    if extensions.get_target_kind(target).serialize is None:
        # A declared capability, not a failure: the kind says its kernels cannot be saved.
        pytest.skip(f"target {target!r} does not export executables (its serialize is None)")
    mod = from_source(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        y = R.nn.relu(R.add(x, R.const(1.0, "float32")))
        return (R.sum(y, axis=[1]), R.shape([n * 2]))
"""
    )
    ex = relaxvm.compile(mod, target, exec_mode=exec_mode)
    path = tmp_path / "model.rvm"
    ex.export_library(path)
    loaded = relaxvm.load_module(path)
    assert loaded.exec_mode == exec_mode and loaded.as_text() == ex.as_text()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    first = relaxvm.VirtualMachine(ex, target_device)["main"](x)
    second = relaxvm.VirtualMachine(loaded, target_device)["main"](x)
    np.testing.assert_array_equal(first[0].numpy(), second[0].numpy())
    np.testing.assert_allclose(first[0].numpy(), np.maximum(x + 1, 0).sum(axis=1), rtol=1e-5)
    assert tuple(first[1]) == tuple(second[1]) == (6,)


def test_nested_branches(make_vm: MakeVM) -> None:
    vm = make_vm(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(a: R.Prim("bool"), b: R.Prim("bool"), x: R.Tensor((2,), "float32")):
        if a:
            if b:
                y = R.add(x, x)
            else:
                y = R.multiply(x, x)
            z = R.negative(y)
        else:
            if b:
                w = x
            else:
                w = R.add(x, R.const(1.0, "float32"))
            z = w
        return z
"""
    )
    x = np.array([2, 3], "float32")
    expected = {(1, 1): -(x + x), (1, 0): -(x * x), (0, 1): x, (0, 0): x + 1}
    for (a, b), want in expected.items():
        np.testing.assert_array_equal(vm["main"](bool(a), bool(b), x).numpy(), want)


def test_params_are_bound_at_build_time(
    target: str, exec_mode: str, target_device: relaxvm.Device
) -> None:
    from ...script import from_source

    mod = from_source(
        HEADER
        + """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((2,), "float32"), w: R.Tensor((2,), "float32")):
        return R.multiply(x, w)
"""
    )
    w = np.array([3, 4], "float32")
    ex = relaxvm.compile(mod, target, params={"w": w}, exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, target_device)
    assert vm.get_function_arity("main") == 1
    np.testing.assert_array_equal(vm["main"](np.array([1, 2], "float32")).numpy(), [3, 8])
