"""ONNX shape, manipulation and indexing converters against onnxruntime: known-value shape
arithmetic (a symbolic batch through ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``),
attribute-vs-input opset variants, run-time shape inputs, and the errors for what is refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import FrontendError, OpNotImplemented, VMError
from relaxvm.ir import tir
from relaxvm.ir.relax import Call
from relaxvm.testing.onnx import check_model, reference_outputs, require_onnx, run_model

onnx = require_onnx()
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relaxvm.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(0)
I64_MAX = np.iinfo(np.int64).max


def x_of(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def i64(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


_ONNX_TYPES = {"float32": 1, "int32": 6, "int64": 7, "bool": 9}


def make_model(
    nodes: list[Any],
    inputs: dict[str, tuple[str, list[Any] | None]],
    outputs: dict[str, tuple[str, list[Any] | None]],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> Any:
    """Like ``relaxvm.testing.onnx.make_model``, but outputs may leave their shape out (the
    checker insists on one, onnxruntime does not)."""

    def info(name: str, spec: tuple[str, list[Any] | None]) -> Any:
        return helper.make_tensor_value_info(name, _ONNX_TYPES[spec[0]], spec[1])

    graph = helper.make_graph(
        nodes,
        "test",
        [info(n, s) for n, s in inputs.items()],
        [info(n, s) for n, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def one_node(
    op_type: str,
    x_shape: list[Any],
    out_shape: list[Any] | None = None,
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    x_dtype: str = "float32",
    outputs: int = 1,
    out_dtype: str | None = None,
    extra_inputs: dict[str, tuple[str, list[Any]]] | None = None,
    **attrs: Any,
) -> Any:
    """A model of one node reading ``x`` (then ``extra_inputs``, then ``inits``)."""
    names = ["x", *(extra_inputs or {}), *(inits or {})]
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op_type, names, outs, name="n", **attrs)
    return make_model(
        [node],
        inputs={"x": (x_dtype, x_shape), **(extra_inputs or {})},
        outputs={o: (out_dtype or x_dtype, out_shape) for o in outs},
        initializers=inits,
        opset=opset,
    )


# ---- known-value shape arithmetic ---------------------------------------------------------------
def symbolic_reshape_model() -> Any:
    """``x.reshape(batch, 12)`` spelled as exporters write it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes"], ["b1"], name="unsqueeze"),
        helper.make_node("Concat", ["b1", "rest"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    return make_model(
        nodes,
        inputs={"x": ("float32", ["batch", 3, 4])},
        outputs={"y": ("float32", ["batch", 12])},
        initializers={"zero": np.asarray(0, np.int64), "axes": i64(0), "rest": i64(12)},
        opset=13,
    )


def test_symbolic_batch_reshape_folds_shape_arithmetic() -> None:
    model = symbolic_reshape_model()
    mod = relaxvm.transform.DeadCodeElimination()(from_onnx(model))
    main = mod["main"]
    # No kernel computes the shape at run time: the only call left is the reshape.
    calls = [b.value for blk in main.body.blocks for b in blk.bindings]
    calls = [c for c in calls if isinstance(c, Call)]
    assert [c.op.name for c in calls] == ["relax.reshape"]
    assert not [gv for gv, f in mod.items() if isinstance(f, tir.PrimFunc)]
    batch = main.params[0].struct_info.shape.values[0]
    out = main.body.body.struct_info.shape.values
    assert out[0] is batch and int(out[1]) == 12
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    for n in (2, 5):
        x = x_of(n, 3, 4)
        got = vm["main"](relaxvm.tensor(x)).numpy()
        np.testing.assert_array_equal(got, reference_outputs(model, {"x": x})[0])


def test_symbolic_range_and_expand() -> None:
    # positions = Range(0, seq); Expand to Shape(x)[:-1] + [seq]: all symbolic, no kernels for
    # the shape arithmetic once dead bindings are gone.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "one"], ["seq"], name="gather", axis=0),
        helper.make_node("Range", ["zero", "seq", "one"], ["pos"], name="range"),
        helper.make_node("Slice", ["s", "zeros", "minus1"], ["head"], name="slice"),
        helper.make_node("Concat", ["head", "seq1"], ["target"], name="concat", axis=0),
        helper.make_node("Unsqueeze", ["seq", "zeros"], ["seq1"], name="unsqueeze"),
        helper.make_node("Expand", ["pos", "target"], ["y"], name="expand"),
    ]
    nodes = [nodes[i] for i in (0, 1, 2, 3, 5, 4, 6)]
    model = make_model(
        nodes,
        {"x": ("float32", ["batch", "seq", 2])},
        {"y": ("int64", None)},
        {
            "one": np.asarray(1, np.int64),
            "zero": np.asarray(0, np.int64),
            "zeros": i64(0),
            "minus1": i64(-1),
        },
        opset=13,
    )
    mod = relaxvm.transform.DeadCodeElimination()(from_onnx(model))
    assert not [gv for gv, f in mod.items() if isinstance(f, tir.PrimFunc)]
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    for shape in ((2, 3, 2), (1, 5, 2)):
        x = x_of(*shape)
        got = vm["main"](relaxvm.tensor(x)).numpy()
        np.testing.assert_array_equal(got, reference_outputs(model, {"x": x})[0])


def test_slice_to_int64_max_keeps_the_symbolic_dim() -> None:
    node = helper.make_node("Slice", ["x", "b", "e", "a"], ["y"], name="slice")
    model = make_model(
        [node],
        {"x": ("float32", ["batch", "seq"])},
        {"y": ("float32", ["batch", "seq"])},
        {"b": i64(0), "e": i64(I64_MAX), "a": i64(1)},
        opset=13,
    )
    main = from_onnx(model)["main"]
    seq = main.params[0].struct_info.shape.values[1]
    assert main.body.body.struct_info.shape.values[1] is seq
    check_model(model, {"x": x_of(2, 3)})


def test_shape_value_used_as_data() -> None:
    # Shape(x) * 2 as an output: the symbolic dims become a tensor at run time.
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"], name="shape", start=1),
            helper.make_node("Size", ["x"], ["n"], name="size"),
        ],
        inputs={"x": ("float32", ["batch", 3, "w"])},
        outputs={"s": ("int64", [2]), "n": ("int64", [])},
        opset=15,
    )
    check_model(model, {"x": x_of(2, 3, 5)})


# ---- differential cases -------------------------------------------------------------------------
def _cases() -> list[Any]:
    x234 = x_of(2, 3, 4)
    c = []

    def add(name: str, model: Any, feeds: dict[str, np.ndarray]) -> None:
        c.append(pytest.param(model, feeds, id=name))

    add("reshape_zero_minus1", one_node("Reshape", [2, 3, 4], None, {"s": i64(0, -1)}), {"x": x234})
    add(
        "reshape_allowzero",
        one_node("Reshape", [2, 3, 4], None, {"s": i64(4, -1, 3)}, opset=14, allowzero=1),
        {"x": x234},
    )
    add(
        "reshape_allowzero_to_empty",
        one_node("Reshape", [0, 3, 4], None, {"s": i64(3, 4, 0)}, opset=14, allowzero=1),
        {"x": x_of(0, 3, 4)},
    )
    add(
        "reshape_opset1_attr",
        one_node("Reshape", [2, 3, 4], None, opset=1, shape=[6, 4]),
        {"x": x234},
    )
    add(
        "reshape_runtime_shape",
        one_node("Reshape", [2, 3, 4], None, extra_inputs={"s": ("int64", [3])}),
        {"x": x234, "s": i64(0, -1, 2)},
    )
    add("flatten_neg_axis", one_node("Flatten", [2, 3, 4], None, axis=-1), {"x": x234})
    add("flatten_axis0", one_node("Flatten", [2, 3, 4], None, axis=0), {"x": x234})
    add("transpose_perm", one_node("Transpose", [2, 3, 4], None, perm=[1, 2, 0]), {"x": x234})
    add(
        "concat_neg_axis",
        one_node("Concat", [2, 3, 4], None, {"k": x_of(2, 3, 2)}, axis=-1),
        {"x": x234},
    )
    add(
        "split_attr_opset11",
        one_node("Split", [2, 6], None, opset=11, outputs=2, axis=1, split=[2, 4]),
        {"x": x_of(2, 6)},
    )
    add(
        "split_input_opset13",
        one_node("Split", [6, 2], None, {"s": i64(1, 0, 5)}, opset=13, outputs=3),
        {"x": x_of(6, 2)},
    )
    add(
        "split_uneven_opset18",
        one_node("Split", [7], None, opset=18, outputs=3, num_outputs=3),
        {"x": x_of(7)},
    )
    add(
        "split_runtime_sizes",
        one_node("Split", [5, 2], None, opset=13, outputs=2, extra_inputs={"s": ("int64", [2])}),
        {"x": x_of(5, 2), "s": i64(2, 3)},
    )
    add(
        "slice_opset1_attrs",
        one_node("Slice", [4, 5], None, opset=1, starts=[1, -3], ends=[100, -1], axes=[0, 1]),
        {"x": x_of(4, 5)},
    )
    add(
        "slice_negative_steps_huge_ends",
        one_node(
            "Slice",
            [4, 5, 6],
            None,
            {"b": i64(-1, 1), "e": i64(-I64_MAX, I64_MAX), "a": i64(2, 0), "t": i64(-2, 1)},
            opset=13,
        ),
        {"x": x_of(4, 5, 6)},
    )
    add(
        "slice_runtime_params",
        one_node(
            "Slice",
            [6, 5],
            None,
            opset=13,
            extra_inputs={
                "b": ("int64", [2]),
                "e": ("int64", [2]),
                "a": ("int64", [2]),
                "t": ("int64", [2]),
            },
        ),
        {"x": x_of(6, 5), "b": i64(-1, 1), "e": i64(-I64_MAX, 4), "a": i64(0, -1), "t": i64(-2, 2)},
    )
    add(
        "squeeze_opset11_attr",
        one_node("Squeeze", [1, 3, 1], None, opset=11, axes=[0, -1]),
        {"x": x_of(1, 3, 1)},
    )
    add(
        "squeeze_opset13_input",
        one_node("Squeeze", [1, 3, 1], None, {"a": i64(2)}, opset=13),
        {"x": x_of(1, 3, 1)},
    )
    add(
        "squeeze_runtime_axes",
        one_node("Squeeze", [1, 3, 1], None, opset=13, extra_inputs={"a": ("int64", [1])}),
        {"x": x_of(1, 3, 1), "a": i64(-1)},
    )
    add(
        "unsqueeze_opset11_attr",
        one_node("Unsqueeze", [3, 4], None, opset=11, axes=[0, 3]),
        {"x": x_of(3, 4)},
    )
    add(
        "unsqueeze_runtime_axes",
        one_node("Unsqueeze", [3, 4], None, opset=13, extra_inputs={"a": ("int64", [2])}),
        {"x": x_of(3, 4), "a": i64(-1, 1)},
    )
    add(
        "expand_bidirectional",
        one_node("Expand", [3, 1], None, {"s": i64(2, 1, 4)}),
        {"x": x_of(3, 1)},
    )
    add(
        "expand_runtime_shape",
        one_node("Expand", [3, 1], None, extra_inputs={"s": ("int64", [2])}),
        {"x": x_of(3, 1), "s": i64(3, 5)},
    )
    add("tile_known", one_node("Tile", [2, 3], None, {"r": i64(2, 1)}), {"x": x_of(2, 3)})
    add(
        "tile_runtime",
        one_node("Tile", [2, 3], None, extra_inputs={"r": ("int64", [2])}),
        {"x": x_of(2, 3), "r": i64(1, 3)},
    )
    for mode in ("constant", "reflect", "edge"):
        add(
            f"pad_{mode}",
            one_node("Pad", [3, 4], None, {"p": i64(1, 2, 2, 1)}, opset=13, mode=mode),
            {"x": x_of(3, 4)},
        )
    add(
        "pad_negative_crops",
        one_node("Pad", [3, 4], None, {"p": i64(-1, 1, 0, -2), "v": np.float32(1.5)}),
        {"x": x_of(3, 4)},
    )
    add(
        "pad_opset2_attr",
        one_node("Pad", [3, 4], None, opset=2, pads=[0, 1, 1, 0], value=2.0),
        {"x": x_of(3, 4)},
    )
    add(
        "pad_axes_opset18",
        one_node(
            "Pad", [2, 3, 4], None, {"p": i64(1, 2), "v": np.float32(0), "a": i64(-1)}, opset=18
        ),
        {"x": x234},
    )
    add(
        "pad_wrap",
        one_node("Pad", [3, 4], None, {"p": i64(1, 2, 2, 5)}, opset=19, mode="wrap"),
        {"x": x_of(3, 4)},
    )
    add(
        "pad_minus_inf",
        one_node("Pad", [2, 3], None, {"p": i64(0, 1, 0, 1), "v": np.float32(-np.inf)}),
        {"x": x_of(2, 3)},
    )
    add(
        "pad_runtime_reflect",
        one_node("Pad", [3, 4], None, opset=13, mode="reflect", extra_inputs={"p": ("int64", [4])}),
        {"x": x_of(3, 4), "p": i64(2, 0, 0, 3)},
    )
    add(
        "cumsum_exclusive_reverse",
        one_node("CumSum", [3, 4], None, {"a": np.int32(1)}, exclusive=1, reverse=1),
        {"x": x_of(3, 4)},
    )
    add(
        "cumsum_runtime_axis",
        one_node("CumSum", [3, 4], None, extra_inputs={"a": ("int64", [])}),
        {"x": x_of(3, 4), "a": np.asarray(-2, np.int64)},
    )
    add(
        "trilu_lower_k",
        one_node("Trilu", [3, 4], None, {"k": np.asarray(1, np.int64)}, upper=0),
        {"x": x_of(3, 4)},
    )
    add(
        "trilu_runtime_k",
        one_node("Trilu", [2, 3, 4], None, extra_inputs={"k": ("int64", [])}),
        {"x": x234, "k": np.asarray(-1, np.int64)},
    )
    add(
        "eyelike_dtype_k",
        one_node("EyeLike", [3, 4], None, dtype=TensorProto.INT32, k=-1, out_dtype="int32"),
        {"x": x_of(3, 4)},
    )
    add(
        "depthtospace_dcr",
        one_node("DepthToSpace", [1, 8, 2, 3], None, blocksize=2),
        {"x": x_of(1, 8, 2, 3)},
    )
    add(
        "depthtospace_crd",
        one_node("DepthToSpace", [1, 8, 2, 3], None, blocksize=2, mode="CRD"),
        {"x": x_of(1, 8, 2, 3)},
    )
    add(
        "spacetodepth",
        one_node("SpaceToDepth", [1, 2, 4, 6], None, blocksize=2),
        {"x": x_of(1, 2, 4, 6)},
    )
    add(
        "gather_negative_indices",
        one_node("Gather", [5, 3], None, {"i": i64(-1, 0, -5)}),
        {"x": x_of(5, 3)},
    )
    add(
        "gather_elements",
        one_node(
            "GatherElements", [3, 3], None, {"i": np.asarray([[1, -1], [0, 2]], np.int64)}, axis=1
        ),
        {"x": x_of(3, 3)},
    )
    add(
        "gathernd_batch_dims",
        one_node(
            "GatherND", [2, 3, 4], None, {"i": np.asarray([[1], [2]], np.int64)}, batch_dims=1
        ),
        {"x": x234},
    )
    add(
        "scatter_elements_add",
        one_node(
            "ScatterElements",
            [3, 3],
            None,
            {"i": np.asarray([[1, 1]], np.int64), "u": x_of(1, 2)},
            opset=16,
            axis=0,
            reduction="add",
        ),
        {"x": x_of(3, 3)},
    )
    add(
        "scatternd",
        one_node(
            "ScatterND", [4, 3], None, {"i": np.asarray([[2], [0]], np.int64), "u": x_of(2, 3)}
        ),
        {"x": x_of(4, 3)},
    )
    add(
        "argmax_last_index",
        one_node("ArgMax", [3, 4], None, axis=1, select_last_index=1, out_dtype="int64"),
        {"x": np.asarray([[1, 3, 3, 0]] * 3, np.float32)},
    )
    add(
        "argmin_no_keepdims",
        one_node("ArgMin", [3, 4], None, axis=-2, keepdims=0, out_dtype="int64"),
        {"x": x_of(3, 4)},
    )
    add(
        "nonzero",
        one_node("NonZero", [2, 3], None, out_dtype="int64"),
        {"x": np.asarray([[0, 1, 0], [2, 0, 3]], np.float32)},
    )
    add(
        "compress_axis",
        one_node("Compress", [3, 2], None, {"c": np.asarray([True, False, True])}, axis=0),
        {"x": x_of(3, 2)},
    )
    add(
        "compress_flat",
        one_node("Compress", [3, 2], None, {"c": np.asarray([False, True, True, False, True])}),
        {"x": x_of(3, 2)},
    )
    return c


@pytest.mark.parametrize(("model", "feeds"), _cases())
def test_against_onnxruntime(model: Any, feeds: dict[str, np.ndarray]) -> None:
    check_model(model, feeds)


def test_constant_forms() -> None:
    nodes = [
        helper.make_node("Constant", [], ["a"], name="c1", value_ints=[1, 2]),
        helper.make_node("Constant", [], ["b"], name="c2", value_float=2.5),
        helper.make_node("Add", ["x", "a"], ["y"], name="add"),
    ]
    model = make_model(
        nodes,
        inputs={"x": ("int64", [2])},
        outputs={"y": ("int64", [2]), "b": ("float32", [])},
        opset=13,
    )
    check_model(model, {"x": i64(5, 6)})


def test_range_and_constant_of_shape() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node(
            "ConstantOfShape",
            ["s"],
            ["ones"],
            name="cos",
            value=helper.make_tensor("v", TensorProto.INT64, [1], [1]),
        ),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
    ]
    model = make_model(
        nodes,
        inputs={
            "x": ("float32", [2, 3]),
            "start": ("float32", []),
            "limit": ("float32", []),
            "delta": ("float32", []),
        },
        outputs={"ones": ("int64", [2, 3]), "r": ("float32", None)},
        opset=13,
    )
    scalars = {
        k: np.asarray(v, np.float32) for k, v in (("start", 1), ("limit", 3.5), ("delta", 0.5))
    }
    check_model(model, {"x": x_of(2, 3), **scalars})


def test_shape_of_data_dependent_result() -> None:
    # NonZero's count is known at run time only: Shape and Size still work on it.
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
        helper.make_node("Shape", ["nz"], ["s"], name="shape"),
        helper.make_node("Size", ["nz"], ["n"], name="size"),
    ]
    model = make_model(
        nodes, {"x": ("float32", [3, 4])}, {"s": ("int64", None), "n": ("int64", None)}, opset=13
    )
    x = np.where(RNG.random((3, 4)) < 0.5, 0, 1).astype(np.float32)
    check_model(model, {"x": x})


def test_unique_outputs() -> None:
    node = helper.make_node("Unique", ["x"], ["y", "idx", "inv", "cnt"], name="u", sorted=0)
    model = make_model(
        [node],
        inputs={"x": ("float32", [6])},
        outputs={
            "y": ("float32", None),
            "idx": ("int64", None),
            "inv": ("int64", None),
            "cnt": ("int64", None),
        },
        opset=11,
    )
    check_model(model, {"x": np.asarray([2, 1, 1, 3, 4, 3], np.float32)})


# ---- errors -----------------------------------------------------------------------------------
def test_refused_attributes_listed_together() -> None:
    nodes = [
        helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2, mode="XYZ"),
        helper.make_node("Constant", [], ["c"], name="strings", value_strings=["a"]),
    ]
    model = make_model(nodes, {"x": ("float32", [1, 4, 2, 2])}, {"y": ("float32", None)})
    with pytest.raises(
        OpNotImplemented, match=r"(?s)2 node\(s\).*'d2s'.*mode 'XYZ'.*'strings'.*value_strings"
    ):
        from_onnx(model)


def test_runtime_shape_without_static_length_is_refused() -> None:
    model = one_node("Reshape", [2, 3], None, extra_inputs={"s": ("int64", ["k"])})
    with pytest.raises(
        OpNotImplemented, match="Reshape node 'n'.*shape input has no static length"
    ):
        from_onnx(model)


def test_allowzero_reshape_to_empty_needs_empty_data() -> None:
    model = one_node("Reshape", [2, 3], None, {"s": i64(2, 0)}, opset=14, allowzero=1)
    with pytest.raises(OpNotImplemented, match="Reshape node 'n'.*needs data with a static 0"):
        from_onnx(model)
    model = one_node("Reshape", [0, 3], None, {"s": i64(0, -1)}, opset=14, allowzero=1)
    with pytest.raises(FrontendError, match="may not hold both 0 and -1"):
        from_onnx(model)


@pytest.mark.parametrize(
    ("op_type", "x_shape", "value"),
    [
        ("Reshape", [2, 3, 4], i64(5, 5)),  # 25 elements for 24
        ("Expand", [3, 2], i64(4, 2)),  # 3 does not broadcast to 4
        ("Squeeze", [1, 3], i64(1)),  # axis 1 has extent 3
        ("Unsqueeze", [3], i64(5)),  # axis out of range
        ("Split", [5], i64(2, 2)),  # sizes sum to 4, not 5
    ],
    ids=["reshape_count", "expand_broadcast", "squeeze_non_unit", "unsqueeze_axis", "split_sum"],
)
def test_bad_runtime_shape_inputs_fail_at_run_time(
    op_type: str, x_shape: list[int], value: np.ndarray
) -> None:
    # Values known only at run time are checked there: an error, never a read past x.
    outputs = 2 if op_type == "Split" else 1
    model = one_node(
        op_type, x_shape, None, outputs=outputs, extra_inputs={"s": ("int64", [len(value)])}
    )
    with pytest.raises(
        VMError, match=r"match_cast error, shape\[\d+\] mismatch to specified constant"
    ):
        run_model(model, {"x": x_of(*x_shape), "s": value})


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (one_node("Reshape", [2, 3], None, {"s": i64(-1, -1)}), "more than one -1"),
        (one_node("Squeeze", [2, 3], None, {"a": i64(0)}, opset=13), "axis 0 has extent 2, not 1"),
        (one_node("Split", [5], None, {"s": i64(2, 2)}, opset=13, outputs=2), r"do not sum to 5"),
        (one_node("Transpose", [2, 3], None, perm=[0, 0]), "not a permutation"),
        (
            make_model(
                [
                    helper.make_node("Shape", ["x"], ["s"], name="shape"),
                    helper.make_node("Gather", ["s", "i"], ["y"], name="n"),
                ],
                {"x": ("float32", [2, 3])},
                {"y": ("int64", None)},
                {"i": i64(2)},
            ),
            "Gather node 'n': index out of range",
        ),
    ],
    ids=["two_minus_one", "squeeze_non_unit", "split_sum", "bad_perm", "gather_known_oob"],
)
def test_malformed_nodes(model: Any, message: str) -> None:
    with pytest.raises(FrontendError, match=message):
        from_onnx(model)
