"""TVM's ``tvm.contrib.cblas``: ``matmul`` and ``batch_matmul`` for ``BlockBuilder.emit_te``.

TVM's versions return a ``te.extern`` tensor whose PrimFunc calls the packed function
``tvm.contrib.cblas.matmul`` (a BLAS library). relaxvm's tensor expressions have no extern
stage, and relaxvm links no BLAS: these return the same product as an ordinary ``te.compute``
reduction (:func:`relaxvm.topi.nn.matmul`), so ``emit_te(cblas.matmul, x, y)`` gives a
``call_tir`` to a PrimFunc named ``matmul`` with TVM's output shape, compiled by relaxvm like any
other kernel. Only the speed of a vendor BLAS is missing.
"""

from __future__ import annotations

from typing import Any

from ..ir.tir import te
from ..topi import nn as _nn

__all__ = ["batch_matmul", "matmul"]


def matmul(
    lhs: te.Tensor, rhs: te.Tensor, transa: bool = False, transb: bool = False, **kwargs: Any
) -> te.Tensor:
    """``op(lhs) @ op(rhs)`` for 2-D tensors, ``op`` transposing where asked.

    Parameters
    ----------
    lhs : te.Tensor
        ``[n, k]`` (``[k, n]`` with ``transa``).
    rhs : te.Tensor
        ``[k, m]`` (``[m, k]`` with ``transb``).
    transa, transb : bool
        Transpose the operand first.
    **kwargs
        Accepted for TVM's signature; ``out_dtype`` is honoured, others are ignored (TVM
        forwards them to ``te.extern``, which relaxvm does not have).

    Returns
    -------
    te.Tensor
        ``[n, m]``.
    """
    return _nn.matmul(
        lhs, rhs, out_dtype=kwargs.get("out_dtype"), transpose_a=transa, transpose_b=transb
    )


def batch_matmul(
    lhs: te.Tensor,
    rhs: te.Tensor,
    transa: bool = False,
    transb: bool = False,
    iterative: bool = False,
    **kwargs: Any,
) -> te.Tensor:
    """``op(lhs[b]) @ op(rhs[b])`` for 3-D tensors (a batch extent of 1 broadcasts).

    Parameters
    ----------
    lhs : te.Tensor
        ``[b, n, k]`` (``[b, k, n]`` with ``transa``).
    rhs : te.Tensor
        ``[b, k, m]`` (``[b, m, k]`` with ``transb``).
    transa, transb : bool
        Transpose each batch's operand first.
    iterative : bool
        TVM's choice between one BLAS call per batch or a batched call; no effect here.
    **kwargs
        ``out_dtype`` is honoured, others are ignored.

    Returns
    -------
    te.Tensor
        ``[b, n, m]``.
    """
    del iterative  # a scheduling choice of TVM's BLAS wrapper; the result is the same
    return _nn.batch_matmul(
        lhs, rhs, out_dtype=kwargs.get("out_dtype"), transpose_a=transa, transpose_b=transb
    )
