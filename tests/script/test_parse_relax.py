# ruff: noqa: F821, F841
# (script bodies are parsed, never run by Python: `cls`, unused bindings)
"""Parsing @I.ir_module / @R.function scripts, compared with the same IR built by BlockBuilder."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.script import tir as T


def tensor(shape: list | None, dtype: str = "float32", ndim: int = -1) -> rx.TensorStructInfo:
    return rx.TensorStructInfo(shape, dtype, ndim=ndim)


def bindings(func: rx.Function) -> list:
    return [b for block in func.body.blocks for b in block.bindings]


# ---- the seed example ----------------------------------------------------------------------
@I.ir_module
class MyModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        return R.add(x, x)


def test_seed_example_equals_block_builder() -> None:
    x = rx.Var("x", tensor([3, 4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(op.add(x, x))
    expected = bb.get()
    assert isinstance(MyModule, rx.IRModule)
    rx.well_formed(MyModule)
    rx.assert_structural_equal(MyModule, expected)
    main = MyModule["main"]
    assert main.attrs["global_symbol"] == "main"
    assert main.ret_struct_info == tensor([3, 4])
    assert [b.value.op.name for b in bindings(main)] == ["relax.add"]


def test_seed_example_differs_from_another_op() -> None:
    x = rx.Var("x", tensor([3, 4]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(op.multiply(x, x))
    assert not rx.structural_equal(MyModule, bb.get())


# ---- dataflow, symbolic dims, annotations, nested calls -----------------------------------
@I.ir_module
class Dataflow:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, "m"), "float32")) -> R.Tensor(
        ("n", "m"), "float32"
    ):
        with R.dataflow():
            lv = R.matmul(R.multiply(x, x), w)
            y: R.Tensor(("n", "m"), "float32") = R.nn.relu(lv)
            gv = R.add(y, y)
            R.output(gv)
        return gv


def test_dataflow_with_symbolic_dims_equals_block_builder() -> None:
    n, m = SymVar("n"), SymVar("m")
    x, w = rx.Var("x", tensor([n, 4])), rx.Var("w", tensor([4, m]))
    bb = rx.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            lv = bb.emit(op.matmul(op.multiply(x, x), w))
            y = bb.emit(op.nn.relu(lv))
            gv = bb.emit_output(op.add(y, y))
        bb.emit_func_output(gv)
    rx.assert_structural_equal(Dataflow, bb.get())
    main = Dataflow["main"]
    block = main.body.blocks[0]
    assert block.is_dataflow
    kinds = [(b.var.name_hint, isinstance(b.var, rx.DataflowVar)) for b in block.bindings]
    assert kinds[1:] == [("lv", True), ("y", True), ("gv", False)]
    # "n" names one variable across both parameters and the return annotation.
    (x_n, _), (_, w_m) = (p.struct_info.shape_values for p in main.params)
    assert main.ret_struct_info.shape_values[0] is x_n
    assert main.ret_struct_info.shape_values[1] is w_m


@I.ir_module
class SymbolicExprs:
    @R.function
    def main(x: R.Tensor(("n * 2",), "float32"), y: R.Tensor((n,), "float32")):
        n = T.int64()
        z = R.reshape(x, R.shape([n, 2]))
        s: R.Shape([n, 2]) = R.shape_of(z)
        return (z, y, s)


def test_symbolic_expressions_in_annotations() -> None:
    main = SymbolicExprs["main"]
    (x_dim,) = main.params[0].struct_info.shape_values
    (y_dim,) = main.params[1].struct_info.shape_values
    assert isinstance(y_dim, SymVar) and y_dim.name == "n"
    assert str(x_dim) == "n * 2"
    z = bindings(main)[0].var
    assert z.struct_info.shape_values[0] is y_dim
    assert isinstance(main.ret_struct_info, rx.TupleStructInfo)
    rx.well_formed(SymbolicExprs)


@I.ir_module
class Signatures:
    @R.function
    def main(
        a: R.Tensor,
        b: R.Tensor(ndim=2, dtype="float32"),
        c: R.Shape([2, "k"]),
        d: R.Shape(ndim=3),
        e: R.Prim("int64"),
        f: R.Prim(value="k"),
        g: R.Tuple(R.Tensor((2,), "int32"), R.Object),
        h: R.Callable([R.Tensor((4,), "float32")], R.Tensor((4,), "float32")),
        i: R.Object,
        j: R.Tensor("float16", ndim=1),
    ) -> R.Object:
        return i


def test_every_annotation_kind() -> None:
    k = SymVar("k")
    expected = [
        rx.TensorStructInfo(dtype=None),
        tensor(None, ndim=2),
        rx.ShapeStructInfo([2, k]),
        rx.ShapeStructInfo(ndim=3),
        rx.PrimStructInfo("int64"),
        rx.PrimStructInfo(value=k),
        rx.TupleStructInfo([tensor([2], "int32"), rx.ObjectStructInfo()]),
        rx.FuncStructInfo([tensor([4])], tensor([4])),
        rx.ObjectStructInfo(),
        tensor(None, "float16", ndim=1),
    ]
    params = [rx.Var(name, sinfo) for name, sinfo in zip("abcdefghij", expected, strict=True)]
    func = rx.Function(
        params, rx.SeqExpr([], params[8]), rx.ObjectStructInfo(), True, {"global_symbol": "main"}
    )
    rx.assert_structural_equal(Signatures["main"], func)
    got = Signatures["main"].params
    assert got[2].struct_info.values[1] is got[5].struct_info.value  # one "k"


# ---- calls between functions, recursion, call_tir ------------------------------------------
@I.ir_module
class Calls:
    @T.prim_func
    def double(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
        n = T.int64()
        for i in range(n):
            B[i] = A[i] * T.float32(2)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        y = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((n,), "float32"))
        z = cls.helper(y)
        w = helper(z)
        return Calls.helper(w)

    @R.function(private=True)
    def helper(a: R.Tensor(("m",), "float32")) -> R.Tensor(("m",), "float32"):
        return R.nn.relu(a)

    @R.function
    def count(k: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
        cond = R.greater(k, R.const(0, "int64"))
        if cond:  # noqa: SIM108
            r = cls.count(R.subtract(k, R.const(1, "int64")))
        else:
            r = k
        return r


def test_calls_between_functions_and_call_tir() -> None:
    assert set(gv.name_hint for gv, _ in Calls) == {"double", "main", "helper", "count"}
    main = Calls["main"]
    values = [b.value for b in bindings(main)]
    assert values[0].op.name == "relax.call_tir"
    assert values[0].args[0] is Calls.get_global_var("double")
    for call in values[1:]:
        assert call.op is Calls.get_global_var("helper")
    # The callee's "m" is replaced by the caller's "n" at each call site.
    (n,) = main.params[0].struct_info.shape_values
    assert values[1].struct_info.shape_values[0] is n
    assert "global_symbol" not in Calls["helper"].attrs
    assert Calls["double"].attrs["global_symbol"] == "double"
    rx.well_formed(Calls)


def test_recursion_through_cls() -> None:
    count = Calls["count"]
    if_binding = bindings(count)[-1]
    assert isinstance(if_binding.value, rx.If)
    then_calls = [b.value for blk in if_binding.value.true_branch.blocks for b in blk.bindings]
    assert then_calls[-1].op is Calls.get_global_var("count")
    assert if_binding.var.struct_info == tensor([], "int64")


@I.ir_module
class Packed:
    @T.prim_func
    def inc(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = A[i] + T.float32(1)

    @R.function(pure=False)
    def main(x: R.Tensor((4,), "float32")):
        a = R.call_tir_inplace(
            cls.inc, (x,), inplace_indices=[0], out_sinfo=R.Tensor((4,), "float32")
        )
        b = R.call_dps_packed("my_dps", (a,), out_sinfo=R.Tensor((4,), "float32"))
        c = R.call_packed("my_packed", b, R.prim_value(3), sinfo_args=R.Tensor((4,), "float32"))
        d = R.call_pure_packed("my_pure", c, sinfo_args=(R.Tensor((4,), "float32"),))
        R.print(d, format="d = {}")
        e = R.assert_op(R.const(True, "bool"), format="ok")
        return (d, R.null_value())


def test_packed_and_inplace_calls() -> None:
    main = Packed["main"]
    assert not main.is_pure
    values = [b.value for b in bindings(main)]
    assert values[0].op.name == "relax.call_tir_inplace"
    assert values[0].attrs["inplace_indices"] == (0,)
    assert values[1].args[0].global_symbol == "my_dps"
    assert isinstance(values[2].op, rx.ExternFunc) and values[2].op.global_symbol == "my_packed"
    assert isinstance(values[2].args[1], rx.PrimValue)
    assert values[3].op.name == "relax.call_pure_packed"
    assert [v.op.name for v in values[4:6]] == ["relax.print", "relax.assert_op"]
    assert values[4].attrs["format"] == "d = {}"
    for value in values[:4]:
        assert value.struct_info == tensor([4])
    assert main.ret_struct_info.fields[1] == rx.ObjectStructInfo()


# ---- match_cast, tuples, if/else, nested functions -----------------------------------------
@R.function
def tuples_and_casts(
    x: R.Tensor(ndim=2, dtype="float32"), t: R.Tuple(R.Tensor((2,), "float32"), R.Shape([2]))
):
    y = R.match_cast(x, R.Tensor(("a", "b"), "float32"))
    a, b = t
    first = t[0]
    parts = R.split(y, 2, axis=1)
    p, q = parts
    return (a, b, first, p, q)


def test_match_cast_and_tuple_unpacking() -> None:
    a, b = SymVar("a"), SymVar("b")
    x = rx.Var("x", tensor(None, ndim=2))
    t = rx.Var("t", rx.TupleStructInfo([tensor([2]), rx.ShapeStructInfo([2])]))
    bb = rx.BlockBuilder()
    with bb.function("tuples_and_casts", [x, t]):
        y = bb.match_cast(x, tensor([a, b]), "y")
        ta = bb.emit(rx.TupleGetItem(t, 0), "a")
        tb = bb.emit(rx.TupleGetItem(t, 1), "b")
        first = bb.emit(rx.TupleGetItem(t, 0), "first")
        parts = bb.emit(op.split(y, 2, axis=1), "parts")
        p = bb.emit(rx.TupleGetItem(parts, 0), "p")
        q = bb.emit(rx.TupleGetItem(parts, 1), "q")
        bb.emit_func_output(rx.Tuple([ta, tb, first, p, q]))
    expected = bb.get()["tuples_and_casts"]
    assert isinstance(tuples_and_casts, rx.Function)
    rx.assert_structural_equal(tuples_and_casts, expected)
    assert isinstance(bindings(tuples_and_casts)[0], rx.MatchCast)


@R.function(private=True)
def branches(c: R.Prim("bool"), x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
    if c:
        y = R.add(x, x)
    else:
        z = R.multiply(x, x)
        y = R.exp(z)
    return y


def test_if_else_equals_block_builder() -> None:
    c, x = rx.Var("c", rx.PrimStructInfo("bool")), rx.Var("x", tensor([3]))

    def branch(make) -> rx.SeqExpr:
        sub = rx.BlockBuilder()
        with sub.function("b", []):
            sub.emit_func_output(make(sub))
        return sub.get()["b"].body

    then_seq = branch(lambda sub: sub.emit(op.add(x, x)))
    else_seq = branch(lambda sub: sub.emit(op.exp(sub.emit(op.multiply(x, x)))))
    bb = rx.BlockBuilder()
    with bb.function("branches", [c, x], private=True):
        y = bb.emit(rx.If(c, then_seq, else_seq))
        bb.emit_func_output(y)
    rx.assert_structural_equal(branches, bb.get()["branches"])
    assert "global_symbol" not in branches.attrs
    rx.well_formed(branches)


@R.function
def closures(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    @R.function
    def inner(y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.add(x, y)  # x is captured

    z = inner(x)
    return inner(z)


def test_nested_function_and_closure() -> None:
    binds = bindings(closures)
    assert isinstance(binds[0].value, rx.Function)
    inner = binds[0].value
    assert "global_symbol" not in inner.attrs
    assert binds[0].var.struct_info == rx.FuncStructInfo([tensor([4])], tensor([4]))
    assert binds[1].value.op is binds[0].var
    assert binds[1].var.struct_info == tensor([4])
    inner_call = bindings(inner)[0].value
    assert inner_call.args[0] is closures.params[0]
    rx.well_formed(closures)


# ---- values, attributes, ops reachable by their TVM names ----------------------------------
@R.function
def values(x: R.Tensor((2, 3), "float32")):
    R.func_attr({"num_input": 1, "note": "hi"})
    c = R.const(np.ones((2, 3), "float32"))
    s = R.shape([2, 3])
    p = R.prim_value(7)
    t = R.str("hello")
    d = R.dtype("float16")
    y = R.permute_dims(R.add(x, c), axes=[1, 0])
    r = R.sum(y, axis=[1], keepdims=True)
    image = R.reshape(x, R.shape([1, 1, 2, 3]))
    conv = R.nn.conv2d(image, R.const(np.ones((1, 1, 1, 1), "float32")), padding=[0, 0])
    return (c, s, p, t, d, r, conv)


def test_values_and_ops() -> None:
    binds = {b.var.name_hint: b for b in bindings(values)}
    assert values.attrs["num_input"] == 1 and values.attrs["note"] == "hi"
    assert isinstance(binds["c"].value, rx.Constant)
    assert np.array_equal(binds["c"].value.data.numpy(), np.ones((2, 3), "float32"))
    assert isinstance(binds["s"].value, rx.ShapeExpr)
    assert isinstance(binds["p"].value, rx.PrimValue) and binds["p"].value.value.value == 7
    assert binds["t"].value.value == "hello"
    assert str(binds["d"].value.value) == "float16"
    assert binds["y"].value.op.name == "relax.permute_dims"
    assert binds["y"].var.struct_info == tensor([3, 2])
    assert binds["r"].value.attrs["keepdims"] is True
    assert binds["r"].var.struct_info == tensor([3, 1])
    assert binds["conv"].var.struct_info == tensor([1, 1, 2, 3])


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in op.__all__
        if n
        not in {
            "InferContext",
            "OpError",
            "OpInfo",
            "get_op_info",
            "infer",
            "infer_struct_info",
            "list_ops",
            "register_op",
        }
    ],
)
def test_every_op_builder_is_in_R(name: str) -> None:
    assert hasattr(R, name)


def test_every_registered_op_is_reachable() -> None:
    for full in op.list_ops():
        path = full.split(".")[1:]
        target = R
        for part in path:
            target = getattr(target, part, None)
        if full in (
            "relax.call_tir",
            "relax.call_tir_inplace",
            "relax.call_dps_packed",
            "relax.call_pure_packed",
        ):
            assert callable(target)
        elif target is None:
            # Internal ops (memory planning and such) need not have a script spelling.
            assert not full.startswith("relax.nn."), full
        else:
            assert callable(target), full
