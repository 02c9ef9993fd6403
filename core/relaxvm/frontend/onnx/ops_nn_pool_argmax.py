"""MaxPool's optional Indices output, composed of elementwise Relax ops.

For every kernel offset the window elements form one strided slice of the padded input; a
running ``(best, index)`` pair takes an element only when it is strictly greater, visiting
the offsets in row-major order, so the first maximum of a window wins (as in onnxruntime).
Padding holds the type's lowest value, which never wins. Indices address the flattened input
tensor: ``(n * C + c) * prod(spatial) + offset``, the spatial offset row-major
(``storage_order=0``) or column-major (``storage_order=1``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...ir.relax import op
from ._context import Context, Node


def _lowest(dtype: str) -> float | int:
    if dtype.startswith(("int", "uint")):
        return int(np.iinfo(dtype).min)
    return float(np.finfo(dtype).min)


def max_pool_with_indices(
    ctx: Context,
    node: Node,
    x: Any,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    out_sizes: Sequence[int],
) -> list[Any]:
    """``[values, indices]`` of a max pool with static shapes; ``out_sizes`` per spatial axis
    (ceil_mode already resolved)."""
    shape = ctx.static_shape(x)
    dtype = ctx.dtype(x)
    if shape is None or dtype is None:
        raise node.unsupported("the Indices output needs a static input shape")
    n = len(kernel)
    batch, channels, spatial = shape[0], shape[1], shape[2:]
    lowest = _lowest(dtype)
    # Pad so that every window (ceil_mode's last one included) lies inside the array.
    ends = []
    for a in range(n):
        reach = (out_sizes[a] - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1
        ends.append(max(pads[n + a], reach - spatial[a] - pads[a]))
    widths = [0, 0, 0, 0] + [w for a in range(n) for w in (pads[a], ends[a])]
    padded = ctx.emit(op.nn.pad(x, widths, pad_value=lowest)) if any(widths) else x
    column_major = int(node.attr("storage_order", 0)) == 1
    best: Any = ctx.const(np.full((1, 1, *out_sizes), lowest, dtype=dtype), dtype)
    index: Any = ctx.const(np.full((1, 1, *out_sizes), -1, dtype="int64"), "int64")
    grids = np.meshgrid(*[np.arange(o) for o in out_sizes], indexing="ij")
    for offset in itertools.product(*[range(k) for k in kernel]):
        starts = [offset[a] * dilations[a] for a in range(n)]
        stops = [starts[a] + (out_sizes[a] - 1) * strides[a] + 1 for a in range(n)]
        candidate = ctx.emit(
            op.strided_slice(padded, list(range(2, 2 + n)), starts, stops, list(strides))
        )
        # The input position of each window element; -1 where it is padding.
        positions = [grids[a] * strides[a] + starts[a] - pads[a] for a in range(n)]
        inside = np.logical_and.reduce(
            [(p >= 0) & (p < spatial[a]) for a, p in enumerate(positions)]
        )
        order = reversed(range(n)) if column_major else range(n)
        flat = np.zeros(out_sizes, dtype="int64")
        for a in order:
            flat = flat * spatial[a] + positions[a]
        where = np.where(inside, flat, -1).reshape(1, 1, *out_sizes).astype("int64")
        better = ctx.emit(op.greater(candidate, best))
        best = ctx.emit(op.where(better, candidate, best))
        index = ctx.emit(op.where(better, ctx.const(where, "int64"), index))
    plane = int(np.prod(spatial))
    base = (np.arange(batch * channels, dtype="int64") * plane).reshape(batch, channels, 1, 1)
    base = base.reshape(batch, channels, *([1] * n))
    return [best, op.add(index, ctx.const(base, "int64"))]
