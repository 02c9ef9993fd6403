"""The hashing half of :mod:`.structural`: a hash consistent with its structural equality.

Kept apart from the equality walker so each stays readable; the two must visit nodes, and so
number variables, in exactly the same order. A change to one needs the same change to the
other (the tests in ``tests/ir/relax/test_structural.py`` check that equal IR hashes equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expr import FloatImm, IntImm, PrimExpr
from ..expr import Var as TirVar
from ..expr_functor import post_order_visit
from ._base import RelaxNode
from .block import Binding, BindingBlock, Function, MatchCast, SeqExpr
from .expr import (
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    If,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from .module import IRModule
from .struct_info import (
    FuncStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["StructuralHasher", "constant_bytes"]


def constant_bytes(const: Constant) -> bytes:
    """The raw bytes of a constant's data (what structural comparison looks at)."""
    return const.data.numpy().tobytes()


class StructuralHasher:
    """Mirrors the equality walker: definitions are numbered in the order equality pairs them.

    Variables defined so far (and, with ``map_free_vars``, free ones) hash by their number;
    other free variables hash by identity.
    """

    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.numbers: dict[Any, int] = {}

    def var(self, var: Any, define: bool) -> int:
        number = self.numbers.get(var)
        if number is None:
            if not (define or self.map_free_vars):
                return hash(("free", id(var)))
            number = self.numbers[var] = len(self.numbers)
        return hash(("var", type(var).__name__, number))

    def relax_var(self, var: Var, define: bool) -> int:
        info = 0
        if var not in self.numbers and (define or self.map_free_vars):
            info = self.opt_sinfo(var.struct_info, define=True)
        return hash((info, self.var(var, define)))

    def prim(self, expr: PrimExpr, define: bool) -> int:
        hashes: dict[int, int] = {}

        def visit(node: PrimExpr) -> None:
            if isinstance(node, TirVar):
                hashes[id(node)] = hash((str(node.dtype), self.var(node, define)))
            elif isinstance(node, (IntImm, FloatImm)):
                hashes[id(node)] = hash((type(node).__name__, str(node.dtype), hash(node)))
            else:
                children = tuple(hashes[id(op)] for op in node.operands)
                hashes[id(node)] = hash((type(node).__name__, str(node.dtype), children))

        post_order_visit(expr, visit)
        return hashes[id(expr)]

    def prims(self, values: Any, define: bool) -> int:
        if values is None:
            return hash(None)
        return hash(tuple(self.prim(v, define) for v in values))

    def opt_sinfo(self, info: StructInfo | None, define: bool) -> int:
        return hash(None) if info is None else self.sinfo(info, define)

    def sinfo(self, info: StructInfo, define: bool) -> int:
        name = type(info).__name__
        if isinstance(info, PrimStructInfo):
            value = None if info.value is None else self.prim(info.value, define)
            return hash((name, info.dtype, value))
        if isinstance(info, ShapeStructInfo):
            return hash((name, info.ndim, self.prims(info.values, define)))
        if isinstance(info, TensorStructInfo):
            if isinstance(info.shape, ShapeExpr):
                shape = self.prims(info.shape.values, define)
            elif isinstance(info.shape, Var):
                shape = self.relax_var(info.shape, define=False)
            else:
                shape = hash(None)
            return hash((name, info.dtype, info.ndim, info.vdevice, shape))
        if isinstance(info, TupleStructInfo):
            return hash((name, tuple(self.sinfo(f, define) for f in info.fields)))
        if isinstance(info, FuncStructInfo):
            params = (
                None if info.params is None else tuple(self.sinfo(p, True) for p in info.params)
            )
            return hash((name, info.purity, params, self.sinfo(info.ret, define)))
        return hash(name)

    def attr_value(self, value: Any) -> int:
        if isinstance(value, PrimExpr):
            return self.prim(value, define=False)
        if isinstance(value, (list, tuple)):
            return hash(("seq", tuple(self.attr_value(v) for v in value)))
        if isinstance(value, Mapping):
            return self.attrs(value)
        if isinstance(value, (RelaxNode, IRModule)):
            return self.node(value)
        try:
            return hash((type(value).__name__, value))
        except TypeError:
            return hash((type(value).__name__, id(value)))

    def attrs(self, attrs: Mapping[str, Any] | None) -> int:
        attrs = attrs or {}
        return hash(tuple((key, self.attr_value(attrs[key])) for key in sorted(attrs)))

    def node(self, node: Any) -> int:
        if isinstance(node, IRModule):
            names = sorted(gvar.name_hint for gvar, _ in node)
            parts = tuple((name, self.node(node[name])) for name in names)
            return hash(("IRModule", self.attrs(node.attrs), parts))
        if isinstance(node, StructInfo):
            return self.sinfo(node, define=False)
        if isinstance(node, Binding):
            return self.binding(node)
        if isinstance(node, BindingBlock):
            return self.block(node)
        if isinstance(node, PrimExpr):
            return self.prim(node, define=False)
        return self.expr(node)

    def expr(self, expr: Any) -> int:
        name = type(expr).__name__
        if isinstance(expr, Var):
            return self.relax_var(expr, define=False)
        if isinstance(expr, GlobalVar):
            return hash((name, expr.name_hint))
        if isinstance(expr, Op):
            return hash((name, expr.name))
        if isinstance(expr, ExternFunc):
            return hash((name, expr.global_symbol))
        if isinstance(expr, Constant):
            return hash((name, expr.data.dtype, tuple(expr.data.shape), constant_bytes(expr)))
        if isinstance(expr, ShapeExpr):
            return hash((name, self.prims(expr.values, define=False)))
        if isinstance(expr, PrimValue):
            return hash((name, self.prim(expr.value, define=False)))
        if isinstance(expr, (StringImm, DataTypeImm)):
            return hash((name, expr.value))
        if isinstance(expr, Tuple):
            return hash((name, tuple(self.expr(f) for f in expr.fields)))
        if isinstance(expr, TupleGetItem):
            return hash((name, expr.index, self.expr(expr.tuple_value)))
        if isinstance(expr, Call):
            # Same order as the equality check: op, args, attrs, sinfo_args.
            op = self.expr(expr.op)
            args = tuple(self.expr(a) for a in expr.args)
            attrs = self.attrs(expr.attrs)
            sinfo_args = tuple(self.sinfo(s, define=False) for s in expr.sinfo_args)
            return hash((name, op, args, attrs, sinfo_args))
        if isinstance(expr, If):
            parts = (self.expr(expr.cond), self.expr(expr.true_branch))
            return hash((name, *parts, self.expr(expr.false_branch)))
        if isinstance(expr, SeqExpr):
            blocks = tuple(self.block(b) for b in expr.blocks)
            return hash((name, blocks, self.expr(expr.body)))
        if isinstance(expr, Function):
            # Same order as the equality check: params, attrs, body, return annotation.
            params = tuple(self.relax_var(p, define=True) for p in expr.params)
            attrs = self.attrs(expr.attrs)
            body = self.expr(expr.body)
            ret = self.sinfo(expr.ret_struct_info, define=False)
            return hash((name, expr.is_pure, params, attrs, body, ret))
        return hash((name, id(expr)))

    def block(self, block: BindingBlock) -> int:
        return hash((type(block).__name__, tuple(self.binding(b) for b in block.bindings)))

    def binding(self, binding: Binding) -> int:
        value = self.expr(binding.value)
        pattern = (
            self.sinfo(binding.struct_info, define=True) if isinstance(binding, MatchCast) else 0
        )
        return hash((type(binding).__name__, value, pattern, self.relax_var(binding.var, True)))
