"""The module named by the ``example`` entry point.

relaxvm imports this module the first time it needs a registered function or target kind,
registers it with pluggy under the entry-point name (``example``), and calls each hook below
once with a registrar. Everything registered through a registrar is attributed to plugin
``example``: ``relaxvm.registry.function_source("example.scale")`` and
``relaxvm.registry.list_target_kinds()`` say so, and a name clash with another plugin produces
an error naming both."""

from __future__ import annotations

import relaxvm
from relaxvm.registry import FunctionRegistrar, TargetRegistrar

from .kernels import scale, vector_add
from .target import strict_target_kind


@relaxvm.hookimpl
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register ``example.scale`` and ``example.vector_add``."""
    registry.register("example.scale", scale)
    registry.register("example.vector_add", vector_add)


@relaxvm.hookimpl
def relaxvm_register_targets(register: TargetRegistrar) -> None:
    """Register the ``example_strict`` target kind (LLVM kernels, strict IEEE math)."""
    register.register(strict_target_kind())
