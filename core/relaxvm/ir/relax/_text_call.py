"""How the script printer spells a Relax call: as the op's builder in ``relaxvm.ir.relax.op``
takes it, so a parser can evaluate ``R.<op>(...)`` by calling that builder.

Relax arguments print positionally; the call's attributes print as keywords in the order of
the builder's parameters (tuples as lists). The structural ops whose builders take their
arguments differently (``call_tir``, ``call_packed``, ``invoke_closure``, ``assert_op`` ...)
have their own spellings below; :mod:`.text` documents the format as a whole.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

from ..expr import PrimExpr
from ..printer import literal, quote
from .expr import Call, ExternFunc, GlobalVar, Op
from .struct_info import StructInfo, TupleStructInfo

if TYPE_CHECKING:
    from .text import RelaxPrinter

__all__ = ["call_parts"]

Parts = tuple[str, list[str], list[tuple[str, str]]]


def call_parts(printer: RelaxPrinter, call: Call) -> Parts:
    """``(callee text, positional argument texts, keyword (name, text) pairs)`` for ``call``."""
    op = call.op
    if isinstance(op, ExternFunc):
        args = [quote(op.global_symbol), *(printer.expr(arg) for arg in call.args)]
        return "R.call_packed", args, _sinfo_kw(printer, call, "sinfo_args")
    if not isinstance(op, Op):
        name = printer.expr(op)  # cls.f for a module function, f for a closure variable
        return (
            name,
            [printer.expr(arg) for arg in call.args],
            _sinfo_kw(printer, call, "sinfo_args"),
        )
    special = _SPECIAL.get(op.name)
    if special is not None:
        return special(printer, call)
    args = [printer.expr(arg) for arg in call.args]
    return (
        _op_name(op.name),
        args,
        _attr_kwargs(printer, call) + _sinfo_kw(printer, call, "sinfo_args"),
    )


def _op_name(name: str) -> str:
    if name.startswith("relax."):
        return "R." + name[len("relax.") :]
    return f"R.Op({quote(name)})"


def _callee(printer: RelaxPrinter, expr: Any) -> str:
    """A DPS callee: ``cls.f`` for a PrimFunc, ``"sym"`` for a packed function."""
    if isinstance(expr, ExternFunc):
        return quote(expr.global_symbol)
    return printer.expr(expr)


def _sinfo_kw(printer: RelaxPrinter, call: Call, key: str) -> list[tuple[str, str]]:
    if not call.sinfo_args:
        return []
    return [(key, printer.sinfo_args(call.sinfo_args))]


def _out_sinfo(printer: RelaxPrinter, call: Call) -> list[tuple[str, str]]:
    if len(call.sinfo_args) != 1:
        return _sinfo_kw(printer, call, "out_sinfo")
    info = call.sinfo_args[0]
    # The builders turn a list into a tuple of outputs; one output prints as itself.
    if isinstance(info, TupleStructInfo) and len(info.fields) > 1:
        text = "[" + ", ".join(printer.sinfo(field) for field in info.fields) + "]"
    else:
        text = printer.sinfo(info)
    return [("out_sinfo", text)]


def _call_dps(printer: RelaxPrinter, call: Call) -> Parts:
    name = _op_name(call.op.name)  # type: ignore[attr-defined]
    args = [_callee(printer, call.args[0]), *(printer.expr(arg) for arg in call.args[1:2])]
    # TVM prints out_sinfo before the attributes (inplace_indices).
    kwargs = _out_sinfo(printer, call) + _attr_kwargs(printer, call)
    if len(call.args) > 2:
        kwargs.append(("tir_vars", printer.expr(call.args[2])))
    return name, args, kwargs


def _call_pure_packed(printer: RelaxPrinter, call: Call) -> Parts:
    args = [_callee(printer, call.args[0]), *(printer.expr(arg) for arg in call.args[1:])]
    return "R.call_pure_packed", args, _sinfo_kw(printer, call, "sinfo_args")


def _call_inplace_packed(printer: RelaxPrinter, call: Call) -> Parts:
    args = [_callee(printer, call.args[0]), *(printer.expr(arg) for arg in call.args[1:])]
    kwargs = _attr_kwargs(printer, call) + _sinfo_kw(printer, call, "sinfo_args")
    return "R.call_inplace_packed", args, kwargs


def _invoke_closure(printer: RelaxPrinter, call: Call) -> Parts:
    args = [printer.expr(arg) for arg in call.args]
    return "R.invoke_closure", args, _sinfo_kw(printer, call, "sinfo_args")


def _assert_op(printer: RelaxPrinter, call: Call) -> Parts:
    args = [printer.expr(call.args[0])]
    if len(call.args) > 1:
        args.append("[" + ", ".join(printer.expr(arg) for arg in call.args[1:]) + "]")
    return "R.assert_op", args, _attr_kwargs(printer, call)


_SPECIAL = {
    "relax.call_tir": _call_dps,
    "relax.call_tir_inplace": _call_dps,
    "relax.call_dps_packed": _call_dps,
    "relax.call_pure_packed": _call_pure_packed,
    "relax.call_inplace_packed": _call_inplace_packed,
    "relax.invoke_closure": _invoke_closure,
    "relax.assert_op": _assert_op,
}


@functools.cache
def _builder_params(name: str) -> tuple[str, ...]:
    """The parameter names of the builder of op ``name`` (empty when there is none)."""
    from . import op as op_module

    if not name.startswith("relax."):
        return ()
    target: Any = op_module
    for part in name[len("relax.") :].split("."):
        target = getattr(target, part, None)
        if target is None:
            return ()
    try:
        return tuple(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return ()


def _attr_kwargs(printer: RelaxPrinter, call: Call) -> list[tuple[str, str]]:
    attrs = dict(call.attrs or {})
    if not attrs:
        return []
    order = _builder_params(call.op.name) if isinstance(call.op, Op) else ()
    keys = [key for key in order if key in attrs] + sorted(k for k in attrs if k not in order)
    return [(key, _attr_value(printer, attrs[key])) for key in keys]


def _attr_value(printer: RelaxPrinter, value: Any) -> str:
    from ...runtime.device import Device
    from ...runtime.dtype import DataType

    if isinstance(value, Device):
        return printer.vdevice(value)
    if isinstance(value, DataType):
        return quote(str(value))
    if isinstance(value, StructInfo):
        return printer.sinfo(value)
    if isinstance(value, GlobalVar):
        return printer.expr(value)
    if isinstance(value, PrimExpr):
        return printer.attr_prim(value)
    return literal(value, printer.attr_prim)
