"""ONNX importer: ``from_onnx(model)`` -> IRModule (TVM's ``relax.frontend.onnx.from_onnx``).

>>> from relaxvm.frontend.onnx import from_onnx      # doctest: +SKIP
>>> mod = from_onnx("model.onnx")                      # doctest: +SKIP
>>> ex = relaxvm.compile(mod, "llvm")                  # doctest: +SKIP

Needs the optional ``onnx`` package (``pip install "relaxvm[onnx]"``). docs/onnx.md lists the
supported operators and opsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...ir.relax import IRModule
from ._loader import import_onnx, load_model
from ._registry import registered_ops

__all__ = ["from_onnx", "supported_ops"]


def from_onnx(
    model: Any,
    shape_dict: Mapping[str, Sequence[Any]] | None = None,
    dtype_dict: str | Mapping[str, str] | None = None,
    opset: int | None = None,
    keep_params_in_input: bool = False,
    sanitize_input_names: bool = True,
) -> IRModule:
    """Convert an ONNX model into a Relax IRModule with one function, ``main``.

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
        The model, a path to a ``.onnx`` file, or its serialized bytes.
    shape_dict : dict, optional
        Input name -> shape, overriding the model's. Entries may be ints, names (a symbolic
        dim shared by every input that uses the name) or None (a fresh symbolic dim). The
        model's own ``dim_param`` names become symbolic dims too, so one compiled module
        serves every batch size.
    dtype_dict : str or dict, optional
        Input dtypes: one for all inputs, or by name. Only float inputs follow a single
        string; other inputs keep the model's type. ``None`` keeps the model's types.
    opset : int, optional
        Read the model as this default-domain opset instead of the one it imports.
    keep_params_in_input : bool
        Make the initializers trailing parameters of ``main`` (attribute ``num_input`` says
        how many leading ones are the model's inputs) instead of constants; take their
        values with :func:`relaxvm.frontend.detach_params`.
    sanitize_input_names : bool
        Turn input names into identifiers (``input.1`` -> ``input_1``) for the Relax vars.

    Returns
    -------
    IRModule

    Raises
    ------
    relaxvm.errors.MissingDependencyError
        When ``onnx`` is not installed.
    relaxvm.errors.OpNotImplemented
        Listing every node whose operator, opset or attributes are not supported.
    relaxvm.errors.FrontendError
        For a malformed model or bad arguments.
    """
    import_onnx()
    from ._importer import GraphImporter

    proto = load_model(model)
    if isinstance(dtype_dict, str):
        dtype_dict = _float_inputs_only(proto, dtype_dict)
    importer = GraphImporter(
        proto, shape_dict, dtype_dict, opset, keep_params_in_input, sanitize_input_names
    )
    return importer.import_module()


def _float_inputs_only(proto: Any, dtype: str) -> dict[str, str]:
    # TVM's from_onnx takes dtype_dict="float32" to mean the float inputs; int inputs (token
    # ids, indices) keep their own type.
    out = {}
    init_names = {i.name for i in proto.graph.initializer}
    for value_info in proto.graph.input:
        if value_info.name in init_names:
            continue
        elem = value_info.type.tensor_type.elem_type
        if elem in (1, 10, 11):  # FLOAT, FLOAT16, DOUBLE
            out[value_info.name] = dtype
    return out


def supported_ops() -> dict[str, list[int]]:
    """Each supported default-domain operator -> the opsets at which its converter changes."""
    return {
        op_type: [entry.since for entry in entries]
        for (domain, op_type), entries in registered_ops().items()
        if domain == ""
    }
