"""Bindings, binding blocks, sequences and functions: the statement level of Relax IR.

A :class:`Function` body is a :class:`SeqExpr`: blocks of bindings (``y = R.add(x, x)`` or
``y = R.match_cast(x, sinfo)``) and a result. A :class:`DataflowBlock` holds pure bindings
whose intermediate results are :class:`~relaxvm.ir.relax.DataflowVar` s. Like expressions,
these nodes are immutable and compare by identity.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ...errors import VMTypeError, VMValueError
from ._base import RelaxExpr, RelaxNode, Span, check_expr, frozen_attrs
from .expr import Var
from .struct_info import FuncStructInfo, ObjectStructInfo, StructInfo

__all__ = [
    "Binding",
    "BindingBlock",
    "DataflowBlock",
    "Function",
    "MatchCast",
    "SeqExpr",
    "VarBinding",
]


# ---- bindings and blocks ----------------------------------------------------------------------
class Binding(RelaxNode):
    """Base of the two bindings; ``var`` is the variable the binding defines."""

    __slots__ = ("span", "value", "var")
    var: Var
    value: RelaxExpr
    span: Span | None

    def _init_binding(self, var: Var, value: RelaxExpr, span: Span | None) -> None:
        where = type(self).__name__
        if not isinstance(var, Var):
            raise VMTypeError(f"{where}: var must be a Relax Var, got {type(var).__name__}")
        self._init_field("var", var)
        self._init_field("value", check_expr(f"{where}: value", value))
        self._init_field("span", span)


class VarBinding(Binding):
    """``var = value``."""

    __slots__ = ()

    def __init__(self, var: Var, value: RelaxExpr, span: Span | None = None) -> None:
        self._init_binding(var, value, span)


class MatchCast(Binding):
    """``var = R.match_cast(value, struct_info)``: check ``value`` at run time and bind it.

    Symbolic variables appearing in ``struct_info`` for the first time are *defined* here,
    from the value's actual shape.
    """

    __slots__ = ("struct_info",)
    struct_info: StructInfo

    def __init__(
        self, var: Var, value: RelaxExpr, struct_info: StructInfo, span: Span | None = None
    ) -> None:
        self._init_binding(var, value, span)
        if not isinstance(struct_info, StructInfo):
            raise VMTypeError(f"MatchCast: struct_info must be a StructInfo, got {struct_info!r}")
        self._init_field("struct_info", struct_info)


class BindingBlock(RelaxNode):
    """A sequence of bindings executed in order."""

    __slots__ = ("bindings", "span")
    bindings: tuple[Binding, ...]
    span: Span | None
    is_dataflow: ClassVar[bool] = False

    def __init__(self, bindings: Sequence[Binding], span: Span | None = None) -> None:
        where = type(self).__name__
        for index, binding in enumerate(bindings):
            if not isinstance(binding, Binding):
                raise VMTypeError(
                    f"{where}: binding {index} must be a VarBinding or MatchCast, got "
                    f"{type(binding).__name__}"
                )
        self._init_field("bindings", tuple(bindings))
        self._init_field("span", span)


class DataflowBlock(BindingBlock):
    """A block of pure bindings (``with R.dataflow():``); only its outputs are plain Vars."""

    __slots__ = ()
    is_dataflow: ClassVar[bool] = True


class SeqExpr(RelaxExpr):
    """Blocks of bindings followed by a result expression; its struct info is the body's."""

    __slots__ = ("blocks", "body")
    blocks: tuple[BindingBlock, ...]
    body: RelaxExpr

    def __init__(
        self, blocks: Sequence[BindingBlock], body: RelaxExpr, span: Span | None = None
    ) -> None:
        for index, block in enumerate(blocks):
            if not isinstance(block, BindingBlock):
                raise VMTypeError(
                    f"SeqExpr: block {index} must be a BindingBlock or DataflowBlock, got "
                    f"{type(block).__name__}"
                )
        self._init_field("blocks", tuple(blocks))
        self._init_field("body", check_expr("SeqExpr: body", body))
        self._init_expr(body.struct_info, span)


class Function(RelaxExpr):
    """A Relax function.

    Parameters
    ----------
    params : sequence of Var
        The parameters; each needs struct info (its annotation).
    body : Relax expression
        Normally a :class:`SeqExpr`.
    ret_struct_info : StructInfo, optional
        The declared return annotation; defaults to the body's struct info, or ``R.Object``.
    is_pure : bool
        Whether the function has no visible side effects.
    attrs : mapping, optional
        Function attributes, e.g. ``{"global_symbol": "main"}``.

    The function's own ``struct_info`` is the :class:`FuncStructInfo` of its signature.
    """

    __slots__ = ("attrs", "body", "is_pure", "params", "ret_struct_info")
    params: tuple[Var, ...]
    body: RelaxExpr
    ret_struct_info: StructInfo
    is_pure: bool
    attrs: Mapping[str, Any]

    def __init__(
        self,
        params: Sequence[Var],
        body: RelaxExpr,
        ret_struct_info: StructInfo | None = None,
        is_pure: bool = True,
        attrs: Mapping[str, Any] | None = None,
        span: Span | None = None,
    ) -> None:
        for index, param in enumerate(params):
            if not isinstance(param, Var):
                raise VMTypeError(
                    f"Function: parameter {index} must be a Relax Var, got {type(param).__name__}"
                )
            if param.struct_info is None:
                raise VMValueError(
                    f"Function: parameter {index} ('{param.name_hint}') needs struct info "
                    "(an annotation such as R.Tensor((n, 4), 'float32'))"
                )
        check_expr("Function: body", body)
        if ret_struct_info is not None and not isinstance(ret_struct_info, StructInfo):
            raise VMTypeError(
                f"Function: ret_struct_info must be a StructInfo, got {ret_struct_info!r}"
            )
        ret = ret_struct_info or body.struct_info or ObjectStructInfo()
        param_infos = [param.struct_info for param in params]
        self._init_field("params", tuple(params))
        self._init_field("body", body)
        self._init_field("ret_struct_info", ret)
        self._init_field("is_pure", bool(is_pure))
        self._init_field("attrs", frozen_attrs("Function", attrs) or types.MappingProxyType({}))
        self._init_expr(FuncStructInfo(param_infos, ret, self.is_pure), span)  # type: ignore[arg-type]

    def with_attr(self, key: str, value: Any) -> Function:
        """A copy of this function with one attribute set (the same params and body)."""
        attrs = dict(self.attrs)
        attrs[key] = value
        return self.with_attrs(attrs)

    def with_attrs(self, attrs: Mapping[str, Any]) -> Function:
        """A copy of this function with its attributes replaced by ``attrs``."""
        return Function(
            self.params, self.body, self.ret_struct_info, self.is_pure, attrs, self.span
        )

    def without_attr(self, key: str) -> Function:
        """A copy of this function without attribute ``key`` (if present)."""
        return self.with_attrs({k: v for k, v in self.attrs.items() if k != key})

    def script(self, name: str | None = None, **options: Any) -> str:
        """TVMScript text of this function alone (named after its ``global_symbol``).

        ``options`` are TVM's printer options (see :mod:`relaxvm.ir.relax.text_options`):
        ``show_meta``, ``verbose_expr``, ``indent_spaces``, ``print_line_numbers``."""
        from .text import function_to_script
        from .text_options import apply_layout, script_options

        opts = script_options("Function", **options)
        return apply_layout(function_to_script(self, name), opts)
