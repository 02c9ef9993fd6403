"""IndexMap and relax.layout_transform: shapes, padding, printing and errors (the kernels
run in the conformance matrix, cases ``relax.layout_transform``)."""

from __future__ import annotations

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMValueError
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op import OpError
from relaxvm.ir.tir import IndexMap
from relaxvm.script import ScriptError, from_source


def _dims(values: list) -> list[str]:
    return [str(v) for v in values]


def test_index_map_shapes_static_and_symbolic() -> None:
    blocked = IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))
    assert _dims(blocked.map_shape([8, 5])) == ["2", "5", "4"]
    assert _dims(blocked.map_shape([6, 5])) == ["2", "5", "4"]  # two padded rows
    n = SymVar("n", "int64")
    assert _dims(IndexMap.from_func(lambda i, j: (j, i)).map_shape([n, 3])) == ["3", "n"]
    assert _dims(IndexMap.from_func(lambda i, j: (i * 3 + j,)).map_shape([n, 3])) == ["n * 3"]
    assert _dims(blocked.map_indices([9, 2])) == ["9 // 4", "2", "9 % 4"]


def test_index_map_equality_ignores_names() -> None:
    first = IndexMap.from_func(lambda i, j: (i // 4, j, i % 4))
    second = IndexMap.from_func(lambda a, b: (a // 4, b, a % 4))
    assert first == second and hash(first) == hash(second)
    assert first != IndexMap.from_func(lambda i, j: (j, i))
    assert str(first) == "T.index_map(lambda i, j: (i // 4, j, i % 4))"
    assert IndexMap.from_func(lambda *idx: (idx[1], idx[0]), ndim=2).ndim == 2


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (lambda i: (i - 1,), "final index i - 1 may be negative"),
        (lambda i: (i * i,), "cannot bound the index expression i \\* i"),
        (lambda i: (i % -2,), "cannot bound"),
    ],
)
def test_index_map_shape_errors(mapping, message: str) -> None:
    with pytest.raises(VMValueError, match=message):
        IndexMap.from_func(mapping).map_shape([4])


def test_index_map_construction_errors() -> None:
    with pytest.raises(VMValueError, match="a function of \\*args needs ndim"):
        IndexMap.from_func(lambda *idx: idx)
    with pytest.raises(VMValueError, match="takes 2 indices, ndim is 3"):
        IndexMap.from_func(lambda i, j: (i, j), ndim=3)
    with pytest.raises(VMValueError, match="expected a function of the indices"):
        IndexMap.from_func(3)  # type: ignore[arg-type]
    stranger = SymVar("k", "int64")
    with pytest.raises(VMValueError, match="uses k, which is not one of the initial indices"):
        IndexMap.from_func(lambda i: (i + stranger,))
    with pytest.raises(VMValueError, match="2 indices expected, got 1"):
        IndexMap.from_func(lambda i, j: (j, i)).map_indices([0])


def _infer(shape, mapping, **kwargs) -> rx.StructInfo:
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo(shape, "float32"))
    with bb.function("main", [x]):
        y = bb.emit(op.layout_transform(x, mapping, **kwargs))
        bb.emit_func_output(y)
    return y.struct_info


def test_inference() -> None:
    sinfo = _infer((6, 5), lambda i, j: (i // 4, j, i % 4), pad_value=1.0)
    assert str(sinfo) == 'R.Tensor((2, 5, 4), dtype="float32")'
    unknown = _infer(None, lambda i, j: (j, i))
    assert unknown.ndim == 2 and unknown.shape is None


@pytest.mark.parametrize(
    ("mapping", "kwargs", "message"),
    [
        (lambda i: (i,), {}, "the index map takes 1 indices but x has rank 2"),
        (lambda i, j: (i,), {}, "not one-to-one: it sends the 24 elements of x to 4 positions"),
        (lambda i, j: (i, j), {"axis_separators": [1]}, "axis_separators \\[1\\] is not supported"),
        (lambda i, j: (i, j), {"pad_value": "zero"}, "pad_value must be a number or None"),
    ],
)
def test_inference_errors(mapping, kwargs: dict, message: str) -> None:
    with pytest.raises(OpError, match=message):
        _infer((4, 6), mapping, **kwargs)


def test_script_round_trip_and_run() -> None:
    text = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32")):
        y = R.layout_transform(x, index_map=T.index_map(lambda i, j: (i // 2, j, i % 2)),
                               pad_value=-1.0)
        return y
"""
    mod = from_source(text)
    rx.assert_structural_equal(from_source(mod.script()), mod)
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    x = np.arange(15, dtype="float32").reshape(5, 3)
    got = vm["main"](relaxvm.tensor(x)).numpy()
    padded = np.concatenate([x, np.full((1, 3), -1.0, "float32")])
    np.testing.assert_array_equal(got, padded.reshape(3, 2, 3).transpose(0, 2, 1))


def test_script_lambda_rules() -> None:
    with pytest.raises(ScriptError, match="plain positional parameters only"):
        from_source("@T.prim_func\ndef f():\n    T.evaluate(T.index_map(lambda i=1: (i,)))\n")
    with pytest.raises(ScriptError, match="`lambda` is not supported"):
        from_source(
            "@R.function\ndef f(x: R.Tensor((2,), 'float32')):\n    g = lambda a: a\n    return x\n"
        )
