"""Parsing ``with T.block("name"):`` in a ``@T.prim_func`` (TVM's block form).

A block body holds, in any order before or among its code: axis declarations
(``vi, vj = T.axis.remap("SS", [i, j])``, ``vk = T.axis.reduce(128, k)``), ``T.where(c)``,
``T.reads(...)``, ``T.writes(...)``, ``T.block_attr({...})``, scratch buffers
(``B = T.alloc_buffer(...)``, which become the block's ``alloc_buffers``), views of buffer
regions (``A_sub = T.match_buffer(A[vi, 0:4], (4,))``, the block's ``match_buffers``) and one
``with T.init():``. Everything else is the block's code.

A block written without ``T.reads``/``T.writes`` gets them from its code, as TVM's parser
completes it (:func:`relaxvm.ir.tir.te_block.block_access_regions`); the function's root block
(a block without axes that is the whole function body) keeps them empty.
"""

from __future__ import annotations

import ast
from typing import Any

from ..ir.expr import IntImm, PrimExpr, Range
from ..ir.expr import Var as SymVar
from ..ir.op import cast, const, convert
from ..ir.tir import Buffer, BufferLoad, seq
from ..ir.tir.block import Block, BlockRealize, BufferRegion, IterVar, MatchBufferRegion
from ..ir.tir.te_block import block_access_regions
from . import tir as T
from . import tir_blocks as TB
from ._source import ScriptError
from .tir_scoped_forms import slice_range

__all__ = ["BLOCK_ONLY", "BlockParserMixin"]

#: Calls that are statements of a block body only.
BLOCK_ONLY = (TB.reads, TB.writes, TB.where, TB.block_attr)
_AXIS_FUNCS = ("spatial", "reduce", "scan", "opaque", "remap")


class BlockParserMixin:
    """The block part of :class:`relaxvm.script._tir_parser.TIRParser`."""

    # Provided by the parser.
    loop_doms: dict[SymVar, tuple[Any, Any]]
    eval: Any
    error: Any
    scope: Any
    define: Any
    make_buffer: Any
    _stmts: Any
    parse_body: Any
    #: The function's only statement while its body is parsed (set by the prim_func parser).
    root_statement: ast.stmt | None = None

    def parse_block(self, stmt: ast.With, spec: TB.BlockSpec) -> Any:
        """The BlockRealize of ``with T.block(name):`` (a bare Block for no_realize)."""
        if stmt.items[0].optional_vars is not None:
            raise self.error(stmt, "`with T.block(...)` takes no `as` target")
        iter_vars: list[IterVar] = []
        values: list[PrimExpr] = []
        predicate: Any = True
        reads: list[BufferRegion] | None = None
        writes: list[BufferRegion] | None = None
        annotations: dict[str, Any] = {}
        allocs: list[Buffer] = []
        matches: list[MatchBufferRegion] = []
        init: Any = None
        code: list[ast.stmt] = []
        with self.scope():
            for item in stmt.body:
                if isinstance(item, ast.Expr) and isinstance(item.value, ast.Call):
                    func = self._callee(item.value)
                    call = item.value
                    if func is TB.reads or func is TB.writes:
                        regions = self._regions(call)
                        if func is TB.reads:
                            reads = (reads or []) + regions
                        else:
                            writes = (writes or []) + regions
                        continue
                    if func is TB.where:
                        if len(call.args) != 1 or call.keywords:
                            raise self.error(call, "T.where expects one condition")
                        predicate = self.eval(call.args[0])
                        continue
                    if func is TB.block_attr:
                        value = self.eval(call.args[0]) if len(call.args) == 1 else None
                        if not isinstance(value, dict):
                            raise self.error(call, "T.block_attr expects one dict")
                        annotations.update(value)
                        continue
                if isinstance(item, ast.With) and self._is_init(item):
                    if init is not None:
                        raise self.error(item, "a block has at most one `with T.init():`")
                    init = self.parse_body(item.body)
                    continue
                if isinstance(item, ast.Assign) and len(item.targets) == 1:
                    if self._axis_call(item.value):
                        for var, value in self._axes(item):
                            iter_vars.append(var)
                            values.append(value)
                        continue
                    target = item.targets[0]
                    if isinstance(target, ast.Name) and self._match_call(item.value):
                        match = self._match_region(target.id, item)
                        if match is not None:
                            self.define(target.id, match.buffer)
                            matches.append(match)
                            continue
                    if isinstance(target, ast.Name) and self._alloc_call(item.value):
                        spec_value = self.eval(item.value)
                        buffer = self.make_buffer(target.id, spec_value, item.value)
                        self.define(target.id, buffer)
                        allocs.append(buffer)
                        continue
                code.append(item)
            body = seq(self._stmts(code, 0)) if code else _noop()
        if (reads is None or writes is None) and not (
            not iter_vars and stmt is self.root_statement
        ):
            # TVM's ScriptComplete: what the script leaves out is detected from the code
            # (T.reads() with no regions is kept empty); the function's root block is not.
            detected = block_access_regions(
                Block(iter_vars, [], [], spec.name, body, init, allocs, matches)
            )
            reads = detected[0] if reads is None else reads
            writes = detected[1] if writes is None else writes
        block = Block(
            iter_vars,
            reads or [],
            writes or [],
            spec.name,
            body,
            init,
            allocs,
            matches,
            annotations,
        )
        if spec.no_realize:
            if iter_vars:
                raise self.error(stmt, "T.block(no_realize=True) cannot declare axes")
            return block
        try:
            return BlockRealize(values, predicate, block)
        except Exception as err:
            raise self.error(stmt, str(err)) from None

    # ---- recognizing block statements ------------------------------------------------------
    def _callee(self, call: ast.Call) -> Any:
        try:
            return self.eval(call.func)
        except ScriptError:
            return None

    def _is_init(self, item: ast.With) -> bool:
        if len(item.items) != 1:
            return False
        expr = item.items[0].context_expr
        return isinstance(expr, ast.Call) and self._callee(expr) is TB.init

    def _axis_call(self, node: ast.expr) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = self._callee(node)
        return getattr(func, "__self__", None) is TB.axis and func.__name__ in _AXIS_FUNCS

    def _match_call(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and self._callee(node) is T.match_buffer

    def _match_region(self, name: str, stmt: ast.Assign) -> MatchBufferRegion | None:
        """``A_sub = T.match_buffer(A[vi, 0:4], (4,))``: the view (None for a T.handle, which
        the function body binds)."""
        call = stmt.value
        try:
            spec = self.eval(call)
        except ScriptError as err:
            message = err.message.removeprefix("T.match_buffer: ")
            raise self.error(call, f"T.match_buffer for '{name}': {message}") from None
        if spec.region is None:
            return None
        buffer = self.make_buffer(name, spec, call)
        try:
            return MatchBufferRegion(buffer, spec.region)
        except Exception as err:
            raise self.error(call, str(err)) from None

    def _alloc_call(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and self._callee(node) is T.alloc_buffer

    # ---- axes ------------------------------------------------------------------------------
    def _axes(self, stmt: ast.Assign) -> list[tuple[IterVar, PrimExpr]]:
        target = stmt.targets[0]
        value = self.eval(stmt.value)
        specs = value if isinstance(value, list) else [value]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if len(names) != len(specs) or not all(isinstance(n, ast.Name) for n in names):
            raise self.error(
                target,
                f"expected {len(specs)} axis name(s) on the left, got `{ast.unparse(target)}`",
            )
        out = []
        for name_node, spec in zip(names, specs, strict=True):
            name = name_node.id  # type: ignore[attr-defined]
            binding = convert(spec.value)
            dtype = spec.dtype or str(binding.dtype)
            if spec.dom is None:
                dom = self.loop_doms.get(binding) if isinstance(binding, SymVar) else None
                if dom is None:
                    raise self.error(
                        stmt.value,
                        f"T.axis.remap: the binding of '{name}' must be a loop variable of an "
                        f"enclosing loop, got `{binding}`",
                    )
            else:
                dom = spec.dom
            var = SymVar(name, dtype)
            low, extent = (cast(convert(part), dtype) for part in dom)
            try:
                iter_var = IterVar(Range.from_min_extent(low, extent), var, spec.kind)
            except Exception as err:
                raise self.error(stmt, str(err)) from None
            self.define(name, var)
            out.append((iter_var, binding))
        return out

    # ---- regions ---------------------------------------------------------------------------
    def _regions(self, call: ast.Call) -> list[BufferRegion]:
        nodes: list[ast.expr] = []
        for arg in call.args:
            nodes.extend(arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg])
        return [self._region(node) for node in nodes]

    def _region(self, node: ast.expr) -> BufferRegion:
        if not isinstance(node, ast.Subscript):
            value = self.eval(node)
            if isinstance(value, Buffer):
                return BufferRegion.full(value)
            if isinstance(value, BufferLoad):
                return _point_region(value.buffer, value.indices)
            raise self.error(node, f"expected a buffer region such as A[i, 0:4], got {value!r}")
        buffer = self.eval(node.value)
        if not isinstance(buffer, Buffer):
            raise self.error(node.value, f"'{ast.unparse(node.value)}' is not a buffer")
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(node.slice, ast.Tuple) and not parts:
            parts = []  # A[()] of a 0-d buffer
        if len(parts) != len(buffer.shape):
            raise self.error(
                node,
                f"region of '{buffer.name}' has {len(parts)} indices for "
                f"{len(buffer.shape)} dimensions",
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
                ranges.append(_point(convert(self.eval(part))))
        return BufferRegion(buffer, ranges)


def _point(index: PrimExpr) -> Range:
    return Range.from_min_extent(index, IntImm(index.dtype, 1))


def _point_region(buffer: Buffer, indices: tuple[PrimExpr, ...]) -> BufferRegion:
    return BufferRegion(buffer, [_point(index) for index in indices])


def _noop() -> Any:
    from ..ir.tir import Evaluate

    return Evaluate(0)
