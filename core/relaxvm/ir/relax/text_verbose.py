"""``verbose_expr=True`` of ``.script()``: a Relax fragment (an expression, a binding or a
block) printed as TVM prints it, after the definitions of what it uses but does not define.

Each free Relax variable is declared (``a: R.Tensor((1, x, 3), dtype="float32")``) where it
is first used, preceded by ``x = T.int64()`` for each symbolic variable met for the first
time; bindings print with their annotations, as inside a function; an ``If`` prints as
Python ``if``/``else`` whose branches declare their own free variables. For a StructInfo
the text is ``n = T.int64()`` for each symbolic dim it names.
"""

from __future__ import annotations

from typing import Any

from ..printer import INDENT
from .block import Binding, BindingBlock, Function, SeqExpr
from .expr import Call, GlobalVar, If, Tuple, TupleGetItem, Var
from .text import RelaxPrinter, global_name

__all__ = ["verbose_definitions", "verbose_script"]


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
    """For a StructInfo, ``n = T.int64()`` for each symbolic dim it names, in order."""
    dims: dict[Any, None] = {}
    _symbolic_dims(node, dims)
    return [f"{var.name} = T.{var.dtype}()" for var in dims]


class _FragmentPrinter(RelaxPrinter):
    """A :class:`RelaxPrinter` that declares free variables in the frame being printed."""

    def __init__(self, declare: bool) -> None:
        super().__init__()
        self.declare = declare
        self.decls = []  # symbolic variables met since the last flush
        self.bound: set[int] = set()  # variables some binding, parameter or frame defines

    def expr(self, expr: Any) -> str:
        # Outside a module there is no ``cls``: a module function prints by its name, as TVM.
        if isinstance(expr, GlobalVar):
            return global_name(expr.name_hint)
        return super().expr(expr)

    def declare_free(self, node: Any, depth: int, lines: list[str]) -> None:
        """Append the declarations of the free variables ``node`` uses (shallowly: not
        inside If branches or nested functions, which are frames of their own)."""
        for var in _free_vars(node, self.bound):
            if not self.declare:
                continue
            if self.namer.get(var) is not None:
                continue
            annotation = self.sinfo(var.struct_info) if var.struct_info is not None else None
            self.flush(depth, lines)
            name = self.namer.define(var, var.name_hint)
            lines.append(f"{INDENT * depth}{name}" + (f": {annotation}" if annotation else ""))

    def flush(self, depth: int, lines: list[str]) -> None:
        """Append the pending ``n = T.int64()`` declarations."""
        assert self.decls is not None  # set in __init__ and never cleared
        if self.declare:
            lines += [INDENT * depth + decl for decl in self.decls]
        self.decls.clear()

    def statement(self, text: str, depth: int, lines: list[str]) -> None:
        """Append a statement after the symbolic declarations its printing caused."""
        self.flush(depth, lines)
        lines.append(INDENT * depth + text)

    def fragment(self, node: Any, depth: int, lines: list[str]) -> None:
        """Append the lines of ``node`` (expression, binding or block) at ``depth``."""
        self.declare_free(node, depth, lines)
        if isinstance(node, Binding):
            self._binding_lines([node], depth, lines)
        elif isinstance(node, BindingBlock):
            self._block_lines(node, depth, lines)
        elif isinstance(node, SeqExpr):
            for block in node.blocks:
                self._block_lines(block, depth, lines)
            self.fragment(node.body, depth, lines)
        elif isinstance(node, If):
            self.statement(f"if {self.expr(node.cond)}:", depth, lines)
            self.fragment(node.true_branch, depth + 1, lines)
            lines.append(f"{INDENT * depth}else:")
            self.fragment(node.false_branch, depth + 1, lines)
        else:
            self.statement(self.expr(node), depth, lines)

    def _block_lines(self, block: BindingBlock, depth: int, lines: list[str]) -> None:
        for binding in block.bindings:
            self.declare_free(binding, depth, lines)
        produced: list[str] = []
        self.block(block, depth, produced)
        self.flush(depth, lines)
        lines += produced

    def _binding_lines(self, bindings: list[Binding], depth: int, lines: list[str]) -> None:
        for binding in bindings:
            produced: list[str] = []
            self.binding(binding, depth, produced)
            self.flush(depth, lines)
            lines += produced


def _free_vars(node: Any, bound: set[int]) -> list[Var]:
    """The Relax variables ``node`` uses before (or without) defining them, in order of
    first use; variables it binds are added to ``bound``."""
    found: dict[int, Var] = {}

    def use(var: Var) -> None:
        if id(var) not in bound and id(var) not in found:
            found[id(var)] = var

    def walk(item: Any) -> None:
        if isinstance(item, Var):
            use(item)
        elif isinstance(item, Call):
            for arg in item.args:
                walk(arg)
        elif isinstance(item, Tuple):
            for field in item.fields:
                walk(field)
        elif isinstance(item, TupleGetItem):
            walk(item.tuple_value)
        elif isinstance(item, If):
            walk(item.cond)  # the branches are frames of their own
        elif isinstance(item, SeqExpr):
            for block in item.blocks:
                walk(block)
            walk(item.body)
        elif isinstance(item, BindingBlock):
            for binding in item.bindings:
                walk(binding)
        elif isinstance(item, Binding):
            value = item.value
            if isinstance(value, If):
                walk(value.cond)
            elif not isinstance(value, Function):
                walk(value)
            # A match_cast pattern's new symbols are declared when the binding prints.
            bound.add(id(item.var))

    walk(node)
    return list(found.values())


def verbose_script(node: Any, declare: bool = True) -> str:
    """The script text of a Relax expression, binding or block: with ``declare`` (TVM's
    ``verbose_expr=True``) after the declarations of the free variables it uses."""
    printer = _FragmentPrinter(declare)
    lines: list[str] = []
    printer.fragment(node, 0, lines)
    return "\n".join(lines)
