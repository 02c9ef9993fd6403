"""Names (without the ``relax.`` prefix) of the sorting, searching, einsum, data-dependent (unique, nonzero) and quantize/dequantize ops legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "sort argsort topk einsum unique nonzero quantize dequantize"
