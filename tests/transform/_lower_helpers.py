"""Small builders for the lowering-pass tests: hand-written Relax IR, kernels, comparisons.

Expected modules are spelled out binding by binding with IR nodes, so a test reads like the
IR it expects; ``assert_same`` compares Relax functions structurally (variable names do not
matter, the order of definitions does) and prints both sides when they differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relaxvm.ir import Var as SymVar
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.ir.relax.op import infer
from relaxvm.ir.tir import PrimFunc, te

F32 = "float32"
VOID = rx.TupleStructInfo([])


def tensor(shape: Sequence[Any] | None, dtype: str = F32, ndim: int = -1) -> rx.TensorStructInfo:
    return rx.TensorStructInfo(None if shape is None else list(shape), dtype, ndim=ndim)


def param(name: str, shape: Sequence[Any] | None, dtype: str = F32) -> rx.Var:
    return rx.Var(name, tensor(shape, dtype))


def sym(name: str) -> SymVar:
    return SymVar(name, "int64")


def kernel(ndim: int = 1, name: str = "main") -> PrimFunc:
    """An elementwise ``out = a + 1`` PrimFunc of rank ``ndim`` (its body is never compared)."""
    shape = [sym(f"d{i}") for i in range(ndim)]
    a = te.placeholder(shape, F32, "a")
    out = te.compute(shape, lambda *i: a[i] + 1.0, name="out")
    return te.create_prim_func([a, out], name)


class Seq:
    """Collects bindings of one block: ``v = s.let("v", value)`` binds and returns the var."""

    def __init__(self) -> None:
        self.bindings: list[rx.Binding] = []

    def let(self, name: str, value: rx.Expr, sinfo: rx.StructInfo | None = None) -> rx.Var:
        if sinfo is None:
            sinfo = value.struct_info
        if sinfo is None and isinstance(value, rx.Call) and isinstance(value.op, rx.Op):
            sinfo = infer(value)
        if sinfo is None:
            raise ValueError(f"Seq.let({name!r}): give the struct info of {value}")
        var = rx.Var(name, sinfo)
        self.bindings.append(rx.VarBinding(var, value))
        return var

    def void(self, value: rx.Expr) -> rx.Var:
        """``_ = value`` for a call returning nothing."""
        return self.let("_", value, VOID)

    def block(self) -> rx.BindingBlock:
        return rx.BindingBlock(self.bindings)


def function(
    params: Sequence[rx.Var],
    blocks: Sequence[rx.BindingBlock],
    body: rx.Expr,
    attrs: dict[str, Any] | None = None,
    ret: rx.StructInfo | None = None,
    pure: bool = True,
) -> rx.Function:
    return rx.Function(list(params), rx.SeqExpr(list(blocks), body), ret, pure, attrs)


def module(**funcs: Any) -> rx.IRModule:
    mod = rx.IRModule()
    for name, func in funcs.items():
        mod[name] = func
    return mod


def gv(mod: rx.IRModule, name: str) -> rx.GlobalVar:
    return mod.get_global_var(name)


def assert_same(actual: Any, expected: Any) -> None:
    """Structural equality of two Relax functions, showing both when they differ."""
    try:
        rx.assert_structural_equal(actual, expected)
    except ValueError as err:
        raise AssertionError(
            f"{err}\n--- actual ---\n{_text(actual)}\n--- expected ---\n{_text(expected)}"
        ) from None


def _text(func: Any) -> str:
    try:
        return str(func.script())
    except Exception:  # pragma: no cover - printing is best effort in a failure message
        return str(func)


# ---- the calls the passes emit ----------------------------------------------------------------
def builtin_alloc(shape: Sequence[Any], dtype: str = F32) -> rx.Call:
    return op.builtin.alloc_tensor(rx.ShapeExpr(list(shape)), dtype, 0, "global")


def mem_storage(nbytes: Any, dtype: str = F32) -> rx.Call:
    return op.memory.alloc_storage(rx.ShapeExpr([nbytes]), 0, "global", dtype)


def mem_tensor(storage: rx.Var, shape: Sequence[Any], dtype: str = F32) -> rx.Call:
    return op.memory.alloc_tensor(storage, 0, rx.ShapeExpr(list(shape)), dtype)


def call(callee: rx.Expr, *args: rx.Expr) -> rx.Call:
    """A direct call returning nothing (a PrimFunc in destination-passing style)."""
    return rx.Call(callee, list(args), None, (), VOID)
