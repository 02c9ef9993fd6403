"""The ``@T.prim_func`` parser: a Python function's AST to a TIR :class:`PrimFunc`.

Statements map to TIR nodes: ``for`` loops over ``range``/``T.grid``/``T.serial``... to
``For``, ``A[i, j] = v`` to ``BufferStore``, ``x = v`` to a ``LetStmt`` over the statements that
follow, ``B = T.alloc_buffer(...)`` to an ``Allocate`` over the statements that follow, ``if`` to
``IfThenElse``, ``T.evaluate(v)`` to ``Evaluate`` and ``with T.block(...):`` to a
``BlockRealize`` (:mod:`relaxvm.script.tir_block_parser`). ``T.decl_buffer`` and
``T.launch_thread`` are in :mod:`relaxvm.script.tir_scoped_forms`. A ``T.handle`` parameter
that nothing binds stays an opaque handle, as in TVM.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from ..ir.arith import Analyzer
from ..ir.expr import IntImm, PrimExpr
from ..ir.expr import Var as SymVar
from ..ir.op import convert
from ..ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
    seq,
    undefined_vars,
)
from ..ir.tir.lower_blocks import lower_for_analysis
from . import tir as T
from ._eval import _BINOPS, Evaluator, _cause
from ._source import ScriptError, Source
from .tir_block_parser import BLOCK_ONLY, BlockParserMixin
from .tir_blocks import BlockSpec, InitSpec
from .tir_scoped_forms import ScopedFormsMixin

__all__ = ["TIRParser", "declared_sym_vars"]

_HANDLED = object()


def _is_dtype_call(evaluator: Evaluator, node: ast.expr) -> T.DType | None:
    """``T.int64()`` (no arguments): a symbolic variable declaration."""
    if not (isinstance(node, ast.Call) and not node.args):
        return None
    if any(keyword.arg != "is_size_var" for keyword in node.keywords):
        return None
    try:
        func = evaluator.eval(node.func)
    except ScriptError:
        return None
    return func if isinstance(func, T.DType) else None


def declared_sym_vars(evaluator: Evaluator, body: list[ast.stmt]) -> None:
    """Pre-declare ``n = T.int64()`` / ``m, n = T.int64(), T.int64()`` statements of a body,
    so that parameter annotations (evaluated before the body) can name them."""
    for stmt in body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(target, ast.Name):
            pairs = [(target, value)]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            pairs = list(zip(target.elts, value.elts, strict=False))
        for name_node, call in pairs:
            dtype = _is_dtype_call(evaluator, call)
            if dtype is not None and isinstance(name_node, ast.Name):
                size_var = any(
                    keyword.arg == "is_size_var" and evaluator.eval(keyword.value)
                    for keyword in call.keywords  # type: ignore[attr-defined]
                )
                evaluator.symbolic_var(name_node.id, dtype.dtype, size_var)


def is_declaration(evaluator: Evaluator, stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    value = stmt.value
    calls = value.elts if isinstance(value, ast.Tuple) else [value]
    return bool(calls) and all(_is_dtype_call(evaluator, call) is not None for call in calls)


def is_call_of(evaluator: Evaluator, stmt: ast.stmt, target: Any) -> bool:
    """Whether ``stmt`` is an expression statement calling ``target`` (e.g. T.func_attr)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    try:
        return evaluator.eval(stmt.value.func) is target
    except ScriptError:
        return False


class TIRParser(BlockParserMixin, ScopedFormsMixin, Evaluator):
    """Parses one ``@T.prim_func`` definition."""

    language = "prim_func"

    def __init__(self, source: Source, env: dict[str, Any]) -> None:
        super().__init__(source, env)
        self.buffer_map: dict[SymVar, Buffer] = {}
        self.handles: set[SymVar] = set()
        #: T.env_thread variables and their threads.
        self.env_threads: dict[SymVar, str] = {}
        #: Each enclosing loop variable's (start, extent), for T.axis.remap.
        self.loop_doms: dict[SymVar, tuple[Any, Any]] = {}
        self._analyzer = Analyzer()

    # ---- the function -----------------------------------------------------------------------
    def parse_function(
        self, node: ast.FunctionDef, private: bool = False, check_well_formed: bool = True
    ) -> PrimFunc:
        with self.active():
            return self._parse_function(node, private, check_well_formed)

    def _parse_function(
        self, node: ast.FunctionDef, private: bool, check_well_formed: bool
    ) -> PrimFunc:
        _check_plain_args(self, node)
        declared_sym_vars(self, node.body)
        params: list[Any] = []
        for arg in node.args.args:
            params.append(self._param(arg))
        attrs: dict[str, Any] = {} if private else {"global_symbol": node.name}
        statements = []
        for stmt in node.body:
            if is_call_of(self, stmt, T.func_attr):
                call = stmt.value  # type: ignore[attr-defined]
                value = self.eval(call.args[0]) if len(call.args) == 1 else None
                if not isinstance(value, dict):
                    raise self.error(call, "T.func_attr expects one dict of attributes")
                attrs.update(value)
            elif not is_declaration(self, stmt) and not _is_docstring(stmt):
                statements.append(stmt)
        # A T.handle parameter never matched stays an opaque handle (TVM allows it); a kernel
        # run needs it bound to a buffer (a T.decl_buffer(..., data=handle) does that).
        # A function whose whole code is one `with T.block(...)` has a root block: TVM's parser
        # leaves its reads and writes empty (tir_block_parser reads this).
        self.root_statement = statements[0] if len(statements) == 1 else None
        try:
            body = self.parse_body(statements)
        finally:
            self.root_statement = None
        try:
            func = PrimFunc(params, body, self.buffer_map, attrs)
        except Exception as err:
            raise self.error(node, f"invalid prim_func '{node.name}': {err}") from None
        if check_well_formed:
            # Lowered first: block iteration variables and scratch buffers are definitions.
            missing = undefined_vars(lower_for_analysis(func))
            if missing:
                names = ", ".join(sorted(str(var.name) for var in missing))
                raise self.error(
                    node,
                    f"prim_func '{node.name}' uses {names} without defining it; symbolic sizes "
                    "must appear in a parameter buffer's shape or be a scalar parameter",
                )
        return func

    def _param(self, arg: ast.arg) -> Any:
        if arg.annotation is None:
            raise self.error(
                arg,
                f"parameter '{arg.arg}' needs an annotation: T.Buffer((n, 4), \"float32\"), "
                "T.handle or a scalar type such as T.int64",
            )
        ann = self.eval(arg.annotation)
        if isinstance(ann, T.BufferSpec):
            buffer = self.make_buffer(arg.arg, ann, arg.annotation)
            self.define(arg.arg, buffer)
            return buffer
        if isinstance(ann, T.DType):
            var = SymVar(arg.arg, ann.dtype)
            if ann.dtype == "handle":
                self.handles.add(var)
            self.define(arg.arg, var)
            if ann.dtype != "handle":
                self.sym_vars.setdefault(arg.arg, var)
            return var
        raise self.error(
            arg.annotation,
            f"parameter '{arg.arg}': expected T.Buffer(...), T.handle or a scalar type, "
            f"got {ann!r}",
        )

    def make_buffer(self, name: str, spec: T.BufferSpec, node: ast.AST) -> Buffer:
        try:
            return Buffer(name, spec.shape, spec.dtype, spec.strides, spec.elem_offset, spec.scope)
        except Exception as err:
            raise self.error(node, str(err)) from None

    # ---- statements -------------------------------------------------------------------------
    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
        with self.scope():
            return seq(self._stmts(stmts, 0))

    def _stmts(self, stmts: list[ast.stmt], start: int) -> list[Stmt]:
        out: list[Stmt] = []
        for index in range(start, len(stmts)):
            stmt = stmts[index]
            try:
                scoped = self._scoped(stmt)
                if scoped is _HANDLED:
                    continue
                if scoped is not None:
                    # A let or an allocation covers the rest of the block.
                    make, name, value = scoped
                    with self.scope():
                        if name is not None:
                            self.define(name, value)
                        rest = seq(self._stmts(stmts, index + 1))
                    out.append(make(rest))
                    return out
                result = self.stmt(stmt)
            except ScriptError:
                raise
            except Exception as err:
                raise self.wrap_error(stmt, err) from _cause(err)
            if result is not None:
                out.append(result)
        return out

    def _scoped(self, stmt: ast.stmt) -> Any:
        """For ``x = value`` and ``B = T.alloc_buffer(...)``: (builder of the node from the
        rest of the block, the name, what it stands for)."""
        target: ast.expr
        value_node: ast.expr | None
        ann: ast.expr | None
        if isinstance(stmt, ast.AnnAssign):
            target, value_node, ann = stmt.target, stmt.value, stmt.annotation
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value_node, ann = stmt.targets[0], stmt.value, None
        elif is_call_of(self, stmt, T.launch_thread):
            # `T.launch_thread(tx, n)`: the env_thread variable's loop over the rest.
            spec = self.eval(stmt.value)  # type: ignore[attr-defined]
            return self.launch_statement(spec, stmt), None, None
        else:
            return None
        if not isinstance(target, ast.Name) or value_node is None:
            return None
        if is_declaration(self, stmt):
            return None
        value = self.eval(value_node)
        if isinstance(value, T.EnvThread):
            self.define(target.id, self.env_thread(target.id, value))
            return _HANDLED
        form = self.scoped_form(target.id, value, value_node)
        if form is not None:
            return form[0], target.id, form[1]
        if isinstance(value, T.BufferSpec):
            if value.region is not None:
                raise self.error(
                    stmt,
                    f"T.match_buffer of a buffer region ('{target.id}') must be a statement "
                    "directly inside a T.block",
                )
            if value.handle is not None:
                self._match_buffer(target.id, value, stmt)
                return _HANDLED
            buffer = self.make_buffer(target.id, value, value_node)
            return (lambda body: Allocate(buffer, body)), target.id, buffer
        if isinstance(value, (PrimExpr, int, float)) and not isinstance(value, bool):
            if ann is not None:
                dtype_ann = self.eval(ann)
                if not isinstance(dtype_ann, T.DType):
                    raise self.error(
                        ann, f"expected a scalar type such as T.int32, got {dtype_ann!r}"
                    )
                dtype = dtype_ann.dtype
            else:
                dtype = str(convert(value).dtype)
            var = SymVar(target.id, dtype)
            return (lambda body: LetStmt(var, value, body)), target.id, var
        raise self.error(
            value_node,
            f"cannot bind {type(value).__name__} to '{target.id}' in a prim_func; expected a "
            "scalar expression (a let), T.alloc_buffer(...) or T.match_buffer(...)",
        )

    def _match_buffer(self, name: str, spec: T.BufferSpec, stmt: ast.stmt) -> None:
        handle = spec.handle
        if handle not in self.handles:
            raise self.error(stmt, f"T.match_buffer: '{handle.name}' is not a T.handle parameter")
        if handle in self.buffer_map:
            raise self.error(stmt, f"T.match_buffer: handle '{handle.name}' is matched twice")
        buffer = self.make_buffer(name, spec, stmt)
        self.buffer_map[handle] = buffer
        self.scopes[0][name] = buffer

    def stmt(self, stmt: ast.stmt) -> Stmt | None:
        if isinstance(stmt, ast.Assign):
            return self._assign(stmt)
        if isinstance(stmt, ast.AugAssign):
            return self._aug_assign(stmt)
        if isinstance(stmt, ast.AnnAssign):
            raise self.error(stmt, "an annotated assignment needs a value")
        if isinstance(stmt, ast.For):
            return self._for(stmt)
        if isinstance(stmt, ast.If):
            cond = self.eval(stmt.test)
            then_case = self.parse_body(stmt.body)
            else_case = self.parse_body(stmt.orelse) if stmt.orelse else None
            return IfThenElse(cond, then_case, else_case)
        if isinstance(stmt, ast.Expr):
            if _is_docstring(stmt):
                return None
            if is_call_of(self, stmt, T.func_attr):
                raise self.error(stmt, "T.func_attr must be a statement of the function body")
            for block_only in BLOCK_ONLY:
                if is_call_of(self, stmt, block_only):
                    raise self.error(
                        stmt, f"T.{block_only.__name__} may only appear directly inside a T.block"
                    )
            value = self.eval(stmt.value)
            if isinstance(value, T._Evaluate):
                return Evaluate(value.value)
            if isinstance(value, PrimExpr):
                return Evaluate(value)
            raise self.error(stmt, f"this expression statement does nothing (value {value!r})")
        if isinstance(stmt, ast.Pass):
            return None
        if isinstance(stmt, ast.Return):
            raise self.error(
                stmt, "a prim_func returns nothing: write results into a buffer parameter"
            )
        if isinstance(stmt, ast.With):
            return self._with(stmt)
        raise self.unsupported(stmt, "a prim_func")

    def _with(self, stmt: ast.With) -> Stmt:
        """``with T.LetStmt(v) as x:`` and ``with T.alloc_buffer(...) as B:``: a let or an
        allocation whose scope is the block (not the rest of the enclosing block)."""
        item = stmt.items[0] if len(stmt.items) == 1 else None
        target = item.optional_vars if item is not None else None
        value = self.eval(item.context_expr) if item is not None else None
        if isinstance(value, BlockSpec):
            return self.parse_block(stmt, value)
        if isinstance(value, InitSpec):
            raise self.error(stmt, "`with T.init():` may only appear directly inside a T.block")
        if not isinstance(target, ast.Name) or not isinstance(
            value, (T.LetSpec, T.BufferSpec, T.LaunchSpec)
        ):
            raise self.error(
                stmt,
                "expected `with T.LetStmt(value) as x:`, `with T.alloc_buffer(...) as B:`, "
                "`with T.decl_buffer(...) as B:` or `with T.launch_thread(thread, n) as tx:`",
            )
        form = self.scoped_form(target.id, value, item.context_expr)  # type: ignore[union-attr]
        if form is not None:
            make, bound_value = form
            with self.scope():
                self.define(target.id, bound_value)
                body = seq(self._stmts(stmt.body, 0))
            return make(body)  # type: ignore[no-any-return]
        if isinstance(value, T.BufferSpec):
            if value.region is not None or value.handle is not None:
                raise self.error(stmt, "T.match_buffer is a statement, not a `with` block")
            buffer = self.make_buffer(target.id, value, item.context_expr)  # type: ignore[union-attr]
            with self.scope():
                self.define(target.id, buffer)
                return Allocate(buffer, seq(self._stmts(stmt.body, 0)))
        let_spec: T.LetSpec = value  # type: ignore[assignment]  # the launch is a scoped form
        var = SymVar(target.id, let_spec.dtype or str(convert(let_spec.value).dtype))
        with self.scope():
            self.define(target.id, var)
            return LetStmt(var, let_spec.value, seq(self._stmts(stmt.body, 0)))

    def _assign(self, stmt: ast.Assign) -> Stmt | None:
        if is_declaration(self, stmt):
            return None  # declared before the parameters were read
        if len(stmt.targets) != 1:
            raise self.error(stmt, "chained assignment (a = b = ...) is not supported")
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            buffer = self.eval(target.value)
            if not isinstance(buffer, Buffer):
                raise self.error(target.value, f"'{ast.unparse(target.value)}' is not a buffer")
            indices = self.eval(target.slice)
            return BufferStore(buffer, self.eval(stmt.value), indices)
        raise self.error(
            target,
            "expected a buffer store `A[i, j] = value` or a name (a let) on the left side",
        )

    def _aug_assign(self, stmt: ast.AugAssign) -> Stmt:
        if not isinstance(stmt.target, ast.Subscript):
            raise self.error(stmt.target, "augmented assignment needs a buffer element `A[i] += v`")
        buffer = self.eval(stmt.target.value)
        if not isinstance(buffer, Buffer):
            raise self.error(
                stmt.target.value, f"'{ast.unparse(stmt.target.value)}' is not a buffer"
            )
        indices = self.eval(stmt.target.slice)
        value = _BINOPS[type(stmt.op)](buffer[indices], self.eval(stmt.value))
        return BufferStore(buffer, value, indices)

    def _for(self, stmt: ast.For) -> Stmt:
        if stmt.orelse:
            raise self.error(stmt.orelse[0], "`for ... else` is not supported")
        spec = self.eval(stmt.iter)
        if not isinstance(spec, T.LoopSpec):
            raise self.error(
                stmt.iter,
                "expected a loop iterator: range(...), T.grid(...), T.serial(...), "
                "T.parallel(...), T.vectorized(...), T.unroll(...) or T.thread_binding(...)",
            )
        targets = stmt.target.elts if isinstance(stmt.target, ast.Tuple) else [stmt.target]
        if len(targets) != len(spec.extents) or not all(isinstance(t, ast.Name) for t in targets):
            raise self.error(
                stmt.target,
                f"expected {len(spec.extents)} loop variable name(s) for "
                f"{ast.unparse(stmt.iter)}, got `{ast.unparse(stmt.target)}`",
            )
        loops: list[tuple[SymVar, Any, Any]] = []
        with self.scope():
            for name_node, (start, stop) in zip(targets, spec.extents, strict=True):
                extent = self._extent(start, stop)
                var = SymVar(name_node.id, str(convert(extent).dtype))  # type: ignore[attr-defined]
                self.define(name_node.id, var)  # type: ignore[attr-defined]
                self.loop_doms[var] = (start, extent)
                loops.append((var, start, extent))
            body = seq(self._stmts(stmt.body, 0))
        for var, start, extent in reversed(loops):
            body = For(var, start, extent, spec.kind, body, spec.thread, spec.annotations)
        return body

    def _extent(self, start: Any, stop: Any) -> Any:
        if isinstance(start, int) and start == 0:
            return stop
        if isinstance(start, IntImm) and start.value == 0:
            return stop
        if isinstance(start, int) and isinstance(stop, int):
            return stop - start
        return self._analyzer.simplify(convert(stop) - convert(start))

    def subscript(self, node: ast.Subscript, value: Any) -> Any:
        if isinstance(value, Buffer):
            region = self.region_subscript(node, value)
            if region is not None:
                return region
        return super().subscript(node, value)

    def apply(self, node: ast.Call, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if func is builtins.range:
            func = T.serial  # `for i in range(n)` with a symbolic n
        return super().apply(node, func, args, kwargs)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _check_plain_args(evaluator: Evaluator, node: ast.FunctionDef) -> None:
    args = node.args
    extra = args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg or args.defaults
    if extra:
        raise evaluator.error(
            node,
            f"function '{node.name}': only plain annotated parameters are supported (no "
            "defaults, *args, **kwargs, keyword-only or positional-only parameters)",
        )
