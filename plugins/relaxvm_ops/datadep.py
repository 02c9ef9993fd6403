"""Legalizations of the data-dependent ops ``unique`` and ``nonzero`` (TVM's ``FCallPacked``).

No kernel can be given an output buffer before its extents are known, so, as in TVM, the ops
become ``R.call_pure_packed`` of the runtime functions in :mod:`.runtime`
(``relax.run.unique``, ``relax.run.nonzero``), which allocate their result. The call keeps
the op's struct info (known ranks, unknown extents); later uses of the result read the
extents at run time (``match_cast`` or the shape of the tensor).
"""

from __future__ import annotations

from relaxvm.ir import Var as SizeVar
from relaxvm.ir.relax import (
    BlockBuilder,
    Call,
    PrimValue,
    RelaxExpr,
    StructInfo,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
)
from relaxvm.ir.relax.op import call_pure_packed

from ._kernel import LegalizationError, attr, legalizes

__all__ = ["legalize_nonzero", "legalize_unique"]


def _result_sinfo(call: Call) -> StructInfo:
    sinfo = call.struct_info
    if sinfo is None:
        raise LegalizationError(f"{call.op}: the call has no struct info; normalize it first")
    return sinfo


def _with_extents(bb: BlockBuilder, value: RelaxExpr, sinfo: TensorStructInfo, name: str) -> Var:
    """``value`` match_cast to fresh symbolic extents, so that later ops can be legalized.

    The extents are defined by the match_cast when it runs (VMShapeLower reads them from the
    tensor); every use after it sees ``R.Tensor((name_0, ...), dtype)``, not an unknown shape.
    """
    if sinfo.ndim < 0 or sinfo.dtype is None:
        return bb.emit(value, name)
    dims = [SizeVar(f"{name}_{axis}", "int64") for axis in range(sinfo.ndim)]
    return bb.match_cast(value, TensorStructInfo(dims, sinfo.dtype, vdevice=sinfo.vdevice), name)


def _emit_with_extents(bb: BlockBuilder, call: Call, sinfo: StructInfo, name: str) -> RelaxExpr:
    packed = bb.emit(call, f"{name}_packed")
    if isinstance(sinfo, TensorStructInfo):
        return _with_extents(bb, packed, sinfo, name)
    if isinstance(sinfo, TupleStructInfo):
        fields = []
        for index, field in enumerate(sinfo.fields):
            assert isinstance(field, TensorStructInfo)  # _infer_unique builds tensors only
            item = bb.emit(TupleGetItem(packed, index), f"{name}_{index}")
            fields.append(_with_extents(bb, item, field, f"{name}{index}"))
        return Tuple(fields)
    return packed


@legalizes("relax.unique")
def legalize_unique(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``relax.run.unique(x, sorted, return_index, return_inverse, return_counts[, axis])``."""
    flags = [
        PrimValue(int(bool(attr(call, key, default))))
        for key, default in (
            ("sorted", True),
            ("return_index", False),
            ("return_inverse", False),
            ("return_counts", False),
        )
    ]
    axis = attr(call, "axis")
    # As in TVM, the axis is passed only when given (the runtime's default flattens).
    extra = [] if axis is None else [PrimValue(int(axis))]
    sinfo = _result_sinfo(call)
    packed = call_pure_packed("relax.run.unique", call.args[0], *flags, *extra, sinfo_args=sinfo)
    return _emit_with_extents(bb, packed, sinfo, "unique")


@legalizes("relax.nonzero")
def legalize_nonzero(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``relax.run.nonzero(x)``: an int64 tensor of shape ``(ndim, count)``."""
    sinfo = _result_sinfo(call)
    packed = call_pure_packed("relax.run.nonzero", call.args[0], sinfo_args=sinfo)
    return _emit_with_extents(bb, packed, sinfo, "nonzero")
