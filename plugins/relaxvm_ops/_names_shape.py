"""Names (without the ``relax.`` prefix) of the manipulation and creation ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "tril triu flip tile repeat stack meshgrid collapse_sum_like collapse_sum_to eye eye_like layout_transform"
