"""The runtime functions behind the ops legalized to packed calls: ``relax.print``,
``relax.assert_op``, and the data-dependent ``relax.unique`` and ``relax.nonzero``.

The legalizations (:mod:`relaxvm_ops.structural`) produce ``R.call_packed("relax.run.print", format, *values)`` and
``R.call_packed("relax.run.assert_op", condition, format, *args)`` (impure calls, so no pass
may drop or reorder them). These functions are registered through the plugin's
``relaxvm_register_builtins`` hook; this module does not import the IR, so the VM stays light.

``unique`` and ``nonzero`` (:mod:`relaxvm_ops.datadep`) become
``R.call_pure_packed("relax.run.unique", x, sorted, return_index, return_inverse,
return_counts[, axis])`` and ``R.call_pure_packed("relax.run.nonzero", x)``: their result
extents are known only once the data is, so these functions compute with numpy and return
new tensors on the input's device (a tuple of them when unique returns several outputs).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.errors import RelaxVMError
from relaxvm.runtime import Tensor
from relaxvm.runtime import tensor as _new_tensor

from .runtime_slice import run_dynamic_strided_slice

__all__ = [
    "PRIM_ARITH",
    "RUNTIME_FUNCTIONS",
    "RelaxAssertionError",
    "run_assert_op",
    "run_nonzero",
    "run_prim_arith",
    "run_print",
    "run_unique",
]


class RelaxAssertionError(RelaxVMError, AssertionError):
    """``R.assert_op`` failed at run time (an ``AssertionError``, as in TVM)."""


def _render(value: Any) -> str:
    if isinstance(value, Tensor):
        return str(value.numpy())
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        # Tuples (and shapes) print as (a, b), with their fields rendered the same way.
        return "(" + ", ".join(_render(v) for v in value) + ")"
    return str(value)


def _format(fmt: str, values: tuple[Any, ...], sep: str) -> str:
    rendered = [_render(v) for v in values]
    if not fmt:
        return sep.join(rendered)
    try:
        return fmt.format(*rendered)
    except (IndexError, KeyError, ValueError) as err:
        raise RelaxVMError(
            f"relax.run.print/assert_op: cannot format {fmt!r} with {len(values)} value(s): {err}"
        ) from None


def run_print(fmt: str, *values: Any) -> None:
    """Print ``values`` with ``fmt`` (``str.format`` placeholders); space-separated if empty."""
    builtins.print(_format(str(fmt), values, " "))


def _truth(cond: Any) -> bool:
    if isinstance(cond, Tensor):
        cond = cond.numpy()
    array = np.asarray(cond)
    if array.shape != () or array.dtype.kind not in "biu":
        raise RelaxAssertionError(
            f"relax.run.assert_op: the condition must be a bool scalar, got {_render(cond)} "
            f"({array.dtype}, shape {list(array.shape)})"
        )
    return bool(array)


def run_assert_op(cond: Any, fmt: str, *args: Any) -> None:
    """Raise :class:`RelaxAssertionError` unless ``cond`` holds.

    The message is ``fmt.format(*args)``, or the comma-separated args, or
    ``"Assertion Failed"`` when there are none.
    """
    if _truth(cond):
        return
    message = _format(str(fmt), args, ", ") if (fmt or args) else ""
    raise RelaxAssertionError(message or "Assertion Failed")


def _array(name: str, x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.numpy()
    raise RelaxVMError(f"{name}: x must be a tensor, got {type(x).__name__}")


def _flag(value: Any) -> bool:
    return bool(value.numpy()) if isinstance(value, Tensor) else bool(value)


def run_unique(
    x: Any,
    sorted: Any = True,
    return_index: Any = False,
    return_inverse: Any = False,
    return_counts: Any = False,
    axis: Any = None,
) -> Tensor | tuple[Tensor, ...]:
    """``np.unique`` of ``x``; unsorted means in order of first occurrence.

    Returns the unique values, or a tuple of them and the requested int64 index, inverse and
    count tensors (in that order), each a new tensor on ``x``'s device.
    """
    array = _array("relax.run.unique", x)
    if axis is not None:
        axis = int(axis)
        if not -array.ndim <= axis < max(array.ndim, 1):
            raise RelaxVMError(
                f"relax.run.unique: axis {axis} is out of range for a tensor of rank {array.ndim}"
            )
    values, index, inverse, counts = np.unique(
        array, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    inverse = inverse.reshape(-1)
    if not _flag(sorted):
        # Reorder by first occurrence: position k of the result is the value that occurs
        # k-th; ``rank`` maps a sorted position to its new one, for the inverse.
        order = np.argsort(index, kind="stable")
        values = np.take(values, order, axis=0 if axis is None else axis)
        index, counts = index[order], counts[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        inverse = rank[inverse]
    extras = [
        a.astype(np.int64)
        for a, want in ((index, return_index), (inverse, return_inverse), (counts, return_counts))
        if _flag(want)
    ]
    if not extras:
        return _new_tensor(values, _device_of(x))
    return tuple(_new_tensor(a, _device_of(x)) for a in (values, *extras))


def run_nonzero(x: Any) -> Tensor:
    """``np.nonzero`` of ``x`` stacked: an int64 CPU tensor of shape ``(ndim, count)``.

    A 0-d ``x`` counts as 1-d (numpy refuses 0-d input).
    """
    array = np.atleast_1d(_array("relax.run.nonzero", x))
    return _new_tensor(np.stack(np.nonzero(array)).astype(np.int64), _device_of(x))


def _device_of(x: Any) -> Any:
    """Where results go: the input's device (the VM's, a GPU's included), else the CPU."""
    return x.device if isinstance(x, Tensor) else None


#: ``R.Prim`` scalar arithmetic the VM's int64 shape heap cannot hold (a run-time float or bool
#: operand, such as the result of a float comparison),
#: by op name; numpy's semantics, as the ops' tensor kernels follow.
PRIM_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.true_divide,
    "floor_divide": np.floor_divide,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "mod": np.fmod,
    "floor_mod": np.mod,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}


def run_prim_arith(op: str, dtype: str, out_dtype: str, a: Any, b: Any) -> Any:
    """``a <op> b`` for ``R.Prim`` scalars known only at run time, computed in ``dtype`` (both
    operands are converted to it first, as TIR promotes them) and returned as a Python value
    of ``out_dtype`` (a float rounded to it, or a bool for a comparison).

    Raises
    ------
    RelaxVMError
        An unknown op, or an operand that is not a number (naming the op).
    """
    fn = PRIM_ARITH.get(op)
    if fn is None:
        raise RelaxVMError(f"relax.run.prim_arith: no scalar op {op!r}")
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, (int, float, np.number, np.bool_)):
            raise RelaxVMError(
                f"relax.run.prim_arith ({op}): operand {name} is a {type(value).__name__}, "
                "not a number"
            )
    kind = np.dtype(dtype).type
    with np.errstate(all="ignore"):  # inf, nan and division by zero follow IEEE, as numpy's
        result = fn(kind(a), kind(b))
    if out_dtype == "bool":
        return builtins.bool(result)
    out = np.dtype(out_dtype).type(result)
    return float(out) if np.issubdtype(out.dtype, np.floating) else int(out)


RUNTIME_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "relax.run.prim_arith": run_prim_arith,
    "relax.run.print": run_print,
    "relax.run.assert_op": run_assert_op,
    "relax.run.unique": run_unique,
    "relax.run.nonzero": run_nonzero,
    "relax.run.dynamic_strided_slice": run_dynamic_strided_slice,
}
