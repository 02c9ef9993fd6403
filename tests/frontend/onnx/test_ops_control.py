"""ONNX control flow (If, Loop): differential tests against onnxruntime, and error paths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaxvm.testing.onnx import check_model, make_model, require_onnx, run_model

onnx = require_onnx()
from onnx import TensorProto, helper  # noqa: E402

import relaxvm  # noqa: E402
from relaxvm.errors import FrontendError, OpNotImplemented, VMError  # noqa: E402
from relaxvm.frontend.onnx import from_onnx  # noqa: E402

vi = helper.make_tensor_value_info
RNG = np.random.default_rng(0)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def _graph(nodes: list[Any], name: str, inputs: list[Any], outputs: list[Any]) -> Any:
    return helper.make_graph(nodes, name, inputs, outputs)


# ---- If -------------------------------------------------------------------------------------
def _if_model(cond_shape: list[int]) -> Any:
    """Branches read outer inputs and an outer initializer; two outputs."""
    then_g = _graph(
        [
            helper.make_node("Add", ["x", "y"], ["t0"]),
            helper.make_node("Mul", ["x", "w"], ["t1"]),
        ],
        "then",
        [],
        [vi("t0", TensorProto.FLOAT, [2, 3]), vi("t1", TensorProto.FLOAT, [2, 3])],
    )
    else_g = _graph(
        [
            helper.make_node("Sub", ["x", "y"], ["e0"]),
            helper.make_node("Relu", ["y"], ["e1"]),
        ],
        "else",
        [],
        [vi("e0", TensorProto.FLOAT, [2, 3]), vi("e1", TensorProto.FLOAT, [2, 3])],
    )
    nodes = [
        helper.make_node("If", ["c"], ["a", "b"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Mul", ["a", "b"], ["z"]),
    ]
    return make_model(
        nodes,
        {"c": ("bool", cond_shape), "x": ("float32", [2, 3]), "y": ("float32", [2, 3])},
        {"z": ("float32", [2, 3])},
        initializers={"w": _randn(2, 3)},
    )


@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize("cond_shape", [[], [1]])
def test_if_runtime_condition_reads_outer_values(cond: bool, cond_shape: list[int]) -> None:
    model = _if_model(cond_shape)
    feeds = {"c": np.array(cond).reshape(cond_shape), "x": _randn(2, 3), "y": _randn(2, 3)}
    check_model(model, feeds)


def test_if_branches_of_different_shapes_compiled_mode() -> None:
    then_g = _graph(
        [helper.make_node("Concat", ["x", "x"], ["t"], axis=0)],
        "then",
        [],
        [vi("t", TensorProto.FLOAT, ["n", 3])],
    )
    else_g = _graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", TensorProto.FLOAT, [2, 3])]
    )
    model = make_model(
        [
            helper.make_node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g),
            helper.make_node("Relu", ["o"], ["z"]),
        ],
        {"c": ("bool", []), "x": ("float32", [2, 3])},
        {"z": ("float32", ["n", 3])},
    )
    for cond in (True, False):
        out = check_model(model, {"c": np.array(cond), "x": _randn(2, 3)}, exec_mode="compiled")
        assert out[0].shape == ((4, 3) if cond else (2, 3))


def test_if_constant_condition_is_inlined() -> None:
    then_g = _graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", TensorProto.FLOAT, [3])]
    )
    else_g = _graph(
        [helper.make_node("Abs", ["x"], ["e"])], "else", [], [vi("e", TensorProto.FLOAT, [3])]
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g)],
        {"x": ("float32", [3])},
        {"z": ("float32", [3])},
        initializers={"c": np.array(False)},
    )
    mod = from_onnx(model)
    assert not [gv for gv, _ in mod.items() if gv.name_hint.startswith("onnx_if")]
    check_model(model, {"x": _randn(3)})


def test_if_on_folded_shape_arithmetic_is_inlined() -> None:
    then_g = _graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", TensorProto.FLOAT, [2, 3])]
    )
    else_g = _graph(
        [helper.make_node("Abs", ["x"], ["e"])], "else", [], [vi("e", TensorProto.FLOAT, [2, 3])]
    )
    model = make_model(
        [
            helper.make_node("Size", ["x"], ["n"]),
            helper.make_node("Equal", ["n", "six"], ["c"]),
            helper.make_node("If", ["c"], ["z"], then_branch=then_g, else_branch=else_g),
        ],
        {"x": ("float32", [2, 3])},
        {"z": ("float32", [2, 3])},
        initializers={"six": np.array(6, "int64")},
    )
    assert [gv.name_hint for gv, _ in from_onnx(model).items()] == ["main"]
    out = check_model(model, {"x": np.abs(_randn(2, 3)) + 0.5})
    assert (out[0] < 0).all()  # x has 6 elements: the then branch (Neg) was taken


# ---- Loop -----------------------------------------------------------------------------------
def _loop_model(trip: bool, cond: bool, limit_node: bool = True) -> Any:
    """acc += x * i while i < M and sum(acc) < limit; scan output: acc before the update."""
    body_nodes = [
        helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "fi"], ["xi"]),
        helper.make_node("Add", ["acc", "xi"], ["acc_out"]),
        helper.make_node("MatMul", ["acc_out", "ones"], ["s"]),
        helper.make_node("Less", ["s", "limit"], ["cond_out"]),
        helper.make_node("Identity", ["acc"], ["row"]),
    ]
    body = _graph(
        body_nodes,
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("acc", TensorProto.FLOAT, [3]),
        ],
        [
            vi("cond_out", TensorProto.BOOL, [1]),
            vi("acc_out", TensorProto.FLOAT, [3]),
            vi("row", TensorProto.FLOAT, [3]),
        ],
    )
    inputs = ["M" if trip else "", "c0" if cond else "", "a0"]
    graph_inputs: dict[str, Any] = {
        "a0": ("float32", [3]),
        "x": ("float32", [3]),
        "limit": ("float32", []),
    }
    if trip:
        graph_inputs["M"] = ("int64", [])
    if cond:
        graph_inputs["c0"] = ("bool", [])
    return make_model(
        [helper.make_node("Loop", inputs, ["a", "rows"], body=body)],
        graph_inputs,
        {"a": ("float32", [3]), "rows": ("float32", ["n", 3])},
        initializers={"ones": np.ones((3, 1), "float32")},
    )


@pytest.mark.parametrize(
    ("trip", "cond", "feeds"),
    [
        (True, False, {"M": 5, "limit": 1e6}),  # a counted loop
        (True, False, {"M": 0, "limit": 1e6}),  # no iterations: empty scan output
        (True, True, {"M": 6, "c0": True, "limit": 12.0}),  # stops on the condition
        (True, True, {"M": 3, "c0": False, "limit": 1e6}),  # condition false at the start
        (False, True, {"c0": True, "limit": 20.0}),  # a while loop
    ],
)
def test_loop_counter_carried_and_scan(trip: bool, cond: bool, feeds: dict[str, Any]) -> None:
    model = _loop_model(trip, cond)
    arrays = {"a0": np.ones(3, "float32"), "x": np.arange(3, dtype="float32")}
    for key, value in feeds.items():
        arrays[key] = np.array(value, dtype={"M": "int64", "c0": "bool"}.get(key, "float32"))
    check_model(model, arrays)


def test_loop_carried_value_that_grows_compiled_mode() -> None:
    body = _graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Concat", ["y", "x"], ["y_out"], axis=0),
        ],
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("y", TensorProto.FLOAT, ["k"]),
        ],
        [vi("c_out", TensorProto.BOOL, []), vi("y_out", TensorProto.FLOAT, ["k2"])],
    )
    model = make_model(
        [
            helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body),
            helper.make_node("Relu", ["y"], ["z"]),
        ],
        {"M": ("int64", []), "y0": ("float32", [1]), "x": ("float32", [2])},
        {"z": ("float32", ["n"])},
    )
    feeds = {"M": np.array(4, "int64"), "y0": _randn(1), "x": _randn(2)}
    out = check_model(model, feeds, exec_mode="compiled")
    assert out[0].shape == (9,)


def test_if_inside_loop_body() -> None:
    then_g = _graph(
        [helper.make_node("Add", ["y", "x"], ["t"])], "then", [], [vi("t", TensorProto.FLOAT, [2])]
    )
    else_g = _graph(
        [helper.make_node("Sub", ["y", "x"], ["e"])], "else", [], [vi("e", TensorProto.FLOAT, [2])]
    )
    body = _graph(
        [
            helper.make_node("Less", ["i", "two"], ["small"]),
            helper.make_node("If", ["small"], ["y_out"], then_branch=then_g, else_branch=else_g),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("y", TensorProto.FLOAT, [2]),
        ],
        [vi("c_out", TensorProto.BOOL, []), vi("y_out", TensorProto.FLOAT, [2])],
    )
    model = make_model(
        [helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body)],
        {"M": ("int64", []), "y0": ("float32", [2]), "x": ("float32", [2])},
        {"y": ("float32", [2])},
        initializers={"two": np.array(2, "int64")},
    )
    check_model(model, {"M": np.array(5, "int64"), "y0": _randn(2), "x": _randn(2)})


def test_loop_deeper_than_the_call_depth_limit_fails_cleanly() -> None:
    body = _graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Identity", ["y"], ["y_out"]),
        ],
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("y", TensorProto.FLOAT, [1]),
        ],
        [vi("c_out", TensorProto.BOOL, []), vi("y_out", TensorProto.FLOAT, [1])],
    )
    model = make_model(
        [helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body)],
        {"M": ("int64", []), "y0": ("float32", [1])},
        {"y": ("float32", [1])},
    )
    mod = from_onnx(model)
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    y0 = relaxvm.tensor(np.ones(1, "float32"))
    assert vm["main"](relaxvm.tensor(np.array(1000, "int64")), y0).numpy()[0] == 1.0
    with pytest.raises(VMError, match="max_call_depth"):
        vm["main"](relaxvm.tensor(np.array(100000, "int64")), y0)


# ---- error paths ----------------------------------------------------------------------------
def _raw_model(nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int = 17) -> Any:
    """A model without the checker (for malformed ones)."""
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_loop_without_trip_count_or_condition_is_refused() -> None:
    body = _graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Identity", ["y"], ["y_out"]),
        ],
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("y", TensorProto.FLOAT, [1]),
        ],
        [vi("c_out", TensorProto.BOOL, []), vi("y_out", TensorProto.FLOAT, [1])],
    )
    model = _raw_model(
        [helper.make_node("Loop", ["", "", "y0"], ["y"], body=body)],
        [vi("y0", TensorProto.FLOAT, [1])],
        [vi("y", TensorProto.FLOAT, [1])],
    )
    with pytest.raises(OpNotImplemented, match="endless loop"):
        from_onnx(model)


def test_if_with_sequence_output_is_refused() -> None:
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])
    then_g = _graph([helper.make_node("SequenceConstruct", ["x"], ["s"])], "then", [], [seq])
    else_g = _graph([helper.make_node("SequenceConstruct", ["x"], ["s"])], "else", [], [seq])
    model = _raw_model(
        [helper.make_node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)],
        [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_sequence_value_info("o", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(OpNotImplemented, match="is a sequence; only tensors are supported"):
        from_onnx(model)


def test_if_branch_output_count_mismatch() -> None:
    then_g = _graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", TensorProto.FLOAT, [2])]
    )
    else_g = _graph([], "else", [], [])
    model = _raw_model(
        [helper.make_node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)],
        [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
        [vi("o", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(FrontendError, match="else_branch has 0 outputs, the node 1"):
        from_onnx(model)


def test_if_branch_dtype_mismatch() -> None:
    then_g = _graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", TensorProto.FLOAT, [2])]
    )
    else_g = _graph(
        [helper.make_node("Cast", ["x"], ["e"], to=TensorProto.INT32)],
        "else",
        [],
        [vi("e", TensorProto.INT32, [2])],
    )
    model = _raw_model(
        [helper.make_node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)],
        [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
        [vi("o", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(FrontendError, match="differ in dtype"):
        from_onnx(model)


def test_loop_body_signature_mismatch() -> None:
    body = _graph(
        [helper.make_node("Identity", ["c"], ["c_out"])],
        "body",
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, [])],
        [vi("c_out", TensorProto.BOOL, [])],
    )
    model = _raw_model(
        [helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body)],
        [vi("M", TensorProto.INT64, []), vi("y0", TensorProto.FLOAT, [1])],
        [vi("y", TensorProto.FLOAT, [1])],
    )
    with pytest.raises(FrontendError, match="for 1 loop-carried value"):
        from_onnx(model)


def test_loop_carried_dtype_change() -> None:
    body = _graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Cast", ["y"], ["y_out"], to=TensorProto.INT32),
        ],
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("y", TensorProto.FLOAT, [1]),
        ],
        [vi("c_out", TensorProto.BOOL, []), vi("y_out", TensorProto.INT32, [1])],
    )
    model = _raw_model(
        [helper.make_node("Loop", ["M", "", "y0"], ["y"], body=body)],
        [vi("M", TensorProto.INT64, []), vi("y0", TensorProto.FLOAT, [1])],
        [vi("y", TensorProto.FLOAT, [1])],
    )
    with pytest.raises(
        FrontendError, match="loop-carried value 0 is float32 but the body makes int32"
    ):
        from_onnx(model)


def test_subgraph_reading_an_undefined_name() -> None:
    then_g = _graph(
        [helper.make_node("Neg", ["nowhere"], ["t"])], "then", [], [vi("t", TensorProto.FLOAT, [2])]
    )
    else_g = _graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", TensorProto.FLOAT, [2])]
    )
    model = _raw_model(
        [helper.make_node("If", ["c"], ["o"], then_branch=then_g, else_branch=else_g)],
        [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])],
        [vi("o", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(FrontendError, match="reads 'nowhere'"):
        run_model(model, {"c": np.array(True), "x": _randn(2)})


# ---- Scan -----------------------------------------------------------------------------------
def _scan_model(**attrs: Any) -> Any:
    """state += row of x; outputs: the running state, and row * w (w read from outside)."""
    body = _graph(
        [
            helper.make_node("Add", ["s", "row"], ["s_out"]),
            helper.make_node("Mul", ["row", "w"], ["y"]),
        ],
        "body",
        [vi("s", TensorProto.FLOAT, [2]), vi("row", TensorProto.FLOAT, [2])],
        [vi("s_out", TensorProto.FLOAT, [2]), vi("y", TensorProto.FLOAT, [2])],
    )
    return make_model(
        [helper.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1, **attrs)],
        {
            "s0": ("float32", [2]),
            "x": ("float32", ["n", 2] if "scan_input_axes" not in attrs else [2, "n"]),
        },
        {
            "s": ("float32", [2]),
            "ys": ("float32", [2, "n"] if "scan_output_axes" in attrs else ["n", 2]),
        },
        initializers={"w": _randn(2)},
    )


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"scan_input_directions": [1], "scan_output_directions": [1]},
        {"scan_input_axes": [1], "scan_output_axes": [1]},
        {"scan_input_axes": [-1], "scan_output_axes": [-1], "scan_output_directions": [1]},
    ],
)
def test_scan_states_axes_and_directions(attrs: dict[str, Any]) -> None:
    model = _scan_model(**attrs)
    x = _randn(2, 5) if "scan_input_axes" in attrs else _randn(5, 2)
    check_model(model, {"s0": _randn(2), "x": x})


def test_symbolic_known_value_is_materialized_with_its_dims() -> None:
    """Context.from_known of symbolic elements (used by shape arithmetic) builds a kernel that
    receives the symbolic dims it reads."""
    from relaxvm.frontend.onnx._context import Context
    from relaxvm.ir import tir
    from relaxvm.ir.relax import BlockBuilder, TensorStructInfo, Var

    bb = BlockBuilder()
    n = tir.Var("n", "int64")
    x = Var("x", TensorStructInfo([n, 2], "float32"))
    ctx = Context(bb, 17)
    with bb.function("main", [x]):
        with bb.dataflow():
            value = ctx.from_known(np.array([n * 2, 3, n], dtype=object), "int64")
            out = bb.emit_output(value)
        bb.emit_func_output(out)
    vm = relaxvm.VirtualMachine(relaxvm.compile(bb.get(), "llvm"), relaxvm.cpu())
    got = vm["main"](relaxvm.tensor(np.ones((5, 2), "float32"))).numpy()
    assert got.tolist() == [10, 3, 5]


def test_loop_with_a_constant_trip_count_is_unrolled() -> None:
    body = _graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["y", "fi"], ["y_out"]),
            helper.make_node("Mul", ["y_out", "x"], ["row"]),
        ],
        "body",
        [
            vi("i", TensorProto.INT64, []),
            vi("c", TensorProto.BOOL, []),
            vi("y", TensorProto.FLOAT, [2]),
        ],
        [
            vi("c_out", TensorProto.BOOL, []),
            vi("y_out", TensorProto.FLOAT, [2]),
            vi("row", TensorProto.FLOAT, [2]),
        ],
    )
    model = make_model(
        [helper.make_node("Loop", ["M", "", "y0"], ["y", "rows"], body=body)],
        {"y0": ("float32", [2]), "x": ("float32", [2])},
        {"y": ("float32", [2]), "rows": ("float32", [4, 2])},
        initializers={"M": np.array(4, "int64")},
    )
    mod = from_onnx(model)
    relax_funcs = [gv.name_hint for gv, f in mod.items() if isinstance(f, relaxvm.relax.Function)]
    assert relax_funcs == ["main"]  # no loop function: the body was converted 4 times inline
    assert list(mod["main"].ret_struct_info.fields[1].shape.values) == [4, 2]
    check_model(model, {"y0": _randn(2), "x": _randn(2)})
