"""``nonlocal`` in a Relax script function, as TVM's tests write it to capture a value of the
enclosing Python function: a declaration with no effect, checked by name."""

from __future__ import annotations

import pytest

from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R


def test_nonlocal_names_the_enclosing_python_value():
    dtype = "float16"

    @R.function
    def f(x: R.Tensor((2, 3), dtype)):
        nonlocal dtype
        y = R.add(x, x)
        return y

    assert str(f.params[0].struct_info.dtype) == "float16"
    assert str(f.ret_struct_info.dtype) == "float16"


def test_nonlocal_in_a_module_function():
    dtype = "int32"

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), dtype)):
            nonlocal dtype
            return x

    assert str(Module["main"].params[0].struct_info.dtype) == "int32"


def test_nonlocal_of_an_unknown_name_is_an_error():
    text = (
        "from relaxvm.script import relax as R\n"
        "@R.function\n"
        "def f(x: R.Tensor((2,), 'float32')):\n"
        "    nonlocal nosuch\n"
        "    return x\n"
    )
    with pytest.raises(ScriptError, match="nonlocal name 'nosuch' is not a variable of the"):
        from_source(text)


def test_f_string_in_a_script_expression():
    name = "exp"

    @R.function
    def f(x: R.Tensor((2, 3), "float32")):
        nonlocal name
        y = R.call_pure_packed(f"my.{name}_{1 + 1:03d}{name!r}", x, sinfo_args=R.Tensor((2, 3)))
        return y

    assert f.body.blocks[0].bindings[0].value.args[0].global_symbol == "my.exp_002'exp'"
