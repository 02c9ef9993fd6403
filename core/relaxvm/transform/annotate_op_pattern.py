"""``AnnotateTIROpPattern``: tag each PrimFunc with its op pattern kind, for ``FuseOps``.

TVM's ``relax.transform.AnnotateTIROpPattern``. A PrimFunc without an ``op_pattern``
attribute gets one from an analysis of its loop nests (legalizations usually set it already,
and an existing tag is kept):

* ``0`` elementwise: every store ``Out[i, j] = f(In[i, j], ...)`` reads its inputs at exactly
  the stored indices;
* ``1`` broadcast: inputs are read at a subsequence of the stored loop variables (or 0);
* ``2`` injective: any other one-to-one indexing (transpose, reshape, gather...);
* ``3`` commutative reduction: a store that accumulates into itself over loops its indices
  do not use (``sum``, ``max``);
* ``4`` out-elementwise-fusable: a reduction whose update multiplies loads of two different
  buffers (``matmul``, ``conv2d``): elementwise epilogues can fuse after it;
* ``8`` opaque: anything else (data-dependent stores, a stage reading its own output at other
  indices, calls for effect).

The function's kind is the largest kind among its stages.
"""

from __future__ import annotations

from ..ir import IntImm, Mul, PrimExpr, Var
from ..ir.expr_functor import post_order_visit
from ..ir.relax import IRModule
from ..ir.tir import (
    Allocate,
    BufferLoad,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from ..ir.tir.buffer import Buffer
from ..ir.tir.lower_blocks import as_loop_nests
from ._graph_util import OpPattern
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["AnnotateTIROpPattern", "analyze_op_pattern"]


class _Store:
    """A store with the loops around it (innermost last) and the conditions guarding it."""

    def __init__(self, store: BufferStore, loops: list[Var], conds: list[PrimExpr]) -> None:
        self.store, self.loops, self.conds = store, loops, conds


class _Opaque(Exception):
    """Raised while collecting a stage that cannot be classified."""


def _collect(stmt: Stmt, loops: list[Var], conds: list[PrimExpr], out: list[_Store]) -> None:
    if isinstance(stmt, SeqStmt):
        for item in stmt.seq:
            _collect(item, loops, conds, out)
    elif isinstance(stmt, For):
        _collect(stmt.body, [*loops, stmt.loop_var], conds, out)
    elif isinstance(stmt, BufferStore):
        out.append(_Store(stmt, loops, conds))
    elif isinstance(stmt, IfThenElse):
        _collect(stmt.then_case, loops, [*conds, stmt.condition], out)
        if stmt.else_case is not None:
            _collect(stmt.else_case, loops, [*conds, stmt.condition], out)
    elif isinstance(stmt, Allocate):
        _collect(stmt.body, loops, conds, out)
    elif isinstance(stmt, (LetStmt, Evaluate)):
        raise _Opaque
    else:
        raise _Opaque


def loads_of(expr: PrimExpr) -> list[BufferLoad]:
    """Every BufferLoad inside ``expr`` (nested loads included)."""
    found: list[BufferLoad] = []
    post_order_visit(
        expr, lambda node: found.append(node) if isinstance(node, BufferLoad) else None
    )
    return found


def _same_indices(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> bool:
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


def _is_zero(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.value == 0


def _load_kind(load: BufferLoad, store_vars: list[Var]) -> OpPattern:
    indices = load.indices
    if _same_indices(indices, tuple(store_vars)):
        return OpPattern.ELEMWISE
    position = -1
    broadcast = True
    for index in indices:
        if _is_zero(index):
            continue
        if not isinstance(index, Var) or index not in store_vars:
            broadcast = False
            break
        found = store_vars.index(index)
        if found <= position:
            broadcast = False
            break
        position = found
    return OpPattern.BROADCAST if broadcast else OpPattern.INJECTIVE


def _reduction_kind(update: _Store) -> OpPattern:
    store = update.store
    others = [ld for ld in loads_of(store.value) if ld.buffer is not store.buffer]
    reduce_vars = {v for v in update.loops if not any(v == i for i in store.indices)}
    products: list[PrimExpr] = []
    post_order_visit(store.value, lambda n: products.append(n) if isinstance(n, Mul) else None)
    for product in products:
        operands = product.operands
        buffers = [{ld.buffer for ld in loads_of(side)} for side in operands]
        if len(buffers) == 2 and buffers[0] and buffers[1] and buffers[0] != buffers[1]:
            uses_reduce = all(
                any(_mentions(ld.indices, reduce_vars) for ld in loads_of(side))
                for side in operands
            )
            if uses_reduce:
                return OpPattern.OUT_EWISE_FUSABLE
    del others
    return OpPattern.COMM_REDUCE


def _mentions(indices: tuple[PrimExpr, ...], names: set[Var]) -> bool:
    seen: list[bool] = []
    for index in indices:
        post_order_visit(index, lambda n: seen.append(True) if n in names else None)
    return bool(seen)


def _stage_kind(stores: list[_Store]) -> OpPattern:
    kind = OpPattern.ELEMWISE
    reduced: set[Buffer] = set()
    for item in stores:
        store = item.store
        self_loads = [ld for ld in loads_of(store.value) if ld.buffer is store.buffer]
        if self_loads:
            if not all(_same_indices(ld.indices, store.indices) for ld in self_loads):
                return OpPattern.OPAQUE  # reads its own output elsewhere (a scan)
            unused = [v for v in item.loops if not any(v == i for i in store.indices)]
            if not unused:
                return OpPattern.OPAQUE
            reduced.add(store.buffer)
            kind = max(kind, _reduction_kind(item))
    for item in stores:
        store = item.store
        if store.buffer in reduced and not any(
            ld.buffer is store.buffer for ld in loads_of(store.value)
        ):
            continue  # the init of a reduction
        if store.buffer in reduced:
            continue
        store_vars = list(store.indices)
        if not all(isinstance(i, Var) for i in store_vars) or len(set(store_vars)) != len(
            store_vars
        ):
            return OpPattern.OPAQUE
        if any(v not in store_vars for v in item.loops):
            return OpPattern.OPAQUE  # the same element is written more than once
        reads = loads_of(store.value)
        for cond in item.conds:
            reads.extend(loads_of(cond))
        for load in reads:
            if any(loads_of(index) for index in load.indices):
                kind = max(kind, OpPattern.INJECTIVE)  # a gather
                continue
            kind = max(kind, _load_kind(load, store_vars))  # type: ignore[arg-type]
    return kind


def analyze_op_pattern(func: PrimFunc) -> int:
    """The op pattern kind of ``func`` (see the module docstring), as an int."""
    body: Stmt = as_loop_nests(func).body  # block form (te.create_prim_func) as its loops
    while isinstance(body, Allocate):
        body = body.body
    stages = list(body.seq) if isinstance(body, SeqStmt) else [body]
    kind = OpPattern.ELEMWISE
    for stage in stages:
        stores: list[_Store] = []
        try:
            _collect(stage, [], [], stores)
        except _Opaque:
            return int(OpPattern.OPAQUE)
        kind = max(kind, _stage_kind(stores))
    return int(kind)


def AnnotateTIROpPattern() -> Pass:
    """Set ``attrs["op_pattern"]`` on every PrimFunc that lacks it.

    Returns
    -------
    Pass
        A module pass; Relax functions and already tagged PrimFuncs are left as they are.
    """

    @module_pass(opt_level=0, name="AnnotateTIROpPattern")
    def annotate(mod: IRModule, ctx: PassContext) -> IRModule:
        result = mod.copy()
        for gvar, func in mod.items():
            if isinstance(func, PrimFunc) and "op_pattern" not in func.attrs:
                result.update_func(gvar, func.with_attr("op_pattern", analyze_op_pattern(func)))
        return result

    return annotate  # type: ignore[no-any-return]
