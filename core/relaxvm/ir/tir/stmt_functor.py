"""Walking statements: a visitor, a mutator, substitution, structural equality and hashing.

Loop variables, let variables and allocated buffers are *definitions*: two loops are
structurally equal when their bodies match after pairing their loop variables, whatever the
variables' identities. For a :class:`PrimFunc`, parameters, parameter buffers and the symbolic
variables of those buffers' shapes are definitions too. Any other variable is free and must be
the same object on both sides, unless ``map_free_vars=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...errors import VMTypeError
from ..expr import FloatImm, IntImm, PrimExpr, Var
from ..expr_functor import substitute as substitute_expr
from .buffer import Buffer, BufferLoad
from .function import PrimFunc
from .stmt import Allocate, BufferStore, Evaluate, For, IfThenElse, LetStmt, SeqStmt, Stmt

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

    def visit_evaluate_(self, stmt: Evaluate) -> None:
        self.visit_expr(stmt.value)

    def visit_seq_stmt_(self, stmt: SeqStmt) -> None:
        for item in stmt.seq:
            self.visit_stmt(item)


_METHOD_NAMES = {
    For: "visit_for_",
    BufferStore: "visit_buffer_store_",
    LetStmt: "visit_let_stmt_",
    IfThenElse: "visit_if_then_else_",
    Allocate: "visit_allocate_",
    Evaluate: "visit_evaluate_",
    SeqStmt: "visit_seq_stmt_",
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

    def visit_evaluate_(self, stmt: Evaluate) -> Stmt:
        return self._rebuild(stmt, value=self.visit_expr(stmt.value))

    def visit_seq_stmt_(self, stmt: SeqStmt) -> Stmt:
        new = tuple(self.visit_stmt(item) for item in stmt.seq)
        if all(a is b for a, b in zip(new, stmt.seq, strict=True)):
            return stmt
        return SeqStmt(new)


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


# ---- structural equality and hashing ------------------------------------------------------------
class _Comparer:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.vars: dict[Var, Var] = {}
        self.buffers: dict[Buffer, Buffer] = {}

    def define_var(self, a: Var, b: Var) -> bool:
        if type(a) is not type(b) or a.dtype != b.dtype:
            return False
        self.vars[a] = b
        return True

    def var(self, a: Var, b: Var) -> bool:
        mapped = self.vars.get(a)
        if mapped is not None:
            return mapped is b
        if a is b:
            return True
        if self.map_free_vars and b not in self.vars.values():
            return self.define_var(a, b)
        return False

    def define_buffer(self, a: Buffer, b: Buffer) -> bool:
        if a.dtype != b.dtype or a.scope != b.scope or a.ndim != b.ndim:
            return False
        if len(a.strides) != len(b.strides):
            return False
        # Shape variables not seen yet are defined here (a PrimFunc's `A: T.Buffer((n, 4))`).
        for x, y in zip(
            (*a.shape, *a.strides, a.elem_offset),
            (*b.shape, *b.strides, b.elem_offset),
            strict=True,
        ):
            if isinstance(x, Var) and isinstance(y, Var) and x not in self.vars:
                if not self.define_var(x, y):
                    return False
            elif not self.expr(x, y):
                return False
        self.buffers[a] = b
        self.vars[a.data] = b.data
        return True

    def buffer(self, a: Buffer, b: Buffer) -> bool:
        mapped = self.buffers.get(a)
        if mapped is not None:
            return mapped is b
        if a is b:
            return True
        return self.map_free_vars and self.define_buffer(a, b)

    def expr(self, a: PrimExpr, b: PrimExpr) -> bool:
        pending = [(a, b)]
        while pending:
            x, y = pending.pop()
            if type(x) is not type(y) or x.dtype != y.dtype:
                return False
            if isinstance(x, Var):
                if not self.var(x, y):  # type: ignore[arg-type]
                    return False
            elif isinstance(x, (IntImm, FloatImm)):
                if x != y:
                    return False
            else:
                if isinstance(x, BufferLoad) and not self.buffer(x.buffer, y.buffer):  # type: ignore[attr-defined]
                    return False
                xs, ys = x.operands, y.operands
                if len(xs) != len(ys):
                    return False
                pending.extend(reversed(list(zip(xs, ys, strict=True))))
        return True

    def exprs(self, a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
        return len(a) == len(b) and all(self.expr(x, y) for x, y in zip(a, b, strict=True))

    def stmt(self, a: Stmt | None, b: Stmt | None) -> bool:
        if a is None or b is None:
            return a is b
        if type(a) is not type(b):
            return False
        if isinstance(a, For):
            assert isinstance(b, For)
            return (
                a.kind == b.kind
                and a.thread_binding == b.thread_binding
                and a.annotations == b.annotations
                and self.expr(a.min, b.min)
                and self.expr(a.extent, b.extent)
                and self.define_var(a.loop_var, b.loop_var)
                and self.stmt(a.body, b.body)
            )
        if isinstance(a, LetStmt):
            assert isinstance(b, LetStmt)
            return (
                self.expr(a.value, b.value)
                and self.define_var(a.var, b.var)
                and self.stmt(a.body, b.body)
            )
        if isinstance(a, Allocate):
            assert isinstance(b, Allocate)
            return self.define_buffer(a.buffer, b.buffer) and self.stmt(a.body, b.body)
        if isinstance(a, BufferStore):
            assert isinstance(b, BufferStore)
            return (
                self.buffer(a.buffer, b.buffer)
                and self.expr(a.value, b.value)
                and self.exprs(a.indices, b.indices)
            )
        if isinstance(a, IfThenElse):
            assert isinstance(b, IfThenElse)
            return (
                self.expr(a.condition, b.condition)
                and self.stmt(a.then_case, b.then_case)
                and self.stmt(a.else_case, b.else_case)
            )
        if isinstance(a, Evaluate):
            assert isinstance(b, Evaluate)
            return self.expr(a.value, b.value)
        if isinstance(a, SeqStmt):
            assert isinstance(b, SeqStmt)
            return len(a.seq) == len(b.seq) and all(
                self.stmt(x, y) for x, y in zip(a.seq, b.seq, strict=True)
            )
        raise VMTypeError(f"structural_equal: unknown statement type {type(a).__name__}")

    def func(self, a: PrimFunc, b: PrimFunc) -> bool:
        if len(a.params) != len(b.params) or a.attrs != b.attrs:
            return False
        for x, y in zip(a.params, b.params, strict=True):
            if not self.define_var(x, y):
                return False
            bx, by = a.buffer_map.get(x), b.buffer_map.get(y)
            if (bx is None) != (by is None):
                return False
            if bx is not None and not self.define_buffer(bx, by):  # type: ignore[arg-type]
                return False
        return self.stmt(a.body, b.body)


def structural_equal(
    lhs: Stmt | PrimFunc, rhs: Stmt | PrimFunc, map_free_vars: bool = False
) -> bool:
    """Whether two statements (or two PrimFuncs) have the same structure.

    Parameters
    ----------
    lhs, rhs : Stmt or PrimFunc
    map_free_vars : bool
        Also pair free variables and free buffers one-to-one instead of requiring identity.
    """
    comparer = _Comparer(map_free_vars)
    if isinstance(lhs, PrimFunc) or isinstance(rhs, PrimFunc):
        if not (isinstance(lhs, PrimFunc) and isinstance(rhs, PrimFunc)):
            return False
        return comparer.func(lhs, rhs)
    return comparer.stmt(lhs, rhs)


def structural_hash(node: Stmt | PrimFunc, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` under the same ``map_free_vars``.

    Defined variables and buffers hash by their order of definition; free ones by identity
    (or by order of appearance with ``map_free_vars=True``).
    """
    numbers: dict[Any, int] = {}
    parts: list[Any] = []

    def define(key: Any) -> None:
        numbers.setdefault(key, len(numbers))

    def ref(key: Any) -> Any:
        if key in numbers:
            return ("def", numbers[key])
        if map_free_vars:
            define(key)
            return ("def", numbers[key])
        return ("free", id(key))

    def expr(e: PrimExpr) -> None:
        stack = [e]
        while stack:
            node = stack.pop()
            if isinstance(node, Var):
                parts.append(("var", str(node.dtype), ref(node)))
            elif isinstance(node, (IntImm, FloatImm)):
                parts.append(("const", str(node.dtype), hash(node)))
            else:
                if isinstance(node, BufferLoad):
                    parts.append(("load", ref(node.buffer)))
                parts.append((type(node).__name__, str(node.dtype), len(node.operands)))
                stack.extend(reversed(node.operands))

    def buffer_def(buffer: Buffer) -> None:
        for extent in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            if isinstance(extent, Var) and extent not in numbers:
                define(extent)
            expr(extent)
        define(buffer)
        define(buffer.data)
        parts.append(("buffer", str(buffer.dtype), buffer.scope, buffer.ndim))

    def stmt(s: Stmt | None) -> None:
        parts.append(type(s).__name__)
        if s is None:
            return
        if isinstance(s, For):
            parts.append(
                (int(s.kind), s.thread_binding, repr(sorted(s.annotations.items(), key=str)))
            )
            expr(s.min)
            expr(s.extent)
            define(s.loop_var)
            stmt(s.body)
        elif isinstance(s, LetStmt):
            expr(s.value)
            define(s.var)
            stmt(s.body)
        elif isinstance(s, Allocate):
            buffer_def(s.buffer)
            stmt(s.body)
        elif isinstance(s, BufferStore):
            parts.append(ref(s.buffer))
            expr(s.value)
            for index in s.indices:
                expr(index)
        elif isinstance(s, IfThenElse):
            expr(s.condition)
            stmt(s.then_case)
            stmt(s.else_case)
        elif isinstance(s, Evaluate):
            expr(s.value)
        elif isinstance(s, SeqStmt):
            parts.append(len(s.seq))
            for item in s.seq:
                stmt(item)

    if isinstance(node, PrimFunc):
        parts.append(("func", repr(sorted(node.attrs.items(), key=str))))
        for param in node.params:
            define(param)
            parts.append(("param", str(param.dtype)))
            if param in node.buffer_map:
                buffer_def(node.buffer_map[param])
        stmt(node.body)
    else:
        stmt(node)
    return hash(tuple(parts))
