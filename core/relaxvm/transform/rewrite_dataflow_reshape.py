"""``RewriteDataflowReshape``: turn reshape kernels in dataflow blocks into ``R.reshape``.

TVM's ``relax.transform.RewriteDataflowReshape``. A ``call_tir`` of a PrimFunc that only
reshapes (copies its one input to its one output in row-major order) is replaced by
``R.reshape(x, shape)``, which ``LowerRuntimeBuiltin`` turns into ``vm.builtin.reshape``: a
view of the same storage, no copy. A kernel is recognised by the attribute
``relax.reshape_like`` (set by the ``relaxvm_ops`` legalizations of reshape, flatten,
expand_dims and squeeze) or structurally: one loop nest ``out[i, j, ...] = in[f(i, j, ...)]``
whose row-major flat offsets provably agree, with the same dtype and element count. Only
bindings inside dataflow blocks are rewritten, as in TVM.
"""

from __future__ import annotations

from ..ir import IntImm, PrimExpr
from ..ir.arith import Analyzer
from ..ir.expr import Range
from ..ir.relax import (
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    GlobalVar,
    IRModule,
    ShapeExpr,
    TensorStructInfo,
    Tuple,
)
from ..ir.relax._base import RelaxExpr
from ..ir.relax.expr_functor import ExprMutator
from ..ir.relax.op import reshape
from ..ir.tir import For, PrimFunc
from ..ir.tir.lower_blocks import as_loop_nests
from ._graph_util import map_relax_functions
from ._tir_rewrite import loads_in, stores_in
from .pass_infra import Pass, PassContext, module_pass

__all__ = ["RESHAPE_LIKE_ATTR", "RewriteDataflowReshape", "is_reshape_kernel"]

#: The PrimFunc attribute marking a reshape-only kernel.
RESHAPE_LIKE_ATTR = "relax.reshape_like"


def _flat(indices: tuple[PrimExpr, ...], shape: tuple[PrimExpr, ...]) -> PrimExpr:
    offset: PrimExpr = IntImm("int64", 0)
    for index, extent in zip(indices, shape, strict=True):
        offset = offset * extent + index
    return offset


def is_reshape_kernel(func: PrimFunc) -> bool:
    """Whether ``func`` copies its single input to its single output in row-major order."""
    if func.attrs.get(RESHAPE_LIKE_ATTR):
        return True
    if len(func.params) != 2:
        return False
    func = as_loop_nests(func)  # block form (te.create_prim_func) as its loops
    source, dest = (func.buffer_map.get(p) for p in func.params)
    if source is None or dest is None or source.dtype != dest.dtype:
        return False
    stores = stores_in(func.body)
    if len(stores) != 1:
        return False
    store = stores[0]
    node = func.body
    loops: list[For] = []
    while isinstance(node, For):
        loops.append(node)
        node = node.body
    if node is not store or store.buffer is not dest:
        return False
    loads = loads_in(func.body)
    if len(loads) != 1 or loads[0].buffer is not source or store.value is not loads[0]:
        return False
    analyzer = Analyzer()
    for loop in loops:
        analyzer.bind(loop.loop_var, _range(loop))
    size_in = _product(source.shape)
    size_out = _product(dest.shape)
    if not analyzer.can_prove_equal(size_in, size_out):
        return False
    if [loop.loop_var for loop in loops] != list(store.indices) or not all(
        analyzer.can_prove_equal(loop.extent, dim)
        for loop, dim in zip(loops, dest.shape, strict=False)
    ):
        return False
    return analyzer.can_prove_equal(
        _flat(loads[0].indices, source.shape), _flat(store.indices, dest.shape)
    )


def _range(loop: For) -> Range:
    return Range.from_min_extent(loop.min, loop.extent)


def _product(shape: tuple[PrimExpr, ...]) -> PrimExpr:
    total: PrimExpr = IntImm("int64", 1)
    for dim in shape:
        total = total * dim
    return total


class _Rewriter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.in_dataflow = False

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        saved, self.in_dataflow = self.in_dataflow, isinstance(block, DataflowBlock)
        try:
            return super().visit_binding_block(block)
        finally:
            self.in_dataflow = saved

    def visit_call_(self, expr: Call) -> RelaxExpr:
        new = super().visit_call_(expr)
        if not self.in_dataflow or not isinstance(new, Call):
            return new
        if getattr(new.op, "name", None) != "relax.call_tir" or len(new.args) != 2:
            return new
        gvar, args = new.args
        if not isinstance(gvar, GlobalVar) or not isinstance(args, Tuple) or len(args) != 1:
            return new
        kernel = self.mod[gvar.name_hint] if gvar.name_hint in self.mod else None  # noqa: SIM401
        out = new.sinfo_args[0] if new.sinfo_args else None
        if not isinstance(kernel, PrimFunc) or not isinstance(out, TensorStructInfo):
            return new
        if out.shape_values is None or not is_reshape_kernel(kernel):
            return new
        return reshape(args.fields[0], ShapeExpr(list(out.shape_values)))


def RewriteDataflowReshape() -> Pass:
    """Replace reshape-only ``call_tir`` s in dataflow blocks by ``R.reshape``.

    Returns
    -------
    Pass
        A module pass; the reshape kernels stay in the module (``DeadCodeElimination`` removes
        them once unused).
    """

    @module_pass(opt_level=0, name="RewriteDataflowReshape")
    def rewrite(mod: IRModule, ctx: PassContext) -> IRModule:
        def one(_gvar: object, func: Function) -> Function:
            new = _Rewriter(mod).visit_expr(func)
            assert isinstance(new, Function)
            return new

        return map_relax_functions(mod, one)

    return rewrite  # type: ignore[no-any-return]
