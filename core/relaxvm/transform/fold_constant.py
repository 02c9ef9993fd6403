"""``FoldConstant``: evaluate, at build time, dataflow calls whose inputs are all constants.

TVM's ``relax.transform.FoldConstant``. In dataflow blocks:

* ``R.call_tir(kernel, (c0, c1...), out_sinfo)`` with constant tensor arguments and static
  output shapes runs ``kernel`` with the TIR reference interpreter and becomes a
  :class:`~relaxvm.ir.relax.Constant` (or a tuple of them);
* a call of an op with a registered legalization and constant arguments is legalized into
  a scratch module and folded the same way (the scratch kernels do not enter the module);
* ``t[i]`` of a constant tuple becomes the field.

A binding whose variable is bound to a constant counts as constant for later bindings.
Folding runs the reference interpreter, which is slow (tens of microseconds per loop
iteration), so two PassContext config entries bound it: ``relax.FoldConstant.max_elements``
(default 2**20) caps the size of a folded constant, and ``relax.FoldConstant.max_iterations``
(default 2**15) caps the loop iterations of a kernel worth running at build time (kernels
whose loop extents are not constants are never folded). Impure calls are never evaluated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import IntImm
from ..ir.relax import (
    BindingBlock,
    BlockBuilder,
    Call,
    Constant,
    DataflowBlock,
    Function,
    GlobalVar,
    IRModule,
    Op,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
    const,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.tir import (
    Allocate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    run_prim_func,
)
from ..registry.extensions import get_legalization
from ._graph_util import is_impure_call, map_relax_functions
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["FoldConstant"]

_DEFAULT_MAX = 1 << 20
_DEFAULT_ITERATIONS = 1 << 15


def _iterations(stmt: Stmt) -> int | None:
    """Loop iterations of ``stmt`` (None when an extent is not a constant)."""
    if isinstance(stmt, For):
        if not isinstance(stmt.extent, IntImm):
            return None
        inner = _iterations(stmt.body)
        return None if inner is None else int(stmt.extent.value) * max(inner, 1)
    if isinstance(stmt, SeqStmt):
        total = 0
        for item in stmt.seq:
            count = _iterations(item)
            if count is None:
                return None
            total += count
        return total
    if isinstance(stmt, (Allocate, LetStmt)):
        return _iterations(stmt.body)
    if isinstance(stmt, IfThenElse):
        counts = [_iterations(s) for s in (stmt.then_case, stmt.else_case) if s is not None]
        return None if None in counts else max(counts, default=0)  # type: ignore[type-var]
    return 1


def _static_shape(sinfo: Any) -> list[int] | None:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None or not sinfo.dtype:
        return None
    if not all(isinstance(v, IntImm) for v in sinfo.shape_values):
        return None
    return [int(v.value) for v in sinfo.shape_values]  # type: ignore[attr-defined]


class _Folder(ExprMutator):
    def __init__(
        self, mod: IRModule, max_elements: int, max_iterations: int, target: str | None
    ) -> None:
        super().__init__(mod)
        self.mod = mod
        self.max_elements = max_elements
        self.max_iterations = max_iterations
        self.target = target
        self.known: dict[Var, RelaxExpr] = {}
        self.in_dataflow = False

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        saved, self.in_dataflow = self.in_dataflow, isinstance(block, DataflowBlock)
        try:
            return super().visit_binding_block(block)
        finally:
            self.in_dataflow = saved

    def visit_var_binding(self, binding: VarBinding) -> None:
        super().visit_var_binding(binding)
        emitted = self.builder._bindings[-1] if self.builder._bindings else None
        if isinstance(emitted, VarBinding) and isinstance(emitted.value, (Constant, Tuple)):
            value = emitted.value
            if isinstance(value, Constant) or all(
                isinstance(self._const(f), Constant) for f in value.fields
            ):
                self.known[emitted.var] = value
                self.known[binding.var] = value

    def _const(self, expr: RelaxExpr) -> RelaxExpr | None:
        if isinstance(expr, Constant):
            return expr
        if isinstance(expr, Var):
            return self.known.get(expr)
        return None

    def visit_tuple_getitem_(self, expr: TupleGetItem) -> RelaxExpr:
        new = super().visit_tuple_getitem_(expr)
        if self.in_dataflow and isinstance(new, TupleGetItem):
            value = self._const(new.tuple_value)
            if isinstance(value, Tuple):
                field = value.fields[new.index]
                return self._const(field) or new
        return new

    def visit_call_(self, expr: Call) -> RelaxExpr:
        new = super().visit_call_(expr)
        if not self.in_dataflow or not isinstance(new, Call) or is_impure_call(new):
            return new
        try:
            folded = self._fold(new)
        except Exception:  # a kernel that fails on these inputs is left to fail at run time
            return new
        return new if folded is None else folded

    def _fold(self, call: Call) -> RelaxExpr | None:
        name = getattr(call.op, "name", None)
        if name == "relax.call_tir":
            return self._fold_call_tir(call, self.mod)
        if not isinstance(call.op, Op) or name is None:
            return None
        if not call.args or not all(isinstance(self._const(a), Constant) for a in call.args):
            return None
        legalize = get_legalization(name, self.target)
        if legalize is None:
            return None
        scratch = BlockBuilder()
        args = [a if isinstance(a, Constant) else self.known[a] for a in call.args]  # type: ignore[index]
        with scratch.function("fold", []):
            lowered = scratch.normalize(
                legalize(
                    scratch, scratch.normalize(Call(call.op, args, call.attrs, call.sinfo_args))
                )
            )
            result = None
            if isinstance(lowered, Call) and getattr(lowered.op, "name", None) == "relax.call_tir":
                result = self._fold_call_tir(lowered, scratch._mod)
            scratch.emit_func_output(Tuple([]))
        return result

    def _fold_call_tir(self, call: Call, mod: IRModule) -> RelaxExpr | None:
        if len(call.args) != 2 or not isinstance(call.args[1], Tuple):
            return None
        gvar = call.args[0]
        kernel = (
            mod[gvar.name_hint] if isinstance(gvar, GlobalVar) and gvar.name_hint in mod else None
        )
        if not isinstance(kernel, PrimFunc):
            return None
        work = _iterations(kernel.body)
        if work is None or work > self.max_iterations:
            return None
        inputs: list[Constant] = []
        for arg in call.args[1].fields:
            found = self._const(arg)
            if not isinstance(found, Constant):
                return None
            inputs.append(found)
        sinfo = call.sinfo_args[0]
        infos = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
        shapes: list[list[int]] = []
        for info in infos:
            shape = _static_shape(info)
            if shape is None:
                return None
            shapes.append(shape)
        if sum(int(np.prod(s)) for s in shapes) > self.max_elements:
            return None
        outs = [
            np.zeros(shape, dtype=info.dtype.numpy_dtype())  # type: ignore[attr-defined]
            for shape, info in zip(shapes, infos, strict=True)
        ]
        arrays = [c.data.numpy() for c in inputs]
        run_prim_func(kernel, *arrays, *outs)
        consts = [const(out) for out in outs]
        return Tuple(consts) if isinstance(sinfo, TupleStructInfo) else consts[0]


def FoldConstant() -> Pass:
    """Evaluate constant-only calls in dataflow blocks at build time.

    Returns
    -------
    Pass
        A module pass; folded kernels stay in the module until ``DeadCodeElimination``.
    """

    @module_pass(opt_level=0, name="FoldConstant")
    def fold_constant(mod: IRModule, ctx: PassContext) -> IRModule:
        limit = int(ctx.config.get("relax.FoldConstant.max_elements", _DEFAULT_MAX))
        work = int(ctx.config.get("relax.FoldConstant.max_iterations", _DEFAULT_ITERATIONS))
        target = getattr(ctx.target, "kind_name", None) if ctx.target is not None else None

        def one(_gvar: object, func: Function) -> Function:
            new = _Folder(mod, limit, work, target).visit_expr(func)
            assert isinstance(new, Function)
            return new

        return map_relax_functions(mod, one)

    return fold_constant  # type: ignore[no-any-return]
