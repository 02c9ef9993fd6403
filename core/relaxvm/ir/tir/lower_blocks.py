"""Lower TIR blocks to plain loop IR (TVM's ``LowerInitBlock`` + ``ConvertBlocksToOpaque`` +
``LowerOpaqueBlock``, in one pass).

For each ``BlockRealize``:

* the block's iteration variables are replaced by the values they are bound to;
* ``init`` runs first when every reduction variable is at the start of its domain
  (``if vk == 0: init``), as TVM's ``LowerInitBlock`` does; a block without reduction
  variables runs its ``init`` unconditionally;
* ``alloc_buffers`` become :class:`~relaxvm.ir.tir.stmt.Allocate` around the block's code;
* a predicate (``T.where``) that is not constant true becomes an ``IfThenElse``.

The reads/writes regions are dropped (they are schedule information). The result is the loop
IR that the interpreter, the schedules and the code generators handle.
"""

from __future__ import annotations

from typing import Any

from ...errors import VMTypeError
from ..expr import IntImm, PrimExpr, Var
from ..expr_functor import substitute as substitute_expr
from ..op import equal, logical_and
from .block import Block, BlockRealize, IterVarType
from .function import PrimFunc
from .stmt import Allocate, IfThenElse, Stmt, seq
from .stmt_functor import StmtMutator, StmtVisitor, substitute

__all__ = ["has_blocks", "lower_blocks", "lower_blocks_stmt"]


def has_blocks(node: PrimFunc | Stmt) -> bool:
    """Whether ``node`` (a PrimFunc or statement) contains a block."""
    stmt = node.body if isinstance(node, PrimFunc) else node
    found = False

    class _Finder(StmtVisitor):
        def visit_block_realize_(self, stmt: BlockRealize) -> None:
            nonlocal found
            found = True

        def visit_block_(self, stmt: Block) -> None:
            nonlocal found
            found = True

    _Finder().visit_stmt(stmt)
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
        ``func`` is neither a PrimFunc nor a module.
    """
    if isinstance(func, PrimFunc):
        if not has_blocks(func):
            return func
        return func.with_body(lower_blocks_stmt(func.body))
    from ..relax.module import IRModule  # relax builds on tir, not the reverse

    if isinstance(func, IRModule):
        changed = {
            key: lower_blocks(value)
            for key, value in func.functions.items()
            if isinstance(value, PrimFunc) and has_blocks(value)
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


def lower_blocks_stmt(stmt: Stmt) -> Stmt:
    """``stmt`` with every block lowered to loop IR."""
    return _Lowerer().visit_stmt(stmt)


class _Lowerer(StmtMutator):
    def visit_block_realize_(self, stmt: BlockRealize) -> Stmt:
        block = stmt.block
        vmap: dict[Var, PrimExpr] = {
            item.var: value for item, value in zip(block.iter_vars, stmt.iter_values, strict=True)
        }
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
