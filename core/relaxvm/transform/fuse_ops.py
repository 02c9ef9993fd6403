"""``FuseOps``: group dataflow bindings into fused sub-functions by op pattern.

TVM's ``relax.transform.FuseOps``. Inside each dataflow block, ``R.call_tir`` bindings of
PrimFuncs tagged with an ``op_pattern`` (``AnnotateTIROpPattern``) are grouped the way TVM's
graph partitioner groups them:

* an elementwise or broadcast producer fuses into an injective (or simpler) consumer and into
  a commutative reduction (the reduction reads the producer's formula directly);
* an injective producer fuses into an injective (or simpler) consumer;
* an out-elementwise-fusable producer (matmul, conv) fuses its elementwise/broadcast epilogue:
  ``matmul -> add(bias) -> relu`` is one group;
* a group holds at most one reduction or out-elementwise-fusable "anchor"; opaque kernels and
  reductions' consumers are not fused;
* as in TVM, anchors' epilogues and elementwise/broadcast producers fuse first (phase 0),
  injective producers after (phase 1, only into groups that are still injective).

A binding joins the group of its immediate post-dominator (the nearest later binding that
every use of its value leads to) when every kernel on the paths in between allows it, so
diamonds fuse; a value used outside the block has none. Each group thus computes one value
(at the position of its last binding) and no binding outside the group depends on the inside. Each group of two or more bindings
becomes a private Relax function ``fused_<kernel names>`` with attribute ``Primitive=True``
whose body is the group's bindings; the group is replaced by one call of it. ``FuseTIR``
then merges each such function into one PrimFunc.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.relax import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    GlobalVar,
    IRModule,
    SeqExpr,
    Tuple,
    Var,
    VarBinding,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.tir import PrimFunc
from ._graph_util import OpPattern, VarUses
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["FuseOps", "can_fuse"]


def can_fuse(producer_group: int, consumer: int) -> bool:
    """Whether a group of kind ``producer_group`` may fuse into a consumer of kind
    ``consumer`` (both op pattern kinds), following TVM's partitioner."""
    if producer_group <= OpPattern.BROADCAST:
        return consumer <= OpPattern.INJECTIVE or consumer == OpPattern.COMM_REDUCE
    if producer_group == OpPattern.INJECTIVE:
        return consumer <= OpPattern.INJECTIVE
    if producer_group == OpPattern.OUT_EWISE_FUSABLE:
        return consumer <= OpPattern.BROADCAST
    return False


def _phase_allows(phase: int, producer: int, consumer_node: int, consumer_group: int) -> bool:
    """Whether a producer group may join its consumer's group in this phase: phase 0 fuses
    anchors' epilogues and elementwise/broadcast producers, phase 1 injective producers; the
    consumer's current group must stay within what the producer's rule allows."""
    if not can_fuse(producer, consumer_node):
        return False
    if producer == OpPattern.OUT_EWISE_FUSABLE:
        return phase == 0 and consumer_group <= OpPattern.BROADCAST
    if producer <= OpPattern.BROADCAST:
        return phase == 0 and consumer_group <= OpPattern.OUT_EWISE_FUSABLE
    return phase == 1 and consumer_group <= OpPattern.INJECTIVE


@dataclass
class _Group:
    members: list[int]
    pattern: int
    anchors: int = 0
    parent: _Group | None = field(default=None, repr=False)

    def root(self) -> _Group:
        group = self
        while group.parent is not None:
            group = group.parent
        return group


def _kernel(mod: IRModule, value: RelaxExpr) -> tuple[GlobalVar, PrimFunc] | None:
    """The (GlobalVar, PrimFunc) of a fusable ``call_tir`` value, else None."""
    if not isinstance(value, Call) or getattr(value.op, "name", None) != "relax.call_tir":
        return None
    if len(value.args) != 2 or not isinstance(value.args[1], Tuple):
        return None  # symbolic scalar arguments (tir_vars) are not fused
    gvar = value.args[0]
    if not isinstance(gvar, GlobalVar) or gvar.name_hint not in mod:
        return None
    func = mod[gvar.name_hint]
    if not isinstance(func, PrimFunc):
        return None
    return gvar, func


class _BlockGraph:
    """The dataflow graph of one block: who uses each binding, and post-dominators.

    A binding whose value is used outside the block (or by nothing) has no post-dominator;
    otherwise its immediate post-dominator is the nearest binding that every path from it
    to the block's outputs goes through.
    """

    def __init__(self, bindings: list[Binding], uses: dict[Var, int]) -> None:
        defined_at = {binding.var: index for index, binding in enumerate(bindings)}
        self.consumers: list[list[int]] = [[] for _ in bindings]
        inside_uses: dict[Var, int] = {}
        for index, binding in enumerate(bindings):
            for var in _uses_in(binding.value):
                producer = defined_at.get(var)
                if producer is not None and index not in self.consumers[producer]:
                    self.consumers[producer].append(index)
                inside_uses[var] = inside_uses.get(var, 0) + 1
        self.escapes = [
            not isinstance(b.var, DataflowVar)
            or inside_uses.get(b.var, 0) != uses.get(b.var, 0)
            or not self.consumers[i]
            for i, b in enumerate(bindings)
        ]
        self.ipdom: list[int | None] = [None] * len(bindings)
        self.depth = [0] * len(bindings)
        for index in reversed(range(len(bindings))):
            if self.escapes[index]:
                continue
            found: int | None = self.consumers[index][0]
            for other in self.consumers[index][1:]:
                found = self._lca(found, other)
                if found is None:
                    break
            self.ipdom[index] = found
            self.depth[index] = 0 if found is None else self.depth[found] + 1

    def _lca(self, a: int | None, b: int | None) -> int | None:
        while a is not None and b is not None and a != b:
            if self.depth[a] >= self.depth[b]:
                a = self.ipdom[a]
            else:
                b = self.ipdom[b]
        return a if a == b else None

    def post_dominator(self, index: int) -> int | None:
        """The immediate post-dominator of binding ``index`` (None when its value escapes)."""
        return self.ipdom[index]

    def path(self, start: int, stop: int) -> list[int]:
        """Every binding on a path from ``start`` (excluded) to ``stop`` (included)."""
        seen: set[int] = set()
        pending = list(self.consumers[start])
        while pending:
            node = pending.pop()
            if node in seen:
                continue
            seen.add(node)
            if node != stop:
                pending.extend(self.consumers[node])
        return sorted(seen)


def _uses_in(value: RelaxExpr) -> list[Var]:
    counter = VarUses()
    counter.visit_expr(value)
    return list(counter.counts)


class _Fuser(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.uses: dict[Var, int] = {}

    def visit_function_(self, expr: Function) -> RelaxExpr:
        if expr.attrs.get("Primitive"):
            return expr
        counter = VarUses()
        counter.visit_expr(expr)
        self.uses = counter.counts
        return super().visit_function_(expr)

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        if not isinstance(block, DataflowBlock):
            return super().visit_binding_block(block)
        return self._fuse_block(block)

    def _fuse_block(self, block: DataflowBlock) -> BindingBlock:
        bindings = list(block.bindings)
        kernels: dict[int, tuple[GlobalVar, PrimFunc]] = {}
        groups: dict[int, _Group] = {}
        for index, binding in enumerate(bindings):
            found = _kernel(self.mod, binding.value) if isinstance(binding, VarBinding) else None
            if found is None:
                continue
            pattern = int(found[1].attrs.get("op_pattern", OpPattern.OPAQUE))
            if pattern >= OpPattern.TUPLE:
                continue
            kernels[index] = found
            groups[index] = _Group([index], pattern, int(pattern >= OpPattern.COMM_REDUCE))
        graph = _BlockGraph(bindings, self.uses)
        # TVM's phases, producers first: anchors' epilogues and elementwise/broadcast producers
        # fuse before injective ones, so an injective op never takes an elementwise op away
        # from the reduction that could absorb it.
        for phase in (0, 1):
            for index in sorted(kernels):
                self._try_fuse(phase, index, graph, kernels, groups)
        roots = {id(g.root()): g.root() for g in groups.values()}
        fused = [g for g in roots.values() if len(g.members) > 1]
        if not fused:
            return super().visit_binding_block(block)
        replaced: dict[int, VarBinding] = {}
        dropped: set[int] = set()
        for group in fused:
            members = sorted(group.members)
            call = self._make_function(bindings, members, kernels)
            last = bindings[members[-1]]
            replaced[members[-1]] = VarBinding(last.var, call, last.span)
            dropped.update(members[:-1])
        new_bindings = [replaced.get(i, b) for i, b in enumerate(bindings) if i not in dropped]
        return super().visit_binding_block(DataflowBlock(new_bindings, block.span))

    @staticmethod
    def _try_fuse(
        phase: int,
        index: int,
        graph: _BlockGraph,
        kernels: dict[int, tuple[GlobalVar, PrimFunc]],
        groups: dict[int, _Group],
    ) -> None:
        """Fuse the group of binding ``index`` into its post-dominator's group when every
        binding on the paths between them allows it (TVM's ``RunFuse`` step)."""
        target = graph.post_dominator(index)
        if target is None or target not in kernels:
            return
        group, sink = groups[index].root(), groups[target].root()
        if group is sink or group.pattern == OpPattern.OPAQUE:
            return
        path = graph.path(index, target)
        if any(node not in kernels for node in path):
            return  # a non-kernel binding (tuple, packed call...) in between: opaque
        node_pattern = int(kernels[target][1].attrs.get("op_pattern", OpPattern.OPAQUE))
        if not can_fuse(group.pattern, node_pattern):
            return
        between = [groups[node].root() for node in path if node != target]
        if group.pattern == OpPattern.OUT_EWISE_FUSABLE:
            ok = phase == 0 and all(g.pattern <= OpPattern.BROADCAST for g in [*between, sink])
        elif group.pattern <= OpPattern.BROADCAST:
            ok = (
                phase == 0
                and all(g.pattern <= OpPattern.INJECTIVE for g in between)
                and sink.pattern <= OpPattern.OUT_EWISE_FUSABLE
            )
        else:  # injective
            ok = phase == 1 and all(g.pattern <= OpPattern.INJECTIVE for g in [*between, sink])
        if not ok:
            return
        merging = {id(g): g for g in [group, *between] if g is not sink}
        if sum(g.anchors for g in merging.values()) + sink.anchors > 1:
            return  # one reduction / matmul per group
        for other in merging.values():
            other.parent = sink
            sink.members.extend(other.members)
            sink.pattern = max(sink.pattern, other.pattern)
            sink.anchors += other.anchors

    def _make_function(
        self,
        bindings: list,  # type: ignore[type-arg]
        members: list[int],
        kernels: dict[int, tuple[GlobalVar, PrimFunc]],
    ) -> Call:
        inside = {bindings[i].var for i in members}
        params: dict[RelaxExpr, Var] = {}
        remap: dict[Var, Var] = {}
        body: list[VarBinding] = []
        last = members[-1]
        for index in members:
            binding = bindings[index]
            call = binding.value
            fields: list[RelaxExpr] = []
            for arg in call.args[1].fields:
                if isinstance(arg, Var) and arg in inside:
                    fields.append(remap[arg])
                    continue
                if arg not in params:
                    name = arg.name_hint if isinstance(arg, Var) else f"p{len(params)}"
                    if not isinstance(arg, (Var, Constant)):
                        name = f"p{len(params)}"
                    params[arg] = Var(name, arg.struct_info)
                fields.append(params[arg])
            var_type = Var if index == last else DataflowVar
            new_var = var_type(binding.var.name_hint, binding.var.struct_info)
            remap[binding.var] = new_var
            new_call = Call(
                call.op, [call.args[0], Tuple(fields)], call.attrs, call.sinfo_args,
                call.struct_info, call.span,
            )  # fmt: skip
            body.append(VarBinding(new_var, new_call))
        result = remap[bindings[last].var]
        names = "_".join(kernels[i][0].name_hint for i in members)
        func = Function(
            list(params.values()),
            SeqExpr([DataflowBlock(body)], result),
            result.struct_info,
            True,
            {"Primitive": True},
        )
        gvar = self.builder.add_func(func, f"fused_{names}")
        return Call(gvar, list(params), None, (), result.struct_info)


def FuseOps(fuse_opt_level: int = -1) -> Pass:
    """Group fusable ``call_tir`` bindings of dataflow blocks into ``Primitive`` functions.

    Parameters
    ----------
    fuse_opt_level : int
        ``-1`` uses the PassContext's ``opt_level``; at level 0 nothing is fused.

    Returns
    -------
    Pass
        A module pass. Run ``AnnotateTIROpPattern`` first (untagged kernels are opaque) and
        ``FuseTIR`` after it.
    """
    if not isinstance(fuse_opt_level, int) or fuse_opt_level < -1:
        raise ValueError(f"FuseOps: fuse_opt_level must be an int >= -1, got {fuse_opt_level!r}")

    @module_pass(opt_level=0, name="FuseOps")
    def fuse_ops(mod: IRModule, ctx: PassContext) -> IRModule:
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        if level == 0:
            return mod
        fuser = _Fuser(mod)
        for gvar, func in mod.items():
            if isinstance(func, Function):
                new = fuser.visit_expr(func)
                if new is not func:
                    fuser.builder.update_func(gvar, new)
        return fuser.builder.get()

    return fuse_ops  # type: ignore[no-any-return]
