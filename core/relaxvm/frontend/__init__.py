"""Importers: models from other frameworks' formats into Relax IR (TVM's ``relax.frontend``).

``relaxvm.frontend.onnx.from_onnx`` reads an ONNX model. Each importer imports its framework's
package lazily, on first use, so ``import relaxvm`` never needs it; without the package the
importer raises :class:`~relaxvm.errors.MissingDependencyError` saying what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._params import detach_params

if TYPE_CHECKING:
    from . import onnx as onnx

__all__ = ["detach_params", "onnx"]


def __getattr__(name: str) -> Any:
    if name == "onnx":
        import importlib

        module = importlib.import_module(f"{__name__}.onnx")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'relaxvm.frontend' has no attribute '{name}'", name=name)
