"""GPU semantics for the reference interpreter: thread-bound loops, shared memory, barriers.

A ``THREAD_BINDING`` loop reached outside any kernel is a *launch*. The launch extents are
read from every thread-bound loop of its subtree (per axis, the largest extent; an axis no
loop binds has extent 1), evaluated when the launch starts. Then, block after block (``x``
fastest), every thread of the block runs the subtree with its own copy of the variables:

* a loop bound to ``blockIdx.*``/``threadIdx.*`` takes the running thread's index on that
  axis (plus the loop's ``min``) and runs its body only if that index is below the loop's
  own extent (a loop narrower than the launch leaves the extra threads idle, like a guard);
* a ``vthread`` loop runs serially;
* an ``Allocate`` of ``shared`` scope is one array per block, shared by its threads (created
  by the first thread that reaches it); ``local`` and ``global`` scratch are per thread;
* ``T.evaluate(T.tvm_storage_sync())`` is a barrier: when the kernel has one, each thread
  runs as a generator that stops at every barrier, and the block runs phase by phase: every
  thread of the block runs up to its next barrier (or to its end) before any thread goes on.
  A block where some threads wait at a barrier while others have finished raises (a
  divergent ``__syncthreads`` deadlocks or misbehaves on a GPU).

* a ``BufferStore`` whose value holds ``T.shfl_down(value, delta)`` is a warp exchange, run
  like a barrier in two phases: every thread of the block posts its operands, then each
  reads the operand its source lane posted (its own where the lane is past the warp's end)
  and finishes the store; a second phase boundary keeps the posted values until every
  thread has read them.

Without barriers or shuffles the threads of a block run one after another, which is a
valid execution of any race-free kernel.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import VMValueError
from ..expr import PrimExpr
from .intrin_gpu import WARP_SIZE, ShflDown, StorageSync
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from .stmt_functor import post_order_visit

if TYPE_CHECKING:
    from .interpreter import _Compiler

__all__ = [
    "AXES",
    "ThreadContext",
    "compile_shuffle_expr",
    "compile_thread_loop",
    "has_barrier",
]

Env = dict[Any, Any]
StmtFn = Callable[[Env], None]
GenFn = Callable[[Env], Generator[None, None, None]]

#: The launch axes, grid first (the order of ``relaxvm_cuda.program.LAUNCH_AXES``).
AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")

#: The environment key of the running thread's :class:`ThreadContext`.
THREAD_KEY = object()
#: The environment key of the values this thread's shuffles received (by node id).
SHUFFLE_KEY = object()

_MISSING = object()


@dataclass
class ThreadContext:
    """Where one GPU thread runs: its indices on the six axes and its block's shared arrays."""

    index: dict[str, int]
    shared: dict[int, np.ndarray] = field(default_factory=dict)
    linear: int = 0  # the thread's index in its block (x fastest): its lane is linear % 32
    mailbox: dict[tuple[int, int], Any] = field(default_factory=dict)  # shuffles, per block


def is_barrier(stmt: Stmt) -> bool:
    """Whether ``stmt`` is ``T.evaluate(T.tvm_storage_sync())``."""
    return isinstance(stmt, Evaluate) and isinstance(stmt.value, StorageSync)


def shuffles_of(stmt: Stmt) -> list[ShflDown]:
    """The warp shuffles in the value of a ``BufferStore`` (none for other statements)."""
    if not isinstance(stmt, BufferStore) or not _holds_shuffle(stmt.value):
        return []
    from ..expr_functor import post_order_visit as visit_expr

    found: list[ShflDown] = []
    visit_expr(stmt.value, lambda n: found.append(n) if isinstance(n, ShflDown) else None)
    return found


def _holds_shuffle(expr: PrimExpr) -> bool:
    from ..expr_functor import post_order_visit as visit_expr

    found: list[Any] = []
    visit_expr(expr, lambda n: found.append(n) if isinstance(n, ShflDown) else None)
    return bool(found)


def is_sync_point(stmt: Stmt) -> bool:
    """Whether ``stmt`` is a barrier or a store exchanging values across a warp."""
    return is_barrier(stmt) or bool(shuffles_of(stmt))


def has_barrier(stmt: Stmt) -> bool:
    """Whether a barrier (or a warp shuffle) occurs anywhere in ``stmt``."""
    found = []
    post_order_visit(stmt, lambda node: found.append(node) if is_sync_point(node) else None)
    return bool(found)


def _launch_loops(stmt: Stmt) -> list[For]:
    loops: list[For] = []

    def visit(node: Stmt) -> None:
        if not isinstance(node, For) or node.kind != ForKind.THREAD_BINDING:
            return
        if node.thread_binding in AXES:
            loops.append(node)

    post_order_visit(stmt, visit)
    return loops


def compile_thread_loop(compiler: _Compiler, node: For) -> StmtFn:
    """The closure of a ``blockIdx``/``threadIdx`` loop: a launch outside kernels, the
    thread's own index inside one."""
    tag = node.thread_binding
    assert tag in AXES  # the caller handles vthread
    var = node.loop_var
    min_fn, extent_fn = compiler.expr(node.min), compiler.expr(node.extent)
    body = compiler.stmt(node.body)
    phased = has_barrier(node)
    thread_gen = compile_gen(compiler, node) if phased else None
    launch_fns = [
        (loop.thread_binding, compiler.expr(loop.extent), loop) for loop in _launch_loops(node)
    ]

    def launch(env: Env) -> None:
        dims = dict.fromkeys(AXES, 1)
        for axis, fn, loop in launch_fns:
            try:
                extent = int(fn(env))
            except VMValueError as err:
                raise compiler.error(
                    f"the extent `{loop.extent}` of loop {loop.loop_var.name!r} bound to "
                    f"{axis} must be known when the kernel is launched: {err}"
                ) from None
            dims[str(axis)] = max(dims[str(axis)], extent)
        if any(extent <= 0 for extent in dims.values()):
            return
        grid = [range(dims[a]) for a in AXES[2::-1]]  # z, y, x: x varies fastest
        block = [range(dims[a]) for a in AXES[:2:-1]]
        for bz, by, bx in itertools.product(*grid):
            shared: dict[int, np.ndarray] = {}
            mailbox: dict[tuple[int, int], Any] = {}
            contexts = [
                ThreadContext(
                    dict(zip(AXES, (bx, by, bz, tx, ty, tz), strict=True)), shared, k, mailbox
                )
                for k, (tz, ty, tx) in enumerate(itertools.product(*block))
            ]
            if thread_gen is None:
                for ctx in contexts:
                    run_in_thread(dict(env), ctx)
            else:
                _run_phased(compiler, thread_gen, env, contexts, (bx, by, bz))

    def run_in_thread(thread_env: Env, ctx: ThreadContext) -> None:
        thread_env[THREAD_KEY] = ctx
        run(thread_env)

    def run(env: Env) -> None:
        ctx = env.get(THREAD_KEY)
        if ctx is None:
            launch(env)
            return
        index = ctx.index[tag]
        if index >= int(extent_fn(env)):
            return
        saved = env.get(var, _MISSING)
        env[var] = int(min_fn(env)) + index
        body(env)
        _restore(env, var, saved)

    return run


def _run_phased(
    compiler: _Compiler,
    thread_gen: GenFn,
    env: Env,
    contexts: list[ThreadContext],
    block: tuple[int, int, int],
) -> None:
    live = []
    for ctx in contexts:
        thread_env = dict(env)
        thread_env[THREAD_KEY] = ctx
        live.append(thread_gen(thread_env))
    phase = 0
    while live:
        waiting = []
        for thread in live:
            try:
                next(thread)
            except StopIteration:
                continue
            waiting.append(thread)
        if waiting and len(waiting) != len(live):
            for thread in waiting:
                thread.close()
            raise compiler.error(
                f"barrier divergence in block {block}: {len(waiting)} threads wait at "
                f"T.tvm_storage_sync() #{phase + 1} while {len(live) - len(waiting)} threads "
                "of the block have finished (every thread of a block must reach each barrier)"
            )
        live = waiting
        phase += 1


def compile_gen(compiler: _Compiler, node: Stmt) -> GenFn:
    """A generator function running ``node`` (which contains a barrier) in one thread,
    yielding at each barrier."""
    if is_barrier(node):

        def barrier(env: Env) -> Generator[None, None, None]:
            yield

        return barrier
    if shuffles_of(node):
        return _gen_shuffle_store(compiler, node)
    if isinstance(node, SeqStmt):
        parts = [_part(compiler, item) for item in node.seq]

        def run_seq(env: Env) -> Generator[None, None, None]:
            for gen, plain in parts:
                if gen is not None:
                    yield from gen(env)
                else:
                    plain(env)

        return run_seq
    if isinstance(node, For):
        return _gen_for(compiler, node)
    if isinstance(node, LetStmt):
        var, value_fn = node.var, compiler.expr(node.value)
        let_body = compile_gen(compiler, node.body)

        def run_let(env: Env) -> Generator[None, None, None]:
            saved = env.get(var, _MISSING)
            env[var] = value_fn(env)
            yield from let_body(env)
            _restore(env, var, saved)

        return run_let
    if isinstance(node, IfThenElse):
        cond = compiler.expr(node.condition)
        then_part = _part(compiler, node.then_case)
        else_part = _part(compiler, node.else_case) if node.else_case is not None else None

        def run_if(env: Env) -> Generator[None, None, None]:
            chosen = then_part if cond(env) else else_part
            if chosen is None:
                return
            gen, plain = chosen
            if gen is not None:
                yield from gen(env)
            else:
                plain(env)

        return run_if
    if isinstance(node, Allocate):
        make = allocation(compiler, node)
        alloc_body = compile_gen(compiler, node.body)
        data = node.buffer.data

        def run_allocate(env: Env) -> Generator[None, None, None]:
            saved = env.get(data, _MISSING)
            env[data] = make(env)
            yield from alloc_body(env)
            _restore(env, data, saved)

        return run_allocate
    raise compiler.error(f"a barrier inside a {type(node).__name__} is not supported")


def _gen_shuffle_store(compiler: _Compiler, node: Stmt) -> GenFn:
    nodes = shuffles_of(node)
    for shuffle in nodes:
        if any(_holds_shuffle(arg) for arg in shuffle.args):
            raise compiler.error(f"`{shuffle}`: a shuffle inside a shuffle's operand")
    operands = [(id(s), compiler.expr(s.args[0]), compiler.expr(s.args[1])) for s in nodes]
    store = compiler.stmt(node)

    def run_shuffle(env: Env) -> Generator[None, None, None]:
        ctx = env.get(THREAD_KEY)
        if ctx is None:
            raise compiler.error("T.shfl_down outside a kernel")
        own = {}
        for key, value_fn, delta_fn in operands:
            value, delta = value_fn(env), int(delta_fn(env))
            ctx.mailbox[(key, ctx.linear)] = value
            own[key] = (value, delta)
        yield  # every thread of the block has posted its operands
        received = {}
        for key, (value, delta) in own.items():
            inside = 0 <= ctx.linear % WARP_SIZE + delta < WARP_SIZE
            source = (key, ctx.linear + delta)
            received[key] = ctx.mailbox.get(source, value) if inside else value
        saved = env.get(SHUFFLE_KEY, _MISSING)
        env[SHUFFLE_KEY] = received
        store(env)
        _restore(env, SHUFFLE_KEY, saved)
        yield  # every thread has read before any posts again

    return run_shuffle


def compile_shuffle_expr(compiler: _Compiler, node: ShflDown) -> Callable[[Env], Any]:
    """The closure of ``T.shfl_down``: the value its statement's exchange received (see
    :func:`_gen_shuffle_store`); outside an exchange (a store the kernel does not run in
    phases) it is an error."""
    key = id(node)

    def received(env: Env) -> Any:
        values = env.get(SHUFFLE_KEY)
        if values is None or key not in values:
            raise compiler.error(
                f"`{node}` must be the value of a BufferStore run inside a kernel (a warp "
                "exchange every thread of the block reaches)"
            )
        return values[key]

    return received


def _part(compiler: _Compiler, node: Stmt) -> tuple[GenFn | None, StmtFn]:
    if has_barrier(node):
        return compile_gen(compiler, node), _never
    return None, compiler.stmt(node)


def _never(env: Env) -> None:  # pragma: no cover - the generator is always taken
    raise AssertionError("unreachable")


def _gen_for(compiler: _Compiler, node: For) -> GenFn:
    var, min_fn, extent_fn = node.loop_var, compiler.expr(node.min), compiler.expr(node.extent)
    body = compile_gen(compiler, node.body)
    tag = node.thread_binding if node.kind == ForKind.THREAD_BINDING else None
    bound = tag in AXES

    def run_for(env: Env) -> Generator[None, None, None]:
        start, extent = int(min_fn(env)), int(extent_fn(env))
        saved = env.get(var, _MISSING)
        if bound:
            index = env[THREAD_KEY].index[tag]
            if index < extent:
                env[var] = start + index
                yield from body(env)
        else:
            for value in range(start, start + extent):
                env[var] = value
                yield from body(env)
        _restore(env, var, saved)

    return run_for


def allocation(compiler: _Compiler, node: Allocate) -> Callable[[Env], np.ndarray]:
    """A function making the array of an ``Allocate`` when it runs: a fresh one, except for
    ``shared`` scope inside a kernel, where the block's threads share one."""
    buffer = node.buffer
    extent_fns = [compiler.expr(extent) for extent in buffer.shape]
    fresh = compiler.scratch_array(buffer)
    shared = buffer.scope == "shared"
    key = id(node)

    def make(env: Env) -> np.ndarray:
        shape = tuple(int(fn(env)) for fn in extent_fns)
        if any(extent < 0 for extent in shape):
            raise compiler.error(f"Allocate {buffer.name!r}: negative shape {shape}")
        ctx = env.get(THREAD_KEY) if shared else None
        if ctx is None:
            return fresh(shape)
        array = ctx.shared.get(key)
        if array is None:
            array = ctx.shared[key] = fresh(shape)
        return array

    return make


def check_no_barrier_expr(compiler: _Compiler, node: PrimExpr) -> None:
    """A barrier is a statement (``T.evaluate(...)``), never part of a computed value."""
    raise compiler.error(
        f"`{node}` is a barrier: use it only as a statement, T.evaluate(T.tvm_storage_sync())"
    )


def _restore(env: Env, key: Any, saved: Any) -> None:
    if saved is _MISSING:
        env.pop(key, None)
    else:
        env[key] = saved
