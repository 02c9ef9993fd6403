"""Matrix products (TVM's ``topi.nn.matmul``, ``dense`` and ``batch_matmul``)."""

from __future__ import annotations

from typing import Any

from ...errors import VMTypeError, VMValueError
from ...ir import IntImm, PrimExpr, structural_equal
from ...ir import op as sop
from ...ir.tir import te
from ...runtime.dtype import DataType
from .._util import (
    broadcast_shape,
    cast_to,
    normalize_axis,
    product,
    require_tensor,
    static_int,
)
from ..transform import reshape

__all__ = ["batch_matmul", "bias_add", "dense", "flatten", "matmul"]


def _check_k(where: str, ka: PrimExpr, kb: PrimExpr) -> None:
    a, b = static_int(ka), static_int(kb)
    if (a is not None and b is not None and a != b) or (
        a is None and b is None and not structural_equal(ka, kb)
    ):
        raise VMValueError(f"{where}: reduction extents differ: {ka} vs {kb}")


def _out_dtype(where: str, a: te.Tensor, b: te.Tensor, out_dtype: Any) -> DataType:
    if out_dtype is None and a.dtype != b.dtype:
        raise VMTypeError(
            f"{where}: operands have dtypes {a.dtype} and {b.dtype}; give out_dtype to mix them"
        )
    return DataType(out_dtype) if out_dtype is not None else a.dtype


def matmul(
    tensor_a: te.Tensor,
    tensor_b: te.Tensor,
    bias: te.Tensor | None = None,
    out_dtype: str | None = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> te.Tensor:
    """The 2-D product ``op(A) @ op(B) (+ bias)``, ``op`` transposing where asked.

    Parameters
    ----------
    tensor_a : te.Tensor
        ``[M, K]`` (``[K, M]`` with ``transpose_a``).
    tensor_b : te.Tensor
        ``[K, N]`` (``[N, K]`` with ``transpose_b``).
    bias : te.Tensor, optional
        ``[N]``, added to every row.
    out_dtype : str, optional
        The accumulation and result dtype (operands are cast to it); default ``A``'s.

    Raises
    ------
    VMValueError
        Operands that are not 2-D, or reduction extents that differ.
    """
    where = "topi.nn.matmul"
    a, b = require_tensor(where, tensor_a, "tensor_a"), require_tensor(where, tensor_b, "tensor_b")
    if a.ndim != 2 or b.ndim != 2:
        raise VMValueError(f"{where}: expects 2-D operands, got ranks {a.ndim} and {b.ndim}")
    dtype = _out_dtype(where, a, b, out_dtype)
    m, ka = (a.shape[1], a.shape[0]) if transpose_a else (a.shape[0], a.shape[1])
    n, kb = (b.shape[0], b.shape[1]) if transpose_b else (b.shape[1], b.shape[0])
    _check_k(where, ka, kb)
    k = te.reduce_axis((0, ka), name="k")

    def body(i: PrimExpr, j: PrimExpr) -> te.Reduce:
        x = a[k.var, i] if transpose_a else a[i, k.var]
        y = b[j, k.var] if transpose_b else b[k.var, j]
        return te.sum(sop.mul(cast_to(x, dtype), cast_to(y, dtype)), axis=k)

    out = te.compute((m, n), body, name="T_matmul")
    if bias is None:
        return out
    require_tensor(where, bias, "bias")
    return te.compute(
        (m, n), lambda i, j: sop.add(out[i, j], cast_to(bias[j], dtype)), name="T_add_bias"
    )


def dense(
    data: te.Tensor,
    weight: te.Tensor,
    bias: te.Tensor | None = None,
    out_dtype: str | None = None,
) -> te.Tensor:
    """``data @ weight.T (+ bias)``: ``data`` is ``[M, K]``, ``weight`` ``[N, K]``."""
    return matmul(data, weight, bias, out_dtype, transpose_a=False, transpose_b=True)


def batch_matmul(
    tensor_a: te.Tensor,
    tensor_b: te.Tensor,
    oshape: Any = None,
    out_dtype: str | None = None,
    transpose_a: bool = False,
    transpose_b: bool = True,
) -> te.Tensor:
    """The batched product of 3-D operands; a batch extent of 1 broadcasts.

    As TVM, ``transpose_b`` defaults to True: ``B`` is ``[batch, N, K]``. ``oshape`` is
    accepted for TVM compatibility and ignored (the shape is inferred).
    """
    where = "topi.nn.batch_matmul"
    a, b = require_tensor(where, tensor_a, "tensor_a"), require_tensor(where, tensor_b, "tensor_b")
    if a.ndim != 3 or b.ndim != 3:
        raise VMValueError(f"{where}: expects 3-D operands, got ranks {a.ndim} and {b.ndim}")
    dtype = _out_dtype(where, a, b, out_dtype)
    (batch,) = broadcast_shape(where, [a.shape[0]], [b.shape[0]])
    m, ka = (a.shape[2], a.shape[1]) if transpose_a else (a.shape[1], a.shape[2])
    n, kb = (b.shape[1], b.shape[2]) if transpose_b else (b.shape[2], b.shape[1])
    _check_k(where, ka, kb)
    k = te.reduce_axis((0, ka), name="k")

    def batch_of(t: te.Tensor, z: PrimExpr) -> PrimExpr:
        return IntImm(z.dtype, 0) if static_int(t.shape[0]) == 1 else z

    def body(z: PrimExpr, i: PrimExpr, j: PrimExpr) -> te.Reduce:
        za, zb = batch_of(a, z), batch_of(b, z)
        x = a[za, k.var, i] if transpose_a else a[za, i, k.var]
        y = b[zb, j, k.var] if transpose_b else b[zb, k.var, j]
        return te.sum(sop.mul(cast_to(x, dtype), cast_to(y, dtype)), axis=k)

    return te.compute((batch, m, n), body, name="T_batch_matmul")


def bias_add(data: te.Tensor, bias: te.Tensor, axis: int = 1) -> te.Tensor:
    """``data + bias`` with the 1-D ``bias`` laid along ``axis`` (TVM's ``topi.nn.bias_add``)."""
    where = "topi.nn.bias_add"
    require_tensor(where, data)
    require_tensor(where, bias, "bias")
    if bias.ndim != 1:
        raise VMValueError(f"{where}: bias must be 1-D, got rank {bias.ndim}")
    ax = normalize_axis(where, axis, data.ndim)
    have, want = static_int(bias.shape[0]), static_int(data.shape[ax])
    if have is not None and want is not None and have != want:
        raise VMValueError(f"{where}: bias has {have} elements but axis {ax} of data has {want}")
    if bias.dtype != data.dtype:
        raise VMTypeError(f"{where}: bias has dtype {bias.dtype}, data {data.dtype}")
    return te.compute(data.shape, lambda *i: sop.add(data[i], bias[i[ax]]), name="T_add")


def flatten(data: te.Tensor) -> te.Tensor:
    """``[N, d1, d2, ...]`` to ``[N, d1 * d2 * ...]`` (TVM's ``topi.nn.flatten``)."""
    require_tensor("topi.nn.flatten", data)
    if data.ndim < 1:
        raise VMValueError("topi.nn.flatten: needs a tensor of rank >= 1")
    return reshape(data, [data.shape[0], product(data.shape[1:])])
