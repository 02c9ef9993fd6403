"""Legalization of ``layout_transform``: every element of ``x`` stored at its mapped position.

The kernel walks the source, not the destination: the destination position of a source
element is the index map applied to it, while the reverse would need the map's inverse, which
splits and fuses of symbolic extents do not always have in closed form. Where the destination
has more positions than the source (``i % 4`` over 6 rows gives 8), a first loop fills it with
the pad value. The map's extents come from its bounds, so every store is in range.
"""

from __future__ import annotations

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import Buffer, BufferStore, Stmt, seq, te

from ._kernel import (
    OpPattern,
    attr,
    call_tir_loops,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
)
from .index_check import _nest

__all__ = ["legalize_layout_transform"]


def _pad_constant(value: float | int | None, dtype: str) -> PrimExpr:
    number = 0 if value is None else value
    if dtype == "bool":
        return IntImm("bool", int(bool(number)))
    if dtype.startswith(("int", "uint")):
        return IntImm(dtype, int(number))
    return sop.const(float(number), dtype)


@legalizes("relax.layout_transform")
def legalize_layout_transform(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A pad fill where the destination has holes, then one store per source element."""
    shape = shape_of(tensor_arg(call, 0, "x"))
    info = out_tensor_sinfo(call)
    out_shape, dtype = shape_of(info), str(info.dtype)
    index_map = attr(call, "index_map")
    padded = not Analyzer().can_prove_equal(product(out_shape), product(shape))

    def build(x: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer("T_layout_trans", out_shape, dtype)
        steps: list[Stmt] = []
        if padded:
            fill = [(Var(f"o{d}", "int64"), extent) for d, extent in enumerate(out_shape)]
            at = [var for var, _ in fill]
            pad = _pad_constant(attr(call, "pad_value"), dtype)
            steps.append(_nest(BufferStore(out, pad, at), fill))
        loops = [(Var(f"i{d}", "int64"), extent) for d, extent in enumerate(shape)]
        src = [var for var, _ in loops]
        dst = index_map.map_indices(src)
        steps.append(_nest(BufferStore(out, x.buffer[tuple(src)], dst), loops))
        return [out], seq(*steps)

    return call_tir_loops(
        bb, build, call.args[0], primfunc_name_hint="layout_transform",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip
