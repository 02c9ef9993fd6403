"""Names (without the ``relax.`` prefix) of the ops legalized in :mod:`.tvm_extra_a`, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "log_add_exp outer ewise_fma bucketize hamming_window wrap_param nn.relu6 nn.batch_flatten"
