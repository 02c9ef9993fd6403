"""``relaxvm.frontend.onnx.from_onnx`` as users call it: what it accepts (protos, paths, bytes),
shape and dtype overrides, symbolic dims, parameters kept as inputs, multiple outputs, and the
errors for everything it refuses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import FrontendError, MissingDependencyError, OpNotImplemented
from relaxvm.ir import tir
from relaxvm.testing.onnx import check_model, make_model, require_onnx

onnx = require_onnx()
from onnx import helper, numpy_helper  # noqa: E402

from relaxvm.frontend import detach_params  # noqa: E402
from relaxvm.frontend.onnx import from_onnx  # noqa: E402

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3)).astype("float32")
B = RNG.standard_normal(3).astype("float32")


def dense_model(batch: Any = "N") -> Any:
    """``relu(x @ w + b)`` with ``w``, ``b`` as initializers and a symbolic batch."""
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Add", ["h", "b"], ["y"], name="bias"),
            helper.make_node("Relu", ["y"], ["z"], name="act"),
        ],
        inputs={"x": ("float32", [batch, 4])},
        outputs={"z": ("float32", [batch, 3])},
        initializers={"w": W, "b": B},
    )


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W + B, 0)


def run(mod: Any, *args: Any) -> Any:
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    return vm["main"](*[relaxvm.tensor(a) if isinstance(a, np.ndarray) else a for a in args])


def param_dims(mod: Any, index: int = 0) -> list[Any]:
    return list(mod["main"].params[index].struct_info.shape.values)


# ---- what from_onnx accepts -------------------------------------------------------------------
@pytest.mark.parametrize("form", ["proto", "str", "path", "bytes", "bytearray"])
def test_accepts_proto_path_and_bytes(form: str, tmp_path: Path) -> None:
    model = dense_model()
    file = tmp_path / "model.onnx"
    onnx.save(model, str(file))
    source = {
        "proto": model,
        "str": str(file),
        "path": file,
        "bytes": model.SerializeToString(),
        "bytearray": bytearray(model.SerializeToString()),
    }[form]
    x = RNG.standard_normal((2, 4)).astype("float32")
    np.testing.assert_allclose(run(from_onnx(source), x).numpy(), expected(x), rtol=1e-5)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (42, "model must be an onnx.ModelProto, a path or bytes, got int"),
        ([b"x"], "got list"),
        ("/no/such/dir/model.onnx", "no such model file: '/no/such/dir/model.onnx'"),
        (b"\xff\xff not protobuf", "the bytes are not an ONNX model"),
    ],
)
def test_bad_model_argument(model: Any, message: str) -> None:
    with pytest.raises(FrontendError) as info:
        from_onnx(model)
    assert message in str(info.value)


def test_file_that_is_not_a_model(tmp_path: Path) -> None:
    file = tmp_path / "notes.onnx"
    file.write_bytes(b"\xff\xff this is no protobuf")
    with pytest.raises(FrontendError, match=r"notes\.onnx' is not an ONNX model"):
        from_onnx(file)


def test_directory_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(FrontendError, match="no such model file"):
        from_onnx(tmp_path)


# ---- shapes -----------------------------------------------------------------------------------
def test_dim_param_is_one_symbolic_var_for_every_batch() -> None:
    mod = from_onnx(dense_model("batch"))
    (dim, four) = param_dims(mod)
    assert isinstance(dim, tir.Var) and dim.name == "batch"
    assert int(four) == 4
    ret = mod["main"].ret_struct_info.shape.values
    assert ret[0] is dim  # the output's batch is the input's var, not a fresh one
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    for batch in (1, 7):
        x = RNG.standard_normal((batch, 4)).astype("float32")
        got = vm["main"](relaxvm.tensor(x)).numpy()
        np.testing.assert_allclose(got, expected(x), rtol=1e-5, atol=1e-6)


def test_dim_param_model_matches_onnxruntime_at_two_batches() -> None:
    model = dense_model("batch")
    for batch in (1, 3):
        check_model(model, {"x": RNG.standard_normal((batch, 4)).astype("float32")})


def test_shape_dict_ints_make_static_shapes() -> None:
    mod = from_onnx(dense_model(), shape_dict={"x": [5, 4]})
    assert [int(d) for d in param_dims(mod)] == [5, 4]
    assert [int(d) for d in mod["main"].ret_struct_info.shape.values] == [5, 3]
    x = RNG.standard_normal((5, 4)).astype("float32")
    np.testing.assert_allclose(run(mod, x).numpy(), expected(x), rtol=1e-5, atol=1e-6)


def two_input_model() -> Any:
    return make_model(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        inputs={"a": ("float32", [2, 3]), "b": ("float32", [2, 3])},
        outputs={"c": ("float32", [2, 3])},
    )


def test_shape_dict_shared_name_is_one_var() -> None:
    mod = from_onnx(two_input_model(), shape_dict={"a": ["n", 3], "b": ["n", 3]})
    a_dims, b_dims = param_dims(mod, 0), param_dims(mod, 1)
    assert isinstance(a_dims[0], tir.Var) and a_dims[0].name == "n"
    assert a_dims[0] is b_dims[0]
    a, b = (RNG.standard_normal((4, 3)).astype("float32") for _ in range(2))
    np.testing.assert_allclose(run(mod, a, b).numpy(), a + b, rtol=1e-6)


def test_shape_dict_none_is_a_fresh_symbolic_dim() -> None:
    mod = from_onnx(dense_model(), shape_dict={"x": [None, 4]})
    dim = param_dims(mod)[0]
    assert isinstance(dim, tir.Var) and dim.name != "N"
    vm = relaxvm.VirtualMachine(relaxvm.compile(mod, "llvm"), relaxvm.cpu())
    for batch in (2, 6):
        x = RNG.standard_normal((batch, 4)).astype("float32")
        np.testing.assert_allclose(vm["main"](relaxvm.tensor(x)).numpy(), expected(x), rtol=1e-5)


def test_exporter_style_names() -> None:
    # torch.onnx.export names inputs "input.1" and values "3"; dims may be any string.
    model = make_model(
        [helper.make_node("Relu", ["input.1"], ["3"])],
        inputs={"input.1": ("float32", ["batch size", 4])},
        outputs={"3": ("float32", ["batch size", 4])},
    )
    mod = from_onnx(model, shape_dict={"input.1": ["batch size", 4]})
    (param,) = mod["main"].params
    assert param.name_hint == "input_1"
    assert param.struct_info.shape.values[0].name == "batch_size"
    check_model(model, {"input.1": RNG.standard_normal((3, 4)).astype("float32")})


@pytest.mark.parametrize("option", ["shape_dict", "dtype_dict"])
def test_unknown_names_list_the_inputs(option: str) -> None:
    value = {"shape_dict": [2, 3], "dtype_dict": "float32"}[option]
    with pytest.raises(FrontendError) as info:
        from_onnx(two_input_model(), **{option: {"a": value, "nope": value}})
    message = str(info.value)
    assert f"{option} names 'nope', which is not an input of the graph" in message
    assert "(inputs: a, b)" in message


def test_shape_dict_bad_dim_value() -> None:
    with pytest.raises(FrontendError, match=r"dim 0 must be an int, a name or None, got 1\.5"):
        from_onnx(dense_model(), shape_dict={"x": [1.5, 4]})


# ---- dtypes -----------------------------------------------------------------------------------
def mixed_model() -> Any:
    """A float input through Relu and an int64 input through Identity."""
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Identity", ["i"], ["j"])],
        inputs={"x": ("float32", [2, 3]), "i": ("int64", [3])},
        outputs={"y": ("float32", [2, 3]), "j": ("int64", [3])},
    )


@pytest.mark.parametrize("dtype_dict", ["float64", {"x": "float64"}])
def test_dtype_dict_str_and_dict(dtype_dict: Any) -> None:
    mod = from_onnx(mixed_model(), dtype_dict=dtype_dict)
    x_info, i_info = (p.struct_info for p in mod["main"].params)
    assert str(x_info.dtype) == "float64"
    assert str(i_info.dtype) == "int64"  # a single str only retypes float inputs
    x = RNG.standard_normal((2, 3))
    i = np.array([3, -1, 7], "int64")
    y, j = run(mod, x, i)
    assert y.numpy().dtype == np.float64
    np.testing.assert_array_equal(y.numpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(j.numpy(), i)


# ---- parameters -------------------------------------------------------------------------------
def test_keep_params_in_input_and_detach_params() -> None:
    mod = from_onnx(dense_model(), keep_params_in_input=True)
    main = mod["main"]
    assert main.attrs["num_input"] == 1
    assert [p.name_hint for p in main.params] == ["x", "w", "b"]
    stripped, params = detach_params(mod)
    assert "params" not in stripped["main"].attrs
    assert list(params) == ["main"]
    np.testing.assert_array_equal(params["main"][0].numpy(), W)
    np.testing.assert_array_equal(params["main"][1].numpy(), B)
    x = RNG.standard_normal((3, 4)).astype("float32")
    kept = run(stripped, x, *params["main"]).numpy()
    constants = run(from_onnx(dense_model()), x).numpy()
    np.testing.assert_array_equal(kept, constants)
    np.testing.assert_allclose(kept, expected(x), rtol=1e-5, atol=1e-6)


def test_keep_params_in_input_with_a_shape_initializer() -> None:
    # A shape read from a parameter is unknown at import time: the reshape is computed at run
    # time instead, and still gives what the constant version gives.
    model = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"])],
        inputs={"x": ("float32", ["N", 4])},
        outputs={"y": ("float32", ["M", 2])},
        initializers={"s": np.array([-1, 2], "int64")},
    )
    x = np.arange(12, dtype="float32").reshape(3, 4)
    mod, params = detach_params(from_onnx(model, keep_params_in_input=True))
    assert [p.name_hint for p in mod["main"].params] == ["x", "s"]
    kept = run(mod, x, *params["main"]).numpy()
    np.testing.assert_array_equal(kept, x.reshape(-1, 2))
    (constant,) = check_model(model, {"x": x})
    np.testing.assert_array_equal(kept, constant)


def test_initializer_also_listed_as_graph_input() -> None:
    # Older exporters list every initializer among the graph inputs too; such an input has a
    # value, so it is not a parameter of main.
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "init_as_input",
        [
            helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 4]),
            helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [4, 3]),
        ],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(W, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    mod = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    check_model(model, {"x": RNG.standard_normal((2, 4)).astype("float32")})
    with pytest.raises(FrontendError, match=r"shape_dict names 'w'.*\(inputs: x\)"):
        from_onnx(model, shape_dict={"w": [4, 3]})


# ---- outputs ----------------------------------------------------------------------------------
def test_multiple_outputs_come_back_as_a_tuple() -> None:
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Add", ["x", "x"], ["s"]),
        ],
        inputs={"x": ("float32", ["N", 3])},
        outputs={"r": ("float32", ["N", 3]), "s": ("float32", ["N", 3])},
    )
    x = RNG.standard_normal((2, 3)).astype("float32")
    result = run(from_onnx(model), x)
    assert isinstance(result, (tuple, list)) and len(result) == 2
    np.testing.assert_array_equal(result[0].numpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(result[1].numpy(), x + x)
    check_model(model, {"x": x})


# ---- refusals ---------------------------------------------------------------------------------
def test_every_unsupported_node_in_one_error() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Frobnicate", ["x"], ["a"], name="first", domain="com.example"),
            helper.make_node("Relu", ["a"], ["b"], name="fine"),
            helper.make_node("Twiddle", ["b"], ["y"], name="second", domain="com.example"),
        ],
        "unsupported",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 3)]
    )
    with pytest.raises(OpNotImplemented) as info:
        from_onnx(model)
    message = str(info.value)
    assert "2 node(s) of the model are not supported" in message
    assert "Frobnicate node 'first' (domain 'com.example', opset 3)" in message
    assert "Twiddle node 'second' (domain 'com.example', opset 3)" in message
    assert "'fine'" not in message
    assert isinstance(info.value, FrontendError)  # callers catching FrontendError see it too


def test_reading_an_undefined_value() -> None:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")],
        "undefined",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(FrontendError, match="node 'adder' reads 'ghost', which no earlier node"):
        from_onnx(model)


def test_output_never_computed() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "missing_output",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("nowhere", onnx.TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(FrontendError, match="graph output 'nowhere' is never computed"):
        from_onnx(model)


@pytest.mark.parametrize("opset", [0, -3, True, "17"])
def test_bad_opset_argument(opset: Any) -> None:
    with pytest.raises(FrontendError, match="opset must be a positive int"):
        from_onnx(dense_model(), opset=opset)


# ---- without onnx -----------------------------------------------------------------------------
INSTALL = 'pip install "relaxvm[onnx]"'


def test_missing_onnx_via_sys_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = dense_model().SerializeToString()
    for name in [m for m in sys.modules if m == "onnx" or m.startswith("onnx.")]:
        monkeypatch.setitem(sys.modules, name, None)  # None in sys.modules: ImportError
    with pytest.raises(MissingDependencyError) as info:
        from_onnx(blob)
    assert INSTALL in str(info.value)
    assert isinstance(info.value, ImportError)


def test_missing_onnx_via_import_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_onnx(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "onnx" or name.startswith("onnx."):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(MissingDependencyError, match=r"pip install \"relaxvm\[onnx\]\""):
        from_onnx("model.onnx")


def test_missing_onnx_in_a_fresh_process() -> None:
    # Importing relaxvm and the importer module must not need onnx; only from_onnx does.
    script = textwrap.dedent(
        """
        import sys
        sys.modules["onnx"] = None
        import relaxvm
        from relaxvm.frontend.onnx import from_onnx
        try:
            from_onnx("model.onnx")
        except relaxvm.errors.MissingDependencyError as err:
            print("MISSING", err)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MISSING") and INSTALL in done.stdout


def test_empty_bytes_are_not_a_model() -> None:
    # protobuf parses b"" as an empty ModelProto: a graph without outputs.
    with pytest.raises(FrontendError, match="the model's graph has no outputs"):
        from_onnx(b"")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shape_dict": {"x": 5}}, r"shape_dict\['x'\] must be a list or tuple of dims, got 5"),
        ({"dtype_dict": {"x": "floatxx"}}, r"dtype 'floatxx' given for input 'x' is not a dtype"),
        ({"dtype_dict": 3}, "dtype_dict must be a dtype name or a dict of them, got 3"),
    ],
)
def test_bad_shape_and_dtype_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(FrontendError, match=message):
        from_onnx(dense_model(), **kwargs)


def test_unranked_input_asks_for_a_shape() -> None:
    model = dense_model()
    model.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(FrontendError, match=r"input 'x' has no shape in the model .*shape_dict"):
        from_onnx(model)
    mod = from_onnx(model, shape_dict={"x": ["n", 4]})
    assert [str(d) for d in param_dims(mod)] == ["n", "4"]


def test_dim_names_that_sanitize_alike_stay_distinct() -> None:
    model = make_model(
        [helper.make_node("Identity", ["a"], ["c"]), helper.make_node("Identity", ["b"], ["d"])],
        inputs={"a": ("float32", ["batch size", 2]), "b": ("float32", ["batch_size", 2])},
        outputs={"c": ("float32", ["batch size", 2]), "d": ("float32", ["batch_size", 2])},
    )
    mod = from_onnx(model)
    first, second = param_dims(mod, 0)[0], param_dims(mod, 1)[0]
    assert first is not second and {str(first), str(second)} == {"batch_size", "batch_size_1"}


def test_converter_failure_names_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    from relaxvm.frontend.onnx import _registry

    assert _registry.find_converter("", "Relu", 17) is not None

    def broken(ctx: Any, node: Any) -> Any:
        raise IndexError("list index out of range")

    table = _registry._TABLE[("", "Relu")]
    patched = [
        _registry.Converter(e.op_type, e.domain, e.since, broken, e.check, e.note) for e in table
    ]
    monkeypatch.setitem(_registry._TABLE, ("", "Relu"), patched)
    with pytest.raises(FrontendError, match=r"Relu node 'act' \(opset 17\) could not be "
                       r"converted: IndexError: list index out of range"):  # fmt: skip
        from_onnx(dense_model())


def test_known_value_with_symbolic_elements_materializes_at_run_time() -> None:
    from relaxvm.frontend.onnx._context import Context
    from relaxvm.ir import relax as rx

    n = tir.Var("n", "int64")
    bb = rx.BlockBuilder()
    x = rx.Var("x", rx.TensorStructInfo((n, 3), "float32"))
    with bb.function("main", [x]):
        ctx = Context(bb, 17)
        dims = ctx.from_known(np.array([n, n * 3, 7], dtype=object), "int64")
        assert [str(v) for v in ctx.known(dims)] == ["n", "n * 3", "7"]
        bb.emit_func_output(dims)
    got = run(bb.get(), np.zeros((4, 3), "float32"))
    np.testing.assert_array_equal(got, [4, 12, 7])
