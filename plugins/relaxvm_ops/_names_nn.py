"""Names (without the ``relax.`` prefix) of the nn activations, normalizations and statistics legalized here, for :mod:`.catalog`."""

from __future__ import annotations

NAMES = "nn.leakyrelu nn.softplus nn.gelu_tanh nn.prelu nn.dropout nn.pad nn.group_norm nn.instance_norm std cumprod median nn.conv1d nn.max_pool1d nn.avg_pool1d nn.adaptive_avg_pool1d nn.conv1d_transpose nn.conv2d_transpose nn.attention nn.nll_loss nn.cross_entropy_with_logits image.resize2d nn.conv3d nn.max_pool3d nn.avg_pool3d nn.adaptive_avg_pool3d nn.selu nn.pixel_shuffle nn.conv3d_transpose nn.attention_var_len"
