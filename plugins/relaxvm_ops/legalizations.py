"""The table of every legalization this package provides (imports each op family)."""

from __future__ import annotations

from . import (  # noqa: F401
    _kernel,
    create,
    datadep,
    einsum,
    elementwise,
    image,
    indexing,
    layout,
    linalg,
    manipulate,
    manipulate_extra,
    nn,
    nn_attention,
    nn_conv,
    nn_extra,
    nn_loss,
    qdq,
    reduction,
    sort,
    structural,
    tvm_extra_a,
    tvm_extra_b,
    tvm_extra_c,
)

__all__ = ["all_legalizations"]


def all_legalizations() -> dict[str, _kernel.Legalization]:
    """``op name -> func(bb, call)`` for every op legalized here."""
    return dict(_kernel.LEGALIZATIONS)
