"""StructInfo of calls for the BlockBuilder: which calls have inference, what a call of a
module function returns at its call site, and the join of two If branches."""

from __future__ import annotations

from collections.abc import Sequence

from ..expr import PrimExpr
from ..expr import Var as TirVar
from ..expr_functor import free_vars, substitute
from .expr import Call, Op
from .op.registry import get_op_info
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["declared", "derive_return", "has_inference", "join"]


def has_inference(op: Op) -> bool:
    """Whether ``op`` is registered with a StructInfo inference rule."""
    try:
        get_op_info(op.name)
    except ValueError:
        return False
    return True


def declared(sinfo_args: Sequence[StructInfo]) -> StructInfo:
    """The result a call declares through ``sinfo_args`` (several form a tuple)."""
    return sinfo_args[0] if len(sinfo_args) == 1 else TupleStructInfo(list(sinfo_args))


def derive_return(callee: FuncStructInfo, call: Call) -> StructInfo:
    """The callee's return struct info, with its symbolic dims replaced by the caller's.

    A parameter dim that is a bare symbolic variable (``n`` in ``x: (n, 4)``) takes the
    argument's dim; a return dim whose variables are not all matched is erased to an unknown
    shape of the same rank, as TVM does, since it cannot be named at the call site.
    """
    if callee.params is None:
        return callee.ret
    if len(callee.params) != len(call.args):
        from .block_builder import BlockBuilderError  # the builder imports this module

        raise BlockBuilderError(
            f"BlockBuilder: a call passes {len(call.args)} argument(s) to a function that takes "
            f"{len(callee.params)}"
        )
    bound: dict[TirVar, PrimExpr] = {}
    for param, arg in zip(callee.params, call.args, strict=True):
        _match_dims(param, arg.struct_info, bound)
    return _substitute_sinfo(callee.ret, bound)


def _match_dims(param: StructInfo, arg: StructInfo | None, bound: dict[TirVar, PrimExpr]) -> None:
    if isinstance(param, TensorStructInfo) and isinstance(arg, TensorStructInfo):
        pairs = zip(param.shape_values or (), arg.shape_values or (), strict=False)
    elif isinstance(param, ShapeStructInfo) and isinstance(arg, ShapeStructInfo):
        pairs = zip(param.values or (), arg.values or (), strict=False)
    elif isinstance(param, TupleStructInfo) and isinstance(arg, TupleStructInfo):
        for sub_param, sub_arg in zip(param.fields, arg.fields, strict=False):
            _match_dims(sub_param, sub_arg, bound)
        return
    else:
        return
    for dim, actual in pairs:
        if isinstance(dim, TirVar):
            bound.setdefault(dim, actual)


def _substitute_sinfo(sinfo: StructInfo, bound: dict[TirVar, PrimExpr]) -> StructInfo:
    if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None:
        values = sinfo.shape_values
        if not all(set(free_vars(v)) <= set(bound) for v in values):
            return TensorStructInfo(None, sinfo.dtype, ndim=sinfo.ndim)
        return TensorStructInfo([substitute(v, bound) for v in values], sinfo.dtype)
    if isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        if not all(set(free_vars(v)) <= set(bound) for v in sinfo.values):
            return ShapeStructInfo(ndim=sinfo.ndim)
        return ShapeStructInfo([substitute(v, bound) for v in sinfo.values])
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo([_substitute_sinfo(f, bound) for f in sinfo.fields])
    return sinfo


def join(first: StructInfo | None, second: StructInfo | None) -> StructInfo:
    """The struct info both branches of an If satisfy (a simple least upper bound)."""
    if first is None or second is None:
        return ObjectStructInfo()
    if first == second:
        return first
    if isinstance(first, TensorStructInfo) and isinstance(second, TensorStructInfo):
        dtype = first.dtype if first.dtype == second.dtype else None
        ndim = first.ndim if first.ndim == second.ndim else -1
        return TensorStructInfo(None, dtype, ndim=ndim)
    if (
        isinstance(first, PrimStructInfo)
        and isinstance(second, PrimStructInfo)
        and first.dtype == second.dtype
    ):
        return PrimStructInfo(first.dtype)
    return ObjectStructInfo()
