"""Helpers shared by the lowering passes (ToNonDataflow ... AttachGlobalSymbol)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CompileError
from ..ir.arith import Analyzer
from ..ir.expr import IntImm, PrimExpr
from ..ir.op import mul
from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Function, VarBinding
from ..ir.relax.expr import Call, GlobalVar, Op, Var
from ..ir.relax.expr_functor import ExprMutator, ExprVisitor
from ..ir.relax.module import IRModule
from ..ir.relax.struct_info import StructInfo, TupleStructInfo
from ..runtime.dtype import DataType

__all__ = [
    "VOID",
    "compile_error",
    "func_name",
    "gvar_name_of",
    "is_op",
    "is_void",
    "map_relax_functions",
    "module_member",
    "tensor_nbytes",
    "vars_in",
]

#: The struct info of a call that returns nothing (``R.Tuple()``).
VOID = TupleStructInfo([])


def is_op(expr: RelaxExpr, name: str) -> bool:
    """Whether ``expr`` is a call of the op called ``name``."""
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


def is_void(sinfo: StructInfo | None) -> bool:
    """Whether ``sinfo`` is the empty tuple (a call that returns nothing)."""
    return isinstance(sinfo, TupleStructInfo) and not sinfo.fields


def func_name(gvar_name: str, func: Function) -> str:
    """The name to report for a function: its global symbol, else its GlobalVar name."""
    symbol = func.attrs.get("global_symbol")
    return str(symbol) if symbol else gvar_name


def compile_error(pass_name: str, function: str, binding: str | None, reason: str) -> CompileError:
    """A :class:`CompileError` naming the pass, the function and the binding."""
    where = f"function '{function}'"
    if binding:
        where += f", binding '{binding}'"
    return CompileError(f"{pass_name}: {where}: {reason}")


class BindingContextMutator(ExprMutator):
    """An :class:`ExprMutator` that knows which function and binding it is in, so that its
    errors name both (``self.error(reason)``); set :attr:`pass_name` in subclasses."""

    pass_name = "?"

    def __init__(self, mod: IRModule, function: str) -> None:
        super().__init__(mod)
        self.function = function
        self.binding: str | None = None

    def visit_var_binding(self, binding: VarBinding) -> None:
        saved = self.binding
        self.binding = binding.var.name_hint
        try:
            super().visit_var_binding(binding)
        finally:
            self.binding = saved

    def error(self, reason: str) -> CompileError:
        """A :class:`CompileError` naming this pass, function and binding."""
        return compile_error(self.pass_name, self.function, self.binding, reason)


def map_relax_functions(
    mod: IRModule, rewrite: Callable[[str, Function, IRModule], Function]
) -> IRModule:
    """A copy of ``mod`` where each Relax function is replaced by ``rewrite(name, func, mod)``
    (functions that come back unchanged stay the same object)."""
    result = mod.copy()
    for gvar, func in mod.items():
        if isinstance(func, Function):
            new = rewrite(gvar.name_hint, func, result)
            if new is not func:
                result.update_func(gvar, new)
    return result


def module_member(mod: IRModule, gvar: GlobalVar) -> Any:
    """The function ``gvar`` names in ``mod``, or None when the module has no such name."""
    if gvar not in mod:
        return None
    return mod[gvar]


def gvar_name_of(mod: IRModule, func: Function) -> str:
    """The GlobalVar name under which ``func`` (the same object) is in ``mod``."""
    return next((gvar.name_hint for gvar, member in mod.items() if member is func), "?")


def tensor_nbytes(shape: tuple[PrimExpr, ...], dtype: DataType) -> PrimExpr:
    """The byte size of a dense tensor, ``prod(shape) * bytes(dtype)``, as an int64 PrimExpr.

    Sub-byte and vector types round up per element, as the runtime's ``alloc_tensor`` does.
    """
    elem = (dtype.bits * dtype.lanes + 7) // 8
    size: PrimExpr = IntImm(elem)
    for extent in shape:
        size = mul(size, extent)
    if isinstance(size, IntImm):
        return size
    # Simplified so that equal sizes print (and are shape-computed) alike: ``n * 8``.
    return Analyzer().simplify(size)


class _VarCollector(ExprVisitor):
    """Every variable used inside an expression (nested blocks and functions included)."""

    def __init__(self) -> None:
        self.found: list[Var] = []

    def visit_var_(self, var: Var) -> None:
        self.found.append(var)


def vars_in(expr: RelaxExpr) -> list[Var]:
    """The variables ``expr`` uses, in visiting order (with repeats)."""
    collector = _VarCollector()
    collector.visit_expr(expr)
    return collector.found
