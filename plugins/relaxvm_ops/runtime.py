"""The runtime functions behind the legalized ``relax.print`` and ``relax.assert_op``.

The legalizations (:mod:`relaxvm_ops.structural`) produce ``R.call_packed("relax.run.print", format, *values)`` and
``R.call_packed("relax.run.assert_op", condition, format, *args)`` (impure calls, so no pass
may drop or reorder them). These functions are registered through the plugin's
``relaxvm_register_builtins`` hook; this module does not import the IR, so the VM stays light.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from relaxvm.errors import RelaxVMError
from relaxvm.runtime import Tensor

__all__ = ["RUNTIME_FUNCTIONS", "RelaxAssertionError", "run_assert_op", "run_print"]


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


RUNTIME_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "relax.run.print": run_print,
    "relax.run.assert_op": run_assert_op,
}
