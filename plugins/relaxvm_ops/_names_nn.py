"""Names (without the ``relax.`` prefix) of the nn activations, normalizations and statistics legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "nn.leakyrelu nn.softplus nn.gelu_tanh nn.prelu nn.dropout nn.pad nn.group_norm nn.instance_norm std cumprod median"
