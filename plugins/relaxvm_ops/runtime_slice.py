"""``relax.run.dynamic_strided_slice``: the runtime function behind ``relax.dynamic_strided_slice``.

Its result extents depend on the values of ``begin``, ``end`` and ``strides``, so the
legalization (:mod:`relaxvm_ops.tvm_extra_c`) calls this function, which slices with numpy
and returns a new tensor on the input's device. Like :mod:`.runtime`, it does not import the IR.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaxvm.errors import RelaxVMError
from relaxvm.runtime import Tensor
from relaxvm.runtime import tensor as _new_tensor

__all__ = ["run_dynamic_strided_slice"]

_NAME = "relax.run.dynamic_strided_slice"


def _values(what: str, value: Any, ndim: int) -> list[int]:
    if not isinstance(value, Tensor):
        raise RelaxVMError(f"{_NAME}: {what} must be a tensor, got {type(value).__name__}")
    array = value.numpy()
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise RelaxVMError(
            f"{_NAME}: {what} must be a 1-d integer tensor, got shape {array.shape} of "
            f"{array.dtype}"
        )
    if array.shape[0] != ndim:
        raise RelaxVMError(f"{_NAME}: {what} has {array.shape[0]} values, but x has rank {ndim}")
    return [int(v) for v in array]


def run_dynamic_strided_slice(x: Any, begin: Any, end: Any, strides: Any) -> Tensor:
    """``x[begin[0]:end[0]:strides[0], ...]`` with numpy's bounds rules, as a new tensor.

    Negative bounds count from the end of the axis and bounds out of range are clamped, which
    is what TVM's ``strided_slice`` does; a stride of 0 is an error.
    """
    if not isinstance(x, Tensor):
        raise RelaxVMError(f"{_NAME}: x must be a tensor, got {type(x).__name__}")
    array = x.numpy()
    starts = _values("begin", begin, array.ndim)
    stops = _values("end", end, array.ndim)
    steps = _values("strides", strides, array.ndim)
    for axis, step in enumerate(steps):
        if step == 0:
            raise RelaxVMError(f"{_NAME}: strides[{axis}] is 0; a slice step must not be 0")
    where = tuple(slice(b, e, s) for b, e, s in zip(starts, stops, steps, strict=True))
    return _new_tensor(np.ascontiguousarray(array[where]), x.device)
