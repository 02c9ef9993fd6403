"""IRModule: lookup by name and GlobalVar, updates, iteration, attributes and errors."""

from __future__ import annotations

import pytest

from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.ir.relax import (
    Function,
    GlobalVar,
    IRModule,
    ObjectStructInfo,
    SeqExpr,
    TensorStructInfo,
    Var,
)


def identity_function() -> Function:
    x = Var("x", TensorStructInfo([4], "float32"))
    return Function([x], SeqExpr([], x))


def test_lookup_by_name_and_global_var() -> None:
    main, helper = identity_function(), identity_function()
    mod = IRModule({"main": main, "helper": helper})
    assert mod["main"] is main
    gvar = mod.get_global_var("helper")
    assert isinstance(gvar, GlobalVar) and gvar.name_hint == "helper"
    assert mod[gvar] is helper
    assert "main" in mod and gvar in mod and "nope" not in mod and GlobalVar("main") not in mod
    assert len(mod) == 2
    assert [g.name_hint for g in mod.get_global_vars()] == ["helper", "main"]
    assert {g.name_hint: f for g, f in mod} == {"main": main, "helper": helper}
    assert dict(mod.functions) == {mod.get_global_var("main"): main, gvar: helper}
    # The GlobalVar takes the function's signature, so calls through it can be checked.
    assert gvar.struct_info == helper.struct_info


def test_unknown_name_lists_available_functions() -> None:
    mod = IRModule({"main": identity_function(), "helper": identity_function()})
    with pytest.raises(
        VMValueError,
        match=r"no function named 'mian'; available functions: "
        r"helper, main \(did you mean 'main'\?\)",
    ):
        mod["mian"]
    with pytest.raises(VMValueError, match=r"available functions: \(none\)"):
        IRModule().get_global_var("main")
    with pytest.raises(VMValueError, match=r"not the one the module uses for that name"):
        mod[GlobalVar("main")]
    with pytest.raises(VMTypeError, match=r"expected a GlobalVar or str, got 3"):
        mod[3]  # type: ignore[index]


def test_update_add_remove() -> None:
    first, second, third = identity_function(), identity_function(), identity_function()
    mod = IRModule({"main": first})
    gvar = mod.get_global_var("main")
    mod.update_func(gvar, second)
    assert mod["main"] is second and mod.get_global_var("main") is gvar
    mod["main"] = third  # a str key reuses the existing GlobalVar
    assert mod.get_global_var("main") is gvar and mod[gvar] is third
    added = mod.add("other", first)
    assert mod[added] is first
    with pytest.raises(VMValueError, match=r"a function named 'other' already exists"):
        mod.add("other", second)
    with pytest.raises(VMValueError, match=r"a different GlobalVar named 'main' is already"):
        mod[GlobalVar("main")] = first
    with pytest.raises(VMValueError, match=r"no function named 'missing'"):
        mod.update_func("missing", first)
    del mod["other"]
    assert "other" not in mod and len(mod) == 1
    merged = IRModule({"extra": first})
    merged.update(mod)
    assert sorted(g.name_hint for g, _ in merged) == ["extra", "main"]


def test_values_must_be_functions() -> None:
    with pytest.raises(VMTypeError, match=r"the value for 'main' must be a relax Function"):
        IRModule({"main": 42})

    class FakePrimFunc:
        def __init__(self) -> None:
            self.struct_info = ObjectStructInfo()
            self.attrs: dict = {}

    prim = FakePrimFunc()
    mod = IRModule({"kernel": prim})  # anything with a struct_info is accepted (PrimFunc later)
    assert mod["kernel"] is prim
    assert "kernel = " in mod.script()


def test_attributes_are_copied_on_write() -> None:
    mod = IRModule({"main": identity_function()}, attrs={"device": "cpu"})
    assert mod.attrs["device"] == "cpu" and mod.get_attr("missing", 7) == 7
    changed = mod.with_attr("opt_level", 3)
    assert changed.get_attr("opt_level") == 3 and mod.get_attr("opt_level") is None
    assert changed["main"] is mod["main"]
    assert "device" not in changed.without_attr("device").attrs
    with pytest.raises(TypeError):
        mod.attrs["x"] = 1  # type: ignore[index]
    with pytest.raises(VMTypeError, match=r"attribute names must be str"):
        IRModule(attrs={1: "x"})  # type: ignore[dict-item]


def test_script_and_repr() -> None:
    mod = IRModule({"main": identity_function()})
    text = mod.script()
    assert text.startswith(
        "# from relaxvm.script import ir as I\n# from relaxvm.script import relax as R\n\n"
        "@I.ir_module\nclass Module:\n    @R.function(private=True)\n    def main("
    )
    assert repr(mod) == "IRModule(main)"
    assert str(mod) == text


def test_replacing_a_function_refreshes_the_global_var_signature() -> None:
    mod = IRModule({"main": identity_function()})
    gvar = mod.get_global_var("main")
    y = Var("y", TensorStructInfo([8], "int32"))
    replacement = Function([y], SeqExpr([], y))
    mod.update_func(gvar, replacement)
    assert gvar.struct_info == replacement.struct_info
    assert str(gvar.struct_info).startswith('R.Callable((R.Tensor((8,), dtype="int32"),)')
