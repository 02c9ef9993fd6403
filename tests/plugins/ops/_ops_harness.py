"""Run a legalized op: build ``main`` with the BlockBuilder, legalize its one call with the
registered legalization, then execute the resulting bindings with the TIR reference interpreter.

The executor understands exactly what legalizations produce: ``call_tir`` (outputs allocated
from the declared struct info, symbolic extents bound from the inputs' shapes), tuples and
tuple items, and ``call_packed`` of ``relax.run.*`` functions through the global registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import relaxvm
from relaxvm.ir import IntImm, PrimExpr, evaluate
from relaxvm.ir import Var as SymVar
from relaxvm.ir.relax import BlockBuilder, Call, TensorStructInfo, TupleStructInfo, Var
from relaxvm.ir.relax.block import VarBinding
from relaxvm.ir.relax.expr import ExternFunc, Op, ShapeExpr, StringImm, Tuple, TupleGetItem
from relaxvm.ir.relax.module import IRModule
from relaxvm.ir.tir import PrimFunc, run_prim_func
from relaxvm.registry import extensions

Param = tuple[str, Sequence[Any], str]  # name, shape (ints, str or SymVar dims), dtype


def make_params(params: Sequence[Param]) -> list[Var]:
    """Relax parameters; a ``str`` extent is a symbolic dim shared by name, a ``SymVar`` is
    used as given (to share it with the op's arguments)."""
    syms: dict[str, SymVar] = {}
    out = []
    for name, shape, dtype in params:
        dims = [syms.setdefault(d, SymVar(d)) if isinstance(d, str) else d for d in shape]
        out.append(Var(name, TensorStructInfo(dims, dtype)))
    return out


def legalize(
    build: Callable[..., Any], params: Sequence[Param], target: str | None = None
) -> tuple[IRModule, list[Var], Call]:
    """``main(params) = legalize(build(*params))``; returns the module, params and the call."""
    relax_params = make_params(params)
    bb = BlockBuilder()
    with bb.function("main", relax_params):
        with bb.dataflow():
            call = bb.normalize(build(*relax_params))
            func = extensions.get_legalization(call.op.name, target)
            assert func is not None, f"no legalization for {call.op.name}"
            result = func(bb, call)
            out = bb.emit_output(result)
        bb.emit_func_output(out)
    return bb.get(), relax_params, call


def execute(mod: IRModule, params: Sequence[Var], inputs: Sequence[Any]) -> Any:
    """Run ``mod['main']`` (as legalized) on numpy inputs."""
    main = mod["main"]
    env: dict[Any, Any] = {}
    syms: dict[SymVar, int] = {}
    for param, value in zip(params, inputs, strict=True):
        env[param] = value
        for dim, extent in zip(param.struct_info.shape_values, np.shape(value), strict=True):
            if isinstance(dim, SymVar):
                syms[dim] = extent
    for block in main.body.blocks:
        for binding in block.bindings:
            assert isinstance(binding, VarBinding)
            env[binding.var] = _eval(mod, binding.value, env, syms)
    return _eval(mod, main.body.body, env, syms)


def _eval(mod: IRModule, expr: Any, env: dict[Any, Any], syms: dict[SymVar, int]) -> Any:
    if isinstance(expr, Var):
        return env[expr]
    if isinstance(expr, Tuple):
        return tuple(_eval(mod, f, env, syms) for f in expr.fields)
    if isinstance(expr, TupleGetItem):
        return _eval(mod, expr.tuple_value, env, syms)[expr.index]
    if isinstance(expr, StringImm):
        return expr.value
    if isinstance(expr, ShapeExpr):
        return tuple(int(evaluate(v, syms)) for v in expr.values)
    if isinstance(expr, Call) and isinstance(expr.op, ExternFunc):
        args = [_eval(mod, a, env, syms) for a in expr.args]
        return relaxvm.get_global_func(expr.op.global_symbol)(*args)
    if (
        isinstance(expr, Call)
        and isinstance(expr.op, Op)
        and expr.op.name == "relax.call_pure_packed"
    ):
        # The run-time checks legalizations put in front of kernels (check_broadcast...).
        callee, *rest = expr.args
        args = [_eval(mod, a, env, syms) for a in rest]
        wrapped = [relaxvm.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        result = relaxvm.get_global_func(callee.global_symbol)(*wrapped)
        return result.numpy() if isinstance(result, relaxvm.Tensor) else result
    if isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "relax.call_tir":
        func = mod[expr.args[0].name_hint]
        assert isinstance(func, PrimFunc)
        args = list(_eval(mod, expr.args[1], env, syms))
        scalars = list(_eval(mod, expr.args[2], env, syms)) if len(expr.args) > 2 else []
        outs = []
        declared = list(expr.sinfo_args)
        if len(declared) == 1 and isinstance(declared[0], TupleStructInfo):
            declared = list(declared[0].fields)
        for sinfo in declared:
            shape = [int(evaluate(d, syms)) for d in sinfo.shape_values]
            outs.append(np.empty(shape, sinfo.dtype.numpy_dtype()))
        run_prim_func(func, *args, *outs, *scalars)
        if len(outs) == 1 and not _is_tuple_out(expr):
            return outs[0]
        return tuple(outs)
    if isinstance(expr, PrimExpr | IntImm):
        return evaluate(expr, syms)
    raise AssertionError(f"the test executor cannot run {type(expr).__name__}: {expr}")


def _is_tuple_out(call: Call) -> bool:
    return isinstance(call.struct_info, TupleStructInfo)


def run(
    build: Callable[..., Any],
    params: Sequence[Param],
    inputs: Sequence[Any],
) -> Any:
    """Legalize and execute in one step."""
    mod, relax_params, _ = legalize(build, params)
    return execute(mod, relax_params, inputs)


def prim_funcs(mod: IRModule) -> dict[str, PrimFunc]:
    """The module's PrimFuncs by name."""
    return {gv.name_hint: f for gv, f in mod if isinstance(f, PrimFunc)}
