"""``relax.nn.attention_bias``: TVM's name for attention with a bias operand.

TVM's ``attention`` builds ``relax.nn.attention_bias`` when given a bias, and prints it as
``R.nn.attention_bias``; relaxvm's ``attention`` keeps the bias as a fourth operand of
``relax.nn.attention``. Both ops share the struct info inference and the legalization.
:mod:`.nn` re-exports :func:`attention_bias` (``op.nn.attention_bias``).
"""

from __future__ import annotations

from .._base import RelaxExpr
from ..expr import Call
from ._common import make_call
from .nn_attention import ATTENTION_ATTRS, _attention_attrs, _infer_attention, attention
from .registry import register_op

__all__ = ["attention_bias"]

register_op(
    "relax.nn.attention_bias",
    num_inputs=4,
    infer=_infer_attention,
    attrs=ATTENTION_ATTRS,
    doc="scaled dot-product attention plus a bias, BSNH layout",
)


def attention_bias(
    query: RelaxExpr,
    key: RelaxExpr,
    value: RelaxExpr,
    bias: RelaxExpr | None = None,
    scale: float | None = None,
    causal_mask: str | None = None,
    window_size: int | None = None,
) -> Call:
    """:func:`~.nn_attention.attention` as the ``relax.nn.attention_bias`` op.

    Parameters
    ----------
    query, key, value : RelaxExpr
        ``(B, N, H, D)``, ``(B, M, H, D)`` and ``(B, M, H, Dv)`` float tensors.
    bias : RelaxExpr, optional
        Added to the scores: ``(B, M)``, ``(B, N, M)`` or ``(B, H, N, M)``. Without it the
        call is a plain ``relax.nn.attention`` (as TVM's builder).
    scale, causal_mask, window_size
        As :func:`~.nn_attention.attention`.

    Returns
    -------
    Call
        A ``relax.nn.attention_bias`` call of shape ``(B, N, H, Dv)`` (``relax.nn.attention``
        without a bias).
    """
    if bias is None:
        return attention(query, key, value, None, scale, causal_mask, window_size)
    name = "relax.nn.attention_bias"
    attrs = _attention_attrs(name, scale, causal_mask, window_size)
    return make_call(name, [query, key, value, bias], attrs)
