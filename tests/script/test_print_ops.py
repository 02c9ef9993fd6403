"""Every registered op prints as a valid call of its builder in ``relaxvm.ir.relax.op``.

The printed call text is evaluated with Python against a small namespace in which ``R.<op>``
is the op's builder and the ``R``/``T`` helpers build the matching IR; the result must be
structurally equal to the printed call. This checks the printer's spelling of arguments and
attributes without depending on the script parser.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import FloatImm, IntImm
from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.ir.relax.text import RelaxPrinter
from relaxvm.ir.tir import IndexMap
from relaxvm.runtime import cpu

from . import (
    _print_calls_index,
    _print_calls_math,
    _print_calls_nn,
    _print_calls_shape,
    _print_calls_sort,
    _print_calls_tvm_extra_a,
    _print_calls_tvm_extra_b,
    _print_calls_tvm_extra_c,
)

F32 = "float32"
N = SymVar("n")
X = rx.Var("x", rx.TensorStructInfo([N, 4], F32))
IMG = rx.Var("img", rx.TensorStructInfo([1, 3, 8, 8], F32))
WGT = rx.Var("wgt", rx.TensorStructInfo([2, 3, 3, 3], F32))
IDX = rx.Var("idx", rx.TensorStructInfo([2], "int64"))
VEC = rx.Var("vec", rx.TensorStructInfo([4], F32))
MASK = rx.Var("mask", rx.TensorStructInfo([N, 4], "bool"))
CLO = rx.Var("clo", rx.ObjectStructInfo())
GV = rx.GlobalVar("kernel")
OUT = rx.TensorStructInfo([N, 4], F32)

UNARY = ["abs", "ceil", "erf", "exp", "floor", "log", "negative", "round", "rsqrt", "sigmoid"]
UNARY += ["sqrt", "tanh", "flatten", "shape_of", "tensor_to_shape"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "power", "maximum", "minimum"]
BINARY += ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]

SPECIAL: dict[str, Any] = {
    "relax.arange": lambda: op.arange(0, N, 2, dtype="int64"),
    "relax.argmax": lambda: op.argmax(X, axis=1, keepdims=True),
    "relax.argmin": lambda: op.argmin(X),
    "relax.assert_op": lambda: op.assert_op(MASK, [X, VEC], format="bad {} {}"),
    "relax.astype": lambda: op.astype(X, "float16"),
    "relax.broadcast_to": lambda: op.broadcast_to(VEC, (N, 4)),
    "relax.call_dps_packed": lambda: op.call_dps_packed("ext", [X], [OUT, OUT]),
    "relax.call_pure_packed": lambda: op.call_pure_packed("ext", X, VEC, sinfo_args=OUT),
    "relax.call_tir": lambda: op.call_tir(GV, [X], OUT, rx.ShapeExpr([N])),
    "relax.call_tir_inplace": lambda: op.call_tir_inplace(GV, (X, VEC), [0, -1], [OUT, OUT]),
    "relax.clip": lambda: op.clip(X, 0.0, 6.0),
    "relax.concat": lambda: op.concat([X, X], axis=1),
    "relax.cumsum": lambda: op.cumsum(X, axis=1, dtype="float32", exclusive=True),
    "relax.expand_dims": lambda: op.expand_dims(X, [0, -1]),
    "relax.full": lambda: op.full((2, N), rx.const(1.5, F32), F32),
    "relax.full_like": lambda: op.full_like(X, rx.PrimValue(FloatImm("float32", 2.0))),
    "relax.invoke_closure": lambda: op.invoke_closure(CLO, [X], [OUT]),
    "relax.invoke_pure_closure": lambda: op.invoke_pure_closure(CLO, [X, VEC], OUT),
    "relax.linear": lambda: op.linear(X, rx.const(np.ones((5, 4), F32)), VEC, out_dtype=F32),
    "relax.make_closure": lambda: op.make_closure(GV, [X]),
    "relax.matmul": lambda: op.matmul(X, rx.const(np.ones((4, 2), F32))),
    "relax.max": lambda: op.max(X, axis=[0, 1], keepdims=True),
    "relax.mean": lambda: op.mean(X, axis=-1),
    "relax.min": lambda: op.min(X),
    "relax.nn.adaptive_avg_pool2d": lambda: op.nn.adaptive_avg_pool2d(IMG, output_size=[2, 2]),
    "relax.nn.avg_pool2d": lambda: op.nn.avg_pool2d(
        IMG, 2, 2, padding=[1, 0], ceil_mode=True, count_include_pad=True
    ),
    "relax.nn.batch_norm": lambda: op.nn.batch_norm(
        IMG, *([rx.Var("p", rx.TensorStructInfo([3], F32))] * 4), epsilon=1e-3
    ),
    "relax.nn.conv2d": lambda: op.nn.conv2d(
        IMG, WGT, strides=2, padding=[1, 2, 3, 4], dilation=1, groups=1, out_dtype=F32
    ),
    "relax.nn.gelu": lambda: op.nn.gelu(X),
    "relax.nn.layer_norm": lambda: op.nn.layer_norm(
        X, VEC, VEC, axes=-1, epsilon=1e-6, center=False
    ),
    "relax.nn.log_softmax": lambda: op.nn.log_softmax(X, axis=0),
    "relax.nn.max_pool2d": lambda: op.nn.max_pool2d(IMG, [3, 3], strides=1, padding=1, dilation=2),
    "relax.nn.relu": lambda: op.nn.relu(X),
    "relax.nn.rms_norm": lambda: op.nn.rms_norm(X, VEC, axes=[1], epsilon=1e-5),
    "relax.nn.silu": lambda: op.nn.silu(X),
    "relax.nn.softmax": lambda: op.nn.softmax(X),
    "relax.null_value": lambda: op.null_value(),
    "relax.ones": lambda: op.ones((2, 3), "int32"),
    "relax.ones_like": lambda: op.ones_like(X, dtype="int8"),
    "relax.permute_dims": lambda: op.permute_dims(X, [1, 0]),
    "relax.print": lambda: op.print(X, VEC, format="{}: {}"),
    "relax.prod": lambda: op.prod(X, axis=0, keepdims=True),
    "relax.reshape": lambda: op.reshape(X, (-1, 2)),
    "relax.split": lambda: op.split(X, [1, 3], axis=1),
    "relax.squeeze": lambda: op.squeeze(X, axis=[1]),
    "relax.strided_slice": lambda: op.strided_slice(X, [0, 1], [0, 1], [2, 3], [1, 2]),
    "relax.sum": lambda: op.sum(X, axis=None, keepdims=False),
    "relax.take": lambda: op.take(X, IDX, axis=0),
    "relax.to_vdevice": lambda: op.to_vdevice(X, cpu(0)),
    "relax.variance": lambda: op.variance(X, axis=[1]),
    "relax.where": lambda: op.where(MASK, X, X),
    "relax.zeros": lambda: op.zeros(rx.ShapeExpr([N]), F32),
    "relax.zeros_like": lambda: op.zeros_like(X),
}


def _all_calls() -> dict[str, Any]:
    calls: dict[str, Any] = dict(SPECIAL)
    for name in UNARY:
        calls[f"relax.{name}"] = lambda name=name: getattr(op, name)(X)
    for name in BINARY:
        calls[f"relax.{name}"] = lambda name=name: getattr(op, name)(X, X)
    for name in LOGICAL:
        calls[f"relax.{name}"] = lambda name=name: getattr(op, name)(MASK, MASK)
    calls["relax.logical_not"] = lambda: op.logical_not(MASK)
    families = (_print_calls_math, _print_calls_shape, _print_calls_index, _print_calls_nn)
    for family in (
        *families,
        _print_calls_sort,
        _print_calls_tvm_extra_a,
        _print_calls_tvm_extra_b,
        _print_calls_tvm_extra_c,
    ):
        calls.update(family.CALLS)
    return calls


CALLS = _all_calls()


def _namespace() -> dict[str, Any]:
    """``R``, ``T`` and ``cls`` as the builders see them, plus the variables by name."""
    r_ns = types.SimpleNamespace(**{name: getattr(op, name) for name in op.__all__})
    r_ns.call_packed = op.call_packed
    r_ns.shape = rx.ShapeExpr
    r_ns.prim_value = rx.PrimValue
    r_ns.const = rx.const
    r_ns.Tensor = lambda shape=None, dtype=None, ndim=-1: rx.TensorStructInfo(
        shape, dtype, ndim=ndim
    )
    r_ns.Object = rx.ObjectStructInfo()
    r_ns.Tuple = lambda *fields: rx.TupleStructInfo(list(fields))
    t_ns = types.SimpleNamespace(
        int64=lambda v: IntImm("int64", v),
        int32=lambda v: IntImm("int32", v),
        float32=lambda v: FloatImm("float32", v),
        index_map=IndexMap.from_func,
    )
    names = {v.name_hint: v for v in (X, IMG, WGT, IDX, VEC, MASK, CLO)}
    names["p"] = None  # batch_norm's four parameters share one variable
    return {"R": r_ns, "T": t_ns, "cls": types.SimpleNamespace(kernel=GV), "n": N, **names}


def test_every_registered_op_has_a_case() -> None:
    # The lowering ops (memory/vm/builtin, added by the compiler passes) print generically.
    lowering = ("relax.memory.", "relax.vm.", "relax.builtin.", "relax.call_builtin")
    missing = [name for name in op.list_ops() if name not in CALLS]
    assert [name for name in missing if not name.startswith(lowering)] == []
    assert set(CALLS) <= set(op.list_ops())


@pytest.mark.parametrize("name", sorted(CALLS))
def test_printed_call_is_a_valid_builder_call(name: str) -> None:
    call = CALLS[name]()
    text = RelaxPrinter().call(call)
    namespace = _namespace()
    if name == "relax.nn.batch_norm":
        namespace["p"] = call.args[1]
    if name == "relax.to_vdevice":
        # The device prints as "kind:id"; the builder takes a Device, so the namespace maps it.
        namespace["R"].to_vdevice = lambda data, dst_vdevice: op.to_vdevice(
            data, cpu(int(dst_vdevice.split(":")[1]))
        )
    rebuilt = eval(text, namespace)  # the text comes from our own printer
    rx.assert_structural_equal(rebuilt, call, map_free_vars=False)


def test_layout_attributes_print_and_rebuild() -> None:
    img = rx.const(np.ones((1, 4, 4, 2), "float32"))
    wgt = rx.const(np.ones((3, 3, 2, 5), "float32"))
    call = op.nn.conv2d(img, wgt, data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW")
    text = RelaxPrinter().call(call)
    assert 'data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW"' in text
    namespace = _namespace()
    rebuilt = eval(text, namespace)  # the text comes from our own printer
    rx.assert_structural_equal(rebuilt, call, map_free_vars=False)


def test_attribute_keywords_follow_the_builder_signature() -> None:
    text = RelaxPrinter().call(SPECIAL["relax.nn.conv2d"]())
    assert text == (
        "R.nn.conv2d(img, wgt, strides=[2, 2], padding=[1, 2, 3, 4], dilation=[1, 1], "
        'groups=1, out_dtype="float32")'
    )
    assert RelaxPrinter().call(SPECIAL["relax.call_tir"]()) == (
        'R.call_tir(cls.kernel, (x,), out_sinfo=R.Tensor((n, 4), dtype="float32"), '
        "tir_vars=R.shape([n]))"
    )
    assert RelaxPrinter().call(SPECIAL["relax.call_tir_inplace"]()) == (
        "R.call_tir_inplace(cls.kernel, (x, vec), "
        'out_sinfo=[R.Tensor((n, 4), dtype="float32"), R.Tensor((n, 4), dtype="float32")], '
        "inplace_indices=[0, -1])"
    )
    assert RelaxPrinter().call(SPECIAL["relax.assert_op"]()) == (
        'R.assert_op(mask, [x, vec], format="bad {} {}")'
    )
    assert RelaxPrinter().call(SPECIAL["relax.arange"]()) == (
        'R.arange(R.prim_value(0), R.prim_value(n), R.prim_value(2), dtype="int64")'
    )
