"""Legalizing spatial ops in any data layout: layout conversions around the canonical kernel.

``relax.nn.conv2d`` with ``data_layout="NHWC"``, ``kernel_layout="HWIO"`` (or a pool with
``layout="NHWC"``, and the 1-d and 3-d ops alike) becomes: each operand not in its canonical
layout converted to it (``NCHW``, ``OIHW``...), the op's canonical kernel, and the result
converted to ``out_layout``. A permutation converts by a transpose; a packed layout
(``"NCHW4c"``, ``"OIHW4i4o"``) by one gather kernel that merges each sub-axis into its primal
axis (``c = C_outer * 4 + c_inner``), and back by one that splits it, zero-filling the tail
when the channel count is not a multiple of the factor (TVM's ``ceil`` shape rule).
The conversions are ordinary injective kernels that fusion merges with their neighbours, and
the canonical kernels keep their schedules. A call in the canonical layouts is legalized as
before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, select
from relaxvm.ir import op as sop
from relaxvm.ir.arith import Analyzer
from relaxvm.ir.relax import BlockBuilder, Call, Op, RelaxExpr
from relaxvm.ir.relax.op.manipulate import permute_dims
from relaxvm.ir.relax.op.nn_layout import DATA_LAYOUTS, Layout, kernel_layout_of, layout_perm
from relaxvm.ir.tir import te

from ._kernel import OpPattern, attr, call_te, known_tensor, op_name, shape_of
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
            given = [
                None if entry is None else layout_perm(name, entry[0], attr(call, *entry), entry[1])
                for entry in spec.operands
            ]
            out_layout = layout_perm(
                name, spec.out_attr, attr(call, spec.out_attr, data_layout), first[1]
            )
            if out_layout is None and all(layout is None for layout in given):
                return canonical(bb, call)
            args = list(call.args)
            for index, layout in enumerate(given):
                if layout is not None:
                    args[index] = bb.emit(_to_canonical(bb, call, args[index], layout))
            names = {e[0] for e in spec.operands if e is not None} | {spec.out_attr}
            attrs = {k: v for k, v in (call.attrs or {}).items() if k not in names}
            inner = bb.normalize(Call(Op.get(name), args, attrs))
            assert isinstance(inner, Call)
            result = bb.emit(canonical(bb, inner))
            if out_layout is None:
                return result
            return _from_canonical(bb, call, result, out_layout)

        legalize.__name__ = canonical.__name__
        legalize.__doc__ = canonical.__doc__
        return legalize

    return wrap


def _permute(bb: BlockBuilder, expr: RelaxExpr, axes: list[int]) -> RelaxExpr:
    call = bb.normalize(permute_dims(expr, axes))
    assert isinstance(call, Call)
    return legalize_permute_dims(bb, call)


def _to_canonical(bb: BlockBuilder, call: Call, expr: RelaxExpr, layout: Layout) -> RelaxExpr:
    """``expr`` (an argument of ``call``, in ``layout``) in the canonical layout."""
    if not layout.is_packed:
        return _permute(bb, expr, list(layout.perm))
    shape = shape_of(known_tensor(call, expr.struct_info, f"the {layout.param} operand"))
    out_shape = layout.to_canonical(shape)

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            # Canonical index i of a packed axis with factor f is (i // f, ..., i % f).
            src: list[Any] = []
            for axis, factor in layout.axes:
                letter = axis.upper()
                i = idx[layout.canonical.index(letter)]
                split = layout.factor(letter)
                if factor:
                    src.append(sop.floormod(i, factor))
                else:
                    src.append(sop.floordiv(i, split) if split else i)
            return x[tuple(src)]

        return te.compute(out_shape, body, name="T_layout_unpack")

    return call_te(
        bb, kernel, expr, primfunc_name_hint="layout_unpack", op_pattern=OpPattern.INJECTIVE,
        op=op_name(call),
    )  # fmt: skip


def _divides(factor: int, extent: PrimExpr) -> bool:
    """Whether ``extent`` is provably a multiple of ``factor`` (``c * 16`` is of 16)."""
    if isinstance(extent, IntImm):
        return extent.value % factor == 0
    return Analyzer().can_prove_equal(sop.floormod(extent, factor), 0)


def _from_canonical(bb: BlockBuilder, call: Call, expr: RelaxExpr, layout: Layout) -> RelaxExpr:
    """Canonical ``expr`` (the result of ``call``'s canonical kernel) in ``layout``."""
    if not layout.is_packed:
        # Canonical axis k goes to position perm[k]: the transpose reads, for each output
        # position, the canonical axis placed there.
        axes = [0] * layout.ndim
        for axis, position in enumerate(layout.perm):
            axes[position] = axis
        return _permute(bb, expr, axes)
    shape = shape_of(known_tensor(call, expr.struct_info, "the canonical result"))
    out_shape = layout.from_canonical(shape)

    def kernel(x: te.Tensor) -> te.Tensor:
        def body(*idx: Any) -> PrimExpr:
            src: list[Any] = []
            inside: PrimExpr | None = None
            for k, letter in enumerate(layout.canonical):
                outer = idx[layout.position(letter)]
                factor = layout.factor(letter)
                if not factor:
                    src.append(outer)
                    continue
                i = sop.add(sop.mul(outer, factor), idx[layout.position(letter.lower())])
                extent = shape[k]
                if _divides(factor, extent):
                    src.append(i)
                    continue
                # The tail of the last block lies past the channels: zeros, read clamped.
                cond = sop.less(i, extent)
                inside = cond if inside is None else sop.logical_and(inside, cond)
                src.append(sop.min_expr(i, sop.sub(extent, 1)))
            value = x[tuple(src)]
            if inside is None:
                return value
            return select(inside, value, sop.cast(0, value.dtype))

        return te.compute(out_shape, body, name="T_layout_pack")

    return call_te(
        bb, kernel, expr, primfunc_name_hint="layout_pack", op_pattern=OpPattern.INJECTIVE,
        op=op_name(call),
    )  # fmt: skip
