"""Entry point of the builtins plugin (``[project.entry-points.relaxvm] builtins``)."""

from __future__ import annotations

from relaxvm import hookimpl
from relaxvm.registry import FunctionRegistrar

# Importing the modules fills the table through their @builtin decorators and attaches the
# call-site specialisers (@specializer) to the builtins.
from . import calls, checks, cpu_device, memory, shape, shape_sites, values  # noqa: F401
from ._table import BUILTINS


@hookimpl
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register every ``vm.builtin.*`` function and the CPU device API."""
    for name, func in BUILTINS:
        registry.register(name, func)
