"""Analyses of TIR functions: which variables a function uses without defining them."""

from __future__ import annotations

from ..expr import PrimExpr, Var
from ..expr_functor import free_vars
from .block import Block
from .buffer import Buffer
from .function import PrimFunc
from .stmt import Allocate, BufferStore, For, LetStmt, Stmt
from .stmt_functor import StmtVisitor

__all__ = ["undefined_vars"]


class _UseDef(StmtVisitor):
    def __init__(self, defined: set[Var]) -> None:
        self.defined = defined
        self.missing: dict[Var, None] = {}

    def visit_expr(self, expr: PrimExpr) -> None:
        for var in free_vars(expr):
            if var not in self.defined:
                self.missing.setdefault(var)

    def define_buffer(self, buffer: Buffer) -> None:
        for extent in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            self.visit_expr(extent)
        self.defined.add(buffer.data)

    def visit_for_(self, stmt: For) -> None:
        self.visit_expr(stmt.min)
        self.visit_expr(stmt.extent)
        self.defined.add(stmt.loop_var)
        self.visit_stmt(stmt.body)

    def visit_let_stmt_(self, stmt: LetStmt) -> None:
        self.visit_expr(stmt.value)
        self.defined.add(stmt.var)
        self.visit_stmt(stmt.body)

    def visit_buffer_store_(self, stmt: BufferStore) -> None:
        if stmt.buffer.data not in self.defined:
            self.missing.setdefault(stmt.buffer.data)
        super().visit_buffer_store_(stmt)

    def visit_allocate_(self, stmt: Allocate) -> None:
        self.define_buffer(stmt.buffer)
        self.visit_stmt(stmt.body)

    def visit_block_(self, stmt: Block) -> None:
        # A block defines its iteration variables and the buffers it allocates.
        for item in stmt.iter_vars:
            self.defined.add(item.var)
        for buffer in stmt.alloc_buffers:
            self.define_buffer(buffer)
        super().visit_block_(stmt)


def undefined_vars(node: PrimFunc | Stmt) -> list[Var]:
    """Variables used in ``node`` but defined by no parameter, buffer shape, loop or let.

    For a PrimFunc, scalar parameters, buffer handles and plain variables appearing as
    parameter buffers' extents (``A: T.Buffer((n, 4))`` defines ``n``) count as defined.
    Loads and stores of a buffer need its handle defined (a parameter or an ``Allocate``).
    Definitions are treated as function-wide, which is enough to catch unbound variables.
    """
    defined: set[Var] = set()
    if isinstance(node, PrimFunc):
        defined.update(node.params)
        for buffer in node.buffer_map.values():
            defined.update(e for e in (*buffer.shape, *buffer.strides) if isinstance(e, Var))
            defined.add(buffer.data)
        body = node.body
        visitor = _UseDef(defined)
        for buffer in node.buffer_map.values():
            visitor.define_buffer(buffer)
    else:
        body = node
        visitor = _UseDef(defined)
    visitor.visit_stmt(body)
    return list(visitor.missing)
