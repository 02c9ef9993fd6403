"""Layer normalization (TVM's ``topi.nn.layer_norm``)."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import VMTypeError, VMValueError
from ...ir import IntImm, PrimExpr, structural_equal
from ...ir import op as sop
from ...ir.dtype import is_float_dtype
from ...ir.tir import intrin as T
from ...ir.tir import te
from .._util import normalize_axes, product, require_tensor, static_int

__all__ = ["layer_norm"]


def layer_norm(
    data: te.Tensor,
    gamma: te.Tensor,
    beta: te.Tensor | None,
    axis: int | Sequence[int],
    epsilon: float = 1e-5,
) -> te.Tensor:
    """``(data - mean) / sqrt(var + epsilon) * gamma + beta`` over ``axis``.

    ``gamma`` and ``beta`` (optional) have the extents of the normalized axes. The variance
    is the biased one (divided by the count), as numpy's ``var``.

    Raises
    ------
    VMValueError
        A bad axis, or ``gamma``/``beta`` whose shape is not the normalized axes' extents.
    """
    where = "topi.nn.layer_norm"
    require_tensor(where, data)
    if not is_float_dtype(data.dtype):
        raise VMTypeError(f"{where}: expects a float tensor, got {data.dtype}")
    axes = normalize_axes(where, axis, data.ndim)
    norm_shape = [data.shape[a] for a in axes]
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t is None:
            continue
        require_tensor(where, t, name)
        same = t.ndim == len(norm_shape) and all(
            structural_equal(x, y) or static_int(x) is None or static_int(y) is None
            for x, y in zip(t.shape, norm_shape, strict=True)
        )
        if not same:
            raise VMValueError(
                f"{where}: {name} has shape {[str(s) for s in t.shape]}, expected the normalized "
                f"axes' extents {[str(s) for s in norm_shape]}"
            )
    kept = [IntImm(d.dtype, 1) if p in axes else d for p, d in enumerate(data.shape)]
    count = sop.cast(product(norm_shape), data.dtype)

    def reducing(idx: Sequence[PrimExpr], ks: Sequence[te.IterVar]) -> tuple[PrimExpr, ...]:
        it = iter(ks)
        return tuple(next(it).var if p in axes else i for p, i in enumerate(idx))

    def at_kept(idx: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        return tuple(IntImm(i.dtype, 0) if p in axes else i for p, i in enumerate(idx))

    k1 = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]
    total = te.compute(kept, lambda *i: te.sum(data[reducing(i, k1)], axis=k1), name="T_ln_sum")
    mean = te.compute(kept, lambda *i: sop.true_div(total[i], count), name="T_ln_mean")
    k2 = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]

    def squared(*i: PrimExpr) -> te.Reduce:
        diff = sop.sub(data[reducing(i, k2)], mean[i])
        return te.sum(sop.mul(diff, diff), axis=k2)

    sq = te.compute(kept, squared, name="T_ln_sqsum")
    eps = sop.const(float(epsilon), data.dtype)

    def body(*i: PrimExpr) -> PrimExpr:
        at = at_kept(i)
        inv = T.rsqrt(sop.add(sop.true_div(sq[at], count), eps))
        norm_idx = tuple(i[a] for a in axes)
        value = sop.mul(sop.mul(sop.sub(data[i], mean[at]), inv), gamma[norm_idx])
        return value if beta is None else sop.add(value, beta[norm_idx])

    return te.compute(data.shape, body, name="T_layer_norm")
