"""Names (without the ``relax.`` prefix) of the sorting, searching and einsum ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "sort argsort topk einsum"
