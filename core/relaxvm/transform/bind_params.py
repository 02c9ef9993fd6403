"""``BindParams``: replace parameters of a function by constant tensors.

TVM's ``relax.transform.BindParams(func_name, params)``. Each bound parameter is removed from
the function's signature and its uses read a :class:`~relaxvm.ir.relax.Constant`. Symbolic
dimensions of a bound parameter's annotation are fixed to the constant's extents throughout
the function (calls are re-inferred), so ``R.Tensor(("n", 4))`` bound to a ``(3, 4)`` array
makes ``n`` = 3 everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CompileError
from ..ir import IntImm, PrimExpr
from ..ir import Var as TirVar
from ..ir.expr_functor import substitute as prim_substitute
from ..ir.relax import (
    Call,
    Constant,
    Function,
    IRModule,
    PrimValue,
    ShapeExpr,
    TensorStructInfo,
    Var,
    const,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.struct_info import (
    FuncStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TupleStructInfo,
)
from ..runtime.tensor import Tensor
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["BindParams", "substitute_sinfo"]


def substitute_sinfo(sinfo: StructInfo | None, vmap: Mapping[TirVar, PrimExpr]) -> Any:
    """``sinfo`` with symbolic variables replaced by ``vmap``."""
    if sinfo is None or not vmap:
        return sinfo

    def sub(values: Any) -> list[PrimExpr]:
        return [prim_substitute(v, vmap) for v in values]

    if isinstance(sinfo, TensorStructInfo):
        if sinfo.shape_values is None:
            return sinfo
        return TensorStructInfo(sub(sinfo.shape_values), sinfo.dtype, vdevice=sinfo.vdevice)
    if isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        return ShapeStructInfo(sub(sinfo.values))
    if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        return PrimStructInfo(value=prim_substitute(sinfo.value, vmap))
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo([substitute_sinfo(f, vmap) for f in sinfo.fields])
    if isinstance(sinfo, FuncStructInfo) and sinfo.params is not None:
        return FuncStructInfo(
            [substitute_sinfo(p, vmap) for p in sinfo.params],
            substitute_sinfo(sinfo.ret, vmap),
            sinfo.purity,
        )
    return sinfo


class _Binder(ExprMutator):
    def __init__(self, consts: dict[Var, Constant], vmap: dict[TirVar, PrimExpr]) -> None:
        super().__init__()
        self.consts, self.vmap = consts, vmap

    def visit_var_(self, var: Var) -> RelaxExpr:
        return self.consts.get(var) or super().visit_var_(var)

    def visit_var_def(self, var: Var) -> Var:
        if var in self.var_remap:
            return self.var_remap[var]
        new_sinfo = substitute_sinfo(var.struct_info, self.vmap)
        if new_sinfo is var.struct_info:
            return var
        new = type(var)(var.name_hint, new_sinfo, var.span)
        self.var_remap[var] = new
        return new

    def visit_leaf_(self, expr: RelaxExpr) -> RelaxExpr:
        if self.vmap and isinstance(expr, ShapeExpr):
            return ShapeExpr([prim_substitute(v, self.vmap) for v in expr.values], expr.span)
        if self.vmap and isinstance(expr, PrimValue):
            return PrimValue(prim_substitute(expr.value, self.vmap), expr.span)
        return expr

    def visit_call_(self, expr: Call) -> RelaxExpr:
        new = super().visit_call_(expr)
        if not self.vmap or not isinstance(new, Call):
            return new
        sinfo_args = [substitute_sinfo(s, self.vmap) for s in new.sinfo_args]
        # Rebuilt without struct info, so the normalizer infers it with the fixed extents.
        return Call(new.op, new.args, new.attrs, sinfo_args, None, new.span)


def _as_constant(name: str, value: Any) -> Constant:
    if isinstance(value, Constant):
        return value
    if isinstance(value, (Tensor, np.ndarray)):
        return const(value)
    raise TypeError(
        f"BindParams: the value for parameter '{name}' must be a numpy array, a relaxvm "
        f"Tensor or a Constant, got {type(value).__name__}"
    )


def _bind_dims(
    func_name: str, param: Var, constant: Constant, vmap: dict[TirVar, PrimExpr]
) -> None:
    sinfo = param.struct_info
    data = constant.data
    if not isinstance(sinfo, TensorStructInfo):
        raise CompileError(
            f"BindParams('{func_name}'): parameter '{param.name_hint}' is {sinfo}, not a tensor"
        )
    if sinfo.dtype is not None and sinfo.dtype != data.dtype:
        raise CompileError(
            f"BindParams('{func_name}'): parameter '{param.name_hint}' has dtype {sinfo.dtype}, "
            f"the bound value {data.dtype}"
        )
    values = sinfo.shape_values
    if values is None:
        return
    if len(values) != len(data.shape):
        raise CompileError(
            f"BindParams('{func_name}'): parameter '{param.name_hint}' has {len(values)} "
            f"dimensions, the bound value has shape {tuple(data.shape)}"
        )
    for axis, (dim, actual) in enumerate(zip(values, data.shape, strict=True)):
        if isinstance(dim, TirVar):
            known = vmap.setdefault(dim, IntImm(dim.dtype, int(actual)))
            if int(known.value) != int(actual):  # type: ignore[attr-defined]
                raise CompileError(
                    f"BindParams('{func_name}'): '{dim.name}' is {known} from an earlier "
                    f"parameter but {actual} in '{param.name_hint}'"
                )
        elif isinstance(dim, IntImm) and int(dim.value) != int(actual):
            raise CompileError(
                f"BindParams('{func_name}'): parameter '{param.name_hint}' dimension {axis} is "
                f"{dim.value}, the bound value has {actual}"
            )


def BindParams(func_name: str, params: Mapping[str | Var, Any]) -> Pass:
    """Bind parameters of function ``func_name`` to constants.

    Parameters
    ----------
    func_name : str
        The Relax function.
    params : mapping of str or Var to array
        Parameter (by name or Var) -> numpy array / relaxvm Tensor / Constant.

    Returns
    -------
    Pass

    Raises
    ------
    ValueError
        ``func_name`` is missing or not a Relax function, a name matches no parameter (or
        several), or a value's dtype or shape contradicts the annotation.
    """
    if not isinstance(func_name, str):
        raise TypeError(f"BindParams: func_name must be a str, got {func_name!r}")
    if not isinstance(params, Mapping):
        raise TypeError(f"BindParams: params must be a mapping, got {type(params).__name__}")

    values = {
        key: _as_constant(key if isinstance(key, str) else getattr(key, "name_hint", "?"), value)
        for key, value in params.items()
    }

    @module_pass(opt_level=0, name="BindParams")
    def bind_params(mod: IRModule, ctx: PassContext) -> IRModule:
        if func_name not in mod or not isinstance(mod[func_name], Function):
            raise CompileError(f"BindParams: the module has no Relax function '{func_name}'")
        func: Function = mod[func_name]
        consts: dict[Var, Constant] = {}
        for key, value in values.items():
            matches = [p for p in func.params if p is key or p.name_hint == key]
            label = key if isinstance(key, str) else getattr(key, "name_hint", key)
            if not matches:
                raise CompileError(
                    f"BindParams('{func_name}'): no parameter '{label}' (parameters: "
                    f"{[p.name_hint for p in func.params]})"
                )
            if len(matches) > 1:
                raise CompileError(
                    f"BindParams('{func_name}'): several parameters are named '{label}'; "
                    "pass the Var"
                )
            consts[matches[0]] = value
        vmap: dict[TirVar, PrimExpr] = {}
        for param, constant in consts.items():
            _bind_dims(func_name, param, constant, vmap)
        binder = _Binder(consts, vmap)
        kept = [binder.visit_var_def(p) for p in func.params if p not in consts]
        body = binder.visit_with_new_scope(func.body)
        ret = substitute_sinfo(func.ret_struct_info, vmap)
        result = mod.copy()
        result.update_func(func_name, Function(kept, body, ret, func.is_pure, func.attrs))
        return result

    return bind_params  # type: ignore[no-any-return]
