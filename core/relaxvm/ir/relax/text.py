"""Readable TVMScript-like text for Relax nodes (``str(node)``).

This is for error messages and debugging, not the script printer (a later layer that must also
read back): it prints bindings as ``y = R.add(x, z)``, functions as ``@R.function`` blocks and
modules as ``@I.ir_module`` classes, but makes no attempt to print large constants in full or
to disambiguate two variables that share a name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._base import RelaxNode
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
    DataflowVar,
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
from .struct_info import StructInfo

__all__ = ["binding_to_str", "expr_to_str", "function_to_str", "node_to_str"]

_INDENT = "    "
#: Constants with at most this many elements print their values.
_MAX_PRINTED_ELEMENTS = 8


def node_to_str(node: RelaxNode) -> str:
    """The text of any Relax node (what ``str(node)`` returns)."""
    if isinstance(node, StructInfo):
        return node.script()
    if isinstance(node, Function):
        return function_to_str(node)
    if isinstance(node, Binding):
        return binding_to_str(node)
    if isinstance(node, BindingBlock):
        return "\n".join(_block_lines(node, 0))
    if isinstance(node, SeqExpr):
        return "\n".join(_seq_lines(node, 0, "return"))
    return expr_to_str(node)


def op_name_to_str(op: Op) -> str:
    """``relax.add`` prints as ``R.add``, ``relax.nn.relu`` as ``R.nn.relu``."""
    if op.name.startswith("relax."):
        return "R." + op.name[len("relax.") :]
    return f'R.Op("{op.name}")'


def _attr_value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_attr_value(v) for v in value)
        return f"[{inner}]"
    return str(value)


def expr_to_str(expr: Any) -> str:
    """The one-line text of an expression (functions and sequences print in short form)."""
    if isinstance(expr, Var):  # DataflowVar included
        return expr.name_hint
    if isinstance(expr, GlobalVar):
        return f"cls.{expr.name_hint}"
    if isinstance(expr, Op):
        return op_name_to_str(expr)
    if isinstance(expr, ExternFunc):
        return f'R.ExternFunc("{expr.global_symbol}")'
    if isinstance(expr, Constant):
        return _constant_to_str(expr)
    if isinstance(expr, ShapeExpr):
        return f"R.shape([{', '.join(str(v) for v in expr.values)}])"
    if isinstance(expr, PrimValue):
        return f"R.prim_value({expr.value})"
    if isinstance(expr, StringImm):
        return f"R.str({expr.value!r})"
    if isinstance(expr, DataTypeImm):
        return f'R.dtype("{expr.value}")'
    if isinstance(expr, Tuple):
        inner = ", ".join(expr_to_str(field) for field in expr.fields)
        return f"({inner},)" if len(expr.fields) == 1 else f"({inner})"
    if isinstance(expr, TupleGetItem):
        return f"{expr_to_str(expr.tuple_value)}[{expr.index}]"
    if isinstance(expr, Call):
        return _call_to_str(expr)
    if isinstance(expr, If):
        return (
            f"R.If({expr_to_str(expr.cond)}, {expr_to_str(expr.true_branch)}, "
            f"{expr_to_str(expr.false_branch)})"
        )
    if isinstance(expr, SeqExpr):
        return f"R.SeqExpr(<{len(expr.blocks)} blocks>, {expr_to_str(expr.body)})"
    if isinstance(expr, Function):
        params = ", ".join(p.name_hint for p in expr.params)
        return f"R.function(({params}) -> {expr.ret_struct_info})"
    return f"<{type(expr).__name__}>"


def _constant_to_str(expr: Constant) -> str:
    data = expr.data
    if int(np.prod(data.shape)) <= _MAX_PRINTED_ELEMENTS:
        values = data.numpy().tolist()
        return f'R.const({values}, "{data.dtype}")'
    return f"R.const(<{'x'.join(str(d) for d in data.shape)} {data.dtype} tensor>)"


def _call_to_str(call: Call) -> str:
    args = [expr_to_str(arg) for arg in call.args]
    if isinstance(call.op, ExternFunc):
        name = "R.call_packed"
        args.insert(0, f'"{call.op.global_symbol}"')
    else:
        name = expr_to_str(call.op)
    if call.attrs:
        args.extend(f"{key}={_attr_value(value)}" for key, value in call.attrs.items())
    if call.sinfo_args:
        infos = ", ".join(str(info) for info in call.sinfo_args)
        trailing = "," if len(call.sinfo_args) == 1 else ""
        args.append(f"sinfo_args=({infos}{trailing})")
    return f"{name}({', '.join(args)})"


def binding_to_str(binding: Binding, annotate: bool = False) -> str:
    """One line for a binding: ``y = R.add(x, z)`` (``y: R.Tensor(...) = ...`` if annotate)."""
    target = binding.var.name_hint
    if annotate and binding.var.struct_info is not None:
        target += f": {binding.var.struct_info}"
    if isinstance(binding, MatchCast):
        return f"{target} = R.match_cast({expr_to_str(binding.value)}, {binding.struct_info})"
    return f"{target} = {expr_to_str(binding.value)}"


def _binding_lines(binding: Binding, depth: int) -> list[str]:
    pad = _INDENT * depth
    value = binding.value
    if isinstance(binding, MatchCast) or not isinstance(value, (If, Function)):
        return [pad + binding_to_str(binding, annotate=True)]
    if isinstance(value, Function):
        return _function_lines(value, depth, binding.var.name_hint)
    lines = [f"{pad}if {expr_to_str(value.cond)}:"]
    lines += _branch_lines(value.true_branch, depth + 1, binding.var.name_hint)
    lines.append(f"{pad}else:")
    lines += _branch_lines(value.false_branch, depth + 1, binding.var.name_hint)
    return lines


def _branch_lines(branch: Any, depth: int, target: str) -> list[str]:
    if isinstance(branch, SeqExpr):
        return _seq_lines(branch, depth, f"{target} =")
    return [f"{_INDENT * depth}{target} = {expr_to_str(branch)}"]


def _block_lines(block: BindingBlock, depth: int) -> list[str]:
    if not block.is_dataflow:
        lines: list[str] = []
        for binding in block.bindings:
            lines += _binding_lines(binding, depth)
        return lines
    lines = [f"{_INDENT * depth}with R.dataflow():"]
    for binding in block.bindings:
        lines += _binding_lines(binding, depth + 1)
    outputs = [b.var.name_hint for b in block.bindings if not isinstance(b.var, DataflowVar)]
    lines.append(f"{_INDENT * (depth + 1)}R.output({', '.join(outputs)})")
    return lines


def _seq_lines(seq: SeqExpr, depth: int, result_prefix: str) -> list[str]:
    lines: list[str] = []
    for block in seq.blocks:
        lines += _block_lines(block, depth)
    lines.append(f"{_INDENT * depth}{result_prefix} {expr_to_str(seq.body)}")
    return lines


def function_to_str(func: Function, name: str | None = None) -> str:
    """The function as an ``@R.function`` definition."""
    return "\n".join(_function_lines(func, 0, name))


def _function_lines(func: Function, depth: int, name: str | None) -> list[str]:
    pad = _INDENT * depth
    name = name or str(func.attrs.get("global_symbol", "func"))
    params = ", ".join(f"{p.name_hint}: {p.struct_info}" for p in func.params)
    decorator = "@R.function" if func.is_pure else "@R.function(pure=False)"
    lines = [pad + decorator, f"{pad}def {name}({params}) -> {func.ret_struct_info}:"]
    body = func.body
    if isinstance(body, SeqExpr):
        lines += _seq_lines(body, depth + 1, "return")
    else:
        lines.append(f"{pad}{_INDENT}return {expr_to_str(body)}")
    return lines
