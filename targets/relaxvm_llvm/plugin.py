"""Entry point of the LLVM target plugin (``[project.entry-points.relaxvm] llvm``)."""

from __future__ import annotations

from relaxvm import hookimpl
from relaxvm.plugins import TargetRegistrar


@hookimpl
def relaxvm_register_targets(register: TargetRegistrar) -> None:
    """Register the ``llvm`` target kind."""
