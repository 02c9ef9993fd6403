"""Legalizing spatial ops in any data layout: transposes around the canonical kernel.

``relax.nn.conv2d`` with ``data_layout="NHWC"``, ``kernel_layout="HWIO"`` (or a pool with
``layout="NHWC"``, and the 1-d and 3-d ops alike) becomes: each operand not in its canonical
layout transposed to it (``NCHW``, ``OIHW``...), the op's canonical kernel, and the result
transposed to ``out_layout``.
The transposes are ordinary injective kernels that fusion merges with their neighbours, and the
canonical kernels keep their schedules. A call in the canonical layouts is legalized as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from relaxvm.ir.relax import BlockBuilder, Call, Op, RelaxExpr
from relaxvm.ir.relax.op.manipulate import permute_dims
from relaxvm.ir.relax.op.nn_layout import DATA_LAYOUTS, kernel_layout_of, layout_perm

from ._kernel import attr, op_name
from .manipulate import legalize_permute_dims

__all__ = ["LayoutSpec", "conv_layouts", "conv_transpose_layouts", "in_any_layout", "pool_layouts"]

Legalization = Callable[[BlockBuilder, Call], RelaxExpr]


@dataclass(frozen=True)
class LayoutSpec:
    """Which attribute gives each operand's layout, and the output's."""

    #: ``(attribute, canonical layout)`` per operand (None: layout-free operand).
    operands: tuple[tuple[str, str] | None, ...]
    #: The output's attribute; when absent it defaults to the first operand's layout.
    out_attr: str = "out_layout"


def _rank(call: Call) -> int:
    name = op_name(call)
    return next(r for r in (1, 2, 3) if f"{r}d" in name)


def conv_layouts(call: Call) -> LayoutSpec:
    """The layouts of a convolution call of any spatial rank."""
    rank = _rank(call)
    return LayoutSpec(
        (("data_layout", DATA_LAYOUTS[rank]), ("kernel_layout", kernel_layout_of(rank)))
    )


def conv_transpose_layouts(call: Call) -> LayoutSpec:
    """The layouts of a transposed convolution call (weights input channels first)."""
    rank = _rank(call)
    return LayoutSpec(
        (("data_layout", DATA_LAYOUTS[rank]), ("kernel_layout", "IO" + DATA_LAYOUTS[rank][2:]))
    )


def pool_layouts(call: Call) -> LayoutSpec:
    """The layouts of a pooling call of any spatial rank."""
    return LayoutSpec((("layout", DATA_LAYOUTS[_rank(call)]),))


def in_any_layout(
    layouts: Callable[[Call], LayoutSpec],
) -> Callable[[Legalization], Legalization]:
    """Decorator: the legalization of the canonical layouts, extended to every layout
    (``layouts(call)`` says which attributes hold them)."""

    def wrap(canonical: Legalization) -> Legalization:
        def legalize(bb: BlockBuilder, call: Call) -> RelaxExpr:
            name = op_name(call)
            spec = layouts(call)
            first = spec.operands[0]
            assert first is not None
            data_layout = attr(call, first[0], first[1])
            perms = [
                None if entry is None else layout_perm(name, entry[0], attr(call, *entry), entry[1])
                for entry in spec.operands
            ]
            out_perm = layout_perm(
                name, spec.out_attr, attr(call, spec.out_attr, data_layout), first[1]
            )
            if out_perm is None and all(p is None for p in perms):
                return canonical(bb, call)
            args = list(call.args)
            for index, perm in enumerate(perms):
                if perm is not None:
                    args[index] = _transpose(bb, args[index], list(perm))
            names = {e[0] for e in spec.operands if e is not None} | {spec.out_attr}
            attrs = {k: v for k, v in (call.attrs or {}).items() if k not in names}
            inner = bb.normalize(Call(Op.get(name), args, attrs))
            assert isinstance(inner, Call)
            result = bb.emit(canonical(bb, inner))
            if out_perm is None:
                return result
            # Canonical axis k goes to position out_perm[k]: the transpose reads, for each
            # output position, the canonical axis placed there.
            axes = [0] * len(out_perm)
            for axis, position in enumerate(out_perm):
                axes[position] = axis
            back = bb.normalize(permute_dims(result, axes))
            assert isinstance(back, Call)
            return legalize_permute_dims(bb, back)

        legalize.__name__ = canonical.__name__
        legalize.__doc__ = canonical.__doc__
        return legalize

    return wrap


def _transpose(bb: BlockBuilder, expr: RelaxExpr, axes: list[int]) -> RelaxExpr:
    call = bb.normalize(permute_dims(expr, axes))
    assert isinstance(call, Call)
    return bb.emit(legalize_permute_dims(bb, call))
