"""Names (without the ``relax.`` prefix) of the unary/binary math, bitwise and shift ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = ""
