"""Entry point of the ops plugin (``[project.entry-points.relaxvm] ops``)."""

from __future__ import annotations

from relaxvm import hookimpl
from relaxvm.plugins import LegalizationRegistrar


@hookimpl
def relaxvm_register_legalizations(register: LegalizationRegistrar) -> None:
    """Register the generic legalization of every op relaxvm defines."""
