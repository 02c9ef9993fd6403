"""Shared pieces of the graph-pass tests: TE legalizations registered for a test, modules.

The legalizations here are deliberately small (static shapes, float32) so the tests do not
depend on the ``relaxvm_ops`` plugin; each PrimFunc is tagged with its op pattern as the
plugin does, except where a test wants AnnotateTIROpPattern to find it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import relax as rx
from relaxvm.ir import tir
from relaxvm.ir.relax.op import call_tir
from relaxvm.ir.tir import te
from relaxvm.registry import extensions

F32 = "float32"


def _add_kernel(bb: Any, call: rx.Call, name: str, fcompute: Any, pattern: int) -> rx.Call:
    """Make a PrimFunc with emit_te's machinery but return the call unbound."""
    from relaxvm.ir.relax._emit_te import build_call_tir

    call_expr = build_call_tir(bb, fcompute, list(call.args), {}, name)
    gvar = call_expr.args[0]
    func = bb._mod[gvar.name_hint]
    if "op_pattern" in func.attrs or pattern < 0:
        return call_expr
    # Tag it, then add it again so that an identical tagged kernel is shared (as the plugin's
    # kernels are).
    bb._mod.remove(gvar.name_hint)
    tagged = bb.add_func(func.with_attr("op_pattern", pattern), name)
    return call_tir(tagged, list(call_expr.args[1].fields), list(call_expr.sinfo_args))


def _broadcast_index(shape_out: Any, tensor: te.Tensor, idx: tuple[Any, ...]) -> Any:
    offset = len(shape_out) - tensor.ndim
    sub = []
    for k, dim in enumerate(tensor.shape):
        i = idx[offset + k]
        sub.append(0 if isinstance(dim, tir.IntImm) and dim.value == 1 else i)
    return tensor[tuple(sub)]


def _binary(name: str, fn: Any) -> Any:
    def legalize(bb: Any, call: rx.Call) -> rx.Call:
        out = call.struct_info.shape_values

        def fcompute(a: te.Tensor, b: te.Tensor) -> te.Tensor:
            return te.compute(
                out,
                lambda *i: fn(_broadcast_index(out, a, i), _broadcast_index(out, b, i)),
                name="T_" + name,
            )

        pattern = (
            0
            if call.args[0].struct_info.shape_values == out
            and (call.args[1].struct_info.shape_values == out)
            else 1
        )
        return _add_kernel(bb, call, name, fcompute, pattern)

    return legalize


def _relu(bb: Any, call: rx.Call) -> rx.Call:
    def fcompute(a: te.Tensor) -> te.Tensor:
        return te.compute(a.shape, lambda *i: tir.max(a[i], tir.const(0.0, F32)), name="T_relu")

    return _add_kernel(bb, call, "relu", fcompute, 0)


def _exp(bb: Any, call: rx.Call) -> rx.Call:
    def fcompute(a: te.Tensor) -> te.Tensor:
        return te.compute(a.shape, lambda *i: tir.exp(a[i]), name="T_exp")

    return _add_kernel(bb, call, "exp", fcompute, 0)


def _matmul(bb: Any, call: rx.Call) -> rx.Call:
    def fcompute(a: te.Tensor, b: te.Tensor) -> te.Tensor:
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute(
            (a.shape[0], b.shape[1]),
            lambda i, j: te.sum(a[i, k] * b[k, j], axis=k),
            name="T_matmul",
        )

    return _add_kernel(bb, call, "matmul", fcompute, 4)


def _sum_last(bb: Any, call: rx.Call) -> rx.Call:
    def fcompute(a: te.Tensor) -> te.Tensor:
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute((a.shape[0],), lambda i: te.sum(a[i, k], axis=k), name="T_sum")

    return _add_kernel(bb, call, "sum", fcompute, 3)


def register_test_legalizations() -> None:
    """Register the test legalizations (overriding the plugin's for the test's duration)."""
    table = {
        "relax.add": _binary("add", lambda x, y: x + y),
        "relax.multiply": _binary("multiply", lambda x, y: x * y),
        "relax.nn.relu": _relu,
        "relax.exp": _exp,
        "relax.matmul": _matmul,
        "relax.sum": _sum_last,
    }
    for name, func in table.items():
        extensions.register_legalization(name, func, override=True, source="test")


@pytest.fixture
def legalizations() -> Iterator[None]:
    """The test legalizations for one test; the real table is restored afterwards."""
    extensions._ensure_plugins()
    saved = extensions._snapshot()
    try:
        register_test_legalizations()
        yield
    finally:
        extensions._restore(saved)


def tensor(shape: Any, dtype: str = F32) -> rx.TensorStructInfo:
    """``R.Tensor(shape, dtype)``."""
    return rx.TensorStructInfo(list(shape), dtype)


def run_relax(mod: rx.IRModule, func_name: str, *args: np.ndarray) -> Any:
    """Evaluate a legalized Relax function (call_tir, tuples, constants, calls of module
    functions) with the TIR interpreter: the reference for numerical checks."""
    func = mod[func_name]
    env: dict[Any, Any] = dict(zip(func.params, args, strict=True))
    symbols: dict[Any, int] = env.setdefault("__symbols__", {})
    for param, arg in zip(func.params, args, strict=True):
        values = getattr(param.struct_info, "shape_values", None) or ()
        for dim, actual in zip(values, np.shape(arg), strict=False):
            if isinstance(dim, tir.Var):
                symbols.setdefault(dim, int(actual))
    return _eval_seq(mod, func.body, env)


def _eval_seq(mod: rx.IRModule, seq: Any, env: dict[Any, Any]) -> Any:
    for block in seq.blocks:
        for binding in block.bindings:
            env[binding.var] = _eval(mod, binding.value, env)
    return _eval(mod, seq.body, env)


def _alloc(sinfo: rx.TensorStructInfo, symbols: dict[Any, int]) -> np.ndarray:
    from relaxvm.ir import evaluate

    shape = [int(evaluate(v, symbols)) for v in sinfo.shape_values]
    return np.zeros(shape, dtype=sinfo.dtype.numpy_dtype())


def _eval(mod: rx.IRModule, expr: Any, env: dict[Any, Any]) -> Any:
    if isinstance(expr, rx.Var):
        return env[expr]
    if isinstance(expr, rx.Constant):
        return expr.data.numpy()
    if isinstance(expr, rx.Tuple):
        return tuple(_eval(mod, f, env) for f in expr.fields)
    if isinstance(expr, rx.TupleGetItem):
        return _eval(mod, expr.tuple_value, env)[expr.index]
    if isinstance(expr, rx.Call) and isinstance(expr.op, rx.Op):
        name = expr.op.name
        if name == "relax.call_tir":
            func = mod[expr.args[0].name_hint]
            inputs = [_eval(mod, a, env) for a in expr.args[1].fields]
            sinfo = expr.sinfo_args[0]
            symbols = env["__symbols__"]
            outs = (
                [_alloc(s, symbols) for s in sinfo.fields]
                if isinstance(sinfo, rx.TupleStructInfo)
                else [_alloc(sinfo, symbols)]
            )
            scalars = []
            if len(expr.args) == 3:
                from relaxvm.ir import evaluate

                scalars = [int(evaluate(v, symbols)) for v in expr.args[2].values]
            tir.run_prim_func(func, *inputs, *outs, *scalars)
            return tuple(outs) if isinstance(sinfo, rx.TupleStructInfo) else outs[0]
        if name == "relax.reshape":
            data = _eval(mod, expr.args[0], env)
            return data.reshape([int(v.value) for v in expr.args[1].values])
        raise NotImplementedError(name)
    if isinstance(expr, rx.Call) and isinstance(expr.op, rx.GlobalVar):
        args = [_eval(mod, a, env) for a in expr.args]
        return run_relax(mod, expr.op.name_hint, *args)
    raise NotImplementedError(type(expr).__name__)


__all__ = [
    "F32",
    "call_tir",
    "legalizations",
    "register_test_legalizations",
    "run_relax",
    "tensor",
]
