"""IR nodes saved as JSON and loaded back (``relaxvm.ir.save_json`` / ``load_json``): round
trips of every node kind, shared variables staying shared, and malformed documents failing
with a message that names the place."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMValueError
from relaxvm.ir import (
    DummyGlobalInfo,
    FloatImm,
    IntImm,
    SizeVar,
    assert_structural_equal,
    cast,
    load_json,
    max_expr,
    min_expr,
    save_json,
    select,
    structural_equal,
)
from relaxvm.ir import Var as TirVar
from relaxvm.ir import relax as rx
from relaxvm.ir.json_io import FORMAT_NAME, FORMAT_VERSION, IRJSONError
from relaxvm.ir.relax.vdevice import VDevice
from relaxvm.runtime.device import Device
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T


def _round_trip(node: Any) -> Any:
    text = save_json(node)
    loaded = load_json(text)
    assert_structural_equal(node, loaded, map_free_vars=True)
    assert_structural_equal(loaded, node, map_free_vars=True)
    # Saving what was loaded gives the same document: nothing is lost or added.
    assert save_json(loaded) == text
    return loaded


# ---- round trips ----------------------------------------------------------------------------
def test_struct_info_of_every_kind() -> None:
    n, m = TirVar("n", "int64"), TirVar("m", "int64")
    shape_var = rx.Var("s", rx.ShapeStructInfo(ndim=2))
    infos = [
        rx.ObjectStructInfo(),
        rx.PrimStructInfo("float32"),
        rx.PrimStructInfo(value=n + 1),
        rx.ShapeStructInfo([1, n, m]),
        rx.ShapeStructInfo(ndim=2),
        rx.ShapeStructInfo(),
        rx.TensorStructInfo([2, n], "float16"),
        rx.TensorStructInfo(dtype=None, ndim=3),
        rx.TensorStructInfo(dtype=None),
        rx.TensorStructInfo(shape_var, "int32"),
        rx.TensorStructInfo([4], "float32", vdevice=Device(2, 1)),
        rx.TupleStructInfo([]),
        rx.TupleStructInfo([rx.TensorStructInfo([n], "float32"), rx.ObjectStructInfo()]),
        rx.FuncStructInfo([rx.TensorStructInfo([n, m], "float32")], rx.ShapeStructInfo([m])),
        rx.FuncStructInfo([], rx.PrimStructInfo("bool"), purity=False),
        rx.FuncStructInfo.opaque_func(),
    ]
    for info in infos:
        loaded = _round_trip(info)
        assert type(loaded) is type(info)
        assert str(loaded) == str(info)
    loaded = _round_trip(infos[10])
    assert loaded.vdevice == Device(2, 1)


def test_prim_expressions_and_shared_variables() -> None:
    n, k = TirVar("n", "int64"), SizeVar("k", "int64")
    x = TirVar("x", "float32")
    exprs = [
        n * 2 + k - (n // 3) % 5,
        min_expr(n, k) + max_expr(n, 1),
        select(n < k, n, k),
        cast(n, "float32") / x,
        (n == k) | ((n != 1) & (n >= 0)),
        IntImm("bool", 1),
        IntImm("int8", -128),
        FloatImm("float32", 0.5),
    ]
    for expr in exprs:
        assert type(_round_trip(expr)) is type(expr)
    loaded = load_json(save_json(n + n))
    assert loaded.a is loaded.b  # one variable used twice is one variable again
    assert type(load_json(save_json(k))) is SizeVar
    for value in (math.inf, -math.inf):
        assert load_json(save_json(FloatImm("float32", value))).value == value
    assert math.isnan(load_json(save_json(FloatImm("float64", math.nan))).value)


@I.ir_module
class _Module:
    @T.prim_func
    def add_one(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            with T.block("b"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def main(
        x: R.Tensor(("n",), "float32"), y: R.Tensor((2, 3), "int32"), flag: R.Tensor((), "bool")
    ):
        n = T.int64()
        cls = _Module
        with R.dataflow():
            z = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
            w = R.add(y, R.const(3, "int32"))
            t = (z, w)
            u = t[1]
            s = R.sum(u, axis=[1], keepdims=True)
            R.output(z, s)
        if flag:  # noqa: SIM108 (a script If, not a Python conditional)
            r = R.multiply(z, R.const(2.0, "float32"))
        else:
            r = z
        v = R.match_cast(r, R.Tensor((n,), "float32"))
        return (v, s)


def test_module_with_prim_func_and_shared_vars() -> None:
    loaded = _round_trip(_Module)
    main = loaded["main"]
    x = main.params[0]
    first = main.body.blocks[0].bindings[0].value  # call_tir(add_one, (x,))
    assert first.args[1].fields[0] is x
    assert first.args[0] is loaded.get_global_var("add_one")
    # The symbolic n of x's annotation is the one the PrimFunc call's output uses.
    n = x.struct_info.shape.values[0]
    assert first.sinfo_args[0].shape.values[0] is n


def test_module_global_infos_and_virtual_devices() -> None:
    vdevice = VDevice("llvm", 0, "global")
    x = rx.Var("x", rx.TensorStructInfo([2], "float32", vdevice=vdevice))
    infos = {"vdevice": [vdevice], "other": [DummyGlobalInfo()]}
    mod = rx.IRModule({"main": rx.Function([x], x)}, {"note": "kept"}, global_infos=infos)
    loaded = _round_trip(mod)
    assert loaded.attrs["note"] == "kept"
    assert set(loaded.global_infos) == {"vdevice", "other"}
    (loaded_vdevice,) = loaded.global_infos["vdevice"]
    assert loaded_vdevice == vdevice
    # The tensor's vdevice is the module's, not a copy.
    assert loaded["main"].params[0].struct_info.vdevice is loaded_vdevice


def test_constants_keep_their_data() -> None:
    for array in (
        np.arange(12, dtype="float32").reshape(3, 4) / 7,
        np.array([[True, False]]),
        np.array(-5, dtype="int64"),
        np.zeros((0, 3), "float16"),
        np.array([1, 2, 255], "uint8"),
    ):
        const = rx.const(array)
        loaded = _round_trip(const)
        got = loaded.data.numpy()
        assert got.dtype == array.dtype and got.shape == array.shape
        np.testing.assert_array_equal(got, array)


def test_relax_leaves_and_calls() -> None:
    x = rx.Var("x", rx.TensorStructInfo([2, 3], "float32"))
    nodes = [
        rx.PrimValue(IntImm("int64", 7)),
        rx.StringImm("hello \u00e9"),
        rx.DataTypeImm("float16"),
        rx.ExternFunc("my.packed"),
        rx.ShapeExpr([2, 3]),
        rx.Tuple([x, rx.ShapeExpr([1])]),
        rx.op.permute_dims(x, [1, 0]),
        rx.op.reshape(x, (3, 2)),
        rx.op.take(x, rx.PrimValue(IntImm("int64", 1)), axis=0),
    ]
    for node in nodes:
        loaded = _round_trip(node)
        assert type(loaded) is type(node)
    call = load_json(save_json(rx.op.add(x, x)))
    assert call.args[0] is call.args[1]


def test_lists_and_dicts_at_the_root() -> None:
    n = TirVar("n", "int64")
    value = {"shape": [n, 4], "pair": (n, "s"), "none": None, "flag": True, "ratio": 0.25}
    loaded = load_json(save_json(value))
    assert set(loaded) == set(value) and loaded["pair"][1] == "s" and loaded["ratio"] == 0.25
    assert loaded["shape"][0] is loaded["pair"][0]
    assert isinstance(loaded["pair"], tuple) and loaded["flag"] is True


def test_loaded_module_compiles_and_matches_numpy() -> None:
    legalized = relaxvm.transform.LegalizeOps()(_Module)
    loaded = load_json(save_json(legalized))
    assert structural_equal(loaded, legalized)
    vm = relaxvm.VirtualMachine(relaxvm.compile(loaded, target="llvm"), relaxvm.cpu())
    x = np.array([1.0, -2.0, 3.5], "float32")
    y = np.arange(6, dtype="int32").reshape(2, 3)
    for flag in (True, False):
        v, s = vm["main"](relaxvm.tensor(x), relaxvm.tensor(y), relaxvm.tensor(np.array(flag)))
        np.testing.assert_allclose(v.numpy(), (x + 1) * (2 if flag else 1))
        np.testing.assert_array_equal(s.numpy(), (y + 3).sum(axis=1, keepdims=True))


# ---- malformed documents --------------------------------------------------------------------
def _document(nodes: list[Any], root: Any = None) -> str:
    root = {"$node": len(nodes) - 1} if root is None else root
    return json.dumps(
        {"format": FORMAT_NAME, "version": FORMAT_VERSION, "root": root, "nodes": nodes}
    )


def _var(name: Any = "n", dtype: Any = "int64") -> dict[str, Any]:
    return {"type": "tir.Var", "fields": {"name": name, "dtype": dtype}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", r"<document>: not valid JSON"),
        ("[1, 2]", r"<document>: expected a JSON object, got a list"),
        (json.dumps({"format": FORMAT_NAME, "version": 1, "nodes": []}), r"missing root"),
        (
            json.dumps({"format": "tvm", "version": 1, "root": None, "nodes": []}),
            r"format: expected 'relaxvm.ir.json', got 'tvm'",
        ),
        (
            json.dumps({"format": FORMAT_NAME, "version": 9, "root": None, "nodes": []}),
            r"version: this relaxvm reads version 1 only, got 9",
        ),
        (
            _document([{"type": "builtins.eval", "fields": {}}]),
            r"nodes\[0\]\.type: unknown node type 'builtins.eval'",
        ),
        (
            _document([{"type": "tir.Var"}]),
            r'nodes\[0\]: expected an object with exactly "type" and "fields"',
        ),
        (
            _document([{"type": "tir.Var", "fields": {"name": "n"}}]),
            r"nodes\[0\]\.fields: tir.Var: missing dtype",
        ),
        (
            _document([{"type": "tir.Var", "fields": {"name": "n", "dtype": "int64", "x": 1}}]),
            r"nodes\[0\]\.fields: tir.Var: unexpected x",
        ),
        (_document([_var(name=5)]), r"nodes\[0\]: cannot build tir.Var: .*name must be a str"),
        (_document([_var(dtype="int65536x")]), r"nodes\[0\]: cannot build tir.Var"),
        (
            _document(
                [{"type": "tir.Add", "fields": {"a": {"$node": 1}, "b": {"$node": 1}}}, _var()]
            ),
            r"nodes\[0\]\.fields\.a: refers to node 1, which is not defined before this point",
        ),
        (_document([_var()], root={"$node": 5}), r"root: refers to node 5"),
        (_document([_var()], root={"$node": True}), r"root: \$node must be an integer"),
        (
            _document([_var()], root={"$eval": "1"}),
            r"root: expected a value or an object with one of",
        ),
        (
            _document([_var()], root={"$float": "pi"}),
            r'root: \$float must be "nan", "inf" or "-inf"',
        ),
        (
            _document([_var()], root={"$dict": [[1]]}),
            r"root\[0\]: a \$dict entry must be a \[key, value\] pair",
        ),
        (_document([_var()], root={"$dtype": "float33"}), r"root: bad \$dtype 'float33'"),
        (
            '{"format": "relaxvm.ir.json", "version": 1, "root": NaN, "nodes": []}',
            r"NaN is not allowed",
        ),
        (
            _document([{"type": "tir.IntImm", "fields": {"dtype": "int8", "value": 300}}]),
            r"nodes\[0\]: cannot build tir.IntImm: .*300 does not fit in int8",
        ),
        (
            _document([{"type": "relax.Var", "fields": {"name_hint": "x", "struct_info": 3}}]),
            r"nodes\[0\]: cannot build relax.Var: .*struct_info must be a StructInfo",
        ),
    ],
)
def test_malformed_documents_name_the_place(text: str, message: str) -> None:
    with pytest.raises(IRJSONError, match=message) as info:
        load_json(text)
    assert isinstance(info.value, VMValueError) and isinstance(info.value, ValueError)


def _constant_doc(dtype: str, shape: Any, data: str) -> str:
    sinfo = {"type": "relax.ObjectStructInfo", "fields": {}}
    const = {
        "type": "relax.Constant",
        "fields": {"dtype": dtype, "shape": shape, "data": data, "struct_info": None},
    }
    return _document([sinfo, const])


def test_malformed_constants() -> None:
    four = base64.b64encode(bytes(4)).decode()
    load_json(_constant_doc("float32", [1], four))  # well-formed: loads
    cases = [
        (
            _constant_doc("float32", [2], four),
            r"data holds 4 bytes, but a float32 tensor of shape \(2,\) needs 8",
        ),
        (_constant_doc("float32", [1], "***"), r"data is not valid base64"),
        (_constant_doc("float32", [-1], four), r"shape must be a list of non-negative ints"),
        (_constant_doc("object", [1], four), r""),
    ]
    for text, message in cases:
        with pytest.raises(
            IRJSONError, match=r"nodes\[1\]: cannot build relax.Constant: " + message
        ):
            load_json(text)


def test_bytes_input_and_non_text() -> None:
    n = TirVar("n", "int64")
    assert structural_equal(load_json(save_json(n + 1).encode()), n + 1, map_free_vars=True)
    with pytest.raises(IRJSONError, match=r"<document>: not UTF-8 text"):
        load_json(b"\xff\xfe")
    with pytest.raises(IRJSONError, match=r"<document>: expected JSON text, got int"):
        load_json(12)  # type: ignore[arg-type]


def test_unsavable_value_names_its_place() -> None:
    x = rx.Var("x", rx.TensorStructInfo([2], "float32"))
    func = rx.Function([x], x, attrs={"global_symbol": "f", "opaque": object()})
    with pytest.raises(
        IRJSONError, match=r'<root>\.attrs\["opaque"\]: cannot save a value of type object'
    ):
        save_json(func)
