"""Names (without the ``relax.`` prefix) of the gather/scatter/one_hot ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = ""
