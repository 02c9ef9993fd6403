# ruff: noqa: F821, F841
# (script bodies are parsed, never run by Python: `cls`, unused bindings)
"""from_source (REPL and notebooks), names from the enclosing Python scope, and smaller
constructs: operator sugar, tir_vars, vdevice, outputs bound by tuple unpacking."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from relaxvm import tir
from relaxvm.ir import SizeVar
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.script import ScriptError, from_source
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T

SEED = """
from relaxvm.script import ir as I, relax as R

@I.ir_module
class MyModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        return R.add(x, x)
"""

N = 6  # a module constant used inside scripts below


def bindings(func: rx.Function) -> list:
    return [b for block in func.body.blocks for b in block.bindings]


def test_from_source_seed_module() -> None:
    mod = from_source(SEED)
    x = rx.Var("x", rx.TensorStructInfo([3, 4], "float32"))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(op.add(x, x))
    rx.assert_structural_equal(mod, bb.get())


def test_from_source_returns_last_or_named_definition() -> None:
    text = """
K = 3

@R.function
def first(x: R.Tensor((K,), "float32")):
    return R.exp(x)

@T.prim_func
def kernel(A: T.Buffer((K,), "float32")):
    for i in range(K):
        A[i] = T.float32(0)
"""
    assert isinstance(from_source(text), tir.PrimFunc)
    first = from_source(text, name="first")
    assert isinstance(first, rx.Function)
    assert first.params[0].struct_info == rx.TensorStructInfo([3], "float32")
    assert first.attrs["global_symbol"] == "first"


def test_from_source_top_level_symbolic_declaration_and_env() -> None:
    text = """
n = T.int64()

@R.function
def f(x: R.Tensor((n * 2, WIDTH), "float32"), y: R.Tensor((n,), "int32")) -> R.Tensor((n * 2, WIDTH), "float32"):
    return R.nn.relu(x)
"""
    func = from_source(text, env={"WIDTH": 5}, source_name="model.py")
    dims = func.params[0].struct_info.shape_values
    assert str(dims[0]) == "n * 2" and dims[1].value == 5
    (n,) = func.params[1].struct_info.shape_values
    assert isinstance(n, SymVar) and n.name == "n"
    assert dims[0].a is n
    rx.well_formed(func)


def test_from_source_well_formedness_error_points_at_the_function(script_error) -> None:
    text = """
n = T.int64()

@R.function
def f(x: R.Tensor((n * 2,), "float32")):
    return x
"""
    script_error(text, 5, 1, "symbolic variable 'n' is used before it is defined")


def test_names_from_the_enclosing_scope() -> None:
    width = 2

    @R.function
    def f(x: R.Tensor((N, width), "float32")):
        return R.reshape(x, R.shape([width, N]))

    assert f.params[0].struct_info == rx.TensorStructInfo([6, 2], "float32")
    assert bindings(f)[0].var.struct_info == rx.TensorStructInfo([2, 6], "float32")


def test_operator_sugar_on_relax_values() -> None:
    @R.function
    def f(x: R.Tensor((3,), "float32"), y: R.Tensor((3,), "float32")):
        return (x + y) * x - y / x

    names = [b.value.op.name for b in bindings(f)]
    assert names == ["relax.add", "relax.multiply", "relax.divide", "relax.subtract"]


@I.ir_module
class TirVars:
    @T.prim_func
    def fill(A: T.Buffer((4,), "float32"), k: T.int64):
        for i in range(4):
            A[i] = T.Cast("float32", k)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        return R.call_tir(cls.fill, (), out_sinfo=R.Tensor((4,), "float32"), tir_vars=[7])


def test_call_tir_with_tir_vars() -> None:
    call = bindings(TirVars["main"])[0].value
    assert isinstance(call.args[2], rx.ShapeExpr) and call.args[2].values[0].value == 7
    a = np.zeros(4, "float32")
    tir.run_prim_func(TirVars["fill"], a, 7)
    np.testing.assert_array_equal(a, 7)


def test_vdevice_annotation() -> None:
    @R.function
    def f(x: R.Tensor((2,), "float32", vdevice="cpu:0")):
        return x

    assert f.params[0].struct_info.vdevice.kind == "cpu"


def test_dataflow_outputs_by_tuple_unpacking_and_rebinding() -> None:
    @R.function
    def f(x: R.Tensor((4, 2), "float32")):
        with R.dataflow():
            a, b = R.split(x, 2, axis=0)
            a = R.add(a, b)
            R.output(a)
        return a

    block = f.body.blocks[0]
    kinds = [(b.var.name_hint, isinstance(b.var, rx.DataflowVar)) for b in block.bindings]
    # The last assignment of an output name is the output; earlier ones stay local.
    assert kinds == [("lv", True), ("a", True), ("b", True), ("a", False)]
    rx.well_formed(f)


def test_local_function_uses_outer_symbolic_dims() -> None:
    @R.function
    def f(x: R.Tensor(("n",), "float32")):
        n = T.int64()

        @R.function
        def g(y: R.Tensor((n,), "float32")) -> R.Tensor((n,), "float32"):
            return R.exp(y)

        return g(x)

    (n,) = f.params[0].struct_info.shape_values
    inner = bindings(f)[0].value
    assert inner.params[0].struct_info.shape_values[0] is n
    assert f.ret_struct_info.shape_values[0] is n


def test_match_cast_defines_new_dims_usable_later() -> None:
    @R.function
    def f(x: R.Tensor(ndim=1, dtype="float32")):
        y = R.match_cast(x, R.Tensor(("k",), "float32"))
        k = T.int64()
        z = R.reshape(y, R.shape([1, k]))
        return z

    binds = bindings(f)
    (k,) = binds[0].struct_info.shape_values
    assert binds[1].var.struct_info.shape_values[1] is k


def test_docstrings_and_pass_are_ignored() -> None:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        """A docstring."""
        pass
        return x

    assert f.body.body is f.params[0]


def test_parameter_annotation_names_an_earlier_parameter() -> None:
    @R.function
    def f(shape: R.Shape(ndim=2), x: R.Tensor(shape, "float32")):
        return x

    shape_param, x_param = f.params
    assert x_param.struct_info.shape is shape_param
    assert x_param.struct_info.ndim == 2


def test_size_var_declaration() -> None:
    @R.function
    def f(x: R.Tensor((n,), "float32")):
        n = T.int64(is_size_var=True)
        return x

    (n,) = f.params[0].struct_info.shape_values
    assert isinstance(n, SizeVar) and n.name == "n"


def test_module_not_in_sys_modules_is_read_from_its_file(tmp_path) -> None:
    # inspect cannot find a class whose module is not registered; the parser then reads
    # the file the class statement is running in.
    path = tmp_path / "loose_module.py"
    path.write_text(
        "from relaxvm.script import ir as I, relax as R\n\n\n"
        "@I.ir_module\nclass Loose:\n    @R.function\n"
        '    def main(x: R.Tensor((2,), "float32")):\n        return R.exp(x)\n\n\n'
        "@R.function\n"
        'def broken(x: R.Tensor((2,), "float32")):\n    return R.exq(x)\n'
    )
    spec = importlib.util.spec_from_file_location("loose_module", path)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(ScriptError) as info:
        spec.loader.exec_module(module)
    assert (info.value.source_name, info.value.line, info.value.column) == (str(path), 13, 12)
    assert "R.exq" in str(info.value) and "R.exp" in str(info.value)
    assert isinstance(module.Loose, rx.IRModule)
    assert bindings(module.Loose["main"])[0].value.op.name == "relax.exp"


def test_module_attrs() -> None:
    mod = from_source(
        """
@I.ir_module
class M:
    I.module_attrs({"note": "hi", "n": 2})

    @R.function
    def main(x: R.Tensor((2,), "float32")):
        return x
"""
    )
    assert dict(mod.attrs) == {"note": "hi", "n": 2}


def test_module_attrs_needs_a_dict(script_error) -> None:
    text = "@I.ir_module\nclass M:\n    I.module_attrs(3)\n"
    script_error(text, 3, 5, "I.module_attrs expects one dict")


def test_to_vdevice_takes_a_device_string() -> None:
    @R.function
    def f(x: R.Tensor((2,), "float32")):
        return R.to_vdevice(x, "cpu:0")

    call = bindings(f)[0].value
    assert call.attrs["dst_vdevice"].kind == "cpu"
    assert f.ret_struct_info.vdevice.kind == "cpu"
