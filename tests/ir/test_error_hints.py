"""Error hints for the usual first mistakes: a Python number in Relax arithmetic, a misspelt
``R.<op>``, a misspelt dtype in an annotation."""

from __future__ import annotations

import runpy
import sys

import numpy as np
import pytest

import relaxvm.script
from relaxvm.errors import VMTypeError
from relaxvm.ir import relax as rx
from relaxvm.ir.dtype import parse_dtype, suggest_dtype
from relaxvm.runtime import DataType
from relaxvm.script import relax as R
from relaxvm.script._source import ScriptError


def _var(dtype: str = "float32") -> rx.Var:
    return rx.Var("x", R.Tensor((4,), dtype))


# ---- Python numbers next to Relax expressions -------------------------------------------------
@pytest.mark.parametrize(
    ("apply", "written", "suggestion"),
    [
        (lambda x: x * 2, "x * 2", 'R.multiply(x, R.const(2, "float32"))'),
        (lambda x: 2 + x, "2 + x", 'R.add(R.const(2, "float32"), x)'),
        (lambda x: x - 0.5, "x - 0.5", 'R.subtract(x, R.const(0.5, "float32"))'),
        (lambda x: 1 / x, "1 / x", 'R.divide(R.const(1, "float32"), x)'),
        (lambda x: x // 3, "x // 3", 'R.floor_divide(x, R.const(3, "float32"))'),
        (lambda x: x**2, "x ** 2", 'R.power(x, R.const(2, "float32"))'),
    ],
)
def test_number_operand_suggests_r_const(apply, written, suggestion) -> None:
    with pytest.raises(VMTypeError) as caught:
        apply(_var())
    assert isinstance(caught.value, TypeError)
    assert str(caught.value) == (
        f"unsupported operand: Relax expression `{written}`: a Python "
        f"{'float' if '.' in written else 'int'} is not a Relax value (it has no dtype); "
        f"wrap Python numbers with R.const: {suggestion}"
    )


def test_the_suggestion_uses_the_var_dtype() -> None:
    with pytest.raises(VMTypeError, match=r'R\.multiply\(x, R\.const\(2, "int32"\)\)'):
        _var("int32") * 2
    with pytest.raises(VMTypeError, match=r'R\.add\(x, R\.const\(1\.5, "float16"\)\)'):
        _var("float16") + np.float64(1.5)


def test_two_relax_expressions_build_the_op_call() -> None:
    x, y = _var(), rx.Var("y", R.Tensor((4,), "float32"))
    product = x * y
    assert isinstance(product, rx.Call)
    assert product.op.name == "relax.multiply"
    assert list(product.args) == [x, y]
    assert (y - x).op.name == "relax.subtract"
    assert (-x).op.name == "relax.negative"


def test_other_operand_types_keep_pythons_type_error() -> None:
    with pytest.raises(TypeError, match="unsupported operand type"):
        _var() * object()


def test_op_builder_given_a_number_gets_the_hint() -> None:
    from relaxvm.ir.relax import op

    with pytest.raises(op.OpError) as caught:
        op.multiply(_var(), 2)
    assert str(caught.value) == (
        "relax.multiply: argument 1 must be a Relax expression, got int; wrap Python numbers "
        'with R.const: R.multiply(x, R.const(2, "float32"))'
    )


def test_script_number_operand_gets_the_hint_at_its_line() -> None:
    source = (
        "@I.ir_module\n"
        "class M:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4,), 'float32')):\n"
        "        y = x * 2\n"
        "        return y\n"
    )
    with pytest.raises(ScriptError) as caught:
        relaxvm.script.from_source(source, source_name="model.py")
    message = str(caught.value)
    assert message.startswith("model.py:5:13: error: relax.multiply: argument 1")
    assert 'R.multiply(x, R.const(2, "float32"))' in message


# ---- misspelt ops in the script namespace ------------------------------------------------------
def test_misspelt_op_suggests_the_submodule_op() -> None:
    with pytest.raises(AttributeError) as caught:
        R.sofmax  # noqa: B018
    assert str(caught.value).startswith(
        "unknown op or function 'R.sofmax'; did you mean R.nn.softmax"
    )
    assert caught.value.name == "sofmax"


def test_misspelt_top_level_op_suggests_it() -> None:
    with pytest.raises(
        AttributeError, match=r"^unknown op or function 'R.addd'; did you mean R.add\?$"
    ):
        R.addd  # noqa: B018


def test_unknown_name_without_close_match_has_no_hint() -> None:
    with pytest.raises(AttributeError, match=r"^unknown op or function 'R.qqqqqq'$"):
        R.qqqqqq  # noqa: B018
    assert not hasattr(R, "__wrapped__")


def test_script_misspelt_op_is_reported_at_its_line() -> None:
    source = (
        "@I.ir_module\n"
        "class M:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4,), 'float32')):\n"
        "        y = R.sofmax(x)\n"
        "        return y\n"
    )
    with pytest.raises(ScriptError) as caught:
        relaxvm.script.from_source(source, source_name="model.py")
    assert str(caught.value).startswith(
        "model.py:5:13: error: unknown op or function 'R.sofmax'; did you mean R.nn.softmax"
    )


# ---- misspelt dtypes -----------------------------------------------------------------------------
def test_suggest_dtype() -> None:
    assert suggest_dtype("flaot32") == "float32"
    assert suggest_dtype("int23") == "int32"
    assert suggest_dtype("Float16") == "float16"
    assert suggest_dtype("xyz") is None


def test_parse_dtype() -> None:
    assert parse_dtype("float32", "here") == DataType("float32")
    with pytest.raises(VMTypeError, match=r"^here: .*'flaot32'; did you mean 'float32'\?$"):
        parse_dtype("flaot32", "here")
    with pytest.raises(VMTypeError, match=r"^here: .*'xyz'$"):
        parse_dtype("xyz", "here")


def test_annotation_dtype_typo_gets_did_you_mean() -> None:
    with pytest.raises(VMTypeError) as caught:
        R.Tensor((4,), "flaot32")
    # Called from Python code (here: this test), the message says where.
    line = sys._getframe().f_lineno - 2
    assert str(caught.value) == (
        f"{__file__}:{line}: R.Tensor: DataType: cannot parse data type 'flaot32'; "
        "did you mean 'float32'?"
    )
    with pytest.raises(VMTypeError, match=r"R.Prim: .*did you mean 'int64'\?"):
        R.Prim("imt64")
    with pytest.raises(VMTypeError, match=r"TensorStructInfo: .*did you mean 'float16'\?"):
        rx.TensorStructInfo([4], "flaot16")


def test_model_file_run_by_python_names_file_and_line(tmp_path) -> None:
    # A model file imported as a module evaluates its annotations before the parser runs.
    model = tmp_path / "model.py"
    model.write_text(
        "from relaxvm.script import ir as I, relax as R\n"
        "\n"
        "@I.ir_module\n"
        "class M:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4,), 'flaot32')):\n"
        "        return x\n"
    )
    with pytest.raises(VMTypeError) as caught:
        runpy.run_path(str(model))
    assert str(caught.value) == (
        f"{model}:6: R.Tensor: DataType: cannot parse data type 'flaot32'; did you mean 'float32'?"
    )


def test_script_dtype_typo_names_file_and_line() -> None:
    source = (
        "@I.ir_module\n"
        "class M:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4,), 'flaot32')):\n"
        "        return x\n"
    )
    with pytest.raises(ScriptError) as caught:
        relaxvm.script.from_source(source, source_name="model.py")
    first = str(caught.value).splitlines()[0]
    assert first == (
        "model.py:4:17: error: R.Tensor: DataType: cannot parse data type 'flaot32'; "
        "did you mean 'float32'?"
    )
