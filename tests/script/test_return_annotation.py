"""A return annotation narrower than the body is trusted and checked when the function runs;
symbolic declarations (``n = T.int64()``) inside dataflow blocks and ``if`` branches."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import relaxvm
from relaxvm import relax
from relaxvm.errors import VMError, VMTypeError, VMValueError
from relaxvm.ir.relax import ObjectStructInfo, TensorStructInfo
from relaxvm.script import ScriptError, from_source

EXEC_MODES = ("bytecode", "compiled")

#: `y` is an R.Object; the annotation swaps the dims of `x`.
TRANSPOSED = """
@I.ir_module
class Module:
    @R.function
    def swap(x: R.Tensor(("n", "m"), "int32"), y: R.Object) -> R.Tensor(("m", "n"), dtype=None):
        return y
"""


def _vm(mod: relax.IRModule, exec_mode: str) -> relax.VirtualMachine:
    return relax.VirtualMachine(relax.build(mod, "llvm", exec_mode=exec_mode), relaxvm.cpu())


def test_narrower_annotation_becomes_the_return_struct_info() -> None:
    func = from_source(TRANSPOSED)["swap"]
    x, y = func.params
    assert isinstance(y.struct_info, ObjectStructInfo)
    ret = func.ret_struct_info
    assert isinstance(ret, TensorStructInfo) and ret.dtype is None
    n, m = x.struct_info.shape_values
    # The annotation's dims are the parameters' variables, in swapped order.
    assert list(ret.shape_values) == [m, n]
    # The printed module parses back to the same function.
    again = from_source(from_source(TRANSPOSED).script())["swap"]
    relaxvm.ir.assert_structural_equal(again, func)


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_returned_value_is_checked_against_the_annotation(exec_mode: str) -> None:
    vm = _vm(from_source(TRANSPOSED), exec_mode)
    x = np.zeros((1, 2), "int32")
    good = np.arange(2, dtype="float32").reshape(2, 1)
    np.testing.assert_array_equal(vm["swap"](x, good).numpy(), good)
    with pytest.raises(RuntimeError, match=r"fn=swap, loc=return.*shape\[0\] mismatch") as err:
        vm["swap"](x, np.zeros((1, 2), "float32"))
    assert isinstance(err.value, VMError)
    with pytest.raises(ValueError, match=r"fn=swap, loc=return.*ndim 2 but get 3") as err2:
        vm["swap"](x, np.zeros((2, 1, 1), "float32"))
    assert isinstance(err2.value, VMValueError)
    with pytest.raises(TypeError, match=r"fn=swap, loc=return.*expect a Tensor") as err3:
        vm["swap"](x, (1, 2))
    assert isinstance(err3.value, VMTypeError)
    # A failed check leaves the VM usable.
    np.testing.assert_array_equal(vm["swap"](x, good).numpy(), good)


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_static_annotation_on_a_symbolic_tensor_is_checked(exec_mode: str) -> None:
    text = """
@R.function
def four(x: R.Tensor(("n",), "float32")) -> R.Tensor((4,), "float32"):
    return x
"""
    func = from_source(text)
    assert func.ret_struct_info.shape_values[0].value == 4
    vm = _vm(relax.IRModule({"four": func}), exec_mode)
    data = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(vm["four"](data).numpy(), data)
    with pytest.raises(RuntimeError, match=r"fn=four, loc=return.*expected 4, but got 3"):
        vm["four"](np.zeros(3, "float32"))


def test_wider_annotation_is_still_accepted() -> None:
    text = """
@R.function
def wide(x: R.Tensor((3,), "float32")) -> R.Tensor(ndim=1):
    return x
"""
    ret = from_source(text).ret_struct_info
    assert ret.ndim == 1 and ret.shape is None and ret.dtype is None


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        ("R.Shape", "R.Shape(ndim=-1)"),
        ('R.Tensor((3,), "int32")', 'dtype="int32"'),
        ("R.Tensor(ndim=2)", "R.Tensor(ndim=2)"),
        ("R.Tuple(R.Object)", "R.Tuple(R.Object)"),
    ],
)
def test_annotation_that_can_never_hold_is_refused(
    script_error: Callable[..., ScriptError], annotation: str, shown: str
) -> None:
    text = f'@R.function\ndef f(x: R.Tensor((3,), "float32")) -> {annotation}:\n    return x\n'
    err = script_error(text, 2, 40, "function 'f' is annotated to return", "can never match")
    assert shown in str(err) and 'R.Tensor((3,), dtype="float32")' in str(err)


# ---- symbolic declarations inside the body ------------------------------------------------
DATAFLOW_DECL = """
@R.function
def flip(x: R.Tensor(dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
    with R.dataflow():
        n, m = T.int64(), T.int64()
        y = R.match_cast(x, R.Tensor((n, m), "float32"))
        z = R.reshape(y, R.shape([m, n]))
        R.output(z)
    return z
"""


def test_declaration_in_a_dataflow_block_defines_the_names() -> None:
    func = from_source(DATAFLOW_DECL)
    (block,) = func.body.blocks
    cast, reshape = block.bindings
    n, m = cast.struct_info.shape_values
    assert (n.name, m.name) == ("n", "m")
    # The declaration binds nothing: the block holds only the cast and the reshape.
    assert [b.var.name_hint for b in block.bindings] == ["y", "z"]
    assert list(reshape.var.struct_info.shape_values) == [m, n]


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_dataflow_declaration_runs(exec_mode: str) -> None:
    vm = _vm(relax.IRModule({"flip": from_source(DATAFLOW_DECL)}), exec_mode)
    data = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(vm["flip"](data).numpy(), data.reshape(3, 2))
    with pytest.raises(ValueError, match=r"match_cast.*ndim 2 but get 1"):
        vm["flip"](np.zeros(3, "float32"))


def test_declaration_in_an_if_branch() -> None:
    text = """
@R.function
def pick(c: R.Prim("bool"), x: R.Tensor(dtype="float32")) -> R.Tensor(ndim=1, dtype="float32"):
    if c:
        k = T.int64()
        a = R.match_cast(x, R.Tensor((k,), "float32"))
        r = R.add(a, a)
    else:
        r = R.match_cast(x, R.Tensor(ndim=1, dtype="float32"))
    return r
"""
    func = from_source(text)
    then_block = func.body.blocks[0].bindings[0].value.true_branch.blocks[0]
    (k,) = then_block.bindings[0].struct_info.shape_values
    assert k.name == "k"
    assert then_block.bindings[1].var.struct_info.shape_values[0] is k


def test_undeclared_name_in_a_dataflow_block_is_an_error(
    script_error: Callable[..., ScriptError],
) -> None:
    text = (
        "@R.function\n"
        'def f(x: R.Tensor(dtype="float32")):\n'
        "    with R.dataflow():\n"
        "        n = T.int64()\n"
        '        y = R.match_cast(x, R.Tensor((n, k), "float32"))\n'
        "        R.output(y)\n"
        "    return y\n"
    )
    script_error(text, 5, 42, "undefined name 'k'")
