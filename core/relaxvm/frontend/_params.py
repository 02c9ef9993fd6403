"""Parameters kept as function inputs by an importer, and how to take them out again."""

from __future__ import annotations

from typing import Any

from ..ir.relax import Function, IRModule

__all__ = ["detach_params"]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list[Any]]]:
    """Move the ``"params"`` attribute of each function out of the module (TVM's
    ``relax.frontend.detach_params``).

    An importer called with ``keep_params_in_input=True`` makes the weights trailing
    parameters of ``main`` and stores their values, in order, in the function's ``"params"``
    attribute. This returns the module without that attribute and ``{function name: [values]}``,
    the arguments to pass after the model's own inputs.

    Parameters
    ----------
    mod : IRModule
        The imported module.

    Returns
    -------
    tuple of (IRModule, dict)
        A new module, and the detached values by function name (functions without params are
        left out).
    """
    detached: dict[str, list[Any]] = {}
    out = mod.copy()
    for gvar, func in mod.functions.items():
        if not isinstance(func, Function) or "params" not in func.attrs:
            continue
        attrs = {k: v for k, v in func.attrs.items() if k != "params"}
        detached[gvar.name_hint] = list(func.attrs["params"])
        out.update_func(
            gvar, Function(func.params, func.body, func.ret_struct_info, func.is_pure, attrs)
        )
    return out, detached
