"""relaxvm.topi.nn: neural-network operators (TVM's ``topi.nn``), on NCHW layouts."""

from __future__ import annotations

from .activation import leaky_relu, log_softmax, relu, softmax
from .conv import adaptive_pool, conv2d_nchw, global_pool, pad, pool2d
from .linalg import batch_matmul, bias_add, dense, flatten, matmul
from .norm import layer_norm

__all__ = [
    "adaptive_pool",
    "batch_matmul",
    "bias_add",
    "conv2d_nchw",
    "dense",
    "flatten",
    "global_pool",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "matmul",
    "pad",
    "pool2d",
    "relu",
    "softmax",
]
