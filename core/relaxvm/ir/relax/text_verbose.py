"""``verbose_expr=True`` of ``.script()``: the definitions of an expression's free variables
(``x: R.Tensor(...)``), or of the symbolic dims a StructInfo names (``n = T.int64()``)."""

from __future__ import annotations

from typing import Any

from .expr import Call, Tuple, TupleGetItem, Var

__all__ = ["verbose_definitions"]


def _variables(node: Any, found: dict[Var, None]) -> None:
    # A shallow walk of the expression forms that hold operands: variables bound inside a
    # function or sequence are defined by it, so they are not free here.
    if isinstance(node, Var):
        found[node] = None
    elif isinstance(node, Call):
        for arg in node.args:
            _variables(arg, found)
    elif isinstance(node, Tuple):
        for field in node.fields:
            _variables(field, found)
    elif isinstance(node, TupleGetItem):
        _variables(node.tuple_value, found)


def _symbolic_dims(sinfo: Any, found: dict[Any, None]) -> None:
    from ..expr import PrimExpr
    from ..expr_functor import free_vars
    from .expr import ShapeExpr
    from .struct_info import (
        FuncStructInfo,
        PrimStructInfo,
        ShapeStructInfo,
        TensorStructInfo,
        TupleStructInfo,
    )

    values: list[Any] = []
    if isinstance(sinfo, TensorStructInfo) and isinstance(sinfo.shape, ShapeExpr):
        values = list(sinfo.shape.values)
    elif isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        values = list(sinfo.values)
    elif isinstance(sinfo, PrimStructInfo) and isinstance(sinfo.value, PrimExpr):
        values = [sinfo.value]
    elif isinstance(sinfo, TupleStructInfo):
        for field in sinfo.fields:
            _symbolic_dims(field, found)
    elif isinstance(sinfo, FuncStructInfo):
        for param in sinfo.params or ():
            _symbolic_dims(param, found)
        _symbolic_dims(sinfo.ret, found)
    for value in values:
        for var in free_vars(value):
            found[var] = None


def verbose_definitions(node: Any) -> list[str]:
    """``x: R.Tensor((2,), dtype="float32")`` for each variable ``node`` uses, in order; for
    a StructInfo, ``n = T.int64()`` for each symbolic dim it names."""
    from .struct_info import StructInfo

    if isinstance(node, StructInfo):
        dims: dict[Any, None] = {}
        _symbolic_dims(node, dims)
        return [f"{var.name} = T.{var.dtype}()" for var in dims]
    found: dict[Var, None] = {}
    _variables(node, found)
    return [f"{var.name_hint}: {var.struct_info.script()}" for var in found if var.struct_info]
