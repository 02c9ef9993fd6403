"""Names (without the ``relax.`` prefix) of the gather/scatter/one_hot ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "gather_elements gather_nd scatter_elements scatter_nd one_hot"
