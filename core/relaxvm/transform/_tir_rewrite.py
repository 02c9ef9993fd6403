"""TIR rewriting helpers for FuseTIR: remap buffers and variables, freshen loop variables,
inline stages and move an epilogue into its producer's loop nest."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..ir import PrimExpr, Var
from ..ir.tir import (
    Allocate,
    BufferLoad,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    StmtMutator,
)
from ..ir.tir.buffer import Buffer

__all__ = ["Rewriter", "loads_in", "rewrite_expr", "stores_in"]

LoadHook = Callable[[BufferLoad, tuple[PrimExpr, ...]], PrimExpr | None]


def rewrite_expr(
    expr: PrimExpr,
    var_map: Mapping[Var, PrimExpr],
    buffer_map: Mapping[Buffer, Buffer],
    on_load: LoadHook | None = None,
) -> PrimExpr:
    """``expr`` with variables and buffers replaced; ``on_load(load, new_indices)`` may
    replace a (remapped) load by any expression (returning None keeps it)."""
    memo: dict[int, PrimExpr] = {}

    def visit(node: PrimExpr) -> PrimExpr:
        done = memo.get(id(node))
        if done is not None:
            return done
        result: PrimExpr
        if isinstance(node, Var):
            result = var_map.get(node, node)
        elif isinstance(node, BufferLoad):
            indices = tuple(visit(index) for index in node.indices)
            replaced = on_load(node, indices) if on_load is not None else None
            if replaced is not None:
                result = replaced
            else:
                buffer = buffer_map.get(node.buffer, node.buffer)
                same = buffer is node.buffer and all(
                    a is b for a, b in zip(indices, node.indices, strict=True)
                )
                result = node if same else BufferLoad(buffer, indices)
        else:
            operands = tuple(visit(op) for op in node.operands)
            result = node.with_operands(*operands)
        memo[id(node)] = result
        return result

    return visit(expr)


class Rewriter(StmtMutator):
    """Replace variables and buffers everywhere in a statement; with ``fresh_loops``, every
    loop (and let) variable gets a new Var so copies of a kernel never share them."""

    def __init__(
        self,
        var_map: Mapping[Var, PrimExpr] | None = None,
        buffer_map: Mapping[Buffer, Buffer] | None = None,
        on_load: LoadHook | None = None,
        fresh_loops: bool = False,
    ) -> None:
        self.var_map: dict[Var, PrimExpr] = dict(var_map or {})
        self.buffer_map: dict[Buffer, Buffer] = dict(buffer_map or {})
        self.on_load = on_load
        self.fresh_loops = fresh_loops

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        return rewrite_expr(expr, self.var_map, self.buffer_map, self.on_load)

    def visit_for_(self, stmt: For) -> Stmt:
        if self.fresh_loops:
            self.var_map[stmt.loop_var] = Var(stmt.loop_var.name, stmt.loop_var.dtype)
        new_var = self.var_map.get(stmt.loop_var, stmt.loop_var)
        new = super().visit_for_(stmt)
        assert isinstance(new, For)
        if isinstance(new_var, Var) and new_var is not stmt.loop_var:
            new = new.replace(loop_var=new_var)  # type: ignore[assignment]
        return new

    def visit_let_stmt_(self, stmt: LetStmt) -> Stmt:
        if self.fresh_loops:
            self.var_map[stmt.var] = Var(stmt.var.name, stmt.var.dtype)
        new = super().visit_let_stmt_(stmt)
        new_var = self.var_map.get(stmt.var, stmt.var)
        if isinstance(new_var, Var) and new_var is not stmt.var:
            new = new.replace(var=new_var)
        return new

    def visit_buffer_store_(self, stmt: BufferStore) -> Stmt:
        buffer = self.buffer_map.get(stmt.buffer, stmt.buffer)
        value = self.visit_expr(stmt.value)
        indices = tuple(self.visit_expr(i) for i in stmt.indices)
        return BufferStore(buffer, value, indices)

    def visit_allocate_(self, stmt: Allocate) -> Stmt:
        buffer = self.buffer_map.get(stmt.buffer, stmt.buffer)
        return Allocate(buffer, self.visit_stmt(stmt.body))


def stores_in(stmt: Stmt) -> list[BufferStore]:
    """Every BufferStore of ``stmt``."""
    found: list[BufferStore] = []

    def walk(node: Stmt | None) -> None:
        if node is None:
            return
        if isinstance(node, BufferStore):
            found.append(node)
        elif isinstance(node, SeqStmt):
            for item in node.seq:
                walk(item)
        elif isinstance(node, (For, Allocate, LetStmt)):
            walk(node.body)
        elif isinstance(node, IfThenElse):
            walk(node.then_case)
            walk(node.else_case)

    walk(stmt)
    return found


def loads_in(stmt: Stmt) -> list[BufferLoad]:
    """Every BufferLoad of ``stmt`` (values, indices, bounds and conditions)."""
    found: list[BufferLoad] = []

    class _Finder(StmtMutator):
        def visit_expr(self, expr: PrimExpr) -> PrimExpr:
            def hook(load: BufferLoad, _indices: tuple[PrimExpr, ...]) -> None:
                found.append(load)

            rewrite_expr(expr, {}, {}, hook)
            return expr

    _Finder().visit_stmt(stmt)
    return found
