"""ONNX reductions against onnxruntime: every Reduce* op with axes as an attribute (old opsets)
and as an input (known and run-time), keepdims, noop_with_empty_axes; ArgMax/ArgMin."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from relaxvm.errors import FrontendError
from relaxvm.testing.onnx import check_model, require_onnx

onnx = require_onnx()
from onnx import helper, numpy_helper  # noqa: E402

from relaxvm.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(1)
X = RNG.uniform(0.5, 2.0, (2, 3, 4)).astype("float32")
REDUCES = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


def model(
    op_type: str,
    opset: int,
    axes: list[int] | None,
    how: str,
    dtype: int = 1,
    **attrs: Any,
) -> Any:
    """One reduce node; ``how`` is "attr", "init" (a known input) or "input" (run time)."""
    inputs = [helper.make_tensor_value_info("x", dtype, [2, 3, 4])]
    inits = []
    names = ["x"]
    if axes is not None and how == "attr":
        attrs["axes"] = axes
    elif axes is not None:
        names.append("axes")
        if how == "init":
            inits.append(numpy_helper.from_array(np.asarray(axes, np.int64), "axes"))
        else:
            inputs.append(helper.make_tensor_value_info("axes", 7, [len(axes)]))
    node = helper.make_node(op_type, names, ["y"], name="r", **attrs)
    graph = helper.make_graph(
        [node], "t", inputs, [helper.make_tensor_value_info("y", dtype, None)], inits
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    return proto


def feeds(proto: Any, axes: list[int] | None, how: str) -> dict[str, np.ndarray]:
    out = {"x": X}
    if how == "input" and axes is not None:
        out["axes"] = np.asarray(axes, np.int64)
    return out


@pytest.mark.parametrize("op_type", REDUCES)
@pytest.mark.parametrize(
    ("axes", "keepdims"), [([1], 1), (None, 0)], ids=["known_keep", "all_axes"]
)
def test_reduce_known_axes(op_type: str, axes: Any, keepdims: int) -> None:
    opset = 13 if op_type == "ReduceSum" else 18
    proto = model(op_type, opset, axes, "init", keepdims=keepdims)
    check_model(proto, feeds(proto, axes, "init"), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "op_type", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceProd", "ReduceL2"]
)
@pytest.mark.parametrize(("axes", "keepdims"), [([-1, 0], 0), ([1], 1)], ids=["drop", "keep"])
def test_reduce_runtime_axes(op_type: str, axes: Any, keepdims: int) -> None:
    opset = 13 if op_type == "ReduceSum" else 18
    proto = model(op_type, opset, axes, "input", keepdims=keepdims)
    check_model(proto, feeds(proto, axes, "input"), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean", "ReduceLogSumExp", "ReduceL2"])
def test_reduce_axes_attribute_old_opset(op_type: str) -> None:
    proto = model(op_type, 11, [0, 2], "attr", keepdims=0)
    check_model(proto, {"x": X}, rtol=1e-4)


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceL1", "ReduceLogSum"])
def test_noop_with_empty_axes(op_type: str) -> None:
    opset = 13 if op_type == "ReduceSum" else 18
    proto = model(op_type, opset, None, "init", noop_with_empty_axes=1)
    check_model(proto, {"x": X}, rtol=1e-5)


def test_reduce_max_bool() -> None:
    proto = model("ReduceMax", 20, [1], "init", dtype=9, keepdims=0)
    check_model(proto, {"x": X > 1.2})


def test_log_sum_exp_large_inputs_do_not_overflow() -> None:
    proto = model("ReduceLogSumExp", 18, [2], "init", keepdims=1)
    got = check_model(proto, {"x": X * 200}, rtol=1e-5)
    assert np.isfinite(got[0]).all()


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions(op_type: str, last: int) -> None:
    data = np.asarray([[1, 5, 5, 0], [2, 2, 0, 0], [7, 1, 7, 1]], np.float32)
    node = helper.make_node(op_type, ["x"], ["y"], name="a", axis=-1, select_last_index=last)
    graph = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info("x", 1, [3, 4])],
        [helper.make_tensor_value_info("y", 7, [3, 1])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    check_model(proto, {"x": data})


def test_axis_out_of_range() -> None:
    proto = model("ReduceSum", 13, [3], "init")
    with pytest.raises(FrontendError, match="ReduceSum node 'r': axes entry 3 is out of range"):
        from_onnx(proto)
