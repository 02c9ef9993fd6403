"""StaticPlanBlockMemory: plan the storage of intermediate tensors at compile time.

Each ``R.builtin.alloc_tensor`` bound at the top level of a Relax function is a *token*. The
pass follows the function's bindings in order, counting every use of a token (as a call
argument, directly or through aliases: trivial rebindings, tuples, tuple fields,
``match_cast`` and ``R.reshape`` views). When the last use has passed, the token's storage goes
back to a pool, and a later allocation of the same device, scope and dtype whose size fits
reuses it (TVM's rule: prefer the smallest free storage at least as large, within a factor
of 16; else grow the largest smaller one). Planned allocations become::

    storage = R.memory.alloc_storage(R.shape([nbytes]), R.prim_value(0), R.str("global"),
                                     R.dtype("float32"))     # before its first tensor
    alloc = R.memory.alloc_tensor(storage, R.prim_value(0), R.shape([2, 3]), R.dtype("float32"))
    ...
    _ = R.memory.kill_tensor(alloc)                          # after the last use
    ...
    _ = R.memory.kill_storage(storage)                       # at the end of the function

A storage's size is the largest tensor it holds. A tensor with symbolic extents is planned
when the function's ``tir_var_upper_bound`` attribute (``{"n": 1024}``) bounds every variable
of its size: the storage gets the upper bound and the tensor keeps its symbolic shape.

Never planned (left to ``LowerAllocTensor``, which gives each its own storage): a tensor that
*escapes* -- is returned (also inside a returned tuple), passed to a Relax function or a
closure, captured by a closure, or used inside an ``If`` -- one whose size is unknown or
unbounded, and allocations inside ``If`` branches or nested functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..ir.arith import Analyzer
from ..ir.expr import IntImm, PrimExpr
from ..ir.expr_functor import free_vars
from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Binding, BindingBlock, Function, MatchCast, SeqExpr, VarBinding
from ..ir.relax.expr import (
    Call,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.relax.module import IRModule
from ..ir.relax.struct_info import ObjectStructInfo, TensorStructInfo
from ..runtime.dtype import DataType
from ._lower_common import (
    VOID,
    compile_error,
    func_name,
    is_op,
    map_relax_functions,
    module_member,
    tensor_nbytes,
    vars_in,
)
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["StaticPlanBlockMemory"]

_PASS = "StaticPlanBlockMemory"
#: A free storage is reused for a request whose size is within this factor of its own.
_MATCH_RANGE = 16
#: Ops whose result is a view of (shares the storage of) their first argument.
_VIEW_OPS = ("relax.reshape", "relax.memory.view")
#: Ops whose tensor arguments are handed to code we cannot follow: they escape.
_ESCAPING_OPS = (
    "relax.invoke_closure",
    "relax.invoke_pure_closure",
    "relax.make_closure",
    "relax.call_builtin_with_ctx",
)
#: Ops that only end lifetimes: not uses.
_KILL_OPS = ("relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object")


@dataclass(eq=False)
class _Alloc:
    """One ``builtin.alloc_tensor`` binding (a token)."""

    var: Var
    call: Call
    dtype: DataType
    device: int
    scope: str
    nbytes: int | None  # None: not plannable (unknown or unbounded size)
    uses: int = 0
    escapes: bool = False
    storage: _Storage | None = None

    @property
    def planned(self) -> bool:
        return self.nbytes is not None and not self.escapes


@dataclass(eq=False)
class _Storage:
    """A planned storage block, shared in turn by several tokens."""

    key: tuple[int, str, DataType]
    nbytes: int
    order: int
    var: Var = field(default_factory=lambda: Var("storage", ObjectStructInfo()))
    emitted: bool = False


# ---- analysis ---------------------------------------------------------------------------------
class _Planner:
    """Finds the tokens, counts their uses, marks escapes, then assigns storages."""

    def __init__(self, mod: IRModule, func: Function, name: str) -> None:
        self.mod = mod
        self.func = func
        self.name = name
        self.aliases: dict[Var, list[_Alloc]] = {}
        self.allocs: dict[Var, _Alloc] = {}
        self.analyzer = _bounded_analyzer(func, name)
        self.upper_bounds = _upper_bound_names(func, name)

    # -- token bookkeeping --
    def tokens(self, expr: RelaxExpr) -> list[_Alloc]:
        """The tokens ``expr`` (a leaf or tuple) may refer to."""
        if isinstance(expr, Var):
            return self.aliases.get(expr, [])
        if isinstance(expr, Tuple):
            return [t for f in expr.fields for t in self.tokens(f)]
        if isinstance(expr, TupleGetItem):
            return self.tokens(expr.tuple_value)
        return []

    def escape(self, expr: RelaxExpr) -> None:
        for var in vars_in(expr):
            for token in self.aliases.get(var, []):
                token.escapes = True

    def use(self, expr: RelaxExpr, counts: dict[_Alloc, int] | None = None) -> None:
        for token in self.tokens(expr):
            token.uses += 1
            if counts is not None:
                counts[token] = counts.get(token, 0) + 1

    # -- pass 1 --
    def analyze(self, body: SeqExpr) -> list[list[dict[_Alloc, int]]]:
        """Walk the top-level bindings; returns per block, per binding, the uses it makes."""
        per_block: list[list[dict[_Alloc, int]]] = []
        for block in body.blocks:
            per_binding: list[dict[_Alloc, int]] = []
            for binding in block.bindings:
                counts: dict[_Alloc, int] = {}
                self.analyze_binding(binding, counts)
                per_binding.append(counts)
            per_block.append(per_binding)
        self.escape(body.body)  # the return value (and anything in it) escapes
        return per_block

    def analyze_binding(self, binding: Binding, counts: dict[_Alloc, int]) -> None:
        var, value = binding.var, binding.value
        if isinstance(binding, MatchCast) or isinstance(value, (Var, Tuple, TupleGetItem)):
            self.aliases[var] = self.tokens(value)
            return
        if not isinstance(value, Call):
            # If, nested functions, and anything else: what they use escapes.
            self.escape(value)
            return
        if is_op(value, "relax.builtin.alloc_tensor"):
            token = self.new_token(var, value)
            self.allocs[var] = token
            self.aliases[var] = [token]
            return
        if any(is_op(value, name) for name in _KILL_OPS):
            return
        if any(is_op(value, name) for name in _VIEW_OPS):
            self.use(value.args[0], counts)
            self.aliases[var] = self.tokens(value.args[0])
            return
        if not self.follows_call(value):
            self.escape(value)
            return
        result: list[_Alloc] = []
        for arg in value.args:
            if isinstance(arg, (Var, Tuple, TupleGetItem)):
                self.use(arg, counts)
                result.extend(self.tokens(arg))
            else:
                self.escape(arg)
        if not self.returns_fresh(value, var):
            # The callee might hand back one of its arguments: the result aliases them all.
            self.aliases[var] = result

    def follows_call(self, call: Call) -> bool:
        """Whether the callee only reads/writes its tensor arguments during the call."""
        op = call.op
        if isinstance(op, GlobalVar):
            return not isinstance(module_member(self.mod, op), Function)
        if isinstance(op, ExternFunc):
            return True
        if isinstance(op, Op):
            return op.name not in _ESCAPING_OPS
        return False  # a closure held in a variable

    def returns_fresh(self, call: Call, var: Var) -> bool:
        """Whether the call's result cannot be one of its arguments."""
        if isinstance(call.op, GlobalVar):
            return True  # a PrimFunc returns nothing (or a scalar)
        sinfo = var.struct_info
        if sinfo is None or sinfo == VOID:
            return True
        return not isinstance(call.op, ExternFunc) and isinstance(call.op, Op)

    def new_token(self, var: Var, call: Call) -> _Alloc:
        shape, dtype_arg = call.args[0], call.args[1]
        device_arg = call.args[2] if len(call.args) > 2 else PrimValue(0)
        scope_arg = call.args[3] if len(call.args) > 3 else StringImm("global")
        if not isinstance(dtype_arg, DataTypeImm):
            raise compile_error(_PASS, self.name, var.name_hint, "the dtype must be a DataTypeImm")
        device = (
            int(device_arg.value.value)
            if isinstance(device_arg, PrimValue) and isinstance(device_arg.value, IntImm)
            else 0
        )
        scope = scope_arg.value if isinstance(scope_arg, StringImm) else "global"
        values = None
        if isinstance(shape, ShapeExpr):
            values = shape.values
        elif isinstance(var.struct_info, TensorStructInfo):
            values = var.struct_info.shape_values
        nbytes = None
        if values is not None:
            nbytes = self.static_size(tensor_nbytes(tuple(values), dtype_arg.value))
        return _Alloc(var, call, dtype_arg.value, device, scope, nbytes)

    def static_size(self, size: PrimExpr) -> int | None:
        """The byte size, or its upper bound from ``tir_var_upper_bound``; None if unbounded."""
        size = self.analyzer.simplify(size)
        if isinstance(size, IntImm):
            return int(size.value)
        if any(var.name not in self.upper_bounds for var in free_vars(size)):
            return None
        bound = self.analyzer.const_int_bound(size).max_value
        if math.isinf(bound) or bound < 0:
            return None
        return int(bound)

    # -- pass 2: assign storages --
    def assign(self, body: SeqExpr, uses: list[list[dict[_Alloc, int]]]) -> dict[Var, list[_Alloc]]:
        """Simulate the lifetimes; returns, per binding var, the tokens released after it."""
        pool: list[_Storage] = []
        remaining = {token: token.uses for token in self.allocs.values()}
        released: dict[Var, list[_Alloc]] = {}
        counter = 0
        for block, per_binding in zip(body.blocks, uses, strict=True):
            for binding, counts in zip(block.bindings, per_binding, strict=True):
                token = self.allocs.get(binding.var)
                if token is not None and token.planned and binding.value is token.call:
                    storage = _take(pool, token)
                    if storage is None:
                        key = (token.device, token.scope, token.dtype)
                        storage = _Storage(key, token.nbytes or 0, counter)
                        counter += 1
                    token.storage = storage
                    if token.uses == 0:
                        pool.append(storage)
                        released.setdefault(binding.var, []).append(token)
                for used, count in counts.items():
                    if not used.planned:
                        continue
                    remaining[used] -= count
                    if remaining[used] == 0 and used.storage is not None:
                        pool.append(used.storage)
                        released.setdefault(binding.var, []).append(used)
        return released


def _take(pool: list[_Storage], token: _Alloc) -> _Storage | None:
    """A free storage for ``token`` (removed from ``pool``), following TVM's size rule."""
    size = token.nbytes or 0
    key = (token.device, token.scope, token.dtype)
    fits = [s for s in pool if s.key == key and size // _MATCH_RANGE <= s.nbytes]
    larger = [s for s in fits if size <= s.nbytes <= size * _MATCH_RANGE]
    if larger:
        chosen = min(larger, key=lambda s: (s.nbytes, s.order))
    else:
        smaller = [s for s in fits if s.nbytes < size]
        if not smaller:
            return None
        chosen = max(smaller, key=lambda s: (s.nbytes, -s.order))
        chosen.nbytes = size
    pool.remove(chosen)
    return chosen


def _upper_bound_names(func: Function, name: str) -> dict[str, int]:
    raw = func.attrs.get("tir_var_upper_bound") or {}
    if not isinstance(raw, Mapping):
        raise compile_error(
            _PASS, name, None, f"tir_var_upper_bound must map variable names to ints, got {raw!r}"
        )
    bounds: dict[str, int] = {}
    for key, value in raw.items():
        number = value.value if isinstance(value, IntImm) else value
        if not isinstance(key, str) or isinstance(number, bool) or not isinstance(number, int):
            raise compile_error(
                _PASS,
                name,
                None,
                f"tir_var_upper_bound entry {key!r}: {value!r} must be a name and an int",
            )
        bounds[key] = number
    return bounds


def _bounded_analyzer(func: Function, name: str) -> Analyzer:
    """An analyzer that knows ``0 <= v <= bound`` for the function's bounded variables."""
    analyzer = Analyzer()
    bounds = _upper_bound_names(func, name)
    if not bounds:
        return analyzer
    for var in _function_tir_vars(func):
        if var.name in bounds:
            analyzer.update(var, 0, bounds[var.name], override=True)
    return analyzer


def _function_tir_vars(func: Function) -> Iterable[Any]:
    """The symbolic variables in the function's parameter and binding annotations."""
    from ..ir.relax.struct_info import ShapeStructInfo, TupleStructInfo

    seen: dict[Any, None] = {}

    def collect(sinfo: Any) -> None:
        if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None:
            for value in sinfo.shape_values:
                seen.update(dict.fromkeys(free_vars(value)))
        elif isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
            for value in sinfo.values:
                seen.update(dict.fromkeys(free_vars(value)))
        elif isinstance(sinfo, TupleStructInfo):
            for item in sinfo.fields:
                collect(item)

    for param in func.params:
        collect(param.struct_info)
    if isinstance(func.body, SeqExpr):
        for block in func.body.blocks:
            for binding in block.bindings:
                collect(binding.var.struct_info)
    return list(seen)


# ---- rewrite ----------------------------------------------------------------------------------
def _kill(op_name: str, target: Var) -> VarBinding:
    return VarBinding(Var("_", VOID), Call(Op.get(op_name), [target], None, (), VOID))


def _storage_binding(storage: _Storage) -> VarBinding:
    device, scope, dtype = storage.key
    call = Call(
        Op.get("relax.memory.alloc_storage"),
        [ShapeExpr([storage.nbytes]), PrimValue(device), StringImm(scope), DataTypeImm(dtype)],
        None,
        (),
        ObjectStructInfo(),
    )
    return VarBinding(storage.var, call)


def _tensor_binding(token: _Alloc) -> VarBinding:
    assert token.storage is not None  # only planned tokens are rewritten
    call = Call(
        Op.get("relax.memory.alloc_tensor"),
        [token.storage.var, PrimValue(0), token.call.args[0], DataTypeImm(token.dtype)],
        None,
        (),
        token.var.struct_info,
    )
    return VarBinding(token.var, call, None)


def _plan_function(name: str, func: Function, mod: IRModule) -> Function:
    body = func.body
    if not isinstance(body, SeqExpr) or not body.blocks:
        return func
    planner = _Planner(mod, func, name)
    uses = planner.analyze(body)
    if not any(token.planned for token in planner.allocs.values()):
        return func
    released = planner.assign(body, uses)
    storages: list[_Storage] = []
    blocks: list[BindingBlock] = []
    for block in body.blocks:
        bindings: list[Binding] = []
        for binding in block.bindings:
            token = planner.allocs.get(binding.var)
            if token is not None and token.planned and binding.value is token.call:
                assert token.storage is not None
                if not token.storage.emitted:
                    token.storage.emitted = True
                    storages.append(token.storage)
                    bindings.append(_storage_binding(token.storage))
                bindings.append(_tensor_binding(token))
            else:
                bindings.append(binding)
            if not block.is_dataflow:
                # Impure kills may not sit in a dataflow block; KillAfterLastUse covers those.
                for dead in released.get(binding.var, []):
                    bindings.append(_kill("relax.memory.kill_tensor", dead.var))
        blocks.append(type(block)(bindings, block.span))
    kills = [_kill("relax.memory.kill_storage", s.var) for s in storages]
    if blocks[-1].is_dataflow:
        blocks.append(BindingBlock(kills))
    else:
        blocks[-1] = BindingBlock([*blocks[-1].bindings, *kills], blocks[-1].span)
    new_body = SeqExpr(blocks, body.body, body.span)
    return Function(
        func.params, new_body, func.ret_struct_info, func.is_pure, func.attrs, func.span
    )


def StaticPlanBlockMemory() -> Pass:
    """Plan the storage of ``R.builtin.alloc_tensor`` allocations at compile time, reusing
    the storage of tensors whose last use has passed.

    Returns
    -------
    Pass
        A module pass; run it after ``CallTIRRewrite`` (which makes the allocations).

    Notes
    -----
    Dynamic shapes are planned only with the ``tir_var_upper_bound`` function attribute
    (``{"n": 128}``); allocations that cannot be planned are left for ``LowerAllocTensor``.
    """

    @module_pass(name=_PASS)
    def transform(mod: IRModule, ctx: PassContext) -> IRModule:
        def plan(name: str, func: Function, current: IRModule) -> Function:
            return _plan_function(func_name(name, func), func, mod)

        return map_relax_functions(mod, plan)

    return transform  # type: ignore[no-any-return]
