"""TVM's ``tvm.relax.testing``, also importable as ``relaxvm.relax.testing``.

* :mod:`.vm`: the packed functions (``test.vm.*``, registered when this package is imported)
  and ``check_saved_func`` that TVM's VM tests call;
* :mod:`.nn`: TVM's small module library (``Placeholder``, ``Parameter``, ``Module``,
  ``Linear``, ``ReLU``, ``LogSoftmax``, ``Sequential``, ``emit``, ``emit_te``, ``init_params``),
  loaded on first use.

TVM's other helpers (``transform``, ``matmul``...) are not provided.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import vm
from .vm import check_saved_func

if TYPE_CHECKING:
    from . import nn as nn


def __getattr__(name: str) -> Any:
    if name == "nn":
        module = importlib.import_module(f"{__name__}.nn")
        globals()["nn"] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)


__all__ = ["check_saved_func", "nn", "vm"]
