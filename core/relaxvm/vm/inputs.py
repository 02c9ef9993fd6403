"""Input conversion and timing helpers of :class:`~relaxvm.VirtualMachine`.

``set_input`` and ``save_function`` convert their arguments as TVM's ``_convert`` does
(:func:`convert_inputs`); a call ``vm[name](*args)`` moves tensors that live on another device
than the VM's first one there, as TVM's VM does with its arguments (:func:`args_to_device`,
taken only when some argument needs it); ``time_evaluator`` returns :func:`make_evaluator`'s
function.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VMTypeError, VMValueError
from ..runtime import Allocator, DataType, Device, Shape, Tensor, tensor
from ..runtime.benchmark import BenchmarkResult
from .closure import VMClosure

if TYPE_CHECKING:
    from .frames import PreparedFunction

__all__ = ["arg_to_device", "args_to_device", "convert", "convert_inputs", "make_evaluator"]


def convert_inputs(
    fn: PreparedFunction, device: Device, args: Sequence[Any], kwargs: dict[str, Any]
) -> list[Any]:
    """``args`` and ``kwargs`` matched to ``fn``'s parameters and converted to ``device``.

    Raises
    ------
    VMValueError
        An unknown keyword, or the wrong number of arguments.
    VMTypeError
        An argument cannot be converted.
    """
    func_name = fn.name
    names = fn.param_names
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise VMValueError(
            f"{func_name} has no parameter named {', '.join(map(repr, unknown))}; its "
            f"parameters are ({', '.join(names)})"
        )
    if len(args) + len(kwargs) != fn.num_args:
        raise VMValueError(
            f"The number of provided parameters doesn't match the number of arguments for "
            f"{func_name}: it takes {fn.num_args} ({', '.join(names)}), "
            f"got {len(args) + len(kwargs)}"
        )
    positional = iter(args)
    values = []
    for name in names:
        if name in kwargs:
            values.append(kwargs[name])
        else:
            values.append(next(positional))
    return [
        convert(v, device, f"{func_name}({name})") for v, name in zip(values, names, strict=True)
    ]


def convert(value: Any, device: Device, where: str) -> Any:
    """TVM's input conversion for set_input / save_function."""
    if isinstance(value, Tensor):
        return value if value.device == device else tensor(value.numpy(), device)
    if isinstance(value, str | Shape | VMClosure | DataType):
        return value
    if isinstance(value, np.ndarray):
        return tensor(value, device)
    if isinstance(value, list | tuple):
        return tuple(convert(v, device, where) for v in value)
    if isinstance(value, bool | int):
        return tensor(np.array(value, dtype="int32"), device)
    if isinstance(value, np.float16):
        return tensor(np.array(value, dtype="float16"), device)
    if isinstance(value, float | np.floating | np.integer):
        return tensor(np.array(value, dtype="float32"), device)
    raise VMTypeError(f"{where}: cannot convert a {type(value).__name__} into a VM value")


def args_to_device(args: tuple[Any, ...], device: Device, allocator: Allocator) -> tuple[Any, ...]:
    """``args`` of a VM call with every tensor on ``device`` (:func:`arg_to_device`)."""
    return tuple(arg_to_device(value, device, allocator) for value in args)


def arg_to_device(value: Any, device: Device, allocator: Allocator) -> Any:
    """``value`` with its tensors on ``device``: a tensor on another device is copied into new
    memory from ``allocator`` (the VM's allocator of that device), a numpy array becomes a
    tensor there, tuples and lists are converted element-wise (a tuple results when an
    element changed); anything else, and a tensor already there, is returned as it is."""
    if isinstance(value, Tensor):
        if value.device == device:
            return value
        result = allocator.empty(value.shape, value.dtype)
        # Host memory is read in place; device memory is staged through one host array.
        source = value.host_array() if value.storage.api.host_accessible else value.numpy()
        result.storage.api.copy_from_host(result.storage.buffer, result.byte_offset, source)
        return result
    if type(value) is np.ndarray:
        return tensor(value, device)
    if isinstance(value, tuple | list):
        items = [arg_to_device(v, device, allocator) for v in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return tuple(items)
    return value


def make_evaluator(
    target: Callable[..., Any],
    dev: Device | None,
    number: int,
    repeat: int,
    min_repeat_ms: int,
    cooldown_interval_ms: int,
    repeats_to_cooldown: int,
) -> Callable[..., BenchmarkResult]:
    """The function ``vm.time_evaluator`` returns (see its docstring)."""
    sync = getattr(dev.api, "synchronize", None) if dev is not None else None

    def evaluator(*args: Any) -> BenchmarkResult:
        target(*args)
        results = []
        calls = number
        for index in range(repeat):
            if cooldown_interval_ms and index and index % repeats_to_cooldown == 0:
                time.sleep(cooldown_interval_ms / 1000)
            while True:
                start = time.perf_counter()
                for _ in range(calls):
                    target(*args)
                if sync is not None:
                    sync(dev.device_id)  # type: ignore[union-attr]
                elapsed = time.perf_counter() - start
                if elapsed * 1000 >= min_repeat_ms or calls >= 1 << 30:
                    break
                calls = max(calls * 2, int(calls * min_repeat_ms / max(elapsed * 1000, 1e-3)))
            results.append(elapsed / calls)
        return BenchmarkResult(results)

    return evaluator
