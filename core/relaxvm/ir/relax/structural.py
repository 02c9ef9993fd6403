"""Structural equality and hashing for the Relax IR.

Two pieces of IR are structurally equal when they have the same shape of nodes, the same
constants and the same names of globals and operators, and their variables correspond:

* Function parameters and binding targets are *definitions*: the i-th definition on one side is
  paired with the i-th on the other, and every later use must follow that pairing. So two
  functions that differ only in variable names (or variable objects) are equal.
* Symbolic TIR variables are defined where they first appear in a definition position: a
  parameter's annotation, a ``match_cast`` pattern, a binding variable's annotation. So
  ``def f(x: R.Tensor(("n",)))`` equals the same function built with another ``n``.
* Free variables (used without a definition in the compared IR) are equal only to themselves,
  unless ``map_free_vars=True``, which pairs them on first appearance too.
* GlobalVars compare by name (two modules built separately have different GlobalVar
  objects); operators by name; constants by dtype, shape and bytes.

The struct info of a non-variable expression is derived, so it is not compared; variables'
struct info is. :func:`structural_hash` is consistent with :func:`structural_equal` under the
same ``map_free_vars``.

The PrimExpr leaves are compared here rather than through
:func:`relaxvm.ir.structural_equal`, because the variable pairing must be shared across a whole
function, and that function keeps its pairing private to one call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import VMValueError
from ..expr import FloatImm, IntImm, PrimExpr
from ..expr import Var as TirVar
from ..structural import structural_equal as prim_structural_equal
from ._base import RelaxNode
from ._structural_hash import StructuralHasher, constant_bytes
from .block import (
    Binding,
    BindingBlock,
    Function,
    MatchCast,
    SeqExpr,
)
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
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)

__all__ = ["assert_structural_equal", "structural_equal", "structural_hash"]


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether two Relax nodes, StructInfo, IRModules or PrimExprs are structurally equal.

    Parameters
    ----------
    lhs, rhs
        Expressions, bindings, blocks, functions, struct info or modules (see the module
        documentation for how variables are paired).
    map_free_vars : bool
        Also pair free variables (Relax and TIR) on first appearance.

    Returns
    -------
    bool
    """
    if isinstance(lhs, PrimExpr) and isinstance(rhs, PrimExpr):
        return prim_structural_equal(lhs, rhs, map_free_vars)
    return _Equal(map_free_vars).node(lhs, rhs)


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise if the two are not structurally equal, showing the first pair that differs.

    Raises
    ------
    VMValueError
        Naming the first mismatching sub-nodes of each side.
    """
    checker = _Equal(map_free_vars)
    if not checker.node(lhs, rhs):
        left, right = checker.first_mismatch
        raise VMValueError(
            "structural_equal: the two sides differ\n"
            f"  first difference, left:  {_short(left)}\n"
            f"  first difference, right: {_short(right)}"
        )


def _short(value: Any) -> str:
    text = str(value).splitlines()
    return text[0] + (" ..." if len(text) > 1 else "") if text else repr(value)


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` under the same ``map_free_vars``."""
    if isinstance(node, PrimExpr):
        from ..structural import structural_hash as prim_structural_hash

        return prim_structural_hash(node, map_free_vars)
    return StructuralHasher(map_free_vars).node(node)


# ---- equality ---------------------------------------------------------------------------------
class _Equal:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        # Pairings, both directions, so the correspondence stays one-to-one.
        self.forward: dict[Any, Any] = {}
        self.backward: dict[Any, Any] = {}
        self.first_mismatch: tuple[Any, Any] = (None, None)

    def fail(self, lhs: Any, rhs: Any) -> bool:
        if self.first_mismatch == (None, None):
            self.first_mismatch = (lhs, rhs)
        return False

    # -- variables (Relax and TIR share the pairing tables; their objects never collide) --
    def var_pair(self, lhs: Any, rhs: Any, define: bool) -> bool:
        mapped = self.forward.get(lhs)
        if mapped is not None:
            return mapped is rhs or self.fail(lhs, rhs)
        if rhs in self.backward:
            return self.fail(lhs, rhs)
        if not (define or self.map_free_vars):
            return lhs is rhs or self.fail(lhs, rhs)
        self.forward[lhs] = rhs
        self.backward[rhs] = lhs
        return True

    def relax_var(self, lhs: Var, rhs: Var, define: bool) -> bool:
        if type(lhs) is not type(rhs):
            return self.fail(lhs, rhs)
        if lhs in self.forward or (not define and not self.map_free_vars):
            return self.var_pair(lhs, rhs, define)
        # A first appearance: its annotation may define symbolic variables.
        if not self.opt_sinfo(lhs.struct_info, rhs.struct_info, define=True):
            return False
        return self.var_pair(lhs, rhs, define)

    def prim(self, lhs: PrimExpr, rhs: PrimExpr, define: bool) -> bool:
        pending = [(lhs, rhs)]
        while pending:
            a, b = pending.pop()
            if type(a) is not type(b) or a.dtype != b.dtype:
                return self.fail(lhs, rhs)
            if isinstance(a, TirVar):
                if not self.var_pair(a, b, define):
                    return self.fail(lhs, rhs)
            elif isinstance(a, (IntImm, FloatImm)):
                if a != b:
                    return self.fail(lhs, rhs)
            else:
                # Reversed so that variables pair in left-to-right order, as the hash numbers them.
                pending.extend(reversed(list(zip(a.operands, b.operands, strict=True))))
        return True

    def prims(self, lhs: Any, rhs: Any, define: bool) -> bool:
        if lhs is None or rhs is None:
            return lhs is rhs or self.fail(lhs, rhs)
        if len(lhs) != len(rhs):
            return self.fail(lhs, rhs)
        return all(self.prim(a, b, define) for a, b in zip(lhs, rhs, strict=True))

    # -- struct info --
    def opt_sinfo(self, lhs: StructInfo | None, rhs: StructInfo | None, define: bool) -> bool:
        if lhs is None or rhs is None:
            return lhs is rhs or self.fail(lhs, rhs)
        return self.sinfo(lhs, rhs, define)

    def sinfo(self, lhs: StructInfo, other: StructInfo, define: bool) -> bool:
        if type(lhs) is not type(other):
            return self.fail(lhs, other)
        # Same type as `lhs` from here on; Any so the checker allows its fields.
        rhs: Any = other
        if isinstance(lhs, ObjectStructInfo):
            return True
        if isinstance(lhs, PrimStructInfo):
            if lhs.dtype != rhs.dtype or (lhs.value is None) != (rhs.value is None):
                return self.fail(lhs, rhs)
            return lhs.value is None or self.prim(lhs.value, rhs.value, define)
        if isinstance(lhs, ShapeStructInfo):
            if lhs.ndim != rhs.ndim:
                return self.fail(lhs, rhs)
            return self.prims(lhs.values, rhs.values, define)
        if isinstance(lhs, TensorStructInfo):
            if (lhs.dtype, lhs.ndim, lhs.vdevice) != (rhs.dtype, rhs.ndim, rhs.vdevice):
                return self.fail(lhs, rhs)
            lhs_shape, rhs_shape = lhs.shape, rhs.shape
            if isinstance(lhs_shape, ShapeExpr) and isinstance(rhs_shape, ShapeExpr):
                return self.prims(lhs_shape.values, rhs_shape.values, define)
            if isinstance(lhs_shape, Var) and isinstance(rhs_shape, Var):
                return self.relax_var(lhs_shape, rhs_shape, define=False)
            return (lhs_shape is None and rhs_shape is None) or self.fail(lhs, rhs)
        if isinstance(lhs, TupleStructInfo):
            if len(lhs.fields) != len(rhs.fields):
                return self.fail(lhs, rhs)
            return all(
                self.sinfo(a, b, define) for a, b in zip(lhs.fields, rhs.fields, strict=True)
            )
        if isinstance(lhs, FuncStructInfo):
            if lhs.purity != rhs.purity or (lhs.params is None) != (rhs.params is None):
                return self.fail(lhs, rhs)
            if lhs.params is not None and (
                len(lhs.params) != len(rhs.params)
                or not all(
                    self.sinfo(a, b, True) for a, b in zip(lhs.params, rhs.params, strict=True)
                )
            ):
                return self.fail(lhs, rhs)
            return self.sinfo(lhs.ret, rhs.ret, define)
        return self.fail(lhs, rhs)

    # -- attributes --
    def attr_value(self, lhs: Any, rhs: Any) -> bool:
        if isinstance(lhs, PrimExpr) and isinstance(rhs, PrimExpr):
            return self.prim(lhs, rhs, define=False)
        if isinstance(lhs, (list, tuple)) and isinstance(rhs, (list, tuple)):
            return len(lhs) == len(rhs) and all(
                self.attr_value(a, b) for a, b in zip(lhs, rhs, strict=True)
            )
        if isinstance(lhs, Mapping) and isinstance(rhs, Mapping):
            return self.attrs(lhs, rhs)
        if isinstance(lhs, (RelaxNode, IRModule)) and isinstance(rhs, (RelaxNode, IRModule)):
            return self.node(lhs, rhs)
        if type(lhs) is not type(rhs):
            return False
        try:
            return bool(lhs == rhs)
        except (TypeError, ValueError):
            return lhs is rhs

    def attrs(self, lhs: Mapping[str, Any] | None, rhs: Mapping[str, Any] | None) -> bool:
        lhs, rhs = lhs or {}, rhs or {}
        if set(lhs) != set(rhs):
            return self.fail(dict(lhs), dict(rhs))
        # Sorted, like the hash, so free variables inside attributes pair in the same order.
        return all(
            self.attr_value(lhs[k], rhs[k]) or self.fail(lhs[k], rhs[k]) for k in sorted(lhs)
        )

    # -- nodes --
    def node(self, lhs: Any, rhs: Any) -> bool:
        if isinstance(lhs, IRModule) and isinstance(rhs, IRModule):
            return self.module(lhs, rhs)
        if isinstance(lhs, StructInfo) and isinstance(rhs, StructInfo):
            return self.sinfo(lhs, rhs, define=False)
        if isinstance(lhs, Binding) and isinstance(rhs, Binding):
            return self.binding(lhs, rhs)
        if isinstance(lhs, BindingBlock) and isinstance(rhs, BindingBlock):
            return self.block(lhs, rhs)
        if isinstance(lhs, PrimExpr) and isinstance(rhs, PrimExpr):
            return self.prim(lhs, rhs, define=False)
        from ..tir.function import PrimFunc

        if isinstance(lhs, PrimFunc) or isinstance(rhs, PrimFunc):
            # Kernels in a module compare with TIR's own structural equality.
            from ..tir.stmt_functor import structural_equal as tir_equal

            same = isinstance(lhs, PrimFunc) and isinstance(rhs, PrimFunc) and tir_equal(lhs, rhs)
            return same or self.fail(lhs, rhs)
        return self.expr(lhs, rhs)

    def module(self, lhs: IRModule, rhs: IRModule) -> bool:
        names = sorted(gvar.name_hint for gvar, _ in lhs)
        if names != sorted(gvar.name_hint for gvar, _ in rhs):
            return self.fail(lhs, rhs)
        if not self.attrs(lhs.attrs, rhs.attrs):
            return False
        return all(self.node(lhs[name], rhs[name]) for name in names)

    def expr(self, lhs: Any, rhs: Any) -> bool:
        if type(lhs) is not type(rhs):
            return self.fail(lhs, rhs)
        if isinstance(lhs, Var):
            return self.relax_var(lhs, rhs, define=False)
        if isinstance(lhs, GlobalVar):
            return lhs.name_hint == rhs.name_hint or self.fail(lhs, rhs)
        if isinstance(lhs, Op):
            return lhs is rhs or self.fail(lhs, rhs)
        if isinstance(lhs, ExternFunc):
            return lhs.global_symbol == rhs.global_symbol or self.fail(lhs, rhs)
        if isinstance(lhs, Constant):
            return _same_constant(lhs, rhs) or self.fail(lhs, rhs)
        if isinstance(lhs, ShapeExpr):
            return self.prims(lhs.values, rhs.values, define=False)
        if isinstance(lhs, PrimValue):
            return self.prim(lhs.value, rhs.value, define=False)
        if isinstance(lhs, (StringImm, DataTypeImm)):
            return lhs.value == rhs.value or self.fail(lhs, rhs)
        if isinstance(lhs, Tuple):
            return self.exprs(lhs.fields, rhs.fields, lhs, rhs)
        if isinstance(lhs, TupleGetItem):
            if lhs.index != rhs.index:
                return self.fail(lhs, rhs)
            return self.expr(lhs.tuple_value, rhs.tuple_value)
        if isinstance(lhs, Call):
            return (
                self.expr(lhs.op, rhs.op)
                and self.exprs(lhs.args, rhs.args, lhs, rhs)
                and self.attrs(lhs.attrs, rhs.attrs)
                and len(lhs.sinfo_args) == len(rhs.sinfo_args)
                and all(
                    self.sinfo(a, b, define=False)
                    for a, b in zip(lhs.sinfo_args, rhs.sinfo_args, strict=True)
                )
            ) or self.fail(lhs, rhs)
        if isinstance(lhs, If):
            return (
                self.expr(lhs.cond, rhs.cond)
                and self.expr(lhs.true_branch, rhs.true_branch)
                and self.expr(lhs.false_branch, rhs.false_branch)
            )
        if isinstance(lhs, SeqExpr):
            if len(lhs.blocks) != len(rhs.blocks):
                return self.fail(lhs, rhs)
            return all(
                self.block(a, b) for a, b in zip(lhs.blocks, rhs.blocks, strict=True)
            ) and self.expr(lhs.body, rhs.body)
        if isinstance(lhs, Function):
            return self.function(lhs, rhs)
        return self.fail(lhs, rhs)

    def exprs(self, lhs: Any, rhs: Any, lhs_parent: Any, rhs_parent: Any) -> bool:
        if len(lhs) != len(rhs):
            return self.fail(lhs_parent, rhs_parent)
        return all(self.expr(a, b) for a, b in zip(lhs, rhs, strict=True))

    def function(self, lhs: Function, rhs: Function) -> bool:
        if len(lhs.params) != len(rhs.params) or lhs.is_pure != rhs.is_pure:
            return self.fail(lhs, rhs)
        for a, b in zip(lhs.params, rhs.params, strict=True):
            if not self.relax_var(a, b, define=True):
                return False
        # The body goes before the return annotation: a derived annotation may mention
        # symbolic variables that a match_cast in the body defines.
        return (
            self.attrs(lhs.attrs, rhs.attrs)
            and self.expr(lhs.body, rhs.body)
            and self.sinfo(lhs.ret_struct_info, rhs.ret_struct_info, define=False)
        )

    def block(self, lhs: BindingBlock, rhs: BindingBlock) -> bool:
        if type(lhs) is not type(rhs) or len(lhs.bindings) != len(rhs.bindings):
            return self.fail(lhs, rhs)
        return all(self.binding(a, b) for a, b in zip(lhs.bindings, rhs.bindings, strict=True))

    def binding(self, lhs: Binding, other: Binding) -> bool:
        if type(lhs) is not type(other):
            return self.fail(lhs, other)
        rhs: Any = other  # same type as `lhs` from here on
        # The value is compared before the variable is defined: it cannot refer to it.
        if not self.expr(lhs.value, rhs.value):
            return False
        if isinstance(lhs, MatchCast) and not self.sinfo(
            lhs.struct_info, rhs.struct_info, define=True
        ):
            return False
        return self.relax_var(lhs.var, rhs.var, define=True)


def _same_constant(lhs: Constant, rhs: Constant) -> bool:
    a, b = lhs.data, rhs.data
    return a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and _bytes(lhs) == _bytes(rhs)


def _bytes(const: Constant) -> bytes:
    return constant_bytes(const)
