"""Index ops: gather_elements, gather_nd, scatter_elements, scatter_nd, one_hot."""

from __future__ import annotations

__all__: list[str] = []
