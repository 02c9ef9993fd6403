"""The plugin's two functions, written the way a relaxvm kernel should be.

Each checks every argument before touching memory and raises an exception from
:mod:`relaxvm.errors` whose message names the function, the parameter and, for shapes, the
dimension. The VM adds where in the program the call happened, so the user sees both.

Two calling styles are shown:

``example.scale(tensor, factor) -> Tensor``
    *Allocating*: returns a new tensor on the input's device.
``example.vector_add(a, b, out) -> None``
    *Destination-passing*, like a compiled kernel: the caller allocates ``out`` and the
    function writes into it (``out`` may alias ``a`` or ``b``).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

import relaxvm
from relaxvm.errors import VMTypeError, VMValueError

__all__ = ["scale", "vector_add"]


def _describe(value: Any) -> str:
    """How an error message names a value that is not what was expected."""
    if isinstance(value, relaxvm.Tensor):
        return f"a Tensor of shape {list(value.shape)} and dtype {value.dtype}"
    return f"a {type(value).__name__}"


def _require_tensor(function: str, parameter: str, value: Any) -> relaxvm.Tensor:
    if not isinstance(value, relaxvm.Tensor):
        raise VMTypeError(
            f"{function}: parameter {parameter!r} must be a Tensor, got {_describe(value)}"
        )
    return value


def scale(tensor: relaxvm.Tensor, factor: float) -> relaxvm.Tensor:
    """Return ``tensor * factor`` as a new tensor of the same dtype, on the same device.

    Parameters
    ----------
    tensor : relaxvm.Tensor
        Integer or floating-point elements.
    factor : int or float
        A real number; an integer tensor needs an integral factor (the result keeps the
        tensor's dtype, and silently truncating ``2.5`` would be a wrong answer).

    Raises
    ------
    VMTypeError
        ``tensor`` is not a Tensor, has a non-numeric dtype, or ``factor`` is not a real number.
    VMValueError
        A non-integral ``factor`` for an integer tensor.
    """
    _require_tensor("example.scale", "tensor", tensor)
    # bool is an int subclass in Python, but "scale by True" is almost surely a bug.
    if isinstance(factor, bool | np.bool_) or not isinstance(factor, numbers.Real):
        raise VMTypeError(
            f"example.scale: parameter 'factor' must be an int or float, got {_describe(factor)}"
        )
    kind = np.dtype(tensor.dtype.numpy_dtype()).kind
    if kind not in "iuf":
        raise VMTypeError(
            f"example.scale: parameter 'tensor' has dtype {tensor.dtype}; only integer and "
            "floating-point tensors can be scaled"
        )
    if kind in "iu" and not float(factor).is_integer():
        raise VMValueError(
            f"example.scale: factor {factor!r} is not integral but 'tensor' has integer dtype "
            f"{tensor.dtype}; the result keeps that dtype"
        )
    values = tensor.numpy()
    scaled = values * (int(factor) if kind in "iu" else factor)
    # Python scalars do not widen numpy arrays (NEP 50), but make the dtype explicit anyway.
    return relaxvm.tensor(scaled.astype(values.dtype, copy=False), tensor.device)


def vector_add(a: relaxvm.Tensor, b: relaxvm.Tensor, out: relaxvm.Tensor) -> None:
    """Write ``a + b`` into ``out`` (destination-passing style).

    Parameters
    ----------
    a, b : relaxvm.Tensor
        1-D tensors of the same length and dtype.
    out : relaxvm.Tensor
        A 1-D tensor of that length and dtype, on a host-accessible device; overwritten.

    Raises
    ------
    VMTypeError
        An argument is not a Tensor.
    VMValueError
        An argument is not 1-D, or a length or dtype differs from ``a``'s.
    DeviceError
        ``out`` lives in memory the host cannot write directly.
    """
    function = "example.vector_add"
    tensors = {
        name: _require_tensor(function, name, v) for name, v in (("a", a), ("b", b), ("out", out))
    }
    for name, value in tensors.items():
        if value.ndim != 1:
            raise VMValueError(
                f"{function}: parameter {name!r} must be 1-D, got shape {list(value.shape)}"
            )
    length, dtype = a.shape[0], a.dtype
    for name in ("b", "out"):
        value = tensors[name]
        if value.shape[0] != length:
            raise VMValueError(
                f"{function}: dimension 0 of parameter {name!r} is {value.shape[0]}, expected "
                f"{length} (the length of 'a')"
            )
        if value.dtype != dtype:
            raise VMValueError(
                f"{function}: parameter {name!r} has dtype {value.dtype}, expected {dtype} "
                "(the dtype of 'a')"
            )
    # host_array() is a zero-copy view, so np.add writes straight into out's storage. It
    # raises DeviceError for memory the host cannot address, which is the right message.
    np.add(a.host_array(), b.host_array(), out=out.host_array())
