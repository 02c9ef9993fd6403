"""Entry point of the ops plugin (``[project.entry-points.relaxvm] ops``)."""

from __future__ import annotations

from relaxvm import hookimpl
from relaxvm.plugins import FunctionRegistrar, LegalizationRegistrar


@hookimpl
def relaxvm_register_legalizations(register: LegalizationRegistrar) -> None:
    """Register the generic legalization of every op relaxvm defines."""
    # Imported here: the IR is heavy, and the VM loads plugins without needing it.
    from . import legalizations

    for name, func in sorted(legalizations.all_legalizations().items()):
        register.register(name, func)


@hookimpl
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register the runtime functions the legalized ``print``/``assert_op`` call."""
    from . import runtime

    for name, func in runtime.RUNTIME_FUNCTIONS.items():
        registry.register(name, func)
