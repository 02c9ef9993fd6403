"""TVMScript forms of TVM's tests: unbound expression statements, int64-only shape
dimensions, I.module_attrs in a decorated class, the bare ``R.Tuple`` spelling and
``name = R.ExternFunc(...)`` module globals."""

from __future__ import annotations

import pytest

from relaxvm.errors import RelaxVMError, VMTypeError
from relaxvm.ir import Var as TirVar
from relaxvm.ir.relax import (
    ExternFunc,
    FuncStructInfo,
    IRModule,
    TensorStructInfo,
    TupleStructInfo,
    structural_equal,
)
from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R

# ---- expression statements -------------------------------------------------------------------


def test_unbound_non_void_call_is_an_error(script_error) -> None:
    text = "@R.function\ndef f(x: R.Tensor((4,), 'float32')):\n    R.add(x, x)\n    return x\n"
    script_error(
        text,
        3,
        5,
        "non-void Relax expressions must be bound to a variable",
        'R.Tensor((4,), dtype="float32")',
    )


def test_void_call_statement_is_kept() -> None:
    func = from_source(
        "@R.function(pure=False)\n"
        "def f(x: R.Tensor((4,), 'float32')):\n"
        "    R.print(x, format='x={}')\n"
        "    return x\n"
    )
    (binding,) = func.body.blocks[0].bindings
    assert binding.value.op.name == "relax.print"
    assert binding.var.struct_info == TupleStructInfo([])


# ---- shape dimensions ------------------------------------------------------------------------


def test_int32_symbolic_dimension_is_refused(script_error) -> None:
    text = (
        "@R.function\n"
        "def f(x: R.Tensor(('m', 'n'), 'float32')):\n"
        "    m = T.int64()\n"
        "    n = T.int32()\n"
        "    return x\n"
    )
    script_error(text, 2, 10, "the value in ShapeStructInfo can only have dtype of int64", "int32")


def test_float_dimension_outside_the_parser() -> None:
    dim = TirVar("dim", "float32")
    with pytest.raises(VMTypeError, match="can only have dtype of int64.*`dim` has dtype float32"):
        R.Tensor([dim], "float32")
    assert issubclass(VMTypeError, RelaxVMError)


def test_int64_and_constant_dimensions_are_accepted() -> None:
    n = TirVar("n", "int64")
    sinfo = R.Tensor([n, 4], "float32")
    assert sinfo.shape_values[0] is n
    assert int(sinfo.shape_values[1]) == 4
    assert str(sinfo.shape_values[1].dtype) == "int64"


# ---- I.module_attrs in a decorated class -----------------------------------------------------


def test_module_attrs_in_a_decorated_class() -> None:
    @I.ir_module
    class Mod:
        I.module_attrs({"attr": 10})

        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

    assert dict(Mod.attrs) == {"attr": 10}
    assert "I.module_attrs" in Mod.script()


def test_module_attrs_outside_a_class() -> None:
    with pytest.raises(RuntimeError, match="may only appear as a statement of an @I.ir_module"):
        I.module_attrs({"attr": 1})


# ---- the empty tuple annotation --------------------------------------------------------------


def test_empty_tuple_prints_bare_and_parses_back() -> None:
    empty = TupleStructInfo([])
    assert empty.script() == "R.Tuple"
    assert str(TupleStructInfo([empty])) == "R.Tuple(R.Tuple)"
    func = from_source(
        "@R.function(pure=False)\n"
        "def f(x: R.Tensor((4,), 'float32')) -> R.Tuple:\n"
        "    y: R.Tuple = R.print(x, format='{}')\n"
        "    return y\n"
    )
    assert func.ret_struct_info == empty
    assert "-> R.Tuple:" in func.script()
    again = from_source(func.script())
    assert structural_equal(func, again)


# ---- ExternFunc module globals ---------------------------------------------------------------


def _extern_module(sinfo: FuncStructInfo | None) -> IRModule:
    return IRModule({"my_ext": ExternFunc("my_ext", sinfo)})


def test_extern_global_round_trip_default_signature() -> None:
    mod = _extern_module(None)
    text = mod.script()
    assert '    my_ext = R.ExternFunc("my_ext")\n' in text
    again = from_source(text)
    assert isinstance(again["my_ext"], ExternFunc)
    assert structural_equal(mod, again)


def test_extern_global_round_trip_with_signature() -> None:
    sinfo = FuncStructInfo([], TensorStructInfo(dtype="float32", ndim=2), purity=True)
    mod = _extern_module(sinfo)
    text = mod.script(verbose_expr=True)
    assert (
        'my_ext = R.ExternFunc("my_ext", R.Callable((), R.Tensor(dtype="float32", ndim=2), '
        "True))" in text
    )
    again = from_source(text)
    assert again["my_ext"].struct_info == sinfo
    assert structural_equal(mod, again)


def test_functions_call_an_extern_global() -> None:
    @I.ir_module
    class Mod:
        ext = R.ExternFunc(
            "ext", R.Callable((R.Tensor((2,), "float32"),), R.Tensor((2,), "float32"))
        )

        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            cls = Mod
            y = cls.ext(x)
            return y

    assert isinstance(Mod["ext"], ExternFunc)
    call = Mod["main"].body.blocks[0].bindings[0].value
    assert call.op.name_hint == "ext"
    assert call.struct_info == TensorStructInfo([2], "float32")
    assert structural_equal(Mod, from_source(Mod.script()))


def test_extern_global_name_clash(script_error) -> None:
    text = (
        "@I.ir_module\n"
        "class M:\n"
        "    main = R.ExternFunc('x')\n"
        "\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2,), 'float32')):\n"
        "        return x\n"
    )
    script_error(text, 6, 5, "the module already has a function named 'main'")


def test_other_class_statements_are_still_refused(script_error) -> None:
    text = "@I.ir_module\nclass M:\n    k = 3\n"
    err = script_error(text, 3, 5, "may only contain @R.function and @T.prim_func")
    assert isinstance(err, ScriptError)
