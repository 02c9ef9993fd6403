"""The ``@T.prim_func`` forms that cover the rest of their block or a ``with`` body:
``T.decl_buffer``, ``T.env_thread`` / ``T.launch_thread``, and buffer regions in
subscripts (``A[vi, 0:4]``, the argument of a block-level ``T.match_buffer``).

* ``B = T.decl_buffer(shape, dtype, data=A.data)`` is a ``DeclBuffer`` over the statements
  that follow (``with T.decl_buffer(...) as B:`` over the block); without ``data`` it
  allocates, an ``Allocate`` like ``T.alloc_buffer``.
* ``tx = T.launch_thread("threadIdx.x", n)`` (or ``T.launch_thread(tx, n)`` after
  ``tx = T.env_thread("threadIdx.x")``, or ``with T.launch_thread(...) as tx:``) is a loop
  bound to the thread, ``For(kind=THREAD_BINDING)``: TVM's ``LowerOpaqueBlock`` turns such
  loops into launches, so both spellings mean the same kernel.
"""

from __future__ import annotations

import ast
from typing import Any

from ..ir.arith import Analyzer
from ..ir.expr import PrimExpr, Range
from ..ir.expr import Var as SymVar
from ..ir.op import const, convert
from ..ir.tir import Allocate, Buffer, For, ForKind, Stmt
from ..ir.tir.block import BufferRegion
from ..ir.tir.stmt import DeclBuffer
from . import tir as T

__all__ = ["ScopedFormsMixin", "slice_range"]


def slice_range(low: PrimExpr, high: PrimExpr) -> Range:
    """The range of slice ``low:high``, its extent simplified (``vi * 4:vi * 4 + 4`` has
    extent 4), so that printing ``low:low + extent`` and parsing it back gives it again."""
    extent = Analyzer().simplify(convert(high) - convert(low))
    return Range.from_min_extent(low, extent)


class ScopedFormsMixin:
    """The part of :class:`relaxvm.script._tir_parser.TIRParser` for the forms above."""

    # Provided by the parser.
    eval: Any
    error: Any
    make_buffer: Any
    handles: set[SymVar]
    buffer_map: dict[SymVar, Buffer]
    env_threads: dict[SymVar, str]

    def scoped_form(self, name: str, value: Any, node: ast.AST) -> Any:
        """For ``name = value`` where ``value`` opens a scope: (builder of the node from the
        body, the value ``name`` stands for); None for another kind of value."""
        if isinstance(value, T.BufferSpec) and value.decl:
            buffer = self._declared_buffer(name, value, node)
            if value.data is None:
                return (lambda body: Allocate(buffer, body)), buffer
            return (lambda body: DeclBuffer(buffer, body)), buffer
        if isinstance(value, T.LaunchSpec):
            if value.var is not None:
                raise self.error(
                    node,
                    f"`{name} = T.launch_thread({value.var.name}, ...)`: launch an env_thread "
                    f"variable as a statement, `T.launch_thread({value.var.name}, extent)`",
                )
            var = SymVar(name, str(convert(value.extent).dtype))
            return self._launch(var, value), var
        return None

    def launch_statement(self, value: T.LaunchSpec, node: ast.AST) -> Any:
        """``T.launch_thread(tx, n)`` as a statement: the builder of its loop."""
        var = value.var
        if var is None:
            raise self.error(
                node,
                'T.launch_thread("...", n) as a statement binds no variable; write '
                '`tx = T.launch_thread("threadIdx.x", n)`',
            )
        if var not in self.env_threads:
            raise self.error(node, f"T.launch_thread: '{var.name}' is not a T.env_thread variable")
        return self._launch(var, value._replace(thread=self.env_threads[var]))

    def env_thread(self, name: str, value: T.EnvThread) -> SymVar:
        """``tx = T.env_thread("threadIdx.x")``: a variable for later launches."""
        var = SymVar(name, "int64")
        self.env_threads[var] = value.thread
        return var

    def _launch(self, var: SymVar, spec: T.LaunchSpec) -> Any:
        def make(body: Stmt) -> Stmt:
            return For(var, 0, spec.extent, ForKind.THREAD_BINDING, body, spec.thread)

        return make

    def _declared_buffer(self, name: str, spec: T.BufferSpec, node: ast.AST) -> Buffer:
        if spec.data is None:
            return self.make_buffer(name, spec, node)  # type: ignore[no-any-return]
        try:
            return Buffer(
                name, spec.shape, spec.dtype, spec.strides, spec.elem_offset, spec.scope, spec.data
            )
        except Exception as err:
            raise self.error(node, f"T.decl_buffer '{name}': {err}") from None

    def region_subscript(self, node: ast.Subscript, buffer: Buffer) -> Any:
        """``A[vi, 0:4]``: a BufferRegion when an index is a slice, else None."""
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not any(isinstance(part, ast.Slice) for part in parts):
            return None
        if len(parts) != buffer.ndim:
            raise self.error(
                node,
                f"region of '{buffer.name}' has {len(parts)} indices for {buffer.ndim} dimensions",
            )
        ranges = []
        for dim, part in enumerate(parts):
            if isinstance(part, ast.Slice):
                if part.step is not None:
                    raise self.error(part, "a region slice takes no step")
                low = convert(self.eval(part.lower)) if part.lower else const(0, "int64")
                high = convert(self.eval(part.upper)) if part.upper else buffer.shape[dim]
                ranges.append(slice_range(low, high))
            else:
                index: PrimExpr = convert(self.eval(part))
                ranges.append(Range.from_min_extent(index, const(1, str(index.dtype))))
        return BufferRegion(buffer, ranges)
