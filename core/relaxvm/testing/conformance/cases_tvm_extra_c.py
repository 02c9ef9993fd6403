"""Conformance templates of ``nn.attention_bias``, ``hint_on_device`` and
``dynamic_strided_slice`` (see :mod:`.cases`).

``attention_bias`` reuses :mod:`.cases_nn_attention`'s shapes, inputs and numpy oracle (it
is ``relax.nn.attention`` with its bias operand); ``hint_on_device`` is the identity.
``dynamic_strided_slice`` runs as a runtime function whose result is match_cast to fresh
extents (as unique's); its int64 bounds are fixed, not random (the edge-value test fills only
parameters of the case's dtype, so they stay as given). Zero strides and wrong lengths are
tested in ``tests/plugins/ops/test_tvm_extra_c.py``. ``call_inplace_packed`` needs a
registered packed function, so it is tested there too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...runtime import cpu
from .cases import F32_TRANSCENDENTAL, FLOAT, FLOAT_INT, Arrays, OpTemplate, op, random_values
from .cases_nn_attention import _inputs, _params, attention_ref

__all__ = ["templates"]


def templates() -> list[OpTemplate]:
    """The templates of this family."""
    # (label, bias shape without the batch, builder keywords)
    variants: list[tuple[str, tuple[int, ...], dict[str, Any]]] = [
        ("bias2", (5,), {}),
        ("bias4-topleft-scale", (2, 3, 5), {"causal_mask": "TopLeft", "scale": 0.5}),
    ]
    out = [
        OpTemplate("relax.nn.attention_bias", label, "nn_attention", FLOAT,
                   _params(bias),
                   lambda d, *args, kw=kwargs: op.nn.attention_bias(*args, **kw),
                   _inputs(bias),
                   lambda *args, kw=kwargs: attention_ref(*args, **kw),
                   F32_TRANSCENDENTAL)
        for label, bias, kwargs in variants
    ]  # fmt: skip

    def rows(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        return [random_values(rng, (n, 3), dt)]

    out.append(
        OpTemplate("relax.hint_on_device", "", "create", FLOAT_INT,
                   lambda d, dt: [("x", (d, 3), dt)],
                   lambda d, x: op.hint_on_device(x, cpu(0)), rows,
                   lambda x: x.copy())
    )  # fmt: skip

    # (label, begin, end, strides) of a (d, 6) tensor.
    slices = [
        ("reverse-rows", [-1, 1], [-1000, 6], [-1, 2]),
        ("clamped", [1, -100], [1000, 100], [2, 3]),
    ]
    for label, begin, end, strides in slices:
        out.append(
            OpTemplate("relax.dynamic_strided_slice", label, "datadep", FLOAT_INT,
                       lambda d, dt: [("x", (d, 6), dt), ("b", (2,), "int64"),
                                      ("e", (2,), "int64"), ("s", (2,), "int64")],
                       lambda d, x, b, e, s: op.dynamic_strided_slice(x, b, e, s),
                       _slice_inputs(begin, end, strides),
                       lambda x, b, e, s: x[slice(b[0], e[0], s[0]), slice(b[1], e[1], s[1])])
        )  # fmt: skip
    return out


def _slice_inputs(begin: list[int], end: list[int], strides: list[int]) -> Any:
    def inputs(rng: np.random.Generator, n: int, dt: str) -> Arrays:
        bounds = [np.array(v, "int64") for v in (begin, end, strides)]
        return [random_values(rng, (n, 6), dt), *bounds]

    return inputs
