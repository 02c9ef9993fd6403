"""Reading ONNX models: the lazy ``onnx`` import, model loading, dtypes, tensors, attributes."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...errors import FrontendError, MissingDependencyError, OpNotImplemented

__all__ = [
    "decode_attributes",
    "import_onnx",
    "load_model",
    "onnx_dtype",
    "tensor_to_numpy",
]

INSTALL_HINT = 'pip install "relaxvm[onnx]" (or: pip install onnx)'


def import_onnx() -> Any:
    """The ``onnx`` package, or :class:`MissingDependencyError` saying how to install it."""
    try:
        import onnx
    except ImportError as exc:
        raise MissingDependencyError(
            f"relaxvm.frontend.onnx needs the 'onnx' package, which is not installed: "
            f"{INSTALL_HINT}"
        ) from exc
    return onnx


def load_model(model: Any) -> Any:
    """A ``ModelProto`` from a ``ModelProto``, a path (str or ``os.PathLike``) or bytes."""
    onnx = import_onnx()
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as exc:  # protobuf raises its own DecodeError
            raise FrontendError(f"from_onnx: the bytes are not an ONNX model: {exc}") from exc
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FrontendError(f"from_onnx: no such model file: '{path}'")
        try:
            return onnx.load(path)
        except Exception as exc:
            raise FrontendError(f"from_onnx: '{path}' is not an ONNX model: {exc}") from exc
    raise FrontendError(
        f"from_onnx: model must be an onnx.ModelProto, a path or bytes, got {type(model).__name__}"
    )


# TensorProto.DataType code -> relaxvm dtype name (the codes are fixed by the ONNX spec).
_DTYPES: dict[int, str] = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    17: "float8_e4m3fn",
    19: "float8_e5m2",
}
_DTYPE_NAMES = {
    8: "STRING",
    14: "COMPLEX64",
    15: "COMPLEX128",
    16: "BFLOAT16",
    18: "FLOAT8E4M3FNUZ",
    20: "FLOAT8E5M2FNUZ",
    21: "UINT4",
    22: "INT4",
    23: "FLOAT4E2M1",
}


def onnx_dtype(code: int, where: str) -> str:
    """The relaxvm dtype of ONNX element type ``code``; ``where`` names the value in errors."""
    dtype = _DTYPES.get(int(code))
    if dtype is None:
        name = _DTYPE_NAMES.get(int(code), f"code {code}")
        raise OpNotImplemented(f"from_onnx: {where} has element type {name}, which relaxvm lacks")
    return dtype


def tensor_to_numpy(tensor: Any, where: str) -> np.ndarray:
    """The value of a ``TensorProto`` (raw or typed fields, or external data already loaded)."""
    from onnx import numpy_helper

    onnx_dtype(tensor.data_type, where)  # refuses strings, bfloat16... with a clear message
    try:
        return np.asarray(numpy_helper.to_array(tensor))
    except Exception as exc:
        raise FrontendError(f"from_onnx: cannot read {where}: {exc}") from exc


def decode_attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values: ints, floats, str, numpy arrays (tensors),
    GraphProto (subgraphs), and lists of those."""
    from onnx import AttributeProto

    attrs: dict[str, Any] = {}
    for attr in node.attribute:
        kind = attr.type
        where = f"attribute '{attr.name}' of node '{node.name or node.op_type}'"
        if kind == AttributeProto.INT:
            attrs[attr.name] = int(attr.i)
        elif kind == AttributeProto.FLOAT:
            attrs[attr.name] = float(attr.f)
        elif kind == AttributeProto.STRING:
            attrs[attr.name] = attr.s.decode("utf-8", errors="replace")
        elif kind == AttributeProto.TENSOR:
            attrs[attr.name] = tensor_to_numpy(attr.t, where)
        elif kind == AttributeProto.GRAPH:
            attrs[attr.name] = attr.g
        elif kind == AttributeProto.INTS:
            attrs[attr.name] = [int(v) for v in attr.ints]
        elif kind == AttributeProto.FLOATS:
            attrs[attr.name] = [float(v) for v in attr.floats]
        elif kind == AttributeProto.STRINGS:
            attrs[attr.name] = [v.decode("utf-8", errors="replace") for v in attr.strings]
        elif kind == AttributeProto.TENSORS:
            attrs[attr.name] = [tensor_to_numpy(t, where) for t in attr.tensors]
        elif kind == AttributeProto.GRAPHS:
            attrs[attr.name] = list(attr.graphs)
        else:
            # Sparse tensors and type protos: kept raw; a converter that needs one says so.
            attrs[attr.name] = attr
    return attrs
