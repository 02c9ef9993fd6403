"""Lower TIR blocks to plain loop IR (TVM's ``LowerInitBlock`` + ``ConvertBlocksToOpaque`` +
``LowerOpaqueBlock``, in one pass).

For each ``BlockRealize``:

* the block's iteration variables are replaced by the values they are bound to;
* ``init`` runs first when every reduction variable is at the start of its domain
  (``if vk == 0: init``), as TVM's ``LowerInitBlock`` does; a block without reduction
  variables runs its ``init`` unconditionally. Where the reduction variables are bound to
  exactly the innermost loops around the block, over their domains (te's reductions), the
  init is instead placed before those loops, unguarded: the loop nest the schedules read as a
  reduction stage (it also stores the init when the loops run zero times);
* ``alloc_buffers`` become :class:`~relaxvm.ir.tir.stmt.Allocate` around the block's code;
* a predicate (``T.where``) that is not constant true becomes an ``IfThenElse``;
* a block-level ``T.match_buffer`` view is replaced by the region of the buffer it views
  (:mod:`relaxvm.ir.tir.lower_match_buffer`).

The same pass removes the other declarative forms: a ``DeclBuffer`` aliasing another
buffer's memory is replaced by that buffer (a ``DeclBuffer`` over a ``T.handle`` parameter
makes it the parameter's buffer), and ``Let`` expressions are inlined. The reads/writes
regions are dropped (they are schedule information). The result is the loop IR that the
interpreter, the schedules and the code generators handle.
"""

from __future__ import annotations

from typing import Any

from ...errors import VMTypeError
from ..expr import IntImm, PrimExpr, Var
from ..expr_functor import free_vars
from ..expr_functor import substitute as substitute_expr
from ..op import equal, logical_and
from .block import Block, BlockRealize, IterVarType
from .buffer import Buffer
from .function import PrimFunc
from .let_expr import has_lets, inline_lets
from .lower_match_buffer import alias_indices, match_indices, redirect_buffers
from .stmt import Allocate, DeclBuffer, For, ForKind, IfThenElse, Stmt, seq
from .stmt_functor import StmtMutator, StmtVisitor, substitute

__all__ = [
    "as_loop_nests",
    "has_blocks",
    "lower_blocks",
    "lower_blocks_stmt",
    "lower_for_analysis",
    "opaque_handles",
]


class _Finder(StmtVisitor):
    """Finds what lowering removes: blocks, and unless ``blocks_only``, ``DeclBuffer`` and
    ``Let`` expressions."""

    def __init__(self, blocks_only: bool = False) -> None:
        self.blocks_only = blocks_only
        self.found = False

    def visit_stmt(self, stmt: Stmt) -> None:
        if not self.found:
            super().visit_stmt(stmt)

    def visit_expr(self, expr: PrimExpr) -> None:
        if not self.found and not self.blocks_only and has_lets(expr):
            self.found = True

    def visit_block_realize_(self, stmt: BlockRealize) -> None:
        self.found = True

    def visit_block_(self, stmt: Block) -> None:
        self.found = True

    def visit_decl_buffer_(self, stmt: DeclBuffer) -> None:
        if self.blocks_only:
            super().visit_decl_buffer_(stmt)
        else:
            self.found = True


def has_blocks(node: PrimFunc | Stmt) -> bool:
    """Whether ``node`` (a PrimFunc or statement) contains something :func:`lower_blocks`
    removes: a block, a ``DeclBuffer`` or a ``Let`` expression."""
    stmt = node.body if isinstance(node, PrimFunc) else node
    finder = _Finder()
    finder.visit_stmt(stmt)
    return finder.found


def as_loop_nests(func: PrimFunc) -> PrimFunc:
    """``func`` with its blocks lowered (:func:`lower_blocks`) if it has any, else ``func``
    itself, ``Let`` expressions and ``DeclBuffer`` s kept.

    For the passes that read loop nests (op-pattern analysis, FuseTIR, the schedules): a
    kernel from ``te.create_prim_func`` is in block form, and lowers to the loop nest
    ``te.create_loop_func`` builds; a kernel without blocks is read as it is.
    """
    finder = _Finder(blocks_only=True)
    finder.visit_stmt(func.body)
    return _lower_func(func) if finder.found else func


def opaque_handles(func: PrimFunc) -> list[Var]:
    """The ``T.handle`` parameters of ``func`` bound to no buffer (neither by the buffer map
    nor by a ``T.decl_buffer(..., data=handle)`` in the body)."""
    params = [p for p in func.params if str(p.dtype) == "handle" and p not in func.buffer_map]
    if not params:
        return []
    declared = _handle_decls(func.body, set(params))
    return [p for p in params if p not in declared]


def _handle_decls(body: Stmt, handles: set[Var]) -> dict[Var, Buffer]:
    """The first ``DeclBuffer`` (pre-order) over each handle in ``handles``."""
    found: dict[Var, Buffer] = {}

    class _Decls(StmtVisitor):
        def visit_decl_buffer_(self, stmt: DeclBuffer) -> None:
            if stmt.buffer.data in handles:
                found.setdefault(stmt.buffer.data, stmt.buffer)
            super().visit_decl_buffer_(stmt)

    _Decls().visit_stmt(body)
    return found


def lower_blocks(func: Any) -> Any:
    """``func`` with its blocks lowered to loops; returned as is when it has none.

    Parameters
    ----------
    func : PrimFunc or IRModule or mapping
        A PrimFunc, or a module whose PrimFuncs are lowered (other functions are kept).

    Returns
    -------
    PrimFunc or IRModule or dict
        The same kind of object.

    Raises
    ------
    VMTypeError
        ``func`` is neither a PrimFunc nor a module, or a PrimFunc has a ``T.handle``
        parameter bound to no buffer (a kernel cannot run with an opaque pointer).
    """
    if isinstance(func, PrimFunc):
        _check_handles(func)
        return _lower_func(func)
    from ..relax.module import IRModule  # relax builds on tir, not the reverse

    if isinstance(func, IRModule):
        for value in func.functions.values():
            if isinstance(value, PrimFunc):
                _check_handles(value)
        changed = {
            key: lowered
            for key, value in func.functions.items()
            if isinstance(value, PrimFunc) and (lowered := _lower_func(value)) is not value
        }
        if not changed:
            return func
        new = func.copy()
        for key, value in changed.items():
            new.update_func(key, value)
        return new
    if isinstance(func, dict):
        return {key: lower_blocks(value) for key, value in func.items()}
    raise VMTypeError(
        f"lower_blocks: expected a PrimFunc or an IRModule, got {type(func).__name__}"
    )


def lower_for_analysis(func: PrimFunc) -> PrimFunc:
    """:func:`lower_blocks` for analyses (the parser's and printer's use-def checks): opaque
    handle parameters are left as they are."""
    return _lower_func(func)


def _check_handles(func: PrimFunc) -> None:
    opaque = opaque_handles(func)
    if opaque:
        name = opaque[0].name
        raise VMTypeError(
            f"prim_func '{func.name}': parameter '{name}' is an opaque T.handle (bound to no "
            "buffer), so the kernel cannot be run or compiled; bind it with "
            f"`T.match_buffer({name}, shape, dtype)` or `T.decl_buffer(shape, dtype, "
            f"data={name})`, or annotate it `{name}: T.Buffer(shape, dtype)`"
        )


def _lower_func(func: PrimFunc) -> PrimFunc:
    handles = {p for p in func.params if str(p.dtype) == "handle" and p not in func.buffer_map}
    decls = _handle_decls(func.body, handles) if handles else {}
    if not has_blocks(func):
        return func
    buffer_map = dict(func.buffer_map)
    # `A = T.decl_buffer(shape, dtype, data=a)` over a T.handle parameter: the parameter's
    # buffer, as if matched (the kernel is then called with an array for it).
    buffer_map.update(decls)
    lowerer = _Lowerer()
    for buffer in buffer_map.values():
        lowerer.roots[buffer.data] = buffer
    body = lowerer.visit_stmt(func.body)
    if not decls:
        return func.with_body(body)
    return PrimFunc(func.params, body, buffer_map, func.attrs)


def lower_blocks_stmt(stmt: Stmt) -> Stmt:
    """``stmt`` with every block lowered to loop IR."""
    return _Lowerer().visit_stmt(stmt)


class _Lowerer(StmtMutator):
    def __init__(self) -> None:
        #: The buffer that owns each data handle (a parameter's or an allocation's): what a
        #: DeclBuffer aliasing that handle is redirected to.
        self.roots: dict[Var, Buffer] = {}

    def visit_expr(self, expr: PrimExpr) -> PrimExpr:
        return inline_lets(expr)

    def _own(self, buffer: Buffer) -> None:
        self.roots.setdefault(buffer.data, buffer)

    def visit_allocate_(self, stmt: Allocate) -> Stmt:
        self._own(stmt.buffer)
        return super().visit_allocate_(stmt)

    def visit_decl_buffer_(self, stmt: DeclBuffer) -> Stmt:
        buffer = stmt.buffer
        root = self.roots.get(buffer.data)
        body = self.visit_stmt(stmt.body)
        if root is buffer:
            return body
        if root is None:
            raise VMTypeError(
                f"lower_blocks: decl_buffer {buffer.name!r} declares memory '{buffer.data.name}'"
                " that no parameter, allocation or buffer in scope provides"
            )
        return redirect_buffers(body, {buffer: alias_indices(buffer, root)})

    def visit_for_(self, stmt: For) -> Stmt:
        hoisted = self._hoist_init(stmt)
        return hoisted if hoisted is not None else super().visit_for_(stmt)

    def _hoist_init(self, stmt: For) -> Stmt | None:
        """``init; for k...: body`` for a reduction block whose reduction variables are bound
        to exactly the perfect nest of loops starting at ``stmt`` (the block form of a te
        reduction), instead of ``for k...: if k == 0: init; body``.

        The two agree whenever the loops run (the init runs at the first iteration either
        way); with no iteration the hoisted init still stores the reduction's identity. It is
        the loop nest the schedules recognise as a reduction stage.
        """
        loops: list[For] = []
        node: Stmt = stmt
        while isinstance(node, For):
            loops.append(node)
            node = node.body
        if not isinstance(node, BlockRealize):
            return None
        block = node.block
        if block.init is None or block.match_buffers or block.alloc_buffers:
            return None
        if not (isinstance(node.predicate, IntImm) and node.predicate.value):
            return None
        loop_of = {loop.loop_var: loop for loop in loops}
        reduce_vars: set[Var] = set()
        for item, value in zip(block.iter_vars, node.iter_values, strict=True):
            if item.iter_type != IterVarType.COMM_REDUCE:
                if any(var in loop_of for var in free_vars(value)):
                    return None  # the init's element would change inside the nest
                continue
            loop = loop_of.get(value) if isinstance(value, Var) else None
            if loop is None or loop.loop_var in reduce_vars:
                return None
            if not (_same(loop.min, item.dom.min) and _same(loop.extent, item.dom.extent)):
                return None
            reduce_vars.add(loop.loop_var)
            reduce_vars.add(item.var)
        if len(loops) * 2 != len(reduce_vars):
            return None  # a loop of the nest is not a reduction variable
        if any(loop.kind != ForKind.SERIAL or loop.thread_binding for loop in loops):
            return None
        init_block = block.init
        if any(var in reduce_vars for var in _stmt_vars(init_block)):
            return None
        plain = Block(
            block.iter_vars,
            block.reads,
            block.writes,
            block.name_hint,
            block.body,
            None,
            annotations=block.annotations,
        )
        body = self.visit_block_realize_(BlockRealize(node.iter_values, True, plain))
        for loop in reversed(loops):
            body = For(
                loop.loop_var,
                loop.min,
                loop.extent,
                loop.kind,
                body,
                loop.thread_binding,
                loop.annotations,
            )
        vmap = {
            item.var: value
            for item, value in zip(block.iter_vars, node.iter_values, strict=True)
            if item.iter_type != IterVarType.COMM_REDUCE
        }
        init = substitute(self.visit_stmt(init_block), vmap)
        return seq(init, body)

    def visit_block_realize_(self, stmt: BlockRealize) -> Stmt:
        block = stmt.block
        vmap: dict[Var, PrimExpr] = {
            item.var: value for item, value in zip(block.iter_vars, stmt.iter_values, strict=True)
        }
        for buffer in block.alloc_buffers:
            self._own(buffer)
        body = self.visit_stmt(block.body)
        if block.init is not None:
            init = self.visit_stmt(block.init)
            conditions = [
                equal(item.var, item.dom.min)
                for item in block.iter_vars
                if item.iter_type == IterVarType.COMM_REDUCE
            ]
            if conditions:
                cond = conditions[0]
                for extra in conditions[1:]:
                    cond = logical_and(cond, extra)
                init = IfThenElse(cond, init)
            body = seq(init, body)
        if block.match_buffers:
            # Innermost views first, so that a view of a view ends at the outer buffer.
            for match in reversed(block.match_buffers):
                body = redirect_buffers(body, {match.buffer: match_indices(match)})
        for buffer in reversed(block.alloc_buffers):
            body = Allocate(buffer, body)
        if vmap:
            body = substitute(body, vmap)
        predicate = stmt.predicate
        if not (isinstance(predicate, IntImm) and predicate.value):
            pred = substitute_expr(predicate, vmap.get) if vmap else predicate
            body = IfThenElse(pred, body)
        return body

    def visit_block_(self, stmt: Block) -> Stmt:
        # A block without a realize (TVM's no_realize=True): only possible at the root.
        if stmt.iter_vars:
            raise VMTypeError(
                f"lower_blocks: block {stmt.name_hint!r} has iteration variables but no "
                "BlockRealize binding them"
            )
        return self.visit_block_realize_(BlockRealize((), True, stmt))


def _same(a: PrimExpr, b: PrimExpr) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    from ..structural import structural_equal  # structural builds on tir

    return a is b or structural_equal(a, b)


def _stmt_vars(stmt: Stmt) -> set[Var]:
    found: set[Var] = set()

    class _Vars(StmtVisitor):
        def visit_expr(self, expr: PrimExpr) -> None:
            found.update(free_vars(expr))

    _Vars().visit_stmt(stmt)
    return found
