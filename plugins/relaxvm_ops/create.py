"""Creation ops: full, zeros, ones, their ``_like`` forms, arange, eye and eye_like."""

from __future__ import annotations

from typing import Any

from relaxvm.ir import PrimExpr, cast
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo
from relaxvm.ir.tir import te

from ._kernel import OpPattern, call_te, legalizes, op_name, out_tensor_sinfo, shape_of
from .elementwise import cast_to

__all__: list[str] = []


def _fill(
    bb: BlockBuilder, call: Call, name: str, value: Any, inputs: list[RelaxExpr]
) -> RelaxExpr:
    """A kernel writing ``value`` (a number, or a function of the converted inputs)."""
    out = out_tensor_sinfo(call)
    shape, dtype = shape_of(out), out.dtype
    assert dtype is not None

    def kernel(*args: Any) -> te.Tensor:
        fill = value(*args) if callable(value) else sop.const(value, dtype)
        return te.compute(shape, lambda *i: cast_to(fill, dtype), name=f"T_{name}")

    return call_te(
        bb, kernel, *inputs, primfunc_name_hint=name,
        op_pattern=OpPattern.ELEMWISE, op=op_name(call),
    )  # fmt: skip


def _fill_value(arg: RelaxExpr) -> tuple[Any, list[RelaxExpr]]:
    """A fill value argument: a PrimValue (a scalar) or a 0-d tensor (read at ``[]``)."""
    if isinstance(arg.struct_info, TensorStructInfo):
        return (lambda t: t[()]), [arg]
    return (lambda v: v), [arg]


@legalizes("relax.full")
def legalize_full(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``shape`` filled with the value."""
    value, inputs = _fill_value(call.args[1])
    return _fill(bb, call, "full", value, inputs)


@legalizes("relax.full_like")
def legalize_full_like(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The value in the shape of ``x`` (``x`` is not read)."""
    value, inputs = _fill_value(call.args[1])
    return _fill(bb, call, "full", value, inputs)


@legalizes("relax.zeros", "relax.zeros_like")
def legalize_zeros(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Zeros of the result's shape and dtype."""
    return _fill(bb, call, "zeros", 0, [])


@legalizes("relax.ones", "relax.ones_like")
def legalize_ones(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """Ones of the result's shape and dtype."""
    return _fill(bb, call, "ones", 1, [])


@legalizes("relax.arange")
def legalize_arange(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[i] = start + i * step`` computed in the result's dtype."""
    out = out_tensor_sinfo(call)
    shape, dtype = shape_of(out), out.dtype
    assert dtype is not None

    def kernel(start: PrimExpr, end: PrimExpr, step: PrimExpr) -> te.Tensor:
        del end  # the length is already in the result's shape
        first, delta = cast(start, dtype), cast(step, dtype)
        return te.compute(
            shape, lambda i: sop.add(first, sop.mul(cast(i, dtype), delta)), name="T_arange"
        )

    return call_te(
        bb, kernel, *call.args, primfunc_name_hint="arange",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


def _eye(bb: BlockBuilder, call: Call, k: RelaxExpr) -> RelaxExpr:
    """Ones where ``j - i == k``, zeros elsewhere, in the result's shape and dtype."""
    out = out_tensor_sinfo(call)
    shape, dtype = shape_of(out), out.dtype
    assert dtype is not None

    def kernel(offset: PrimExpr) -> te.Tensor:
        def body(i: PrimExpr, j: PrimExpr) -> PrimExpr:
            on = sop.equal(sop.sub(cast(j, "int64"), cast(i, "int64")), cast(offset, "int64"))
            return sop.select(on, sop.const(1, dtype), sop.const(0, dtype))

        return te.compute(shape, body, name="T_eye")

    return call_te(
        bb, kernel, k, primfunc_name_hint="eye",
        op_pattern=OpPattern.INJECTIVE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.eye")
def legalize_eye(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """An ``(n, m)`` identity shifted to diagonal ``k``."""
    return _eye(bb, call, call.args[2])


@legalizes("relax.eye_like")
def legalize_eye_like(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """:func:`legalize_eye` in the shape of ``x`` (``x`` is not read)."""
    return _eye(bb, call, call.args[1])
