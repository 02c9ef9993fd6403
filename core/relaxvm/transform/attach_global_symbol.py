"""AttachGlobalSymbol: name every function after its GlobalVar.

Code generation finds functions by their ``global_symbol`` attribute, so every Relax function
and PrimFunc gets ``global_symbol = <GlobalVar name>`` -- private functions too (lifted
closures have none, and the VM still needs to call them), as TVM does. PrimFuncs get the
module's ``system_lib_prefix`` attribute, when set, in front of the name.
"""

from __future__ import annotations

from ..ir.relax.block import Function
from ..ir.relax.module import IRModule
from ..ir.tir.function import PrimFunc
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["AttachGlobalSymbol"]

_SYMBOL = "global_symbol"


def AttachGlobalSymbol() -> Pass:
    """Set ``global_symbol`` to the GlobalVar name on Relax functions and PrimFuncs
    (PrimFuncs prefixed with the module attribute ``system_lib_prefix``).

    Returns
    -------
    Pass
        A module pass; functions already carrying the right symbol are left as they are.
    """

    @module_pass(name="AttachGlobalSymbol")
    def transform(mod: IRModule, ctx: PassContext) -> IRModule:
        prefix = str(mod.get_attr("system_lib_prefix", "") or "")
        result = mod.copy()
        for gvar, func in mod.items():
            if isinstance(func, PrimFunc):
                symbol = prefix + gvar.name_hint
                if func.attrs.get(_SYMBOL) != symbol:
                    result.update_func(gvar, func.with_attr(_SYMBOL, symbol))
            elif isinstance(func, Function) and func.attrs.get(_SYMBOL) != gvar.name_hint:
                result.update_func(gvar, func.with_attr(_SYMBOL, gvar.name_hint))
        return result

    return transform  # type: ignore[no-any-return]
