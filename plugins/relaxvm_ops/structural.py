"""Legalizations of the structural ops that TVM lowers to packed calls (``FCallPacked``):
``relax.print`` -> ``relax.run.print`` and ``relax.assert_op`` -> ``relax.run.assert_op``.

The other structural ops (call_tir, call_packed, shape_of, make_closure, null_value...) are
not legalized: the VM lowering passes handle them.
"""

from __future__ import annotations

from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TupleStructInfo
from relaxvm.ir.relax.expr import StringImm
from relaxvm.ir.relax.op import call_packed

from ._kernel import attr, legalizes

__all__ = ["legalize_assert_op", "legalize_print"]


def _void() -> TupleStructInfo:
    return TupleStructInfo([])


@legalizes("relax.print")
def legalize_print(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``relax.run.print(format, *values)``."""
    fmt = StringImm(str(attr(call, "format", "")))
    return call_packed("relax.run.print", fmt, *call.args, sinfo_args=_void())


@legalizes("relax.assert_op")
def legalize_assert_op(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``relax.run.assert_op(condition, format, *format_args)``."""
    fmt = StringImm(str(attr(call, "format", "")))
    cond, *rest = call.args
    return call_packed("relax.run.assert_op", cond, fmt, *rest, sinfo_args=_void())
