"""Shape operators: reshape, transpose, expand_dims, squeeze, concatenate, stack, split,
strided_slice, take, flip, tile and repeat (TVM's ``topi`` names and signatures)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..errors import VMTypeError, VMValueError
from ..ir import IntImm, PrimExpr
from ..ir import op as sop
from ..ir.dtype import is_int_dtype
from ..ir.tir import intrin as T
from ..ir.tir import te
from ._util import as_index, normalize_axis, product, require_tensor, static_int

__all__ = [
    "concatenate",
    "expand_dims",
    "flip",
    "repeat",
    "reshape",
    "split",
    "squeeze",
    "stack",
    "strided_slice",
    "take",
    "tile",
    "transpose",
]


def _unravel(flat: PrimExpr, shape: Sequence[PrimExpr]) -> list[PrimExpr]:
    """The row-major index of flat position ``flat`` in ``shape``."""
    out: list[PrimExpr] = []
    for extent in reversed(shape):
        out.append(sop.floormod(flat, extent))
        flat = sop.floordiv(flat, extent)
    return out[::-1]


def _ravel(idx: Sequence[PrimExpr], shape: Sequence[PrimExpr]) -> PrimExpr:
    flat: PrimExpr = IntImm(shape[0].dtype if shape else "int64", 0)
    for i, extent in zip(idx, shape, strict=True):
        flat = sop.add(sop.mul(flat, extent), i)
    return flat


def reshape(a: te.Tensor, newshape: Sequence[Any]) -> te.Tensor:
    """``a`` with shape ``newshape`` (row-major order); one entry may be -1 (inferred).

    Raises
    ------
    VMValueError
        More than one -1, or constant sizes whose element counts differ.
    """
    require_tensor("topi.reshape", a, "a")
    dims = list(newshape)
    unknown = [p for p, d in enumerate(dims) if static_int(d) == -1]
    if len(unknown) > 1:
        raise VMValueError(f"topi.reshape: at most one -1 in newshape, got {dims}")
    total = product(a.shape)
    if unknown:
        known = product([as_index(d, "topi.reshape newshape") for d in dims if static_int(d) != -1])
        dims[unknown[0]] = sop.floordiv(total, known)
    extents = [as_index(d, "topi.reshape newshape") for d in dims]
    for d in extents:
        if static_int(d) is not None and static_int(d) < 0:  # type: ignore[operator]
            raise VMValueError(f"topi.reshape: negative extent {d} in newshape {list(newshape)}")
    want, have = static_int(product(extents)), static_int(total)
    if want is not None and have is not None and want != have:
        raise VMValueError(
            f"topi.reshape: cannot reshape {[str(s) for s in a.shape]} ({have} elements) "
            f"to {[str(s) for s in extents]} ({want} elements)"
        )
    return te.compute(
        extents,
        lambda *i: a[tuple(_unravel(_ravel(i, extents), a.shape))],
        name="T_reshape",
    )


def transpose(a: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """``a`` with its axes permuted (reversed when ``axes`` is None)."""
    require_tensor("topi.transpose", a, "a")
    order = list(range(a.ndim))[::-1] if axes is None else list(axes)
    perm = [normalize_axis("topi.transpose", x, a.ndim) for x in order]
    if sorted(perm) != list(range(a.ndim)):
        raise VMValueError(
            f"topi.transpose: axes {list(order)} is not a permutation of {a.ndim} axes"
        )
    shape = [a.shape[p] for p in perm]

    def body(*idx: PrimExpr) -> PrimExpr:
        src: list[PrimExpr] = [IntImm("int64", 0)] * a.ndim
        for out_axis, in_axis in enumerate(perm):
            src[in_axis] = idx[out_axis]
        return a[tuple(src)]

    return te.compute(shape, body, name="T_transpose")


def expand_dims(a: te.Tensor, axis: int, num_newaxis: int = 1) -> te.Tensor:
    """``a`` with ``num_newaxis`` axes of extent 1 inserted at ``axis``."""
    require_tensor("topi.expand_dims", a, "a")
    if num_newaxis < 0:
        raise VMValueError(f"topi.expand_dims: num_newaxis must be >= 0, got {num_newaxis}")
    pos = normalize_axis("topi.expand_dims", axis, a.ndim, extra=1)
    one = IntImm("int64", 1)
    shape = list(a.shape[:pos]) + [one] * num_newaxis + list(a.shape[pos:])

    def body(*idx: PrimExpr) -> PrimExpr:
        return a[tuple(list(idx[:pos]) + list(idx[pos + num_newaxis :]))]

    return te.compute(shape, body, name="T_expand_dims")


def squeeze(a: te.Tensor, axis: int | Sequence[int] | None = None) -> te.Tensor:
    """``a`` without the given axes of extent 1 (every constant-1 axis when None).

    Raises
    ------
    VMValueError
        A named axis whose (constant) extent is not 1.
    """
    require_tensor("topi.squeeze", a, "a")
    if axis is None:
        drop = [p for p, d in enumerate(a.shape) if static_int(d) == 1]
    else:
        items = [axis] if isinstance(axis, int) else list(axis)
        drop = sorted({normalize_axis("topi.squeeze", x, a.ndim) for x in items})
        for p in drop:
            extent = static_int(a.shape[p])
            if extent is not None and extent != 1:
                raise VMValueError(
                    f"topi.squeeze: axis {p} has extent {extent}, only extent-1 axes can be "
                    "squeezed"
                )
    keep = [p for p in range(a.ndim) if p not in drop]

    def body(*idx: PrimExpr) -> PrimExpr:
        src: list[PrimExpr] = [IntImm("int64", 0)] * a.ndim
        for out_axis, in_axis in enumerate(keep):
            src[in_axis] = idx[out_axis]
        return a[tuple(src)]

    return te.compute([a.shape[p] for p in keep], body, name="T_squeeze")


def _same_except(where: str, tensors: Sequence[te.Tensor], axis: int | None) -> None:
    first = tensors[0]
    for position, t in enumerate(tensors):
        require_tensor(where, t, f"tensor {position}")
        if t.dtype != first.dtype:
            raise VMTypeError(f"{where}: tensor {position} has dtype {t.dtype}, not {first.dtype}")
        if t.ndim != first.ndim:
            raise VMValueError(f"{where}: tensor {position} has rank {t.ndim}, not {first.ndim}")
        for d, (x, y) in enumerate(zip(t.shape, first.shape, strict=True)):
            if d == axis:
                continue
            sx, sy = static_int(x), static_int(y)
            # Symbolic extents cannot be compared before run time (as TVM): only constants.
            if sx is not None and sy is not None and sx != sy:
                raise VMValueError(
                    f"{where}: tensor {position} has shape {[str(s) for s in t.shape]}, which "
                    f"differs from {[str(s) for s in first.shape]} outside axis {axis}"
                )


def concatenate(a_tuple: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """The tensors joined along ``axis``; they must agree on every other extent and dtype."""
    tensors = list(a_tuple)
    if not tensors:
        raise VMValueError("topi.concatenate: needs at least one tensor")
    require_tensor("topi.concatenate", tensors[0], "tensor 0")
    ax = normalize_axis("topi.concatenate", axis, tensors[0].ndim)
    _same_except("topi.concatenate", tensors, ax)
    starts: list[PrimExpr] = []
    total: PrimExpr = IntImm("int64", 0)
    for t in tensors:
        starts.append(total)
        total = sop.add(total, t.shape[ax])
    shape = list(tensors[0].shape)
    shape[ax] = total

    def body(*idx: PrimExpr) -> PrimExpr:
        def read(k: int) -> PrimExpr:
            src = list(idx)
            src[ax] = sop.sub(idx[ax], starts[k])
            return tensors[k][tuple(src)]

        # Only the chosen branch is evaluated: no tensor is read outside its extent.
        value = read(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            value = T.if_then_else(sop.less(idx[ax], starts[k + 1]), read(k), value)
        return value

    return te.compute(shape, body, name="T_concat")


def stack(tensors: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """The tensors (of one shape) joined along a new axis ``axis``."""
    items = list(tensors)
    if not items:
        raise VMValueError("topi.stack: needs at least one tensor")
    require_tensor("topi.stack", items[0], "tensor 0")
    ax = normalize_axis("topi.stack", axis, items[0].ndim, extra=1)
    return concatenate([expand_dims(t, ax) for t in items], ax)


def split(
    ary: te.Tensor, indices_or_sections: int | Sequence[int], axis: int = 0
) -> list[te.Tensor]:
    """``ary`` cut along ``axis`` into equal sections (an int) or at the given indices.

    Raises
    ------
    VMValueError
        Sections that do not divide a constant extent, or indices that are not increasing.
    """
    require_tensor("topi.split", ary, "ary")
    ax = normalize_axis("topi.split", axis, ary.ndim)
    extent = ary.shape[ax]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise VMValueError(f"topi.split: sections must be positive, got {sections}")
        n = static_int(extent)
        if n is None:
            raise VMValueError(
                f"topi.split: equal sections need a constant extent on axis {ax}, got {extent}"
            )
        if n % sections:
            raise VMValueError(
                f"topi.split: {sections} sections do not divide extent {n} on axis {ax}"
            )
        cuts = [n // sections * k for k in range(1, sections)]
    else:
        cuts = [int(c) for c in indices_or_sections]
        if any(b < a for a, b in itertools.pairwise(cuts)) or any(c < 0 for c in cuts):
            raise VMValueError(f"topi.split: indices {cuts} must be non-negative and increasing")
    bounds: list[Any] = [0, *cuts, extent]
    return [
        strided_slice(ary, [bounds[k]], [bounds[k + 1]], axes=[ax]) for k in range(len(cuts) + 1)
    ]


def _clamp(value: PrimExpr, low: PrimExpr, high: PrimExpr) -> PrimExpr:
    return sop.min_expr(sop.max_expr(value, low), high)


def strided_slice(
    a: te.Tensor,
    begin: Sequence[Any],
    end: Sequence[Any],
    strides: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    slice_mode: str = "end",
) -> te.Tensor:
    """numpy's ``a[begin:end:strides]`` on ``axes`` (the leading axes when None).

    Bounds are clamped to the extent and negative bounds count from the end, as numpy; with
    ``slice_mode="size"`` ``end`` holds sizes (-1: to the end) and strides are 1, as TVM.

    Raises
    ------
    VMValueError
        A zero stride, mismatched lengths, or an unknown ``slice_mode``.
    """
    where = "topi.strided_slice"
    require_tensor(where, a, "a")
    if slice_mode not in ("end", "size"):
        raise VMValueError(f"{where}: slice_mode must be 'end' or 'size', got {slice_mode!r}")
    on = list(range(len(begin))) if axes is None else list(axes)
    steps = [1] * len(on) if strides is None else [int(s) for s in strides]
    if not len(begin) == len(end) == len(on) or len(steps) not in (len(on), 0):
        raise VMValueError(
            f"{where}: begin, end, strides and axes must have one entry per sliced axis, got "
            f"{len(begin)}, {len(end)}, {len(steps)} and {len(on)}"
        )
    shape = list(a.shape)
    starts: list[PrimExpr] = [IntImm(d.dtype, 0) for d in a.shape]
    step_of = [1] * a.ndim
    for b, e, s, x in zip(begin, end, steps, on, strict=True):
        ax = normalize_axis(where, x, a.ndim)
        n = a.shape[ax]
        if s == 0:
            raise VMValueError(f"{where}: stride on axis {ax} is 0")
        if slice_mode == "size":
            s = 1
            size = static_int(e)
            e = n if size == -1 else sop.add(as_index(b, where), as_index(e, where))
        lo = sop.cast(as_index(b, f"{where} begin"), n.dtype)
        hi = sop.cast(as_index(e, f"{where} end"), n.dtype)
        # numpy's PySlice_AdjustIndices: negative bounds count from the end, then clamp.
        lo = sop.select(sop.less(lo, 0), sop.add(lo, n), lo) if _maybe_negative(lo) else lo
        hi = sop.select(sop.less(hi, 0), sop.add(hi, n), hi) if _maybe_negative(hi) else hi
        if s > 0:
            lo, hi = _clamp(lo, IntImm(n.dtype, 0), n), _clamp(hi, IntImm(n.dtype, 0), n)
            count = sop.floordiv(sop.add(sop.sub(hi, lo), s - 1), s)
        else:
            lo = _clamp(lo, IntImm(n.dtype, -1), sop.sub(n, 1))
            hi = _clamp(hi, IntImm(n.dtype, -1), sop.sub(n, 1))
            count = sop.floordiv(sop.add(sop.sub(lo, hi), -s - 1), -s)
        shape[ax] = sop.max_expr(count, IntImm(n.dtype, 0))
        starts[ax], step_of[ax] = lo, s

    def body(*idx: PrimExpr) -> PrimExpr:
        return a[
            tuple(sop.add(st, sop.mul(i, k)) for st, i, k in zip(starts, idx, step_of, strict=True))
        ]

    return te.compute(shape, body, name="T_strided_slice")


def _maybe_negative(value: PrimExpr) -> bool:
    known = static_int(value)
    return known is None or known < 0


def take(
    a: te.Tensor,
    indices: te.Tensor | int | PrimExpr,
    axis: int | None = None,
    batch_dims: int = 0,
    mode: str = "clip",
) -> te.Tensor | PrimExpr:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` when None).

    No mode reads outside ``a``: ``"clip"`` (the default, as TVM) clamps an index into
    ``[0, extent)``; ``"wrap"`` takes it modulo the extent (Python's ``%``); ``"fast"`` and
    ``"raise"`` wrap negative indices like numpy and raise ``VMIndexError`` at run time for an
    index outside ``[-extent, extent)`` (TVM's ``"fast"`` does not check; relaxvm does).

    Raises
    ------
    VMValueError
        An unknown mode, ``batch_dims`` other than 0, or a bad axis.
    """
    where = "topi.take"
    require_tensor(where, a, "a")
    if mode not in ("clip", "wrap", "fast", "raise"):
        raise VMValueError(f"{where}: mode must be 'clip', 'wrap' or 'fast', got {mode!r}")
    if batch_dims != 0:
        raise VMValueError(f"{where}: batch_dims other than 0 is not supported, got {batch_dims}")
    if axis is None:
        source = reshape(a, [product(a.shape)])
        ax = 0
    else:
        ax = normalize_axis(where, axis, a.ndim)
        source = a
    n = source.shape[ax]

    def fix(index: PrimExpr) -> PrimExpr:
        if not is_int_dtype(index.dtype):
            raise VMTypeError(f"{where}: indices must be integers, got {index.dtype}")
        i = sop.cast(index, n.dtype)
        if mode == "clip":
            return _clamp(i, IntImm(n.dtype, 0), sop.sub(n, 1))
        if mode == "wrap":
            return sop.floormod(i, n)
        return sop.cast(T.check_index(i, n, -1 if axis is None else ax, "take"), n.dtype)

    if not isinstance(indices, te.Tensor):
        picked = fix(as_index(indices, f"{where} indices"))
        shape = list(source.shape[:ax]) + list(source.shape[ax + 1 :])
        return te.compute(
            shape,
            lambda *i: source[tuple([*i[:ax], picked, *i[ax:]])],
            name="T_take",
        )
    k = indices.ndim
    shape = list(source.shape[:ax]) + list(indices.shape) + list(source.shape[ax + 1 :])

    def body(*idx: PrimExpr) -> PrimExpr:
        picked = fix(indices[tuple(idx[ax : ax + k])])
        return source[tuple([*idx[:ax], picked, *idx[ax + k :]])]

    return te.compute(shape, body, name="T_take")


def flip(a: te.Tensor, axis: int = 0) -> te.Tensor:
    """``a`` reversed along ``axis`` (TVM's ``topi.flip``, numpy's ``flip``)."""
    require_tensor("topi.flip", a, "a")
    ax = normalize_axis("topi.flip", axis, a.ndim)

    def body(*idx: PrimExpr) -> PrimExpr:
        src = list(idx)
        src[ax] = sop.sub(sop.sub(a.shape[ax], 1), idx[ax])
        return a[tuple(src)]

    return te.compute(a.shape, body, name="T_reverse_sequence")


def tile(a: te.Tensor, reps: Sequence[int]) -> te.Tensor:
    """``a`` repeated ``reps[d]`` times along each axis (numpy's ``tile``)."""
    require_tensor("topi.tile", a, "a")
    counts = [int(r) for r in reps]
    if any(r < 0 for r in counts):
        raise VMValueError(f"topi.tile: reps must be non-negative, got {counts}")
    ndim = max(a.ndim, len(counts))
    counts = [1] * (ndim - len(counts)) + counts
    dims = [IntImm("int64", 1)] * (ndim - a.ndim) + list(a.shape)
    shape = [sop.mul(d, r) for d, r in zip(dims, counts, strict=True)]
    lead = ndim - a.ndim

    def body(*idx: PrimExpr) -> PrimExpr:
        return a[tuple(sop.floormod(idx[lead + d], a.shape[d]) for d in range(a.ndim))]

    return te.compute(shape, body, name="T_tile")


def repeat(a: te.Tensor, repeats: int, axis: int) -> te.Tensor:
    """Each element of ``a`` repeated ``repeats`` times along ``axis`` (numpy's ``repeat``)."""
    require_tensor("topi.repeat", a, "a")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise VMValueError(f"topi.repeat: repeats must be an int >= 1, got {repeats!r}")
    ax = normalize_axis("topi.repeat", axis, a.ndim)
    shape = list(a.shape)
    shape[ax] = sop.mul(shape[ax], repeats)

    def body(*idx: PrimExpr) -> PrimExpr:
        src = list(idx)
        src[ax] = sop.floordiv(idx[ax], repeats)
        return a[tuple(src)]

    return te.compute(shape, body, name="T_repeat")
