"""matmul and linear.

matmul is one TE reduction ``C[b.., i, j] = sum_k A[b.., i, k] * B[b.., k, j]`` over numpy
operands: batch dimensions broadcast, and a 1-d operand is a row (left) or column (right)
vector whose axis is dropped from the result. A schedule recognises it by its single
reduction stage (pattern OutEWiseFusable). linear is ``x @ w.T`` as such a matmul kernel plus
a separate broadcast add of the bias, so that fusion can later merge them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, select, structural_equal
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo
from relaxvm.ir.relax.op import add
from relaxvm.ir.tir import te
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    LEGALIZATIONS,
    LegalizationError,
    OpPattern,
    call_te,
    is_one,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
)
from .elementwise import cast_to, checked_broadcast, kernel_broadcast_shape

__all__ = ["matmul_te"]


def _batch_index(
    operand_batch: Sequence[PrimExpr], out_batch: Sequence[PrimExpr], idx: Sequence[Any]
) -> list[Any]:
    offset = len(out_batch) - len(operand_batch)
    result: list[Any] = []
    for axis, dim in enumerate(operand_batch):
        i = idx[offset + axis]
        out_dim = out_batch[offset + axis]
        if is_one(dim) and not is_one(out_dim):
            result.append(0)
        elif isinstance(dim, IntImm) or structural_equal(dim, out_dim):
            result.append(i)
        else:
            # A symbolic extent other than the result's may be 1 at run time (broadcast).
            result.append(select(sop.equal(dim, 1), IntImm(i.dtype, 0), i))
    return result


def matmul_te(
    a: te.Tensor,
    b: te.Tensor,
    out_shape: Sequence[PrimExpr],
    out_dtype: DataType,
    transpose_b: bool = False,
    name: str = "T_matmul",
) -> te.Tensor:
    """``a @ b`` (or ``a @ b.T``) with numpy's 1-d and batch rules, accumulating in
    ``out_dtype``."""
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    k_extent = a.shape[-1]
    a_batch = list(a.shape[:-2]) if not a_vec else []
    b_batch = list(b.shape[:-2]) if not b_vec else []
    n_batch = len(out_shape) - (0 if a_vec else 1) - (0 if b_vec else 1)
    out_batch = list(out_shape[:n_batch])

    def body(*idx: Any) -> Any:
        k = te.reduce_axis((0, k_extent), name="k")
        batch = idx[:n_batch]
        rest = list(idx[n_batch:])
        i = None if a_vec else rest.pop(0)
        j = None if b_vec else rest.pop(0)
        a_idx: list[Any] = [*_batch_index(a_batch, out_batch, batch), *([] if a_vec else [i]), k]
        b_idx: list[Any]
        if b_vec:
            b_idx = [k]
        elif transpose_b:
            b_idx = [*_batch_index(b_batch, out_batch, batch), j, k]
        else:
            b_idx = [*_batch_index(b_batch, out_batch, batch), k, j]
        lhs = cast_to(a[tuple(a_idx)], out_dtype)
        rhs = cast_to(b[tuple(b_idx)], out_dtype)
        return te.sum(lhs * rhs, axis=k)

    return te.compute(out_shape, body, name=name)


@legalizes("relax.matmul")
def legalize_matmul(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One reduction kernel named ``matmul``."""
    shapes = [shape_of(tensor_arg(call, 0, "x1")), shape_of(tensor_arg(call, 1, "x2"))]
    args = list(call.args[:2])
    out = call.struct_info
    if isinstance(out, TensorStructInfo) and out.shape_values is None and out.ndim != -1:
        # Inference left the batch extents unknown (two different symbols, as TVM does); the
        # kernel takes topi's broadcast of them and the operands are checked at run time.
        batch = kernel_broadcast_shape(op_name(call), [s[:-2] for s in shapes])
        args = [
            checked_broadcast(bb, arg, [*batch, *s[-2:]], op_name(call)) if len(s) > 1 else arg
            for arg, s in zip(args, shapes, strict=True)
        ]
        a_rows = [shapes[0][-2]] if len(shapes[0]) > 1 else []
        b_cols = [shapes[1][-1]] if len(shapes[1]) > 1 else []
        shape = [*batch, *a_rows, *b_cols]
        dtype = out.dtype
    else:
        known = out_tensor_sinfo(call)
        shape, dtype = shape_of(known), known.dtype
    if dtype is None:
        raise LegalizationError(f"{op_name(call)}: cannot legalize: the result dtype is unknown")

    def kernel(a: te.Tensor, b: te.Tensor) -> te.Tensor:
        return matmul_te(a, b, shape, dtype)

    return call_te(
        bb, kernel, *args, primfunc_name_hint="matmul",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.linear")
def legalize_linear(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``x @ weight.T`` (a ``matmul`` kernel reading the weight transposed), then ``+ bias``."""
    x = tensor_arg(call, 0, "x")
    w = tensor_arg(call, 1, "weight")
    out = out_tensor_sinfo(call)
    assert out.dtype is not None
    x_shape, w_shape = shape_of(x), shape_of(w)
    if not x_shape:
        raise LegalizationError(f"{op_name(call)}: x must have rank >= 1")
    mm_shape = [*x_shape[:-1], *w_shape[:-1]]  # (..., out_features), or (...) for a 1-d weight

    def kernel(a: te.Tensor, b: te.Tensor) -> te.Tensor:
        return matmul_te(a, b, mm_shape, out.dtype, transpose_b=True)  # type: ignore[arg-type]

    mm = call_te(
        bb, kernel, call.args[0], call.args[1], primfunc_name_hint="matmul",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
    if len(call.args) == 2:
        return mm
    product = bb.emit(mm)
    biased = bb.normalize(add(product, call.args[2]))
    assert isinstance(biased, Call)  # normalizing a call gives a call
    return LEGALIZATIONS["relax.add"](bb, biased)
