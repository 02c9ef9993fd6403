"""Visitors and mutators over Relax IR: the base classes of every Relax pass.

:class:`ExprVisitor` walks an expression (bindings, blocks, nested functions) in evaluation
order. :class:`ExprMutator` rebuilds it: each ``visit_*`` returns the new node (the same object
when nothing changed, so unchanged sub-trees are shared), bindings are re-emitted into blocks
through a :class:`PassBuilder`, and rebuilt calls get their StructInfo from op inference, as
TVM's ``ExprMutator`` does with its ``builder_``. A pass can emit extra bindings before the
current one with ``self.builder.emit(...)``.

When a binding's value changes, its variable is replaced by a new one carrying the new value's
StructInfo; later uses are redirected through :attr:`ExprMutator.var_remap`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._base import RelaxExpr
from .block import (
    Binding,
    BindingBlock,
    DataflowBlock,
    Function,
    MatchCast,
    SeqExpr,
    VarBinding,
)
from .block_builder import BlockBuilder, BlockBuilderError
from .expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    If,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from .module import IRModule
from .struct_info import StructInfo

__all__ = ["ExprMutator", "ExprVisitor", "PassBuilder"]

_LEAF_TYPES = (
    Constant,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Var,
)


class ExprVisitor:
    """Walk Relax IR; override ``visit_<node>_`` methods and call ``super()`` to recurse."""

    def visit_expr(self, expr: RelaxExpr) -> None:
        """Dispatch on the node type."""
        method = getattr(self, _VISIT_NAMES[type(expr)])
        method(expr)

    # ---- leaves ---------------------------------------------------------------------------
    def visit_var_(self, var: Var) -> None:
        """A use of a variable."""

    def visit_dataflow_var_(self, var: DataflowVar) -> None:
        """A use of a dataflow variable (defaults to :meth:`visit_var_`)."""
        self.visit_var_(var)

    def visit_var_def(self, var: Var) -> None:
        """A variable being defined (a parameter or a binding's left-hand side)."""

    def visit_leaf_(self, expr: RelaxExpr) -> None:
        """Constants, shapes, prim values, strings, dtypes, ops, extern funcs, global vars."""

    # ---- compound -------------------------------------------------------------------------
    def visit_tuple_(self, expr: Tuple) -> None:
        for field in expr.fields:
            self.visit_expr(field)

    def visit_tuple_getitem_(self, expr: TupleGetItem) -> None:
        self.visit_expr(expr.tuple_value)

    def visit_call_(self, expr: Call) -> None:
        self.visit_expr(expr.op)
        for arg in expr.args:
            self.visit_expr(arg)

    def visit_if_(self, expr: If) -> None:
        self.visit_expr(expr.cond)
        self.visit_expr(expr.true_branch)
        self.visit_expr(expr.false_branch)

    def visit_seq_expr_(self, expr: SeqExpr) -> None:
        for block in expr.blocks:
            self.visit_binding_block(block)
        self.visit_expr(expr.body)

    def visit_function_(self, expr: Function) -> None:
        for param in expr.params:
            self.visit_var_def(param)
        self.visit_expr(expr.body)

    # ---- statements -----------------------------------------------------------------------
    def visit_binding_block(self, block: BindingBlock) -> None:
        for binding in block.bindings:
            self.visit_binding(binding)

    def visit_binding(self, binding: Binding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)


_VISIT_NAMES: dict[type, str] = {
    Var: "visit_var_",
    DataflowVar: "visit_dataflow_var_",
    Tuple: "visit_tuple_",
    TupleGetItem: "visit_tuple_getitem_",
    Call: "visit_call_",
    If: "visit_if_",
    SeqExpr: "visit_seq_expr_",
    Function: "visit_function_",
    **{leaf: "visit_leaf_" for leaf in _LEAF_TYPES if leaf not in (Var,)},
}


class PassBuilder(BlockBuilder):
    """A :class:`BlockBuilder` that can also fill free-standing binding blocks, as passes do.

    Outside ``bb.function`` scopes, :meth:`begin_block` / :meth:`end_block` bracket a block
    whose bindings :meth:`emit` and :meth:`emit_normalized` append to; blocks nest (a branch
    of an ``If`` or a local function body is filled while its parent block is open).
    """

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__(mod)
        self._block_stack: list[tuple[list[Any], bool]] = []
        self._open_blocks = 0

    def begin_block(self, is_dataflow: bool = False) -> None:
        """Start a block (a :class:`DataflowBlock` when ``is_dataflow``)."""
        self._block_stack.append((self._bindings, self._in_dataflow))
        self._bindings, self._in_dataflow = [], is_dataflow
        self._open_blocks += 1

    def end_block(self) -> BindingBlock:
        """Close the innermost block and return it (possibly empty)."""
        if not self._open_blocks:
            raise BlockBuilderError("PassBuilder.end_block: no block is open")
        block_type = DataflowBlock if self._in_dataflow else BindingBlock
        block = block_type(self._bindings)
        self._bindings, self._in_dataflow = self._block_stack.pop()
        self._open_blocks -= 1
        return block

    @property
    def in_dataflow(self) -> bool:
        """Whether the innermost open block is a dataflow block."""
        return self._in_dataflow

    def emit_normalized(self, binding: Binding) -> None:
        """Append an already normalized binding to the innermost open block."""
        if not self._open_blocks:
            raise BlockBuilderError("PassBuilder.emit_normalized: no block is open")
        self._bindings.append(binding)

    def emit_var(self, value: RelaxExpr, var: Var) -> Var:
        """Bind the normalized ``value`` to the given (or an equivalent new) variable."""
        value = self.normalize(value)
        if value.struct_info is None:
            raise BlockBuilderError(f"PassBuilder: {value} has no struct info")
        self.emit_normalized(VarBinding(var, value))
        return var

    def _can_bind(self) -> bool:
        return bool(self._open_blocks) or super()._can_bind()

    def _require_function(self, method: str) -> Any:
        if self._open_blocks:
            return self._func
        return super()._require_function(method)

    @contextmanager
    def scope(self, is_dataflow: bool = False) -> Iterator[list[BindingBlock]]:
        """Collect blocks for a nested SeqExpr; yields the list the closed block joins."""
        blocks: list[BindingBlock] = []
        self.begin_block(is_dataflow)
        try:
            yield blocks
        finally:
            block = self.end_block()
            if block.bindings:
                blocks.append(block)


class ExprMutator:
    """Rebuild Relax IR; override ``visit_<node>_`` methods (call ``super()`` to recurse).

    Parameters
    ----------
    mod : IRModule, optional
        The module being transformed; :attr:`builder` works on a copy of it so that a pass
        can add functions (``self.builder.add_func``) and read others.
    """

    def __init__(self, mod: IRModule | None = None) -> None:
        self.builder = PassBuilder(mod)
        self.var_remap: dict[Var, Var] = {}

    # ---- entry points ---------------------------------------------------------------------
    def visit_expr(self, expr: RelaxExpr) -> RelaxExpr:
        """Dispatch on the node type and return the rewritten expression."""
        return getattr(self, _VISIT_NAMES[type(expr)])(expr)  # type: ignore[no-any-return]

    # ---- leaves ---------------------------------------------------------------------------
    def visit_var_(self, var: Var) -> RelaxExpr:
        return self.var_remap.get(var, var)

    def visit_dataflow_var_(self, var: DataflowVar) -> RelaxExpr:
        return self.visit_var_(var)

    def visit_var_def(self, var: Var) -> Var:
        """A variable being defined: returns the variable to use in its place."""
        return self.var_remap.get(var, var)

    def visit_leaf_(self, expr: RelaxExpr) -> RelaxExpr:
        return expr

    # ---- compound -------------------------------------------------------------------------
    def visit_tuple_(self, expr: Tuple) -> RelaxExpr:
        fields = [self.visit_expr(field) for field in expr.fields]
        if _same(fields, expr.fields):
            return expr
        return Tuple(fields, expr.span)

    def visit_tuple_getitem_(self, expr: TupleGetItem) -> RelaxExpr:
        value = self.visit_expr(expr.tuple_value)
        if value is expr.tuple_value:
            return expr
        return TupleGetItem(value, expr.index, expr.span)

    def visit_call_(self, expr: Call) -> RelaxExpr:
        op = self.visit_expr(expr.op)
        args = [self.visit_expr(arg) for arg in expr.args]
        if op is expr.op and _same(args, expr.args):
            return expr
        return Call(op, args, expr.attrs, expr.sinfo_args, None, expr.span)

    def visit_if_(self, expr: If) -> RelaxExpr:
        cond = self.visit_expr(expr.cond)
        true_branch = self.visit_with_new_scope(expr.true_branch)
        false_branch = self.visit_with_new_scope(expr.false_branch)
        if (
            cond is expr.cond
            and true_branch is expr.true_branch
            and false_branch is expr.false_branch
        ):
            return expr
        return If(cond, true_branch, false_branch, None, expr.span)

    def visit_with_new_scope(self, expr: RelaxExpr) -> RelaxExpr:
        """Rewrite ``expr`` (a branch or function body) in its own scope: bindings emitted
        while rewriting it stay inside it, as a SeqExpr."""
        if isinstance(expr, SeqExpr):
            return self.visit_expr(expr)
        with self.builder.scope() as blocks:
            new = self.visit_expr(expr)
            if not isinstance(new, (*_LEAF_TYPES, Tuple)):
                new = self.builder.emit(new)
        if not blocks and new is expr:
            return expr
        return SeqExpr(blocks, new)

    def visit_seq_expr_(self, expr: SeqExpr) -> RelaxExpr:
        blocks: list[BindingBlock] = []
        changed = False
        for block in expr.blocks:
            new_block = self.visit_binding_block(block)
            changed |= new_block is not block
            if new_block.bindings:
                blocks.append(new_block)
            else:
                changed = True
        with self.builder.scope() as tail:
            body = self.visit_expr(expr.body)
            if not isinstance(body, (*_LEAF_TYPES, Tuple)):
                body = self.builder.emit(body, "ret")
        blocks.extend(tail)
        if not changed and not tail and body is expr.body:
            return expr
        return SeqExpr(blocks, body, expr.span)

    def visit_function_(self, expr: Function) -> RelaxExpr:
        params = [self.visit_var_def(param) for param in expr.params]
        body = self.visit_with_new_scope(expr.body)
        if _same(params, expr.params) and body is expr.body:
            return expr
        return Function(params, body, expr.ret_struct_info, expr.is_pure, expr.attrs, expr.span)

    # ---- statements -----------------------------------------------------------------------
    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        """Re-emit every binding of ``block`` into a new block (the same object if none
        changed)."""
        self.builder.begin_block(block.is_dataflow)
        try:
            for binding in block.bindings:
                self.visit_binding(binding)
        finally:
            new_block = self.builder.end_block()
        if _same(new_block.bindings, block.bindings):
            return block
        return new_block

    def visit_binding(self, binding: Binding) -> None:
        """Emit the rewritten binding (or bindings) into the current block."""
        if isinstance(binding, MatchCast):
            self.visit_match_cast(binding)
        else:
            assert isinstance(binding, VarBinding)  # the only other Binding kind
            self.visit_var_binding(binding)

    def visit_var_binding(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if value is binding.value and var is binding.var:
            self.builder.emit_normalized(binding)
            return
        value = self.builder.normalize(value)
        sinfo = value.struct_info
        if var is binding.var and sinfo is not None and sinfo is not var.struct_info:
            var = self.with_struct_info(var, sinfo)
        self.builder.emit_normalized(VarBinding(var, value, binding.span))

    def visit_match_cast(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if value is binding.value and var is binding.var:
            self.builder.emit_normalized(binding)
            return
        if not isinstance(value, (*_LEAF_TYPES, Tuple)):
            value = self.builder.emit(value)
        self.builder.emit_normalized(MatchCast(var, value, binding.struct_info, binding.span))

    # ---- helpers --------------------------------------------------------------------------
    def with_struct_info(self, var: Var, sinfo: StructInfo) -> Var:
        """A replacement for ``var`` with ``sinfo`` (recorded in :attr:`var_remap`), or
        ``var`` itself when ``sinfo`` is the same object."""
        if var.struct_info is sinfo:
            return var
        from .structural import structural_equal

        if var.struct_info is not None and structural_equal(var.struct_info, sinfo):
            return var
        new = type(var)(var.name_hint, sinfo, var.span)
        self.var_remap[var] = new
        return new


def _same(new: Any, old: Any) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True))
