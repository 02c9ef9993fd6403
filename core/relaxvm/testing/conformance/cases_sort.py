"""Conformance templates of the sorting, searching and einsum ops (see :mod:`.cases`)."""

from __future__ import annotations

from .cases import OpTemplate

__all__ = ["EXCLUSIONS", "templates"]

#: Edge-value exclusions of these templates, as :data:`.test_edges.EXCLUSIONS`.
EXCLUSIONS: dict[str, dict[str, str]] = {}


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    return []
