"""TVM's ``tvm.nd`` spellings: ``relaxvm.nd.array(np_array)`` and friends.

TVM's runtime array was ``tvm.nd.NDArray``, created with ``tvm.nd.array`` and
``tvm.nd.empty``; newer TVM calls it ``runtime.Tensor`` (``tvm.runtime.tensor``), as relaxvm
does. This module keeps the older spellings working so that TVM code runs unchanged:
:data:`NDArray` *is* :class:`~relaxvm.runtime.Tensor`, and :func:`array` / :func:`empty` are
:func:`relaxvm.tensor` / :func:`relaxvm.empty` with TVM's parameter names, and
:func:`from_dlpack` is :func:`relaxvm.runtime.from_dlpack` (TVM's ``tvm.nd.from_dlpack``).

>>> import numpy as np
>>> import relaxvm
>>> x = relaxvm.nd.array(np.arange(6, dtype="float32").reshape(2, 3))
>>> isinstance(x, relaxvm.nd.NDArray), x.shape
(True, (2, 3))
"""

from __future__ import annotations

from typing import Any

from .errors import VMValueError
from .runtime.creation import empty as _empty
from .runtime.creation import from_dlpack
from .runtime.creation import tensor as _tensor
from .runtime.device import Device, cpu, cuda, device
from .runtime.dtype import DataType
from .runtime.shape import Shape
from .runtime.tensor import Tensor

__all__ = ["NDArray", "array", "cpu", "cuda", "device", "empty", "from_dlpack"]

#: TVM's ``tvm.nd.NDArray``: the same class as :class:`relaxvm.runtime.Tensor`, so
#: ``isinstance(x, relaxvm.nd.NDArray)`` holds for every tensor relaxvm makes.
NDArray = Tensor


def _check_mem_scope(mem_scope: str | None, where: str) -> None:
    # TVM's mem_scope selects texture or shared memory on some GPUs; relaxvm's allocators
    # hold global memory only, so say so rather than silently ignoring the request.
    if mem_scope not in (None, "global"):
        raise VMValueError(
            f"{where}: mem_scope {mem_scope!r} is not supported; relaxvm tensors live in "
            "'global' memory (pass mem_scope=None or 'global')"
        )


def array(arr: Any, device: Device | None = None, mem_scope: str | None = None) -> Tensor:
    """Copy ``arr`` into a new tensor (TVM's ``tvm.nd.array``).

    Parameters
    ----------
    arr : array-like or Tensor
        A numpy array, nested lists, a scalar, or a tensor (copied, also across devices).
        The element type is ``arr``'s own (``np.asarray(arr).dtype``).
    device : Device, optional
        Where the tensor lives; ``relaxvm.cpu(0)`` by default, as in TVM.
    mem_scope : str, optional
        ``None`` or ``"global"``: the only memory scope relaxvm allocates.

    Returns
    -------
    Tensor

    Raises
    ------
    VMValueError
        ``mem_scope`` names another scope.
    VMTypeError
        ``arr`` has an element type relaxvm cannot hold (objects, strings...).
    """
    _check_mem_scope(mem_scope, "nd.array")
    return _tensor(arr, device)


def empty(
    shape: Shape | tuple[int, ...] | list[int],
    dtype: DataType | str = "float32",
    device: Device | None = None,
    mem_scope: str | None = None,
) -> Tensor:
    """A new uninitialised tensor (TVM's ``tvm.nd.empty``).

    Parameters
    ----------
    shape : tuple of int or Shape
    dtype : str or DataType
        ``"float32"`` by default, as in TVM.
    device : Device, optional
        ``relaxvm.cpu(0)`` by default.
    mem_scope : str, optional
        ``None`` or ``"global"``.

    Returns
    -------
    Tensor

    Raises
    ------
    VMValueError
        ``mem_scope`` names another scope.
    """
    _check_mem_scope(mem_scope, "nd.empty")
    return _empty(tuple(shape), dtype, device)
