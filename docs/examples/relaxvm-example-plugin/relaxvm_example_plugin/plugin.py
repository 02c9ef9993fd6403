"""The module named by the ``example`` entry point.

relaxvm imports this module the first time it needs a registered function, registers it with
pluggy under the entry-point name (``example``), and calls the hook below once with a
registrar. Everything registered through that registrar is attributed to plugin ``example``:
``relaxvm.registry.function_source("example.scale")`` says so, and a name clash with another
plugin produces an error naming both.
"""

from __future__ import annotations

import relaxvm
from relaxvm.registry import FunctionRegistrar

from .kernels import scale, vector_add


@relaxvm.hookimpl
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register ``example.scale`` and ``example.vector_add``."""
    registry.register("example.scale", scale)
    registry.register("example.vector_add", vector_add)
