"""``layout_transform``: re-lay a tensor out through an index map (TVM v0.23's
``relax.op.layout_transform``).

``layout_transform(x, index_map=lambda i, j: (i // 4, j, i % 4))`` moves ``x[i, j]`` to
``out[i // 4, j, i % 4]``. The result's extents are the ranges of the map's final indices
(:meth:`~relaxvm.ir.tir.IndexMap.map_shape`); positions no source element reaches are padding,
filled with ``pad_value`` (zero when it is None: TVM leaves them unspecified, relaxvm makes
them deterministic). ``axis_separators`` (non-flat physical buffers) exist only on TVM's
devices with 2-d memory; relaxvm accepts them empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ....runtime.dtype import DataTypeCode
from ...tir.index_map import IndexMap
from .._base import RelaxExpr
from ..expr import Call
from ..struct_info import StructInfo
from ._common import make_call, tensor
from .registry import InferContext, OpError, register_op

__all__ = ["layout_transform"]

_NAME = "relax.layout_transform"
_INTEGER_CODES = (DataTypeCode.INT, DataTypeCode.UINT)


def _infer_layout_transform(call: Call, ctx: InferContext) -> StructInfo:
    info = ctx.tensor_arg(call, 0, "x")
    index_map = ctx.attr(call, "index_map")
    if not isinstance(index_map, IndexMap):
        raise ctx.error(f"index_map must be an IndexMap, got {type(index_map).__name__}")
    if info.ndim != -1 and info.ndim != index_map.ndim:
        raise ctx.error(f"the index map takes {index_map.ndim} indices but x has rank {info.ndim}")
    pad_value = ctx.attr(call, "pad_value")
    integer = info.dtype is not None and info.dtype.code in _INTEGER_CODES
    if integer and isinstance(pad_value, float) and not pad_value.is_integer():
        raise ctx.error(f"pad_value {pad_value} is not an integer, but x is {info.dtype}")
    out_ndim = len(index_map.final_indices)
    shape = info.shape.values if info.shape is not None and hasattr(info.shape, "values") else None
    if shape is None:
        return tensor(None, info.dtype, out_ndim, like=info)
    try:
        out_shape = index_map.map_shape(list(shape), ctx.analyzer)
    except ValueError as err:
        raise ctx.error(str(err)) from None
    positions, elements = _product(out_shape), _product(list(shape))
    if ctx.analyzer.can_prove(positions < elements):
        raise ctx.error(
            f"the index map is not one-to-one: it sends the {elements} elements of x to "
            f"{positions} positions"
        )
    return tensor(out_shape, info.dtype, like=info)


def _product(values: Sequence[Any]) -> Any:
    result: Any = 1
    for value in values:
        result = result * value
    return result


def _separators(value: Sequence[int] | None, what: str) -> list[int]:
    separators = [] if value is None else list(value)
    if separators:
        raise OpError(
            f"{_NAME}: {what} {separators} is not supported: relaxvm's buffers are flat "
            "(only TVM's devices with 2-d memory use axis separators)"
        )
    return separators


def layout_transform(
    x: RelaxExpr,
    index_map: Callable[..., Any] | IndexMap,
    pad_value: float | int | None = None,
    axis_separators: Sequence[int] | None = None,
    input_axis_separators: Sequence[int] | None = None,
) -> Call:
    """``x`` re-laid out: element ``x[idx]`` goes to ``out[index_map(idx)]``.

    Parameters
    ----------
    x : RelaxExpr
        The tensor.
    index_map : callable or IndexMap
        ``lambda i, j: (i // 4, j, i % 4)`` (one index per axis of ``x``; the result's rank
        is the number of expressions returned), or an :class:`~relaxvm.ir.tir.IndexMap`.
    pad_value : float or int, optional
        The value of result positions that no element of ``x`` maps to (zero when None).
    axis_separators, input_axis_separators : list of int, optional
        Must be empty (see the module docstring).
    """
    if not isinstance(index_map, IndexMap):
        index_map = IndexMap.from_func(index_map)
    if pad_value is not None and (
        isinstance(pad_value, bool) or not isinstance(pad_value, (int, float))
    ):
        raise OpError(f"{_NAME}: pad_value must be a number or None, got {pad_value!r}")
    attrs = {
        "index_map": index_map,
        "pad_value": pad_value,
        "axis_separators": _separators(axis_separators, "axis_separators"),
        "input_axis_separators": _separators(input_axis_separators, "input_axis_separators"),
    }
    return make_call(_NAME, [x], attrs)


register_op(
    _NAME,
    num_inputs=1,
    infer=_infer_layout_transform,
    attrs={
        "index_map": "the IndexMap from source to destination positions",
        "pad_value": "the value of positions no source element maps to (zero when None)",
        "axis_separators": "must be empty (flat buffers)",
        "input_axis_separators": "must be empty (flat buffers)",
    },
    doc="re-lay a tensor out through an index map, padding where the map leaves holes",
)
