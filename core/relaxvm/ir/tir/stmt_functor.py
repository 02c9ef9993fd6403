"""Walking statements: a visitor, a mutator and substitution.

``structural_equal`` and ``structural_hash`` are importable from here too; they are the one
implementation of :mod:`relaxvm.ir.structural`, which says how loop variables, let variables,
buffers and a ``PrimFunc``'s parameters pair up as definitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...errors import VMTypeError
from ..expr import PrimExpr, Range, Var
from ..expr_functor import substitute as substitute_expr
from ..structural import structural_equal, structural_hash
from .block import Block, BlockRealize, BufferRegion, IterVar, MatchBufferRegion
from .stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = [
    "StmtMutator",
    "StmtVisitor",
    "post_order_visit",
    "structural_equal",
    "structural_hash",
    "substitute",
]


class StmtVisitor:
    """Visit every statement and the expressions in it; override ``visit_<kind>_``."""

    def visit_stmt(self, stmt: Stmt) -> None:
        """Dispatch on the statement's type."""
        getattr(self, _method_name(stmt))(stmt)

    def visit_expr(self, expr: PrimExpr) -> None:
        """Called on each top-level expression of a statement; does nothing by default."""

    def visit_for_(self, stmt: For) -> None:
        self.visit_expr(stmt.min)
        self.visit_expr(stmt.extent)
        self.visit_stmt(stmt.body)

    def visit_buffer_store_(self, stmt: BufferStore) -> None:
        self.visit_expr(stmt.value)
        for index in stmt.indices:
            self.visit_expr(index)

    def visit_let_stmt_(self, stmt: LetStmt) -> None:
        self.visit_expr(stmt.value)
        self.visit_stmt(stmt.body)

    def visit_if_then_else_(self, stmt: IfThenElse) -> None:
        self.visit_expr(stmt.condition)
        self.visit_stmt(stmt.then_case)
        if stmt.else_case is not None:
            self.visit_stmt(stmt.else_case)

    def visit_allocate_(self, stmt: Allocate) -> None:
        for extent in stmt.buffer.shape:
            self.visit_expr(extent)
        self.visit_stmt(stmt.body)

    def visit_decl_buffer_(self, stmt: DeclBuffer) -> None:
        buffer = stmt.buffer
        for extent in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            self.visit_expr(extent)
        self.visit_stmt(stmt.body)

    def visit_evaluate_(self, stmt: Evaluate) -> None:
        self.visit_expr(stmt.value)

    def visit_seq_stmt_(self, stmt: SeqStmt) -> None:
        for item in stmt.seq:
            self.visit_stmt(item)

    def visit_block_realize_(self, stmt: BlockRealize) -> None:
        for value in stmt.iter_values:
            self.visit_expr(value)
        self.visit_expr(stmt.predicate)
        self.visit_stmt(stmt.block)

    def visit_block_(self, stmt: Block) -> None:
        # Region bounds are expressions too (they mention the iteration variables).
        for item in stmt.iter_vars:
            self.visit_expr(item.dom.min)
            self.visit_expr(item.dom.extent)
        sources = tuple(match.source for match in stmt.match_buffers)
        for region in (*stmt.reads, *stmt.writes, *sources):
            for rng in region.region:
                self.visit_expr(rng.min)
                self.visit_expr(rng.extent)
        for buffer in stmt.alloc_buffers:
            for extent in buffer.shape:
                self.visit_expr(extent)
        if stmt.init is not None:
            self.visit_stmt(stmt.init)
        self.visit_stmt(stmt.body)


_METHOD_NAMES = {
    For: "visit_for_",
    BufferStore: "visit_buffer_store_",
    LetStmt: "visit_let_stmt_",
    IfThenElse: "visit_if_then_else_",
    Allocate: "visit_allocate_",
    DeclBuffer: "visit_decl_buffer_",
    Evaluate: "visit_evaluate_",
    SeqStmt: "visit_seq_stmt_",
    BlockRealize: "visit_block_realize_",
    Block: "visit_block_",
}


def _method_name(stmt: Stmt) -> str:
    for stmt_type in type(stmt).__mro__:
        name = _METHOD_NAMES.get(stmt_type)
        if name is not None:
            return name
    raise VMTypeError(f"StmtVisitor: unknown statement type {type(stmt).__name__}")


class StmtMutator:
    """Rebuild statements bottom-up; a node whose parts are unchanged is returned as is.

    Override ``visit_expr`` to rewrite expressions, or ``visit_<kind>_`` for statements.
    """

    def visit_stmt(self, stmt: Stmt) -> Stmt:
        """Dispatch on the statement's type."""
        return getattr(self, _method_name(stmt))(stmt)  # type: ignore[no-any-return]

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        """Rewrite one top-level expression; identity by default."""
        return expr

    def _rebuild(self, stmt: Stmt, **changes: Any) -> Stmt:
        if all(getattr(stmt, key) is value for key, value in changes.items()):
            return stmt
        return stmt.replace(**changes)

    def _exprs(self, exprs: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        new = tuple(self.visit_expr(expr) for expr in exprs)
        return exprs if all(a is b for a, b in zip(new, exprs, strict=True)) else new

    def visit_for_(self, stmt: For) -> Stmt:
        return self._rebuild(
            stmt,
            min=self.visit_expr(stmt.min),
            extent=self.visit_expr(stmt.extent),
            body=self.visit_stmt(stmt.body),
        )

    def visit_buffer_store_(self, stmt: BufferStore) -> Stmt:
        return self._rebuild(
            stmt, value=self.visit_expr(stmt.value), indices=self._exprs(stmt.indices)
        )

    def visit_let_stmt_(self, stmt: LetStmt) -> Stmt:
        return self._rebuild(
            stmt, value=self.visit_expr(stmt.value), body=self.visit_stmt(stmt.body)
        )

    def visit_if_then_else_(self, stmt: IfThenElse) -> Stmt:
        else_case = None if stmt.else_case is None else self.visit_stmt(stmt.else_case)
        return self._rebuild(
            stmt,
            condition=self.visit_expr(stmt.condition),
            then_case=self.visit_stmt(stmt.then_case),
            else_case=else_case,
        )

    def visit_allocate_(self, stmt: Allocate) -> Stmt:
        return self._rebuild(stmt, body=self.visit_stmt(stmt.body))

    def visit_decl_buffer_(self, stmt: DeclBuffer) -> Stmt:
        return self._rebuild(stmt, body=self.visit_stmt(stmt.body))

    def visit_evaluate_(self, stmt: Evaluate) -> Stmt:
        return self._rebuild(stmt, value=self.visit_expr(stmt.value))

    def visit_seq_stmt_(self, stmt: SeqStmt) -> Stmt:
        new = tuple(self.visit_stmt(item) for item in stmt.seq)
        if all(a is b for a, b in zip(new, stmt.seq, strict=True)):
            return stmt
        return SeqStmt(new)

    def visit_block_realize_(self, stmt: BlockRealize) -> Stmt:
        return self._rebuild(
            stmt,
            iter_values=self._exprs(stmt.iter_values),
            predicate=self.visit_expr(stmt.predicate),
            block=self.visit_stmt(stmt.block),
        )

    def _region(self, region: BufferRegion) -> BufferRegion:
        ranges = tuple(self._range(rng) for rng in region.region)
        if all(a is b for a, b in zip(ranges, region.region, strict=True)):
            return region
        return BufferRegion(region.buffer, ranges)

    def _range(self, rng: Range) -> Range:
        low, extent = self.visit_expr(rng.min), self.visit_expr(rng.extent)
        if low is rng.min and extent is rng.extent:
            return rng
        return Range.from_min_extent(low, extent)

    def _regions(self, regions: tuple[BufferRegion, ...]) -> tuple[BufferRegion, ...]:
        new = tuple(self._region(region) for region in regions)
        return regions if all(a is b for a, b in zip(new, regions, strict=True)) else new

    def visit_block_(self, stmt: Block) -> Stmt:
        # Iteration variables are definitions: their domains are rewritten, the variables kept.
        iter_vars = tuple(
            item
            if (dom := self._range(item.dom)) is item.dom
            else IterVar(dom, item.var, item.iter_type)
            for item in stmt.iter_vars
        )
        if all(a is b for a, b in zip(iter_vars, stmt.iter_vars, strict=True)):
            iter_vars = stmt.iter_vars
        matches = tuple(
            match
            if (source := self._region(match.source)) is match.source
            else MatchBufferRegion(match.buffer, source)
            for match in stmt.match_buffers
        )
        if all(a is b for a, b in zip(matches, stmt.match_buffers, strict=True)):
            matches = stmt.match_buffers
        return self._rebuild(
            stmt,
            iter_vars=iter_vars,
            match_buffers=matches,
            reads=self._regions(stmt.reads),
            writes=self._regions(stmt.writes),
            body=self.visit_stmt(stmt.body),
            init=None if stmt.init is None else self.visit_stmt(stmt.init),
        )


def post_order_visit(stmt: Stmt, visit: Callable[[Stmt], Any]) -> None:
    """Call ``visit`` on every statement of ``stmt``, children before parents."""

    class _Visitor(StmtVisitor):
        def visit_stmt(self, node: Stmt) -> None:
            super().visit_stmt(node)
            visit(node)

    _Visitor().visit_stmt(stmt)


def substitute(stmt: Stmt, vmap: Mapping[Var, Any] | Callable[[Var], Any]) -> Stmt:
    """Replace free variables in every expression of ``stmt`` (loop bounds, indices, values).

    Defined variables (loop and let variables) can be replaced too: a loop variable mapped to
    another Var is renamed in the loop header as well.
    """
    lookup = vmap if callable(vmap) and not isinstance(vmap, Mapping) else vmap.get

    class _Substituter(StmtMutator):
        def visit_expr(self, expr: PrimExpr) -> PrimExpr:
            return substitute_expr(expr, lookup)

        def visit_for_(self, node: For) -> Stmt:
            new = super().visit_for_(node)
            replacement = lookup(node.loop_var)
            if isinstance(replacement, Var) and replacement is not node.loop_var:
                new = new.replace(loop_var=replacement)
            return new

        def visit_let_stmt_(self, node: LetStmt) -> Stmt:
            new = super().visit_let_stmt_(node)
            replacement = lookup(node.var)
            if isinstance(replacement, Var) and replacement is not node.var:
                new = new.replace(var=replacement)
            return new

    return _Substituter().visit_stmt(stmt)
