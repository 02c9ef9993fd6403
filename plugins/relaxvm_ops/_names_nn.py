"""Names (without the ``relax.`` prefix) of the nn activations, normalizations and statistics legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = ""
