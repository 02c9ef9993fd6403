"""Helpers for testing the ONNX importer: build a model, run it in relaxvm, compare it with a
reference (onnxruntime when installed, else ``onnx.reference``, the spec's own evaluator).

>>> from relaxvm.testing.onnx import make_model, check_model      # doctest: +SKIP
>>> model = make_model([helper.make_node("Relu", ["x"], ["y"])],
...                    inputs={"x": ("float32", [2, 3])}, outputs={"y": ("float32", [2, 3])})
>>> check_model(model, {"x": np.random.randn(2, 3).astype("float32")})

Tests that use these call :func:`require_onnx` first (it skips with the reason when ``onnx``
is absent).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "check_model",
    "make_model",
    "reference_outputs",
    "require_onnx",
    "require_onnxruntime",
    "run_model",
]

_NP_TO_ONNX = {
    "float32": 1,
    "uint8": 2,
    "int8": 3,
    "uint16": 4,
    "int16": 5,
    "int32": 6,
    "int64": 7,
    "bool": 9,
    "float16": 10,
    "float64": 11,
    "uint32": 12,
    "uint64": 13,
}


def require_onnx() -> Any:
    """The ``onnx`` module; skips the calling test when it is not installed."""
    import pytest

    return pytest.importorskip("onnx", reason='onnx is not installed (pip install "relaxvm[onnx]")')


def require_onnxruntime() -> Any:
    """The ``onnxruntime`` module; skips the calling test when it is not installed."""
    import pytest

    return pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")


def make_model(
    nodes: Sequence[Any],
    inputs: Mapping[str, tuple[str, Sequence[Any] | None]],
    outputs: Mapping[str, tuple[str, Sequence[Any] | None]],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 17,
    name: str = "test",
) -> Any:
    """An ``onnx.ModelProto`` of ``nodes``; inputs/outputs map name -> (dtype, shape), where
    a shape entry may be an int, a name (symbolic) or None; initializers map name -> array."""
    from onnx import checker, helper, numpy_helper

    def value_info(name: str, spec: tuple[str, Sequence[Any] | None]) -> Any:
        dtype, shape = spec
        return helper.make_tensor_value_info(name, _NP_TO_ONNX[dtype], shape)

    graph = helper.make_graph(
        list(nodes),
        name,
        [value_info(n, s) for n, s in inputs.items()],
        [value_info(n, s) for n, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)  # onnxruntime releases lag the newest IR
    checker.check_model(model)
    return model


def _array(value: Any) -> np.ndarray:
    # The ONNX backend cases hand some inputs over as TensorProto (types numpy lacks a
    # spelling for in the case's own code); convert those with onnx's helper.
    if type(value).__name__ == "TensorProto":
        from onnx import numpy_helper

        return np.asarray(numpy_helper.to_array(value))
    return np.asarray(value)


def _feeds(model: Any, inputs: Mapping[str, Any] | Sequence[Any]) -> dict[str, np.ndarray]:
    if isinstance(inputs, Mapping):
        return {k: _array(v) for k, v in inputs.items()}
    init = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in init]
    return {n: _array(v) for n, v in zip(names, inputs, strict=False)}


def reference_outputs(
    model: Any, inputs: Mapping[str, Any] | Sequence[Any], prefer: str = "onnxruntime"
) -> list[np.ndarray]:
    """The model's outputs from onnxruntime (when installed and ``prefer`` says so) or from
    ``onnx.reference.ReferenceEvaluator``."""
    feeds = _feeds(model, inputs)
    if prefer == "onnxruntime":
        try:
            import onnxruntime
        except ImportError:
            pass
        else:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            session = onnxruntime.InferenceSession(
                model.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
            return [np.asarray(o) for o in session.run(None, feeds)]
    from onnx.reference import ReferenceEvaluator

    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


def run_model(
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    target: str = "llvm",
    exec_mode: str = "bytecode",
    **from_onnx_kwargs: Any,
) -> list[np.ndarray]:
    """Import ``model``, compile it for ``target``, run ``main`` on ``inputs`` (by name or in
    order) and return the outputs as numpy arrays (one per graph output)."""
    from relaxvm.frontend.onnx import from_onnx

    mod = from_onnx(model, **from_onnx_kwargs)
    with _target_registered(target):
        return _compile_and_run(model, mod, inputs, target, exec_mode)


def _compile_and_run(
    model: Any, mod: Any, inputs: Mapping[str, Any] | Sequence[Any], target: str, exec_mode: str
) -> list[np.ndarray]:
    import relaxvm
    from relaxvm.registry.extensions import get_target_kind

    ex = relaxvm.compile(mod, target, exec_mode=exec_mode)
    device = relaxvm.device(get_target_kind(target).device)
    vm = relaxvm.VirtualMachine(ex, device)
    feeds = _feeds(model, inputs)
    init = {i.name for i in model.graph.initializer}
    order = [i.name for i in model.graph.input if i.name not in init]
    args = [relaxvm.tensor(feeds[name], device) for name in order]
    result = vm["main"](*args)
    return _flatten(result, len(model.graph.output))


@contextlib.contextmanager
def _target_registered(target: str) -> Iterator[None]:
    # Test doubles (``interp``) are registered for the call when no plugin registered them.
    from relaxvm.registry import extensions

    from .targets import TEST_DOUBLES, registered_target

    if target in TEST_DOUBLES and target not in extensions.list_target_kinds():
        with registered_target(TEST_DOUBLES[target]()):
            yield
    else:
        yield


def _flatten(result: Any, count: int) -> list[np.ndarray]:
    from relaxvm.runtime import Tensor

    if isinstance(result, Tensor):
        return [result.numpy()]
    if count == 1 and not isinstance(result, (list, tuple)):
        return [np.asarray(result)]
    out = []
    for item in result:
        out.append(item.numpy() if isinstance(item, Tensor) else np.asarray(item))
    return out


def check_model(
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    target: str = "llvm",
    rtol: float = 1e-5,
    atol: float = 1e-5,
    exec_mode: str = "bytecode",
    prefer: str = "onnxruntime",
    **from_onnx_kwargs: Any,
) -> list[np.ndarray]:
    """Run ``model`` in relaxvm and in the reference and assert the outputs agree (shape,
    dtype and values); returns relaxvm's outputs."""
    ours = run_model(model, inputs, target, exec_mode, **from_onnx_kwargs)
    expected = reference_outputs(model, inputs, prefer)
    if len(ours) != len(expected):
        raise AssertionError(f"relaxvm gave {len(ours)} outputs, the reference {len(expected)}")
    for index, (got, want) in enumerate(zip(ours, expected, strict=False)):
        if got.shape != want.shape:
            raise AssertionError(f"output {index}: shape {got.shape}, expected {want.shape}")
        if got.dtype != want.dtype:
            raise AssertionError(f"output {index}: dtype {got.dtype}, expected {want.dtype}")
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"output {index}")
    return ours
