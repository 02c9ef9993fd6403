"""Entry point of the ops plugin (``[project.entry-points.relaxvm] ops``)."""

from __future__ import annotations

from relaxvm import hookimpl
from relaxvm.registry import FunctionRegistrar, LegalizationRegistrar

from . import catalog, runtime


@hookimpl
def relaxvm_register_legalizations(register: LegalizationRegistrar) -> None:
    """Register the generic legalization of every op relaxvm defines.

    The registered functions are thin wrappers: the kernels' modules, and the IR, load when
    a legalization first runs, not when the VM loads plugins.
    """
    for name in catalog.LEGALIZED_OPS:
        register.register(name, catalog.lazy_legalization(name))


@hookimpl
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register the runtime functions the legalized ``print``/``assert_op`` call."""
    for name, func in runtime.RUNTIME_FUNCTIONS.items():
        registry.register(name, func)
