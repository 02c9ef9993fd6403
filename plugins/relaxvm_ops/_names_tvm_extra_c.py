"""Names (without the ``relax.`` prefix) of the ops legalized in :mod:`.tvm_extra_c`, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "nn.attention_bias hint_on_device dynamic_strided_slice"
