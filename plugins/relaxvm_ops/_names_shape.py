"""Names (without the ``relax.`` prefix) of the manipulation and creation ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = ""
