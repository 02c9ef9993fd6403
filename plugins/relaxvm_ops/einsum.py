"""einsum: a matrix product as ``relax.matmul``'s kernel, anything else as one TE reduction.

Two operands whose subscripts describe a (batched) matrix product -- one summed label shared
by both, every other label kept in the output -- are rewritten into the relax ops a user
would have written (``permute_dims`` of an operand that is not already ``(..., rows, k)`` /
``(..., k, cols)``, ``matmul`` or ``linear``, ``permute_dims`` of the result) and each is
legalized by its own legalization. So ``"ij,jk->ik"``, ``"bij,bkj->bik"`` or ``"ij,j->i"``
get exactly the kernels, and the CPU/GPU schedules, that ``relax.matmul`` gets: the schedules
recognise a matmul by its loop structure, and a product whose output's last axis is not
contiguous in an operand (``"ij,jk->ki"``, a batched ``x @ y.T``) would otherwise fall back
to slow dot products.

Every other einsum (one operand, three or more, diagonals, labels summed within one operand,
outer products, bool operands, extents that only agree by broadcasting) is one TE kernel:
the product of the operands at every label assignment, summed over the labels absent from
the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from relaxvm.ir import PrimExpr, Var, cast, structural_equal
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo
from relaxvm.ir.relax.op import matmul
from relaxvm.ir.relax.op.einsum_spec import EinsumSpec, label_dims, parse_einsum
from relaxvm.ir.relax.op.linalg import linear
from relaxvm.ir.relax.op.manipulate import permute_dims
from relaxvm.ir.tir import te
from relaxvm.runtime.dtype import DataType

# linalg and manipulate register the legalizations the matrix-product path hands calls to.
from . import linalg, manipulate  # noqa: F401
from ._kernel import (
    LEGALIZATIONS,
    OpPattern,
    attr,
    call_te,
    is_one,
    known_tensor,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tuple_fields,
)
from .sort_tir import i64

__all__ = ["MatmulPlan", "legalize_einsum", "matmul_plan"]

#: dtypes whose einsum and matmul kernels compute the same values. bool einsum is a logical
#: "any", not a sum; the other dtypes (float8, bfloat16, ...) keep the generic kernel, whose
#: results they had before (matmul's kernels are not checked against them).
_MATMUL_DTYPES = frozenset(
    f"{kind}{bits}" for kind in ("int", "uint") for bits in (8, 16, 32, 64)
) | {"float16", "float32", "float64"}


@dataclass(frozen=True)
class MatmulPlan:
    """How an einsum runs as a matrix product.

    Attributes
    ----------
    left, right : int
        The operands that are ``matmul``'s ``x1`` and ``x2``.
    left_axes, right_axes : tuple of int or None
        The ``permute_dims`` axes that bring each operand to ``(..., rows, k)`` and
        ``(..., k, cols)`` (``(k,)`` for a vector); None where it already is.
    transpose_right : bool
        The right operand is a 2-d ``(cols, k)``: a ``linear`` (``x @ w.T``) reads it as is.
    out_axes : tuple of int or None
        The ``permute_dims`` axes from the product's ``(..., rows, cols)`` to the einsum's
        output; None where they agree.
    """

    left: int
    right: int
    left_axes: tuple[int, ...] | None
    right_axes: tuple[int, ...] | None
    transpose_right: bool
    out_axes: tuple[int, ...] | None

    @property
    def copies(self) -> int:
        """How many transposed copies the plan makes (fewer is better)."""
        return sum(axes is not None for axes in (self.left_axes, self.right_axes, self.out_axes))


def _axes(have: Sequence[str], want: Sequence[str]) -> tuple[int, ...] | None:
    """``permute_dims`` axes taking labels ``have`` to ``want``; None for the identity."""
    if tuple(have) == tuple(want):
        return None
    return tuple(have.index(label) for label in want)


def _is_suffix(part: Sequence[str], whole: Sequence[str]) -> bool:
    return not part or tuple(whole[len(whole) - len(part) :]) == tuple(part)


def _plan_for(
    spec: EinsumSpec,
    shapes: Sequence[Sequence[PrimExpr]],
    out_shape: Sequence[PrimExpr],
    left: int,
    right: int,
) -> MatmulPlan | None:
    lhs, rhs, out = spec.inputs[left], spec.inputs[right], spec.output
    if len(set(lhs)) != len(lhs) or len(set(rhs)) != len(rhs):
        return None  # a repeated label takes a diagonal
    summed = [label for label in lhs if label in rhs and label not in out]
    if len(summed) != 1:
        return None  # an outer product, or several summed labels
    k = summed[0]
    if any(label not in out and label != k for label in (*lhs, *rhs)):
        return None  # a label summed within one operand
    # The product's rows and columns: the last output label of each operand alone.
    row = next((label for label in reversed(out) if label in lhs and label not in rhs), None)
    col = next((label for label in reversed(out) if label in rhs and label not in lhs), None)
    batch = [label for label in out if label not in (row, col)]
    left_batch = [label for label in batch if label in lhs]
    right_batch = [label for label in batch if label in rhs]
    # matmul right-aligns batch dimensions, and a vector operand has none.
    if not (_is_suffix(left_batch, batch) and _is_suffix(right_batch, batch)):
        return None
    if (row is None and left_batch) or (col is None and right_batch):
        return None
    if not _extents_agree(spec, shapes, out_shape, left, right):
        return None
    rows, cols = [row] if row else [], [col] if col else []
    transpose_right = bool(cols) and not right_batch and tuple(rhs) == (col, k)
    return MatmulPlan(
        left=left,
        right=right,
        left_axes=_axes(lhs, [*left_batch, *rows, k]),
        right_axes=None if transpose_right else _axes(rhs, [*right_batch, k, *cols]),
        transpose_right=transpose_right,
        out_axes=_axes([*batch, *rows, *cols], out),
    )


def _extents_agree(
    spec: EinsumSpec,
    shapes: Sequence[Sequence[PrimExpr]],
    out_shape: Sequence[PrimExpr],
    left: int,
    right: int,
) -> bool:
    """Whether matmul's shape rules give the einsum's extents: the summed label has one
    extent, and every output extent is its operands' (or one of them is a broadcast 1)."""
    dims = label_dims(EinsumSpec((spec.inputs[left], spec.inputs[right]), spec.output),
                      [shapes[left], shapes[right]])  # fmt: skip
    extent = dict(zip(spec.output, out_shape, strict=True))
    for label, found in dims.items():
        if label not in extent:  # the summed label: no broadcast (einsum's differs)
            if not all(structural_equal(d, found[0]) for d in found[1:]):
                return False
            continue
        if not all(is_one(d) or structural_equal(d, extent[label]) for d in found):
            return False
        if not any(structural_equal(d, extent[label]) for d in found):
            return False
    return True


def matmul_plan(
    spec: EinsumSpec,
    shapes: Sequence[Sequence[PrimExpr]],
    out_shape: Sequence[PrimExpr],
    dtype: DataType | None,
) -> MatmulPlan | None:
    """The way to run an einsum as ``relax.matmul``/``relax.linear``, or None.

    Parameters
    ----------
    spec : EinsumSpec
        The parsed subscripts.
    shapes : sequence of sequence of PrimExpr
        The operands' extents.
    out_shape : sequence of PrimExpr
        The einsum's result extents (from its inference).
    dtype : DataType or None
        The operands' dtype.

    Returns
    -------
    MatmulPlan or None
        None when the einsum is not a matrix product of two operands; otherwise the plan
        with the fewest transposed copies (``x1``/``x2`` in operand order on a tie).
    """
    if len(spec.inputs) != 2 or dtype is None or str(dtype) not in _MATMUL_DTYPES:
        return None
    plans = [_plan_for(spec, shapes, out_shape, a, b) for a, b in ((0, 1), (1, 0))]
    found = [plan for plan in plans if plan is not None]
    return min(found, key=lambda plan: plan.copies) if found else None


def _permuted(bb: BlockBuilder, expr: RelaxExpr, axes: tuple[int, ...] | None) -> RelaxExpr:
    """``expr`` with its axes permuted, legalized and bound (unchanged for None)."""
    if axes is None:
        return expr
    call = bb.normalize(permute_dims(expr, list(axes)))
    assert isinstance(call, Call)  # normalizing a call gives a call
    return bb.emit(LEGALIZATIONS["relax.permute_dims"](bb, call))


def _legalize_as_matmul(
    bb: BlockBuilder, fields: Sequence[RelaxExpr], plan: MatmulPlan
) -> RelaxExpr:
    x1 = _permuted(bb, fields[plan.left], plan.left_axes)
    x2 = _permuted(bb, fields[plan.right], plan.right_axes)
    # No out_dtype: the operands' dtype is the einsum's, and the call is the one a user writes.
    call = bb.normalize(linear(x1, x2) if plan.transpose_right else matmul(x1, x2))
    assert isinstance(call, Call)  # normalizing a call gives a call
    result = LEGALIZATIONS[op_name(call)](bb, call)
    if plan.out_axes is None:
        return result
    transposed = bb.normalize(permute_dims(bb.emit(result), list(plan.out_axes)))
    assert isinstance(transposed, Call)
    return LEGALIZATIONS["relax.permute_dims"](bb, transposed)


# ---- the generic kernel ---------------------------------------------------------------------
def einsum_te(
    operands: Sequence[te.Tensor], subscripts: str, out_shape: Sequence[PrimExpr]
) -> te.Tensor:
    """One TE kernel computing ``numpy.einsum(subscripts, *operands)``.

    Parameters
    ----------
    operands : sequence of te.Tensor
        The operands, of one dtype.
    subscripts : str
        numpy einsum subscripts.
    out_shape : sequence of PrimExpr
        The result extents (as inference gives them).

    Returns
    -------
    te.Tensor
        The product of the operands at every label assignment, summed over the labels absent
        from the output; for bool operands the logical "or" of the "and"s, as numpy's.
    """
    shapes = [list(t.shape) for t in operands]
    spec = parse_einsum(subscripts, [len(s) for s in shapes])
    dims = label_dims(spec, shapes)
    extents = dict(zip(spec.output, out_shape, strict=True))
    for label in spec.reduced:
        # A broadcast (size 1) extent yields to the others, as numpy broadcasts it.
        sizes = [d for d in dims[label] if not is_one(d)]
        extents[label] = sizes[0] if sizes else dims[label][0]
    logical = bool(operands) and operands[0].dtype == DataType("bool")

    def body(*idx: Var) -> Any:
        index: dict[str, Any] = dict(zip(spec.output, idx, strict=True))
        red = [te.reduce_axis((0, extents[label]), name=f"r_{label}") for label in spec.reduced]
        index.update((label, rv.var) for label, rv in zip(spec.reduced, red, strict=True))
        term: PrimExpr | None = None
        for tensor, labels in zip(operands, spec.inputs, strict=True):
            at = tuple(
                i64(0) if is_one(d) else index[label]
                for label, d in zip(labels, tensor.shape, strict=True)
            )
            value = cast(tensor[at], "int8") if logical else tensor[at]
            term = value if term is None else term * value
        assert term is not None  # inference requires one operand at least
        if not red:
            return term
        # bool: "any" of the "and"s, as numpy's einsum; 0/1 products make max an "any".
        return te.max(term, axis=red) if logical else te.sum(term, axis=red)

    result = te.compute(list(out_shape), body, name="T_einsum")
    if not logical:
        return result
    return te.compute(list(out_shape), lambda *i: sop.not_equal(result[i], 0), name="T_einsum_bool")


@legalizes("relax.einsum")
def legalize_einsum(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A matrix product as ``matmul``/``linear`` (with ``permute_dims`` around it where the
    labels are in another order); any other einsum as one TE kernel (:func:`einsum_te`)."""
    subscripts = attr(call, "subscripts", "")
    fields = tuple_fields(bb, call, call.args[0], "operands")
    infos: list[TensorStructInfo] = [
        known_tensor(call, field.struct_info, f"operand {index}")
        for index, field in enumerate(fields)
    ]
    out = out_tensor_sinfo(call)
    shapes = [shape_of(info) for info in infos]
    spec = parse_einsum(subscripts, [len(s) for s in shapes])
    plan = matmul_plan(spec, shapes, shape_of(out), out.dtype)
    if plan is not None:
        return _legalize_as_matmul(bb, fields, plan)

    def kernel(*operands: te.Tensor) -> te.Tensor:
        return einsum_te(operands, subscripts, shape_of(out))

    return call_te(
        bb, kernel, *fields, primfunc_name_hint="einsum",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
