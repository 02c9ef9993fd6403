"""Outlining of parallel loops.

``for i in T.parallel(n): body`` becomes three pieces:

* ``void <symbol>__parK(i64 begin, i64 end, i8* closure)``, an exported function that runs
  iterations ``[begin, end)``; it unpacks the closure (a struct of the captured variables,
  buffer pointers and the loop start) and calls
* ``<symbol>__parK_body(captures..., i64 begin, i64 end)``, internal, whose buffer pointers are
  ``noalias`` again (loads from a struct lose that fact otherwise);
* at the loop's place in the kernel: fill the closure on the stack, then either call the
  range function directly for the whole range (one thread configured, or an estimated amount
  of work below ``relaxvm_llvm_parallel_cutoff``), or call
  ``i32 relaxvm_llvm_parallel_launch(fn, closure, extent)``, the thread pool of
  :mod:`.parallel`. A nonzero result returns from the kernel with that code.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.expr_functor import free_vars, post_order_visit
from relaxvm.ir.expr_functor import substitute as substitute_expr
from relaxvm.ir.tir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    undefined_vars,
)
from relaxvm.runtime.dtype import DataType

from .codegen_expr import I32, I64, PTR, Lane
from .codegen_stmt import FunctionCodegen

__all__ = ["LAUNCH_SYMBOL", "NUM_THREADS_SYMBOL", "PARALLEL_CUTOFF_SYMBOL", "emit_parallel"]

LAUNCH_SYMBOL = "relaxvm_llvm_parallel_launch"
NUM_THREADS_SYMBOL = "relaxvm_llvm_num_threads"
PARALLEL_CUTOFF_SYMBOL = "relaxvm_llvm_parallel_cutoff"

#: Assumed trip count of loops with a symbolic extent, for the work estimate.
_UNKNOWN_EXTENT = 64
_MAX_COST = 1 << 24
_I64_DTYPE = DataType("int64")


def estimate_cost(
    stmt: Stmt, extent_of: Callable[[PrimExpr], PrimExpr | None] | None = None
) -> PrimExpr:
    """A rough count of element operations for one execution of ``stmt``.

    A loop extent counts as its value when it is a constant, or when ``extent_of`` turns it
    into an expression the caller can evaluate (the kernel knows it at the loop's launch);
    otherwise as :data:`_UNKNOWN_EXTENT`. The result is capped at :data:`_MAX_COST` at every
    step, so the run-time product never overflows.
    """

    def capped(value: PrimExpr) -> PrimExpr:
        return sop.min_expr(value, _MAX_COST)

    def cost(s: Stmt) -> PrimExpr:
        if isinstance(s, SeqStmt):
            total: PrimExpr = IntImm("int64", 0)
            for item in s.seq:
                total = capped(sop.add(total, cost(item)))
            return total
        if isinstance(s, For):
            known: PrimExpr | None = s.extent if isinstance(s.extent, IntImm) else None
            if known is None and extent_of is not None:
                known = extent_of(s.extent)
            trips = IntImm("int64", _UNKNOWN_EXTENT) if known is None else known
            bounded = sop.max_expr(capped(sop.cast(trips, "int64")), 1)
            return capped(sop.mul(bounded, cost(s.body)))
        if isinstance(s, BufferStore):
            loads = [0]
            post_order_visit(s.value, lambda n: loads.__setitem__(0, loads[0] + 1))
            return IntImm("int64", 1 + loads[0] // 2)
        if isinstance(s, IfThenElse):
            other = cost(s.else_case) if s.else_case is not None else IntImm("int64", 0)
            return sop.add(sop.max_expr(cost(s.then_case), other), 1)
        if isinstance(s, (LetStmt, Allocate)):
            return sop.add(cost(s.body), 1)
        return IntImm("int64", 1)

    return cost(stmt)


def _launch_extent(gen: FunctionCodegen, loop: For) -> Callable[[PrimExpr], PrimExpr | None]:
    """Inner extents as the kernel can evaluate them where ``loop`` launches: with the loop's
    variable at its first value, and only variables the kernel has defined there (a chunked
    loop of 32 parts with symbolic rows per part must count its real rows, not a guess)."""

    def extent_of(extent: PrimExpr) -> PrimExpr | None:
        first = substitute_expr(extent, {loop.loop_var: loop.min})
        reads: list[PrimExpr] = []
        post_order_visit(first, lambda n: reads.append(n) if isinstance(n, BufferLoad) else None)
        if reads or not all(v in gen.env for v in free_vars(first)):
            return None
        return first

    return extent_of


def _accessed_buffers(stmt: Stmt) -> tuple[list[Buffer], set[Var]]:
    """Buffers read or written in ``stmt``, and the data variables it allocates itself."""
    found: dict[Buffer, None] = {}
    allocated: set[Var] = set()

    def visit_expr(expr: PrimExpr) -> None:
        def note(node: PrimExpr) -> None:
            if isinstance(node, BufferLoad):
                found.setdefault(node.buffer)

        post_order_visit(expr, note)

    def visit(s: Stmt) -> None:
        if isinstance(s, SeqStmt):
            for item in s.seq:
                visit(item)
        elif isinstance(s, BufferStore):
            found.setdefault(s.buffer)
            visit_expr(s.value)
            for index in s.indices:
                visit_expr(index)
        elif isinstance(s, For):
            visit_expr(s.min)
            visit_expr(s.extent)
            visit(s.body)
        elif isinstance(s, LetStmt):
            visit_expr(s.value)
            visit(s.body)
        elif isinstance(s, IfThenElse):
            visit_expr(s.condition)
            visit(s.then_case)
            if s.else_case is not None:
                visit(s.else_case)
        elif isinstance(s, Allocate):
            allocated.add(s.buffer.data)
            found.setdefault(s.buffer)
            visit(s.body)
        elif isinstance(s, Evaluate):
            visit_expr(s.value)

    visit(stmt)
    return list(found), allocated


def _captures(gen: FunctionCodegen, stmt: For) -> tuple[list[Var], list[Buffer]]:
    buffers, allocated = _accessed_buffers(stmt.body)
    wanted: dict[Var, None] = dict.fromkeys(undefined_vars(stmt.body))
    for buffer in buffers:
        if buffer.data in allocated:
            continue
        wanted.setdefault(buffer.data)
        for extent in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            for var in free_vars(extent):
                wanted.setdefault(var)
    wanted.pop(stmt.loop_var, None)
    captured = [v for v in wanted if v in gen.env or v in gen.handles]
    return captured, [b for b in buffers if b.data not in allocated]


def _declare_global(module: ir.Module, name: str) -> ir.GlobalVariable:
    existing = module.globals.get(name)
    if existing is not None:
        return existing  # type: ignore[no-any-return]
    var = ir.GlobalVariable(module, I64, name)
    var.linkage = "external"
    return var


def emit_parallel(gen: FunctionCodegen, stmt: For) -> None:
    """Outline ``stmt`` (a parallel loop in the kernel's own body) and launch it."""
    module = gen.module
    b = gen.builder
    captured, buffers = _captures(gen, stmt)
    start = gen.scalar(stmt.min)
    extent = gen.cast_value(gen.scalar(stmt.extent), stmt.extent.dtype, _I64_DTYPE)
    values = [gen.handles[v] if v in gen.handles else gen.env[v].value for v in captured]
    field_types = [v.type for v in values] + [start.type]
    closure_type = ir.LiteralStructType(field_types)

    name = gen.state.fresh_name(gen.symbol)
    body_type = ir.FunctionType(ir.VoidType(), [*field_types, I64, I64])
    body_fn = ir.Function(module, body_type, name + "_body")
    body_fn.linkage = "internal"
    for var, arg in zip(captured, body_fn.args, strict=False):
        if var in gen.handles:
            arg.add_attribute("noalias")
    _fill_body(gen, body_fn, stmt, captured, buffers)

    range_fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, PTR]), name)
    rb = ir.IRBuilder(range_fn.append_basic_block("entry"))
    begin, end, raw = range_fn.args
    typed = rb.bitcast(raw, closure_type.as_pointer())
    fields = [
        rb.load(rb.gep(typed, [I32(0), I32(k)], inbounds=True)) for k in range(len(field_types))
    ]
    rb.call(body_fn, [*fields, begin, end])
    rb.ret_void()

    slot = gen.at_entry().alloca(closure_type)
    for k, value in enumerate([*values, start]):
        b.store(value, b.gep(slot, [I32(0), I32(k)], inbounds=True))
    closure = b.bitcast(slot, PTR)
    cost = estimate_cost(stmt.body, _launch_extent(gen, stmt))
    work = b.mul(extent, gen.cast_value(gen.scalar(cost), cost.dtype, _I64_DTYPE))
    threads = b.load(_declare_global(module, NUM_THREADS_SYMBOL))
    cutoff = b.load(_declare_global(module, PARALLEL_CUTOFF_SYMBOL))
    serial = b.or_(
        b.icmp_signed("<=", threads, ir.Constant(I64, 1)), b.icmp_signed("<", work, cutoff)
    )
    with b.if_else(serial) as (run_serial, run_parallel):
        with run_serial:
            b.call(range_fn, [ir.Constant(I64, 0), extent, closure])
        with run_parallel:
            launch = gen.declare(LAUNCH_SYMBOL, I32, [PTR, PTR, I64])
            status = b.call(launch, [b.bitcast(range_fn, PTR), closure, extent])
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
                b.ret(status)


def _fill_body(
    gen: FunctionCodegen, fn: ir.Function, stmt: For, captured: list[Var], buffers: list[Buffer]
) -> None:
    child = FunctionCodegen(gen.state, fn, gen.kernel, gen.symbol, in_parallel=True)
    args = list(fn.args)
    for var, arg in zip(captured, args, strict=False):
        if var in gen.handles:
            child.define_handle(var, arg)
        else:
            child.env[var] = Lane(Lane.SCALAR, arg)
    start, begin, end = args[len(captured)], args[-2], args[-1]
    for buffer in buffers:
        if buffer.data in child.handles:
            try:
                child.define_buffer(buffer)
            except Exception:  # a shape variable defined inside the loop: computed at use
                pass
    cb = child.builder
    loop_type = start.type
    first = begin if loop_type == I64 else cb.trunc(begin, loop_type)
    count = cb.sub(end, begin)
    if loop_type != I64:
        count = cb.trunc(count, loop_type)
    child.serial_loop(stmt.loop_var, cb.add(start, first), count, stmt.body)
    cb.ret_void()
