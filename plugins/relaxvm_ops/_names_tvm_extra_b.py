"""Names (without the ``relax.`` prefix) of the ops legalized in :mod:`.tvm_extra_b`, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "slice_scatter index_tensor index_put multinomial_from_uniform shape_to_tensor"
