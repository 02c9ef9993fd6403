"""``FuseTIR``: merge each ``Primitive`` function made by ``FuseOps`` into one PrimFunc.

TVM's ``relax.transform.FuseTIR``. For each call of a fused function ``fused_a_b_c`` the
kernels of its ``call_tir`` bindings are concatenated into one PrimFunc of the same name,
whose parameters are the fused function's tensor parameters followed by its output(s); the
call becomes ``R.call_tir(cls.fused_a_b_c, (args...), out_sinfo)``. Intermediate values are
scratch buffers (``Allocate``), then the stages are simplified:

1. **Inline.** A stage that is one perfect loop nest storing ``T[i, j, ...] = f(...)`` at its
   own loop variables (elementwise, broadcast, injective kernels) into an intermediate ``T``
   is substituted into every later read of ``T``; the stage and ``T`` disappear.
2. **Epilogue into the reduction.** When a reduction stage (``C[i, j] = 0; for k: C[i, j] +=
   ...``) is followed by the only stage reading ``C``, and that stage is a loop nest of the
   same extents reading ``C`` at its own loop variables, the epilogue moves inside the
   reduction's spatial loops and ``C`` becomes a one-element ``local`` accumulator.

So ``matmul -> add(bias) -> relu`` becomes::

    for i, j:                                 # the matmul's spatial loops (serial)
        Allocate acc: T.Buffer((1,), "float32", scope="local")
            acc[0] = 0
            for k:
                acc[0] = acc[0] + A[i, k] * B[k, j]
            out[i, j] = T.max(acc[0] + bias[j], 0)

The fused PrimFunc keeps ``op_pattern`` of its anchor (the largest pattern in the group) and
is tagged ``fused=True``. The ``Primitive`` functions, and kernels only they used, are removed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CompileError
from ..ir import IntImm, PrimExpr, Var
from ..ir.relax import (
    Call,
    Function,
    GlobalVar,
    IRModule,
    TensorStructInfo,
    Tuple,
    TupleStructInfo,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.op import call_tir
from ..ir.tir import Allocate, BufferLoad, BufferStore, For, ForKind, PrimFunc, SeqStmt, Stmt, seq
from ..ir.tir.buffer import Buffer
from ..ir.tir.lower_blocks import as_loop_nests
from ._graph_util import OpPattern, global_refs
from ._tir_rewrite import Rewriter, loads_in, rewrite_expr, stores_in
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["FuseTIR", "fuse_primitive"]


def _flatten(stmt: Stmt) -> list[Stmt]:
    return list(stmt.seq) if isinstance(stmt, SeqStmt) else [stmt]


class _Names:
    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, name: str) -> str:
        candidate, suffix = name, 1
        while candidate in self.used:
            candidate, suffix = f"{name}_{suffix}", suffix + 1
        self.used.add(candidate)
        return candidate


def _tensor_buffer(names: _Names, name: str, sinfo: object, where: str) -> Buffer:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None or sinfo.dtype is None:
        raise CompileError(
            f"FuseTIR: {where} '{name}' is {sinfo}, not a tensor of known shape and dtype"
        )
    return Buffer(names(name), list(sinfo.shape_values), sinfo.dtype)


def _out_infos(call: Call) -> list[TensorStructInfo]:
    sinfo = call.sinfo_args[0]
    fields = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
    return fields  # type: ignore[return-value]


def fuse_primitive(name: str, func: Function, mod: IRModule) -> PrimFunc:
    """One PrimFunc computing the ``Primitive`` Relax function ``func`` (see the module doc)."""
    names = _Names()
    values: dict[RelaxExpr, list[Buffer]] = {}
    params: list[Buffer] = []
    for param in func.params:
        buffer = _tensor_buffer(names, param.name_hint, param.struct_info, "parameter")
        values[param] = [buffer]
        params.append(buffer)
    result = func.body.body  # type: ignore[attr-defined]
    stages: list[Stmt] = []
    scratch: list[Buffer] = []
    outputs: list[Buffer] = []
    pattern = int(OpPattern.ELEMWISE)
    for block in func.body.blocks:  # type: ignore[attr-defined]
        for binding in block.bindings:
            call = binding.value
            if not isinstance(call, Call) or getattr(call.op, "name", "") != "relax.call_tir":
                raise CompileError(
                    f"FuseTIR: function '{name}', binding '{binding.var.name_hint}': only "
                    "call_tir bindings can be fused"
                )
            gvar = call.args[0]
            kernel = mod[gvar.name_hint]  # type: ignore[attr-defined]
            pattern = max(pattern, int(kernel.attrs.get("op_pattern", OpPattern.OPAQUE)))
            inputs = [values[arg][0] for arg in call.args[1].fields]  # type: ignore[attr-defined]
            outs = []
            for info, handle in zip(_out_infos(call), kernel.params[len(inputs) :], strict=False):
                outs.append(_tensor_buffer(names, kernel.buffer_map[handle].name, info, "output"))
            (outputs if binding.var is result else scratch).extend(outs)
            values[binding.var] = outs
            stages.extend(_instantiate(kernel, [*inputs, *outs], scratch, names, name))
    stages = _inline_stages(stages, scratch)
    stages = _merge_epilogues(stages, scratch, names)
    body: Stmt = seq(*stages)
    for buffer in reversed(scratch):
        body = Allocate(buffer, body)
    attrs = {"global_symbol": name, "tir.noalias": True, "op_pattern": pattern, "fused": True}
    return PrimFunc([*params, *outputs], body, attrs=attrs)


def _instantiate(
    kernel: PrimFunc, buffers: list[Buffer], scratch: list[Buffer], names: _Names, where: str
) -> list[Stmt]:
    if len(kernel.params) != len(buffers):
        raise CompileError(
            f"FuseTIR: kernel '{kernel.name}' in '{where}' takes {len(kernel.params)} "
            f"parameters, the call passes {len(buffers)} tensors (scalar parameters are not "
            "fused)"
        )
    kernel = as_loop_nests(kernel)  # block form (te.create_prim_func) as its loops
    var_map: dict[Var, PrimExpr] = {}
    buffer_map: dict[Buffer, Buffer] = {}
    for handle, target in zip(kernel.params, buffers, strict=True):
        source = kernel.buffer_map[handle]
        buffer_map[source] = target
        for dim, actual in zip(source.shape, target.shape, strict=True):
            if isinstance(dim, Var) and dim not in var_map:
                var_map[dim] = actual
    body = kernel.body
    while isinstance(body, Allocate):
        local = body.buffer
        shape = [rewrite_expr(d, var_map, {}) for d in local.shape]
        copy = Buffer(names(local.name), shape, local.dtype, scope=local.scope)
        buffer_map[local] = copy
        scratch.append(copy)
        body = body.body
    rewritten = Rewriter(var_map, buffer_map, fresh_loops=True).visit_stmt(body)
    return _flatten(rewritten)


# ---- simplification ------------------------------------------------------------------------
def _perfect_nest(stmt: Stmt, depth: int) -> tuple[list[For], Stmt] | None:
    loops: list[For] = []
    node = stmt
    while len(loops) < depth:
        if not isinstance(node, For) or node.kind != ForKind.SERIAL:
            return None
        if not (isinstance(node.min, IntImm) and node.min.value == 0):
            return None
        loops.append(node)
        node = node.body
    return loops, node


def _same_exprs(a: Sequence[PrimExpr], b: Sequence[PrimExpr]) -> bool:
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


def _simple_stage(stmt: Stmt, scratch: list[Buffer]) -> tuple[list[For], BufferStore] | None:
    stores = stores_in(stmt)
    if len(stores) != 1 or stores[0].buffer not in scratch:
        return None
    store = stores[0]
    nest = _perfect_nest(stmt, store.buffer.ndim)
    if nest is None or nest[1] is not store:
        return None
    loops = nest[0]
    if not _same_exprs(list(store.indices), [loop.loop_var for loop in loops]):
        return None
    if not _same_exprs([loop.extent for loop in loops], list(store.buffer.shape)):
        return None
    if any(load.buffer is store.buffer for load in loads_in(stmt)):
        return None
    return loops, store


def _inline_stages(stages: list[Stmt], scratch: list[Buffer]) -> list[Stmt]:
    result = list(stages)
    index = 0
    while index < len(result):
        found = _simple_stage(result[index], scratch)
        target = found[1].buffer if found else None
        if found is None or any(
            target in {s.buffer for s in stores_in(other)}
            for k, other in enumerate(result)
            if k != index
        ):
            index += 1
            continue
        loops, store = found
        loop_vars = [loop.loop_var for loop in loops]

        def inline(
            load: BufferLoad,
            indices: tuple[PrimExpr, ...],
            buf: Buffer = target,  # type: ignore[assignment]
            value: PrimExpr = store.value,
            lvars: list[Var] = loop_vars,
        ) -> PrimExpr | None:
            if load.buffer is not buf:
                return None
            return rewrite_expr(value, dict(zip(lvars, indices, strict=True)), {})

        for k in range(index + 1, len(result)):
            result[k] = Rewriter(on_load=inline).visit_stmt(result[k])
        del result[index]
        scratch.remove(target)  # type: ignore[arg-type]
    return result


def _merge_epilogues(stages: list[Stmt], scratch: list[Buffer], names: _Names) -> list[Stmt]:
    result = list(stages)
    index = 0
    while index + 1 < len(result):
        merged = _merge_pair(result[index], result[index + 1], result, scratch, names)
        if merged is None:
            index += 1
            continue
        result[index : index + 2] = [merged]
    return result


def _merge_pair(
    producer: Stmt, consumer: Stmt, stages: list[Stmt], scratch: list[Buffer], names: _Names
) -> Stmt | None:
    stores = stores_in(producer)
    if not stores:
        return None
    buffer = stores[0].buffer
    if buffer not in scratch or any(s.buffer is not buffer for s in stores):
        return None
    nest = _perfect_nest(producer, buffer.ndim)
    if nest is None:
        return None
    loops, inner = nest
    loop_vars = [loop.loop_var for loop in loops]
    accesses: list[BufferStore | BufferLoad] = [*stores]
    accesses.extend(ld for ld in loads_in(producer) if ld.buffer is buffer)
    if not all(_same_exprs(list(a.indices), loop_vars) for a in accesses):
        return None
    if isinstance(inner, BufferStore):
        return None  # not a reduction: nothing to gain over inlining
    readers = [
        s for s in stages if s is not producer and any(ld.buffer is buffer for ld in loads_in(s))
    ]
    if readers != [consumer]:
        return None
    # Another stage writing the buffer (the separate init store of a 0-d reduction) would be
    # left writing a buffer that no longer exists.
    if any(s is not producer and any(st.buffer is buffer for st in stores_in(s)) for s in stages):
        return None
    cnest = _perfect_nest(consumer, len(loops))
    if cnest is None:
        return None
    cloops, cinner = cnest
    if not _same_exprs([c.extent for c in cloops], [p.extent for p in loops]):
        return None
    cvars = [c.loop_var for c in cloops]
    if not all(
        _same_exprs(list(ld.indices), cvars) for ld in loads_in(consumer) if ld.buffer is buffer
    ):
        return None
    zero = IntImm("int64", 0)
    acc = Buffer(names(f"{buffer.name}_local"), [1], buffer.dtype, scope="local")

    def use_acc(load: BufferLoad, indices: tuple[PrimExpr, ...]) -> PrimExpr | None:
        return BufferLoad(acc, (zero,)) if load.buffer is buffer else None

    epilogue = Rewriter(dict(zip(cvars, loop_vars, strict=True)), on_load=use_acc).visit_stmt(
        cinner
    )
    body: Stmt = Allocate(acc, seq(_AccIndex(buffer, acc, zero).visit_stmt(inner), epilogue))
    for loop in reversed(loops):
        body = loop.replace(body=body)
    scratch.remove(buffer)
    return body


class _AccIndex(Rewriter):
    """Send every access of ``buffer`` to the single element of the accumulator ``acc``."""

    def __init__(self, buffer: Buffer, acc: Buffer, zero: PrimExpr) -> None:
        def hook(load: BufferLoad, indices: tuple[PrimExpr, ...]) -> PrimExpr | None:
            return BufferLoad(acc, (zero,)) if load.buffer is buffer else None

        super().__init__(on_load=hook)
        self.buffer, self.acc, self.zero = buffer, acc, zero

    def visit_buffer_store_(self, stmt: BufferStore) -> Stmt:
        value = self.visit_expr(stmt.value)
        if stmt.buffer is self.buffer:
            return BufferStore(self.acc, value, (self.zero,))
        return BufferStore(stmt.buffer, value, tuple(self.visit_expr(i) for i in stmt.indices))


# ---- the pass --------------------------------------------------------------------------------
class _CallRewriter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.fused: dict[str, GlobalVar] = {}

    def visit_call_(self, expr: Call) -> RelaxExpr:
        new = super().visit_call_(expr)
        if not isinstance(new, Call) or not isinstance(new.op, GlobalVar):
            return new
        callee = self.mod[new.op.name_hint] if new.op.name_hint in self.mod else None  # noqa: SIM401
        if not isinstance(callee, Function) or not callee.attrs.get("Primitive"):
            return new
        name = new.op.name_hint
        gvar = self.fused.get(name)
        if gvar is None:
            kernel = fuse_primitive(name, callee, self.mod)
            gvar = self.builder.add_func(kernel, name + "_tir")
            self.fused[name] = gvar
        ret = callee.ret_struct_info
        out = list(ret.fields) if isinstance(ret, TupleStructInfo) else [ret]
        return call_tir(gvar, Tuple(list(new.args)), out)


def FuseTIR() -> Pass:
    """Replace each call of a ``Primitive`` fused function by ``call_tir`` of one PrimFunc.

    Returns
    -------
    Pass
        A module pass; run it after ``FuseOps``.
    """

    @module_pass(opt_level=0, name="FuseTIR")
    def fuse_tir(mod: IRModule, ctx: PassContext) -> IRModule:
        primitive = [
            g.name_hint
            for g, f in mod.items()
            if isinstance(f, Function) and f.attrs.get("Primitive")
        ]
        if not primitive:
            return mod
        rewriter = _CallRewriter(mod)
        for gvar, func in mod.items():
            if isinstance(func, Function) and not func.attrs.get("Primitive"):
                new = rewriter.visit_expr(func)
                if new is not func:
                    rewriter.builder.update_func(gvar, new)
        result = rewriter.builder.get()
        used_by_primitive: set[str] = set()
        for name in primitive:
            used_by_primitive |= global_refs(result[name])
            result.remove(name)
        still_used: set[str] = set()
        for _, func in result.items():
            if isinstance(func, Function):
                still_used |= global_refs(func)
        for name in used_by_primitive - still_used:
            if name in result and isinstance(result[name], PrimFunc):
                result.remove(name)
        # The fused kernels take the fused functions' names, as in TVM.
        return _rename_fused(result, rewriter.fused)

    return fuse_tir  # type: ignore[no-any-return]


def _rename_fused(mod: IRModule, fused: dict[str, GlobalVar]) -> IRModule:
    """Give each fused kernel its fused function's name (free now that it is removed)."""
    # Identical fused kernels are shared; the kernel takes the first function's name.
    mapping: dict[str, str] = {}
    for name, gvar in fused.items():
        mapping.setdefault(gvar.name_hint, name)

    class _Renamer(ExprMutator):
        def visit_leaf_(self, expr: RelaxExpr) -> RelaxExpr:
            if isinstance(expr, GlobalVar) and expr.name_hint in mapping:
                return new_gvars[expr.name_hint]
            return expr

    result = IRModule(attrs=mod.attrs, global_infos=mod.global_infos)
    new_gvars: dict[str, GlobalVar] = {}
    for gvar, func in mod.items():
        if gvar.name_hint in mapping:
            name = mapping[gvar.name_hint]
            new_gvars[gvar.name_hint] = result.add(name, func.with_attr("global_symbol", name))
    for gvar, func in mod.items():
        if gvar.name_hint in mapping:
            continue
        if isinstance(func, Function):
            func = _Renamer().visit_expr(func)
        result[gvar] = func
    return result
