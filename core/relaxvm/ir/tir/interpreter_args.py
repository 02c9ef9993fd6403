"""Argument binding for the TIR reference interpreter (:mod:`.interpreter`): the arrays and
ints of a :func:`~.interpreter.run_prim_func` call checked against the function's buffers
and bound, with the symbolic extents they fix, into the environment the kernel runs in."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import VMTypeError, VMValueError
from ...runtime.dtype import DataType
from ..expr import PrimExpr, Var
from ..expr_functor import evaluate
from .buffer import Buffer
from .function import PrimFunc

__all__ = ["bind_arguments"]

Env = dict[Any, Any]


def bind_arguments(func: PrimFunc, args: tuple[Any, ...]) -> Env:
    """The environment ``func`` starts with: each scalar parameter's value, each symbolic
    extent's value (from the first array that fixes it) and each buffer's array, after
    checking every array's kind, dtype, shape, offset and strides against its buffer.

    Raises
    ------
    VMTypeError
        A scalar that is not an int, or an array of the wrong kind or dtype.
    VMValueError
        A shape, offset or stride mismatch (naming the buffer and dimension).
    """
    name = func.name
    env: Env = {}
    # Which argument first fixed each symbolic variable, for the mismatch message.
    origin: dict[Var, str] = {}
    for param, arg in zip(func.params, args, strict=True):
        if param in func.buffer_map:
            continue
        if isinstance(arg, bool) or not isinstance(arg, (int, np.integer)):
            raise VMTypeError(
                f"run_prim_func({name}): scalar parameter {param.name!r} needs an int, "
                f"got {type(arg).__name__}"
            )
        env[param] = int(arg)
        origin[param] = f"scalar parameter {param.name!r}"
    buffers = [
        (func.buffer_map[p], a)
        for p, a in zip(func.params, args, strict=True)
        if p in func.buffer_map
    ]
    for buffer, arg in buffers:
        _check_array(name, buffer, arg)
        for dim, (extent, actual) in enumerate(zip(buffer.shape, arg.shape, strict=True)):
            if isinstance(extent, Var):
                where = f"buffer {buffer.name!r} dim {dim}"
                if extent not in env:
                    env[extent], origin[extent] = int(actual), where
                elif env[extent] != actual:
                    raise VMValueError(
                        f"run_prim_func({name}): buffer {buffer.name!r} dim {dim}: shape "
                        f"variable {extent.name!r} is {env[extent]} (from {origin[extent]}) but "
                        f"the array has {actual} (array shape {arg.shape})"
                    )
    # Now every plain variable is known: check the compound extents, strides and offsets.
    for buffer, arg in buffers:
        for dim, (extent, actual) in enumerate(zip(buffer.shape, arg.shape, strict=True)):
            expected = _shape_value(name, buffer, extent, env, f"dim {dim}")
            if expected != actual:
                raise VMValueError(
                    f"run_prim_func({name}): buffer {buffer.name!r} dim {dim} must be "
                    f"`{extent}` = {expected}, but the array has {actual} "
                    f"(array shape {arg.shape})"
                )
        _check_layout(name, buffer, arg, env)
        # An ml_dtypes float8 array runs on its codes (a view: stores still reach it).
        env[buffer.data] = arg.view(np.uint8) if buffer.dtype.is_float8 else arg
    return env


def _shape_value(name: str, buffer: Buffer, expr: PrimExpr, env: Env, what: str) -> int:
    try:
        return int(
            evaluate(
                expr, {k: v for k, v in env.items() if isinstance(k, Var) and isinstance(v, int)}
            )
        )
    except VMValueError as err:
        raise VMValueError(
            f"run_prim_func({name}): cannot compute {what} of buffer {buffer.name!r} "
            f"(`{expr}`): {err}"
        ) from None


def _check_array(name: str, buffer: Buffer, arg: Any) -> None:
    if not isinstance(arg, np.ndarray):
        raise VMTypeError(
            f"run_prim_func({name}): buffer {buffer.name!r} needs a numpy array, "
            f"got {type(arg).__name__}"
        )
    if arg.ndim != buffer.ndim:
        raise VMValueError(
            f"run_prim_func({name}): buffer {buffer.name!r} is {buffer.ndim}-d but the array "
            f"has shape {arg.shape} ({arg.ndim}-d)"
        )
    if buffer.dtype.is_float8 and arg.dtype == np.uint8:
        return  # float8 buffers hold codes (numpy has no float8; see runtime.float8)
    if DataType(arg.dtype) != buffer.dtype:
        raise VMTypeError(
            f"run_prim_func({name}): buffer {buffer.name!r} holds {buffer.dtype} but the array "
            f"is {arg.dtype}"
        )


def _check_layout(name: str, buffer: Buffer, arg: np.ndarray, env: Env) -> None:
    offset = _shape_value(name, buffer, buffer.elem_offset, env, "elem_offset")
    if offset != 0:
        raise VMValueError(
            f"run_prim_func({name}): buffer {buffer.name!r} has elem_offset {offset}; a numpy "
            "array argument always starts at offset 0"
        )
    if not buffer.strides:
        if not arg.flags.c_contiguous and arg.size > 1:
            raise VMValueError(
                f"run_prim_func({name}): buffer {buffer.name!r} is compact (no strides "
                f"declared) but the array is not C-contiguous (strides {arg.strides} bytes)"
            )
        return
    for dim, stride in enumerate(buffer.strides):
        expected = _shape_value(name, buffer, stride, env, f"stride {dim}")
        actual, rest = divmod(arg.strides[dim], arg.itemsize)
        if rest or (actual != expected and arg.shape[dim] > 1):
            raise VMValueError(
                f"run_prim_func({name}): buffer {buffer.name!r} stride {dim} must be "
                f"{expected} elements, but the array's is {arg.strides[dim] / arg.itemsize}"
            )
