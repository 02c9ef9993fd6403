"""Data layouts of the spatial ops (convolutions and pools, 1-d to 3-d): TVM's
``data_layout``, ``kernel_layout``, ``layout`` and ``out_layout`` attributes.

A layout names the axes of a tensor by letter: ``"NCHW"`` (batch, channels, height, width) is
the canonical data layout and ``"OIHW"`` (output channels, input channels, kernel height and
width) the canonical kernel layout (``NCW``/``OIW`` and ``NCDHW``/``OIDHW`` for 1-d and 3-d);
any permutation of the same letters is accepted (``"NHWC"``, ``"HWIO"``, ``"NDHWC"``...). TVM's packed layouts (``"NCHW4c"``) are refused with a
message saying so. A call stores its layout attributes only when one of them is not canonical,
so canonical calls print and compare as before. Struct info is inferred on the canonical
view and permuted back; legalization (``relaxvm_ops``) transposes around the canonical kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from .registry import OpError

__all__ = [
    "DATA_LAYOUT",
    "DATA_LAYOUTS",
    "KERNEL_LAYOUT",
    "conv_layout_attrs",
    "conv_perms",
    "from_canonical",
    "kernel_layout_of",
    "layout_attrs",
    "layout_perm",
    "pool_layout_attrs",
    "pool_perms",
    "to_canonical",
]

DATA_LAYOUT = "NCHW"
KERNEL_LAYOUT = "OIHW"
T = TypeVar("T")


def layout_perm(op: str, param: str, layout: Any, canonical: str) -> tuple[int, ...] | None:
    """Where each canonical axis is in ``layout`` (None when ``layout`` is canonical).

    Raises
    ------
    OpError
        ``layout`` is not a permutation of ``canonical``'s letters (naming the op and the
        parameter).
    """
    if not isinstance(layout, str):
        raise OpError(
            f"{op}: {param} must be a layout string such as {canonical!r}, got {layout!r}"
        )
    if layout == canonical:
        return None
    if sorted(layout) != sorted(canonical):
        packed = any(ch.isdigit() or ch.islower() for ch in layout)
        hint = " (packed layouts such as NCHW4c are not supported)" if packed else ""
        raise OpError(
            f"{op}: {param} {layout!r} is not a permutation of {canonical!r}'s axes{hint}"
        )
    return tuple(layout.index(axis) for axis in canonical)


def to_canonical(values: Sequence[T], perm: tuple[int, ...] | None) -> list[T]:
    """``values`` in a layout, reordered to the canonical one."""
    return list(values) if perm is None else [values[p] for p in perm]


def from_canonical(values: Sequence[T], perm: tuple[int, ...] | None) -> list[T]:
    """Canonical ``values`` reordered to the layout ``perm`` describes."""
    if perm is None:
        return list(values)
    out: list[Any] = [None] * len(values)
    for axis, position in enumerate(perm):
        out[position] = values[axis]
    return out


def layout_attrs(op: str, layouts: Mapping[str, tuple[Any, str]]) -> dict[str, str]:
    """The layout attributes a call stores, from ``{attr: (value, canonical)}`` (each checked):
    none when every value is canonical, else all of them (an output layout defaults to the
    data layout, so a canonical one must be spelled out beside a non-canonical input)."""
    perms = [
        layout_perm(op, name, value, canonical) for name, (value, canonical) in layouts.items()
    ]
    if all(perm is None for perm in perms):
        return {}
    return {name: str(value) for name, (value, _) in layouts.items()}


#: The channel-first data layout of each spatial rank.
DATA_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def kernel_layout_of(rank: int) -> str:
    """The canonical kernel layout of a spatial rank (``OIW``, ``OIHW``, ``OIDHW``)."""
    return "OI" + DATA_LAYOUTS[rank][2:]


def conv_layout_attrs(
    op: str, rank: int, data_layout: Any, kernel_layout: Any, out_layout: Any
) -> dict[str, str]:
    """The layout attributes of a convolution call (see :func:`layout_attrs`)."""
    canonical = DATA_LAYOUTS[rank]
    return layout_attrs(
        op,
        {
            "data_layout": (data_layout, canonical),
            "kernel_layout": (kernel_layout, kernel_layout_of(rank)),
            "out_layout": (data_layout if out_layout is None else out_layout, canonical),
        },
    )


def pool_layout_attrs(op: str, rank: int, layout: Any, out_layout: Any) -> dict[str, str]:
    """The layout attributes of a pooling call (see :func:`layout_attrs`)."""
    canonical = DATA_LAYOUTS[rank]
    return layout_attrs(
        op,
        {
            "layout": (layout, canonical),
            "out_layout": (layout if out_layout is None else out_layout, canonical),
        },
    )


def conv_perms(call: Any, ctx: Any, rank: int) -> tuple[Any, Any, Any]:
    """The data, kernel and output layouts of a convolution call as permutations."""
    op = str(getattr(call.op, "name", call.op))
    canonical = DATA_LAYOUTS[rank]
    data_layout = ctx.attr(call, "data_layout", canonical)
    kernel = kernel_layout_of(rank)
    return (
        layout_perm(op, "data_layout", data_layout, canonical),
        layout_perm(op, "kernel_layout", ctx.attr(call, "kernel_layout", kernel), kernel),
        layout_perm(op, "out_layout", ctx.attr(call, "out_layout", data_layout), canonical),
    )


def pool_perms(call: Any, ctx: Any, rank: int) -> tuple[Any, Any]:
    """The data and output layouts of a pooling call as permutations."""
    op = str(getattr(call.op, "name", call.op))
    canonical = DATA_LAYOUTS[rank]
    layout = ctx.attr(call, "layout", canonical)
    return (
        layout_perm(op, "layout", layout, canonical),
        layout_perm(op, "out_layout", ctx.attr(call, "out_layout", layout), canonical),
    )
