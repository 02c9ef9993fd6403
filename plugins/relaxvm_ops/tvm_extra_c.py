"""Legalizations of ``relax.nn.attention_bias``, ``relax.hint_on_device`` and
``relax.dynamic_strided_slice``.

``attention_bias`` is ``relax.nn.attention`` with its bias operand, so it reuses that
legalization (the TE stages read the bias from the fourth argument). ``hint_on_device``
only tells TVM's RealizeVDevice where a value should live; its result is its input (TVM's
struct info is the input's), so it legalizes to the input itself. ``dynamic_strided_slice`` becomes
``R.call_pure_packed("relax.run.dynamic_strided_slice", x, begin, end, strides)`` (see
:mod:`.runtime_slice`), its result match_cast to fresh extents as unique's.
"""

from __future__ import annotations

from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.relax.op import call_pure_packed

from ._kernel import legalizes
from .datadep import _emit_with_extents, _result_sinfo
from .nn_attention import legalize_attention

__all__: list[str] = []

legalizes("relax.nn.attention_bias")(legalize_attention)


@legalizes("relax.hint_on_device")
def legalize_hint_on_device(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """The input: the hint carries no computation."""
    del bb
    return call.args[0]


@legalizes("relax.dynamic_strided_slice")
def legalize_dynamic_strided_slice(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``relax.run.dynamic_strided_slice(x, begin, end, strides)``: a new tensor."""
    sinfo = _result_sinfo(call)
    packed = call_pure_packed("relax.run.dynamic_strided_slice", *call.args, sinfo_args=sinfo)
    return _emit_with_extents(bb, packed, sinfo, "dyn_slice")
