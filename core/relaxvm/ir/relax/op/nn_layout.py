"""Data layouts of the spatial ops (convolutions, pools and resize, 1-d to 3-d): TVM's
``data_layout``, ``kernel_layout``, ``layout`` and ``out_layout`` attributes.

A layout names the axes of a tensor by letter: ``"NCHW"`` (batch, channels, height, width) is
the canonical data layout and ``"OIHW"`` (output channels, input channels, kernel height and
width) the canonical kernel layout (``NCW``/``OIW`` and ``NCDHW``/``OIDHW`` for 1-d and 3-d).
Accepted, as in TVM:

* any permutation of the canonical letters (``"NHWC"``, ``"HWIO"``, ``"NDHWC"``...);
* packed ("tiled") layouts, where a lower-case sub-axis with a factor splits the primal axis
  of the same letter: ``"NCHW16c"`` holds channel ``C`` as ``(C // 16, H, W, 16)`` around the
  spatial axes, ``"OIHW4i4o"`` splits both channel axes of a kernel. The primal axis stays in
  the layout (it holds the outer part); each axis is split at most once.

Shapes convert as TVM's bijective layouts do: a packed axis ``C`` of extent ``c`` with factor
``f`` is ``c * f`` canonical channels; canonical ``C`` channels pack into ``ceil(C / f)`` outer
and ``f`` inner (a constant sub-axis extent other than its factor is an error; a symbolic one is
taken to be the factor). A call stores its layout attributes only when one of them is not
canonical, so canonical calls print and compare as before. Struct info is inferred on the
canonical view and converted back; legalization (``relaxvm_ops``) reshapes and transposes
around the canonical kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...arith import Analyzer
from ...expr import IntImm
from ...op import add, floordiv, mul
from ._common import dims_text
from .registry import OpError

__all__ = [
    "DATA_LAYOUT",
    "DATA_LAYOUTS",
    "KERNEL_LAYOUT",
    "Layout",
    "check_ndim",
    "conv_layout_attrs",
    "conv_perms",
    "from_canonical",
    "kernel_layout_of",
    "layout_attrs",
    "layout_ndim",
    "layout_perm",
    "parse_layout",
    "pool_layout_attrs",
    "pool_perms",
    "to_canonical",
]

DATA_LAYOUT = "NCHW"
KERNEL_LAYOUT = "OIHW"
T = TypeVar("T")


@dataclass(frozen=True)
class Layout:
    """A layout string checked against its canonical layout.

    ``axes`` holds ``(letter, factor)`` per tensor axis: an upper-case primal axis with factor
    0, or a lower-case sub-axis with its factor (``"NCHW16c"``: ``N C H W`` then ``("c", 16)``).
    """

    op: str
    param: str
    name: str
    canonical: str
    axes: tuple[tuple[str, int], ...]

    @property
    def ndim(self) -> int:
        """The rank of a tensor in this layout."""
        return len(self.axes)

    @property
    def is_packed(self) -> bool:
        """Whether some axis is split into a sub-axis (``"NCHW4c"``)."""
        return any(factor for _, factor in self.axes)

    def position(self, letter: str) -> int:
        """The tensor axis holding primal ``letter`` (or sub-axis ``letter`` when lower-case)."""
        return next(i for i, (axis, _) in enumerate(self.axes) if axis == letter)

    def factor(self, letter: str) -> int:
        """The factor splitting primal axis ``letter`` (0: not split)."""
        sub = letter.lower()
        return next((f for axis, f in self.axes if axis == sub), 0)

    @property
    def perm(self) -> tuple[int, ...]:
        """Where each canonical axis is (the primal part of a packed axis)."""
        return tuple(self.position(letter) for letter in self.canonical)

    def to_canonical(self, values: Sequence[Any]) -> list[Any]:
        """A shape in this layout as the canonical shape (packed axes multiplied out).

        Raises
        ------
        OpError
            A constant sub-axis extent differs from its factor.
        """
        for index, (axis, factor) in enumerate(self.axes):
            value = values[index]
            if factor and isinstance(value, IntImm) and value.value != factor:
                raise OpError(
                    f"{self.op}: {self.param} {self.name!r} splits axis {axis.upper()} by "
                    f"{factor}, but the tensor's axis {index} has extent {value.value}"
                )
        out = []
        for letter in self.canonical:
            value = values[self.position(letter)]
            factor = self.factor(letter)
            out.append(mul(value, factor) if factor else value)
        return out

    def from_canonical(self, values: Sequence[Any]) -> list[Any]:
        """A canonical shape in this layout: a packed axis keeps ``ceil(extent / factor)``
        (TVM's shape rule) and its sub-axis the factor."""
        out: list[Any] = []
        for axis, factor in self.axes:
            if factor:
                out.append(IntImm(factor))
                continue
            value = values[self.canonical.index(axis)]
            split = self.factor(axis)
            out.append(_ceildiv(value, split) if split else value)
        return out


def _ceildiv(value: Any, factor: int) -> Any:
    if isinstance(value, IntImm):
        return IntImm(value.dtype, -(-value.value // factor))
    if isinstance(value, int):
        return -(-value // factor)
    # Simplified so that a packed extent converted back gives itself: ceil(c * 16 / 16) is c.
    return Analyzer().simplify(floordiv(add(value, factor - 1), factor))


def _parse_axes(op: str, param: str, text: str) -> tuple[tuple[str, int], ...]:
    axes: list[tuple[str, int]] = []
    digits = ""
    for ch in text:
        if "0" <= ch <= "9":
            digits += ch
        elif "a" <= ch <= "z":
            if not digits or int(digits) == 0:
                raise OpError(
                    f"{op}: {param} {text!r}: sub-axis {ch!r} needs a positive factor before it "
                    f"(as in '16{ch}')"
                )
            axes.append((ch, int(digits)))
            digits = ""
        elif "A" <= ch <= "Z":
            if digits:
                raise OpError(
                    f"{op}: {param} {text!r}: a factor ({digits}) may only precede a "
                    f"lower-case sub-axis, not {ch!r}"
                )
            axes.append((ch, 0))
        else:
            raise OpError(f"{op}: {param} {text!r}: invalid character {ch!r} in a layout")
    if digits:
        raise OpError(f"{op}: {param} {text!r}: the factor {digits} ends the layout")
    return tuple(axes)


def parse_layout(op: str, param: str, layout: Any, canonical: str) -> Layout:
    """``layout`` checked against ``canonical``: a permutation of its letters, possibly with
    packed sub-axes (``"NCHW4c"``, ``"OIHW4i4o"``).

    Raises
    ------
    OpError
        ``layout`` is not a string, has a character or a factor out of place, misses or repeats
        a canonical axis, or has a sub-axis that splits no axis or splits one twice (the message
        names the op and the parameter).
    """
    if not isinstance(layout, str):
        raise OpError(
            f"{op}: {param} must be a layout string such as {canonical!r}, got {layout!r}"
        )
    axes = _parse_axes(op, param, layout)
    primal = [axis for axis, factor in axes if not factor]
    if sorted(primal) != sorted(canonical):
        raise OpError(
            f"{op}: {param} {layout!r} is not a permutation of {canonical!r}'s axes (sub-axes "
            f"such as 4c aside)"
        )
    subs = [axis for axis, factor in axes if factor]
    for sub in subs:
        if sub.upper() not in canonical:
            raise OpError(
                f"{op}: {param} {layout!r}: sub-axis {sub!r} splits no axis of {canonical!r}"
            )
        if subs.count(sub) > 1:
            raise OpError(f"{op}: {param} {layout!r}: axis {sub.upper()} is split twice")
    return Layout(op, param, layout, canonical, axes)


def layout_perm(op: str, param: str, layout: Any, canonical: str) -> Layout | None:
    """``layout`` parsed (see :func:`parse_layout`); None when it is ``canonical`` itself."""
    parsed = parse_layout(op, param, layout, canonical)
    return None if layout == canonical else parsed


def layout_ndim(layout: Layout | None, canonical: str) -> int:
    """The rank of a tensor in ``layout`` (None: the canonical layout)."""
    return len(canonical) if layout is None else layout.ndim


def check_ndim(ctx: Any, info: Any, what: str, layout: Layout | None, canonical: str) -> None:
    """Raise unless tensor ``info`` (``what``: "data", "weight") has ``layout``'s rank."""
    ndim = layout_ndim(layout, canonical)
    if info.ndim not in (-1, ndim):
        name = canonical if layout is None else layout.name
        raise ctx.error(
            f"{what} must have rank {ndim} ({name} layout), got shape {dims_text(info)}"
        )


def to_canonical(values: Sequence[T], layout: Layout | None) -> list[T]:
    """``values`` (a shape) in ``layout``, as the canonical shape."""
    return list(values) if layout is None else layout.to_canonical(values)


def from_canonical(values: Sequence[T], layout: Layout | None) -> list[T]:
    """A canonical shape converted to ``layout``."""
    return list(values) if layout is None else layout.from_canonical(values)


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
    """The data, kernel and output layouts of a convolution call (None where canonical)."""
    op = str(getattr(call.op, "name", call.op))
    canonical = DATA_LAYOUTS[rank]
    kernel = kernel_layout_of(rank)
    data_layout = ctx.attr(call, "data_layout", canonical)
    return (
        layout_perm(op, "data_layout", data_layout, canonical),
        layout_perm(op, "kernel_layout", ctx.attr(call, "kernel_layout", kernel), kernel),
        layout_perm(op, "out_layout", ctx.attr(call, "out_layout", data_layout), canonical),
    )


def pool_perms(call: Any, ctx: Any, rank: int) -> tuple[Any, Any]:
    """The data and output layouts of a pooling call (None where canonical)."""
    op = str(getattr(call.op, "name", call.op))
    canonical = DATA_LAYOUTS[rank]
    layout = ctx.attr(call, "layout", canonical)
    return (
        layout_perm(op, "layout", layout, canonical),
        layout_perm(op, "out_layout", ctx.attr(call, "out_layout", layout), canonical),
    )
