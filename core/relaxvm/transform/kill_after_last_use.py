"""KillAfterLastUse: release each object right after its last use.

For every variable bound in a sequence of blocks, a kill is inserted after the binding that
uses it last, so its register stops holding the object and memory returns to the allocator as
early as possible:

* ``R.memory.alloc_storage`` / ``R.vm.alloc_storage`` results get ``R.memory.kill_storage``,
* ``R.memory.alloc_tensor`` results get ``R.memory.kill_tensor``,
* other objects (tensors computed by calls, tuples, closures) get ``R.vm.kill_object``.

Trivial rebindings (``y = x``, ``y = R.match_cast(x, ...)``) are tracked: ``x`` and ``y`` are
killed together after the last use of either, and neither is killed when either is returned
or when ``x`` is a parameter or a variable of an outer scope (the code generator gives an
alias the register of its original, so killing the alias would clear the original).
Function parameters, returned values (also fields of a returned tuple), values without a
register worth clearing (shapes, prim values, empty tuples, PrimFunc call results) and
variables bound outside the sequence are never killed. Uses inside ``If`` branches and nested
functions count as uses at the binding that holds them; the branches and nested functions get
their own kills. Kills already present (e.g. from ``StaticPlanBlockMemory``) are replaced, since
the last-use analysis supersedes them. A kill is never put inside a dataflow block (it is
impure): it goes into a binding block right after it.
"""

from __future__ import annotations

from ..ir.relax._base import RelaxExpr
from ..ir.relax.block import Binding, BindingBlock, Function, MatchCast, SeqExpr, VarBinding
from ..ir.relax.expr import Call, GlobalVar, If, Op, Tuple, Var
from ..ir.relax.module import IRModule
from ..ir.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ._lower_common import VOID, is_op, map_relax_functions, module_member, vars_in
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["KillAfterLastUse"]

_PASS = "KillAfterLastUse"
_KILL_OPS = ("relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object")
_STORAGE_OPS = ("relax.memory.alloc_storage", "relax.vm.alloc_storage")


def _killable(sinfo: StructInfo | None) -> bool:
    """Whether a value of ``sinfo`` holds an object worth releasing."""
    if isinstance(sinfo, (TensorStructInfo, ObjectStructInfo, FuncStructInfo)):
        return True
    return isinstance(sinfo, TupleStructInfo) and bool(sinfo.fields)


def _kill_op(value: RelaxExpr) -> str:
    if any(is_op(value, name) for name in _STORAGE_OPS):
        return "relax.memory.kill_storage"
    if is_op(value, "relax.memory.alloc_tensor"):
        return "relax.memory.kill_tensor"
    return "relax.vm.kill_object"


def _kill(op_name: str, target: Var) -> VarBinding:
    return VarBinding(Var("_", VOID), Call(Op.get(op_name), [target], None, (), VOID))


class _KillInserter:
    def __init__(self, mod: IRModule) -> None:
        self.mod = mod

    # ---- nested expressions ------------------------------------------------------------------
    def rewrite_value(self, value: RelaxExpr) -> RelaxExpr:
        """A binding value with kills inserted in its own nested sequences."""
        if isinstance(value, If):
            true_branch = self.rewrite_nested(value.true_branch)
            false_branch = self.rewrite_nested(value.false_branch)
            if true_branch is value.true_branch and false_branch is value.false_branch:
                return value
            return If(value.cond, true_branch, false_branch, value.struct_info, value.span)
        if isinstance(value, Function):
            return self.rewrite_function(value)
        if isinstance(value, SeqExpr):
            return self.rewrite_seq(value)
        return value

    def rewrite_nested(self, expr: RelaxExpr) -> RelaxExpr:
        return self.rewrite_seq(expr) if isinstance(expr, SeqExpr) else expr

    def rewrite_function(self, func: Function) -> Function:
        body = self.rewrite_nested(func.body)
        if body is func.body:
            return func
        return Function(
            func.params, body, func.ret_struct_info, func.is_pure, func.attrs, func.span
        )

    # ---- one sequence ------------------------------------------------------------------------
    def is_primfunc_call(self, value: RelaxExpr) -> bool:
        if not isinstance(value, Call) or not isinstance(value.op, GlobalVar):
            return False
        member = module_member(self.mod, value.op)
        return member is not None and not isinstance(member, Function)

    def rewrite_seq(self, seq: SeqExpr) -> SeqExpr:
        # Flatten the bindings (minus old kills), remembering each one's block.
        flat: list[tuple[int, Binding]] = []
        changed = False
        for block_index, block in enumerate(seq.blocks):
            for binding in block.bindings:
                if any(is_op(binding.value, name) for name in _KILL_OPS):
                    changed = True
                    continue
                value = self.rewrite_value(binding.value)
                if value is not binding.value:
                    changed = True
                    if isinstance(binding, MatchCast):
                        binding = MatchCast(binding.var, value, binding.struct_info, binding.span)
                    else:
                        binding = VarBinding(binding.var, value, binding.span)
                flat.append((block_index, binding))

        defined: dict[Var, int] = {}
        root: dict[Var, Var] = {}
        last: dict[Var, int] = {}
        for index, (_, binding) in enumerate(flat):
            for used in vars_in(binding.value):
                last[used] = index
            var, value = binding.var, binding.value
            defined[var] = index
            # A trivial rebinding shares the original's lifetime (and, in the code generator,
            # its register); the original may be a parameter or outer variable, never killed.
            root[var] = root.get(value, value) if isinstance(value, Var) else var

        returned: set[Var] = set()
        body = seq.body
        for item in body.fields if isinstance(body, Tuple) else (body,):
            for var in vars_in(item):
                if var in root:
                    returned.add(root[var])

        # The last use of each lifetime group (its root and all trivial aliases).
        group_last: dict[Var, int] = {}
        for var, index in defined.items():
            group = root[var]
            end = max(index, last.get(var, index))
            group_last[group] = max(group_last.get(group, end), end)

        kills_after: dict[int, list[VarBinding]] = {}
        for var, index in defined.items():
            group = root[var]
            if group not in defined or group in returned or not _killable(var.struct_info):
                continue
            value = flat[index][1].value
            if self.is_primfunc_call(value):
                continue
            kills_after.setdefault(group_last[group], []).append(_kill(_kill_op(value), var))

        if not kills_after and not changed:
            return seq
        return SeqExpr(self.rebuild(seq, flat, kills_after), seq.body, seq.span)

    @staticmethod
    def rebuild(
        seq: SeqExpr, flat: list[tuple[int, Binding]], kills_after: dict[int, list[VarBinding]]
    ) -> list[BindingBlock]:
        per_block: list[list[Binding]] = [[] for _ in seq.blocks]
        trailing: list[list[Binding]] = [[] for _ in seq.blocks]
        for index, (block_index, binding) in enumerate(flat):
            per_block[block_index].append(binding)
            kills = kills_after.get(index, [])
            if seq.blocks[block_index].is_dataflow:
                trailing[block_index].extend(kills)
            else:
                per_block[block_index].extend(kills)
        blocks: list[BindingBlock] = []
        for block, bindings, after in zip(seq.blocks, per_block, trailing, strict=True):
            if bindings:
                blocks.append(type(block)(bindings, block.span))
            if after:
                blocks.append(BindingBlock(after))
        return blocks


def KillAfterLastUse() -> Pass:
    """Insert ``R.memory.kill_tensor`` / ``R.memory.kill_storage`` / ``R.vm.kill_object``
    after the last use of each object, tracking trivial rebindings.

    Returns
    -------
    Pass
        A module pass.
    """

    @module_pass(name=_PASS)
    def transform(mod: IRModule, ctx: PassContext) -> IRModule:
        inserter = _KillInserter(mod)

        def rewrite(name: str, func: Function, current: IRModule) -> Function:
            return inserter.rewrite_function(func)

        return map_relax_functions(mod, rewrite)

    return transform  # type: ignore[no-any-return]
