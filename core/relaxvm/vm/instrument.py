"""The instrumented call: what a ``Call`` instruction runs while ``vm.set_instrument`` is set.

Both exec modes use the one wrapper below: the dispatch loop binds it to the instruction's
slots (:mod:`relaxvm.vm.frames`), compiled mode calls it from the generated source
(:mod:`relaxvm.vm.compiled`). Only a VM with an instrument pays for it: without one, no
call goes through here.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from typing import Any

from ..runtime import DataType

__all__ = ["VMInstrumentReturnKind", "instrumented"]


class VMInstrumentReturnKind(IntEnum):
    """What an instrument callback asks for before a call."""

    NO_OP = 0
    SKIP_RUN = 1


def instrumented(
    f: Callable[..., Any], func_value: Any, symbol: str, instrument: Callable[..., Any]
) -> Callable[..., Any]:
    """``f`` wrapped so that ``instrument`` sees the call before and after it runs.

    Parameters
    ----------
    f : callable
        What the call site invokes (the resolved callee).
    func_value : Any
        The callee as the instrument sees it (``func``: the PackedFunc or the VMClosure).
    symbol : str
        The callee's name (``func_symbol``).
    instrument : callable
        ``instrument(func, func_symbol, before_run, ret_value, *args)``; returning
        :attr:`VMInstrumentReturnKind.SKIP_RUN` before the call skips it (the destination
        receives ``None`` and the after-call callback does not run).

    Returns
    -------
    callable
        Takes the call's arguments; ``DataType`` arguments reach the instrument as strings,
        as in TVM.
    """
    skip = int(VMInstrumentReturnKind.SKIP_RUN)

    def call(*args: Any) -> Any:
        shown = [str(a) if isinstance(a, DataType) else a for a in args]
        decision = instrument(func_value, symbol, True, None, *shown)
        if decision is not None and decision == skip:
            return None
        result = f(*args)
        instrument(func_value, symbol, False, result, *shown)
        return result

    return call
