"""TIR statements to LLVM IR: loops, stores, lets, conditionals, scratch memory.

Loop kinds:

* ``serial``: a counted loop with an ``i64``-style induction phi (LLVM's own vectorizer may
  still vectorize it; buffer parameters are ``noalias``).
* ``unrolled``: emitted once per iteration when the extent is a small constant, else serial.
* ``vectorized``: with a constant extent of 2..64 and a body that can be vectorized, the body
  is emitted once with the loop variable as a vector (see :mod:`.codegen_expr`); otherwise a
  serial loop that LLVM's loop vectorizer handles.
* ``parallel``: outlined into a separate function and run on the thread pool
  (:mod:`.codegen_parallel`); parallel loops nested inside one run serially.
"""

from __future__ import annotations

import math
import re

import llvmlite.ir as ir

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir.expr_functor import free_vars
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from relaxvm.ir.tir.intrin import IfThenElse as IfThenElseCall

from .codegen_expr import (
    I1,
    I64,
    PTR,
    ExprCodegen,
    Lane,
    has_load,
    mem_type,
    needs_branch,
)

__all__ = ["FunctionCodegen"]

#: Largest constant-size scratch buffer placed on the stack; larger ones use malloc.
STACK_LIMIT_BYTES = 64 * 1024
#: Vectorized loops with constant extents in this range become explicit vector code.
MAX_VECTOR_LANES = 64
#: Unrolled loops are emitted iteration by iteration up to this many copies of the body.
MAX_UNROLL = 64


LOOP_ID_MARKER = "relaxvm.loop.id."
_LOOP_ID = re.compile(r'^(!\d+) = !\{ ?!"' + re.escape(LOOP_ID_MARKER) + r'\d+", ', re.MULTILINE)


def finish_loop_metadata(ir_text: str) -> str:
    """Turn the loop-ID placeholders into self-referencing distinct nodes."""
    return _LOOP_ID.sub(lambda m: f"{m.group(1)} = distinct !{{{m.group(1)}, ", ir_text)


class ModuleState:
    """What the functions of one LLVM module share: the module, names, options."""

    def __init__(self, module: ir.Module, fastmath: tuple[str, ...]) -> None:
        self.module = module
        self.fastmath = fastmath
        self.outlined = 0
        self.loop_ids = 0

    def fresh_name(self, base: str) -> str:
        self.outlined += 1
        return f"{base}__par{self.outlined}"


class FunctionCodegen(ExprCodegen):
    """Generates the body of one LLVM function from TIR statements.

    Parameters
    ----------
    state : ModuleState
    function : ir.Function
        The function to fill; its entry block is created here.
    kernel : str
        The kernel's name, for messages and outlined function names.
    symbol : str
        The kernel's symbol (outlined functions are named after it).
    in_parallel : bool
        True inside an outlined parallel body (nested parallel loops run serially).
    """

    def __init__(
        self,
        state: ModuleState,
        function: ir.Function,
        kernel: str,
        symbol: str,
        in_parallel: bool = False,
    ) -> None:
        self.state = state
        self.module = state.module
        self.fastmath = state.fastmath
        self.function = function
        self.kernel = kernel
        self.symbol = symbol
        self.in_parallel = in_parallel
        self.lanes = 1
        self.env: dict[Var, Lane] = {}
        self.handles: dict[Var, ir.Value] = {}
        self._typed: dict[tuple[Var, str], ir.Value] = {}
        self._strides: dict[Buffer, list[int | ir.Value]] = {}
        # Stack slots and argument casts live in their own entry block, so that inserting
        # them never disturbs the main builder's position (llvmlite anchors by index).
        self.entry = function.append_basic_block("entry")
        body = function.append_basic_block("body")
        self.alloca_builder = ir.IRBuilder(self.entry)
        self.alloca_builder.branch(body)
        self.builder = ir.IRBuilder(body)

    def at_entry(self) -> ir.IRBuilder:
        """A builder positioned at the end of the entry block (before its branch)."""
        self.alloca_builder.position_before(self.entry.terminator)
        return self.alloca_builder

    # ---- buffers --------------------------------------------------------------------------
    def define_handle(self, data: Var, pointer: ir.Value) -> None:
        """Bind a buffer data variable to an ``i8*`` pointer."""
        self.handles[data] = pointer

    def define_buffer(self, buffer: Buffer) -> None:
        """Precompute the typed pointer and strides of ``buffer`` where it becomes visible."""
        self.buffer_ptr(buffer)
        self._strides[buffer] = self._compute_strides(buffer)

    def buffer_ptr(self, buffer: Buffer) -> ir.Value:
        elem = mem_type(buffer.dtype)
        key = (buffer.data, str(elem))
        typed = self._typed.get(key)
        if typed is None:
            handle = self.handles.get(buffer.data)
            if handle is None:
                raise self.error(
                    f"buffer {buffer.name!r} is used but is neither a parameter nor allocated"
                )
            if handle.type == elem.as_pointer():
                return handle
            # Cast where the handle is defined, so the cached value dominates every use.
            if isinstance(handle, ir.Instruction) and handle.parent is not self.entry:
                saved = self.builder.block
                self.builder.position_after(handle)
                typed = self.builder.bitcast(handle, elem.as_pointer())
                self.builder.position_at_end(saved)
            else:
                typed = self.at_entry().bitcast(handle, elem.as_pointer())
            self._typed[key] = typed
        return typed

    def buffer_strides(self, buffer: Buffer) -> list[int | ir.Value]:
        strides = self._strides.get(buffer)
        if strides is None:
            # A buffer seen first at a use (an alias of another's data): computed in place.
            return self._compute_strides(buffer)
        return strides

    def _compute_strides(self, buffer: Buffer) -> list[int | ir.Value]:
        if buffer.strides:
            return [self._index_value(s) for s in buffer.strides]
        strides: list[int | ir.Value] = []
        running: int | ir.Value = 1
        for extent in reversed(buffer.shape):
            strides.append(running)
            value = self._index_value(extent)
            if isinstance(running, int) and isinstance(value, int):
                running = running * value
            else:
                left = ir.Constant(I64, running) if isinstance(running, int) else running
                right = ir.Constant(I64, value) if isinstance(value, int) else value
                running = self.builder.mul(left, right, flags=("nsw",))
        return list(reversed(strides))

    def _index_value(self, expr: PrimExpr) -> int | ir.Value:
        if isinstance(expr, IntImm):
            return int(expr.value)
        lane = self.to_index(expr)
        if lane.kind != Lane.SCALAR:
            raise self.error(f"buffer extent `{expr}` varies across vector lanes")
        return lane.value

    # ---- statements -----------------------------------------------------------------------
    def emit_stmt(self, stmt: Stmt) -> None:
        """Lower one statement at the builder's position."""
        if isinstance(stmt, SeqStmt):
            for item in stmt.seq:
                self.emit_stmt(item)
        elif isinstance(stmt, BufferStore):
            self.emit_store(stmt.buffer, stmt.value, stmt.indices)
        elif isinstance(stmt, For):
            self._for(stmt)
        elif isinstance(stmt, LetStmt):
            saved = self.env.get(stmt.var)
            self.env[stmt.var] = self.emit(stmt.value)
            self.emit_stmt(stmt.body)
            self._restore(stmt.var, saved)
        elif isinstance(stmt, IfThenElse):
            self._if(stmt)
        elif isinstance(stmt, Allocate):
            self._allocate(stmt)
        elif isinstance(stmt, Evaluate):
            if not isinstance(stmt.value, (IntImm, Var)):
                self.emit(stmt.value)
        else:
            raise self.error(f"cannot compile a {type(stmt).__name__} statement")

    def _restore(self, var: Var, saved: Lane | None) -> None:
        if saved is None:
            self.env.pop(var, None)
        else:
            self.env[var] = saved

    def _if(self, stmt: IfThenElse) -> None:
        cond = self.scalar(stmt.condition)
        b = self.builder
        if stmt.else_case is None:
            with b.if_then(cond):
                self.emit_stmt(stmt.then_case)
            return
        with b.if_else(cond) as (then_block, else_block):
            with then_block:
                self.emit_stmt(stmt.then_case)
            with else_block:
                self.emit_stmt(stmt.else_case)

    def _allocate(self, stmt: Allocate) -> None:
        buffer = stmt.buffer
        elem = mem_type(buffer.dtype)
        itemsize = max(1, buffer.dtype.bits // 8)
        extents = [self._index_value(e) for e in buffer.shape]
        freed: ir.Value | None = None
        constant = all(isinstance(e, int) for e in extents)
        count = max(1, math.prod(extents)) if constant else 0  # type: ignore[arg-type]
        if count and count * itemsize <= STACK_LIMIT_BYTES:
            # In the entry block, so SROA can promote small scratch (accumulators) to registers.
            entry = self.at_entry()
            slot = entry.alloca(ir.ArrayType(elem, count))
            slot.align = 64
            pointer = entry.bitcast(slot, PTR)
        else:
            size: ir.Value = ir.Constant(I64, count * itemsize)
            if not count:
                size = ir.Constant(I64, itemsize)
                for extent in extents:
                    value = ir.Constant(I64, extent) if isinstance(extent, int) else extent
                    size = self.builder.mul(size, value, flags=("nsw",))
            malloc = self.declare("malloc", PTR, [I64])
            pointer = self.builder.call(malloc, [size])
            freed = pointer
        saved = self.handles.get(buffer.data)
        saved_typed = {k: v for k, v in self._typed.items() if k[0] is buffer.data}
        for key in saved_typed:
            del self._typed[key]
        self.define_handle(buffer.data, pointer)
        self.define_buffer(buffer)
        self.emit_stmt(stmt.body)
        if freed is not None:
            self.builder.call(self.declare("free", ir.VoidType(), [PTR]), [freed])
        for key in [k for k in self._typed if k[0] is buffer.data]:
            del self._typed[key]
        self._typed.update(saved_typed)
        if saved is None:
            self.handles.pop(buffer.data, None)
        else:
            self.handles[buffer.data] = saved

    # ---- loops ----------------------------------------------------------------------------
    def _for(self, stmt: For) -> None:
        extent = stmt.extent.value if isinstance(stmt.extent, IntImm) else None
        kind = stmt.kind
        if kind == ForKind.THREAD_BINDING:
            raise self.error(
                f"loop {stmt.loop_var.name!r} is bound to {stmt.thread_binding}; thread "
                "bindings need a GPU target"
            )
        if kind == ForKind.PARALLEL and not self.in_parallel and self.lanes == 1:
            from .codegen_parallel import emit_parallel

            emit_parallel(self, stmt)
            return
        if (
            kind == ForKind.VECTORIZED
            and self.lanes == 1
            and extent is not None
            and 2 <= extent <= MAX_VECTOR_LANES
        ):
            if vectorizable(stmt.body, stmt.loop_var):
                self._vector_loop(stmt, extent)
                return
            if guarded_vectorizable(stmt):
                self._guarded_vector_loop(stmt, extent)
                return
        if kind == ForKind.UNROLLED and extent is not None and extent <= MAX_UNROLL:
            self._unrolled_loop(stmt, extent)
            return
        if extent == 1:
            self._unrolled_loop(stmt, 1)
            return
        start, count = self.scalar(stmt.min), self.scalar(stmt.extent)
        hint = kind == ForKind.VECTORIZED and self.lanes == 1
        self.serial_loop(stmt.loop_var, start, count, stmt.body, vectorize_hint=hint)

    def _vector_loop(self, stmt: For, lanes: int) -> None:
        start = self.scalar(stmt.min)
        saved = self.env.get(stmt.loop_var)
        self.lanes = lanes
        self.env[stmt.loop_var] = Lane(Lane.RAMP, start, 1)
        try:
            self.emit_stmt(stmt.body)
        finally:
            self.lanes = 1
            self._restore(stmt.loop_var, saved)

    def _vectorize_loop_id(self) -> ir.Value:
        # A loop ID must be a distinct node whose first operand is itself, which llvmlite
        # cannot build: this placeholder is rewritten by `finish_loop_metadata`.
        module = self.module
        enable = module.add_metadata(
            [ir.MetaDataString(module, "llvm.loop.vectorize.enable"), ir.Constant(I1, 1)]
        )
        self.state.loop_ids += 1
        marker = ir.MetaDataString(module, f"{LOOP_ID_MARKER}{self.state.loop_ids}")
        return module.add_metadata([marker, enable])

    def _guarded_vector_loop(self, stmt: For, lanes: int) -> None:
        """``for v in vectorized(L): if cond(v): body`` (a split's tail guard): vector code
        when every lane passes the guard, else the scalar loop with the guard per lane."""
        guard = stmt.body
        if not isinstance(guard, IfThenElse):  # guarded_vectorizable checked this
            raise self.error(f"loop {stmt.loop_var.name!r} has no guard")
        b = self.builder
        start = self.scalar(stmt.min)
        saved = self.env.get(stmt.loop_var)
        ramp = Lane(Lane.RAMP, start, 1)
        self.lanes = lanes
        self.env[stmt.loop_var] = ramp
        try:
            cond = self.emit(guard.condition)
            if cond.kind == Lane.SCALAR:
                every = cond.value
            else:
                mask = self.materialize(cond)
                reduce = self.declare(f"llvm.vector.reduce.and.v{lanes}i1", I1, [mask.type])
                every = b.call(reduce, [mask])
            with b.if_else(every, likely=True) as (full, partial):
                with full:
                    self.emit_stmt(guard.then_case)
                with partial:
                    self.lanes = 1
                    count = ir.Constant(start.type, lanes)
                    self.serial_loop(stmt.loop_var, start, count, guard)
                    self.lanes = lanes
        finally:
            self.lanes = 1
            self._restore(stmt.loop_var, saved)

    def _unrolled_loop(self, stmt: For, extent: int) -> None:
        start = self.scalar(stmt.min)
        saved = self.env.get(stmt.loop_var)
        for k in range(extent):
            value = start if k == 0 else self.builder.add(start, ir.Constant(start.type, k))
            self.env[stmt.loop_var] = Lane(Lane.SCALAR, value)
            self.emit_stmt(stmt.body)
        self._restore(stmt.loop_var, saved)

    def serial_loop(
        self,
        var: Var,
        start: ir.Value,
        extent: ir.Value,
        body: Stmt,
        vectorize_hint: bool = False,
    ) -> None:
        """``for var in range(start, start + extent): body`` as a counted loop; with
        ``vectorize_hint``, the loop carries ``llvm.loop.vectorize.enable`` metadata."""
        b = self.builder
        end = b.add(start, extent, flags=("nsw",))
        preheader = b.block
        header = self.function.append_basic_block(f"{var.name}.header")
        loop_body = self.function.append_basic_block(f"{var.name}.body")
        exit_block = self.function.append_basic_block(f"{var.name}.exit")
        b.branch(header)
        b.position_at_end(header)
        induction = b.phi(start.type, name=var.name)
        induction.add_incoming(start, preheader)
        b.cbranch(b.icmp_signed("<", induction, end), loop_body, exit_block)
        b.position_at_end(loop_body)
        saved = self.env.get(var)
        self.env[var] = Lane(Lane.SCALAR, induction)
        self.emit_stmt(body)
        following = b.add(induction, ir.Constant(start.type, 1), flags=("nsw",))
        induction.add_incoming(following, b.block)
        latch = b.branch(header)
        if vectorize_hint:
            latch.set_metadata("llvm.loop", self._vectorize_loop_id())
        b.position_at_end(exit_block)
        self._restore(var, saved)


def vectorizable(body: Stmt, loop_var: Var) -> bool:
    """Whether ``body`` can be emitted once with ``loop_var`` as a vector.

    Refused: conditions, loop bounds and scratch allocations that depend on the lanes, and
    lane-dependent ``if_then_else`` whose branches read memory (every lane would read).
    """
    varying: set[Var] = {loop_var}

    def varies(expr: PrimExpr) -> bool:
        return any(v in varying for v in free_vars(expr))

    def expr_ok(expr: PrimExpr) -> bool:
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, IfThenElseCall) and varies(node.args[0]) and needs_branch(node):
                return False
            if node.dtype.code == 3:  # handles are not values
                return False
            stack.extend(node.operands[1:] if hasattr(node, "buffer") else node.operands)
        return True

    def ok(stmt: Stmt) -> bool:
        if isinstance(stmt, SeqStmt):
            return all(ok(s) for s in stmt.seq)
        if isinstance(stmt, BufferStore):
            return expr_ok(stmt.value) and all(expr_ok(i) for i in stmt.indices)
        if isinstance(stmt, For):
            if varies(stmt.min) or varies(stmt.extent) or stmt.kind == ForKind.THREAD_BINDING:
                return False
            return ok(stmt.body)
        if isinstance(stmt, LetStmt):
            if not expr_ok(stmt.value):
                return False
            if varies(stmt.value):
                varying.add(stmt.var)
            return ok(stmt.body)
        if isinstance(stmt, IfThenElse):
            if varies(stmt.condition) or not expr_ok(stmt.condition):
                return False
            return ok(stmt.then_case) and (stmt.else_case is None or ok(stmt.else_case))
        if isinstance(stmt, Evaluate):
            return expr_ok(stmt.value)
        return False

    return ok(body)


def guarded_vectorizable(stmt: For) -> bool:
    """Whether a vectorized loop is ``if cond: body`` with a cond that is safe to evaluate
    on every lane (no loads or divisions) and a vectorizable body."""
    guard = stmt.body
    return (
        isinstance(guard, IfThenElse)
        and guard.else_case is None
        and not has_load(guard.condition)
        and vectorizable(guard.then_case, stmt.loop_var)
    )
