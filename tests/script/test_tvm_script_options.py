"""TVM script options: ``.script(**options)``, ``@I.ir_module(check_well_formed=...)``,
captured Python values, ``R.emit_te`` and implicit conversions of call arguments."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm import topi
from relaxvm.errors import VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R

WEIGHT = np.arange(2, dtype="float32")


@R.function
def _add_weight(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
    y = R.add(x, WEIGHT)
    return y


def test_captured_numpy_array_is_a_constant() -> None:
    binding = _add_weight.body.blocks[0].bindings[0]
    const = binding.value.args[1]
    assert isinstance(const, rx.Constant)
    np.testing.assert_array_equal(const.data.numpy(), WEIGHT)


def test_script_options_on_nodes() -> None:
    body = _add_weight.body.body
    assert body.script(show_meta=False) == "y"
    assert body.script(verbose_expr=True) == 'y: R.Tensor((2,), dtype="float32")\ny'
    assert _add_weight.params[0].struct_info.script() == 'R.Tensor((2,), dtype="float32")'
    n = SymVar("n", "int64")
    assert (n + 1).script(verbose_expr=True) == "n = T.int64()\nn + 1"
    assert body.script(print_line_numbers=True) == "1 y"


def test_script_options_on_modules_functions_struct_info_and_tir() -> None:
    mod = rx.IRModule({"main": _add_weight})
    numbered = mod.script(print_line_numbers=True, show_meta=True).split("\n")
    assert numbered[0].startswith(" 1 # from relaxvm.script import")
    assert any(line.split(" ", 2)[-1] == "@I.ir_module" for line in numbered)
    two = _add_weight.script(indent_spaces=2)
    assert "\n  y: R.Tensor((2,)" in two and "\n    y" not in two
    assert _add_weight.script(show_meta=True) == _add_weight.script()
    n = SymVar("n", "int64")
    sinfo = rx.TupleStructInfo(
        [rx.TensorStructInfo((n, 4), "float32"), rx.TensorStructInfo((n,), "int64")]
    )
    assert sinfo.script(verbose_expr=True) == (
        'n = T.int64()\nR.Tuple(R.Tensor((n, 4), dtype="float32"), R.Tensor((n,), dtype="int64"))'
    )
    assert str(sinfo) == sinfo.script()
    func = from_source(
        "@T.prim_func\n"
        "def k(a: T.Buffer((4,), 'float32')):\n"
        "    for i in range(4):\n"
        "        a[i] = T.float32(1)\n"
    )
    assert "\n  for i in range(" in func.script(indent_spaces=2)
    assert func.body.script(print_line_numbers=True).startswith("1 for i in range(")
    with pytest.raises(TypeError, match=r"IRModule.script\(\) got an unexpected keyword"):
        mod.script(bogus=True)
    with pytest.raises(VMValueError, match="tir_prefix='TT' is not supported"):
        func.script(tir_prefix="TT")
    with pytest.raises(TypeError, match=r"Function.script\(\) got an unexpected keyword"):
        _add_weight.script(colour=True)


def test_script_option_errors() -> None:
    body = _add_weight.body.body
    with pytest.raises(VMValueError, match="relax_prefix='RR' is not supported"):
        body.script(relax_prefix="RR")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        body.script(bogus=1)
    with pytest.raises(VMValueError, match="indent_spaces must be a non-negative int"):
        body.script(indent_spaces=-1)


def test_emit_te_in_module() -> None:
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            y = R.emit_te(topi.add, x, x, primfunc_name_hint="double")
            return y

    assert sorted(gv.name_hint for gv, _ in Mod) == ["double", "main"]
    text = Mod.script()
    assert "R.call_tir(cls.double, (x,)" in text
    assert from_source(text).script() == text


def test_emit_te_outside_module_is_an_error() -> None:
    with pytest.raises(ScriptError, match="may only appear in an @I.ir_module class"):

        @R.function
        def f(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            y = R.emit_te(topi.add, x, x)
            return y


def test_implicit_conversions_and_bare_call_tir_argument() -> None:
    mod = from_source(
        """
@I.ir_module
class Mod:
    @T.prim_func
    def copy(a: T.Buffer((2,), "float32"), b: T.Buffer((2,), "float32")):
        for i in range(2):
            b[i] = a[i]

    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.call_tir(Mod.copy, x, R.Tensor((2,), "float32"))
        z = R.call_pure_packed("f", y, 1, 2.5, "s", (3, x), sinfo_args=R.Tensor((2,), "float32"))
        return z
"""
    )
    bindings = mod["main"].body.blocks[0].bindings
    assert isinstance(bindings[0].value.args[1], rx.Tuple)
    args = bindings[1].value.args
    assert [type(a).__name__ for a in args[2:]] == ["PrimValue", "PrimValue", "StringImm", "Tuple"]
    assert args[2].value.dtype == "int64"
    assert args[3].value.dtype == "float64"


def test_check_well_formed_option() -> None:
    text = """
@I.ir_module{opts}
class Mod:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x
"""
    assert isinstance(from_source(text.format(opts="(check_well_formed=False)")), rx.IRModule)
    assert isinstance(from_source(text.format(opts="")), rx.IRModule)
    with pytest.raises(ScriptError, match="unknown option 'strict'"):
        from_source(text.format(opts="(strict=False)"))


_DIRECT = """
@I.ir_module
class Mod:
    @T.prim_func
    def double(a: T.Buffer((2,), "float32"), b: T.Buffer((2,), "float32")):
        for i in range(2):
            b[i] = a[i] * T.float32(2)

    @R.function{opts}
    def main(x: R.Tensor((2,), "float32"), out: R.Tensor((2,), "float32")):
        Mod.double(x, out)
        return out
"""


def test_direct_prim_func_call_runs() -> None:
    import relaxvm
    from relaxvm import relax as rlx

    mod = from_source(_DIRECT.format(opts="(pure=False)"))
    assert "cls.double(x, out)" in mod.script()
    vm = rlx.VirtualMachine(rlx.build(mod, target="llvm"), relaxvm.cpu())
    x = relaxvm.tensor(np.array([1.0, 2.0], "float32"))
    out = relaxvm.tensor(np.zeros(2, "float32"))
    np.testing.assert_array_equal(vm["main"](x, out).numpy(), [2.0, 4.0])


def test_direct_prim_func_call_in_pure_function_is_an_error() -> None:
    with pytest.raises(ScriptError, match="a pure function may not do: use y = R.call_tir"):
        from_source(_DIRECT.format(opts=""))


def test_check_well_formed_runs_by_default_and_can_be_skipped() -> None:
    # A Relax variable captured from Python is used without being defined in the function.
    outside = rx.Var("outside", R.Tensor((2,), "float32"))
    text = """
@I.ir_module{opts}
class Mod:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        y = R.add(x, outside)
        return y
"""
    with pytest.raises(ScriptError, match="variable 'outside' is used before it is defined"):
        from_source(text.format(opts=""), env={"outside": outside})
    mod = from_source(text.format(opts="(check_well_formed=False)"), env={"outside": outside})
    assert mod["main"].body.blocks[0].bindings[0].value.args[1] is outside


def test_ir_module_decorator_with_options() -> None:
    outside = rx.Var("outside", R.Tensor((2,), "float32"))

    @I.ir_module(check_well_formed=False)
    class Mod:
        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            y = R.add(x, outside)
            return y

    assert isinstance(Mod, rx.IRModule)
    with pytest.raises(ScriptError, match="variable 'outside' is used before it is defined"):

        @I.ir_module()
        class Checked:
            @R.function
            def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
                y = R.add(x, outside)
                return y
