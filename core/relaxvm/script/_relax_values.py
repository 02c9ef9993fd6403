"""Python values in Relax scripts: TVM's implicit conversions, and ``R.emit_te``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..ir import relax as rx
from ..ir.expr import PrimExpr

if TYPE_CHECKING:
    from ._relax_parser import RelaxParser

__all__ = ["check_direct_prim_call", "emit_te"]


def check_direct_prim_call(parser: RelaxParser, node: ast.Call, func: rx.GlobalVar) -> None:
    """``cls.kernel(x, out)``: TVM calls a PrimFunc of the module directly (the VM calls the
    kernel with the arguments as given, outputs included, and the call's value is an
    ``R.Object``). A kernel writes its destination arguments in place, which only an impure
    function outside a dataflow block may do; elsewhere ``R.call_tir`` is the way."""
    frame = parser.bb._func
    name = func.name_hint
    hint = f"use y = R.call_tir(cls.{name}, (args...), out_sinfo=...)"
    if frame is not None and frame.pure:
        raise parser.error(
            node.func,
            f"'{name}' is a prim_func: calling it directly writes its output arguments in "
            f"place, which a pure function may not do: {hint}, or declare "
            "@R.function(pure=False)",
        )
    if parser.bb._in_dataflow:
        raise parser.error(
            node.func,
            f"'{name}' is a prim_func: it may not be called directly inside a dataflow block "
            f"(the call is impure): {hint}",
        )


def emit_te(parser: RelaxParser, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``R.emit_te(te_func, *args, primfunc_name_hint=None, **kwargs)`` with TVM's semantics: a
    PrimFunc made with ``te.create_prim_func`` is added to the module (named
    ``primfunc_name_hint`` or after ``te_func``) and called through ``R.call_tir``."""
    from ..ir.relax._emit_te import build_call_tir

    if parser.module is None:
        raise parser.error(
            node,
            "R.emit_te adds a PrimFunc to the module, so it may only appear in an "
            "@I.ir_module class",
        )
    if not args:
        raise parser.error(node, "R.emit_te expects the TE function as its first argument")
    name_hint = kwargs.pop("primfunc_name_hint", None)
    te_func, *te_args = args
    builder = parser.module._te_builder
    return parser.guard(node, lambda: build_call_tir(builder, te_func, te_args, kwargs, name_hint))


def _const_of_array(value: Any) -> Any:
    import numpy as np

    return rx.const(value) if isinstance(value, np.ndarray) else value


def _convert_to_expr(value: Any) -> rx.RelaxExpr | None:
    """TVM's ``relax.utils.convert_to_expr`` for one Python value: a PrimExpr or a Python
    bool, int or float becomes an ``R.prim_value`` (``int64`` / ``float64``, ``bool``), a str
    an ``R.str``, a numpy array an ``R.const``; None when the value has no Relax form."""
    import numpy as np

    from ..ir.expr import FloatImm, IntImm

    if isinstance(value, PrimExpr):
        return rx.PrimValue(value)
    if isinstance(value, (bool, np.bool_)):
        return rx.PrimValue(IntImm("bool", int(bool(value))))
    if isinstance(value, (int, np.integer)):
        return rx.PrimValue(IntImm("int64", int(value)))
    if isinstance(value, (float, np.floating)):
        return rx.PrimValue(FloatImm("float64", float(value)))
    if isinstance(value, str):
        return rx.StringImm(value)
    if isinstance(value, np.ndarray):
        return rx.const(value)
    return None
