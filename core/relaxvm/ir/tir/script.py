"""Readable ``@T.prim_func``-style text for statements and PrimFuncs.

The output follows TVMScript so that a TVM user reads it at a glance, and is deterministic
(attributes sorted, one fixed spelling per construct). The parser comes later; until then the
text is for people and for golden tests. Variables print by name, so two distinct variables
with one name print alike (the generators here name loops per stage, where that is harmless).
"""

from __future__ import annotations

from typing import Any

from ...errors import VMTypeError
from ..expr import IntImm, PrimExpr, Var
from .buffer import Buffer, format_shape
from .function import PrimFunc
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = ["prim_func_to_str", "stmt_to_str"]

_INDENT = "    "
_KIND_CALL = {
    ForKind.SERIAL: "T.serial",
    ForKind.PARALLEL: "T.parallel",
    ForKind.VECTORIZED: "T.vectorized",
    ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding",
}


def stmt_to_str(stmt: Stmt, indent: int = 0) -> str:
    """The text of ``stmt``, each line indented by ``indent`` levels."""
    lines: list[str] = []
    _print_stmt(stmt, indent, lines)
    return "\n".join(lines)


def _buffer_decl(buffer: Buffer, call: str = "T.Buffer") -> str:
    parts = [format_shape(buffer.shape), f'"{buffer.dtype}"']
    if buffer.strides:
        parts.append(f"strides={format_shape(buffer.strides)}")
    if not (isinstance(buffer.elem_offset, IntImm) and buffer.elem_offset.value == 0):
        parts.append(f"elem_offset={buffer.elem_offset}")
    if buffer.scope != "global":
        parts.append(f'scope="{buffer.scope}"')
    return f"{call}({', '.join(parts)})"


def _indices(indices: tuple[PrimExpr, ...]) -> str:
    return ", ".join(str(index) for index in indices)


def _loop_header(loop: For) -> str:
    var = loop.loop_var.name
    zero_min = isinstance(loop.min, IntImm) and loop.min.value == 0
    if loop.kind == ForKind.SERIAL and zero_min and not loop.annotations:
        return f"for {var} in range({loop.extent}):"
    end = loop.extent if zero_min else loop.min + loop.extent
    args = [str(end)] if zero_min else [str(loop.min), str(end)]
    if loop.thread_binding is not None:
        args.append(f'thread="{loop.thread_binding}"')
    if loop.annotations:
        args.append(f"annotations={_dict_text(loop.annotations)}")
    return f"for {var} in {_KIND_CALL[loop.kind]}({', '.join(args)}):"


def _dict_text(values: dict[str, Any]) -> str:
    items = (f'"{key}": {_value_text(values[key])}' for key in sorted(values))
    return "{" + ", ".join(items) + "}"


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "T.bool(True)" if value else "T.bool(False)"
    return str(value)


def _print_stmt(stmt: Stmt, indent: int, lines: list[str]) -> None:
    pad = _INDENT * indent
    if isinstance(stmt, SeqStmt):
        if not stmt.seq:
            lines.append(f"{pad}T.evaluate(0)")
        for item in stmt.seq:
            _print_stmt(item, indent, lines)
    elif isinstance(stmt, For):
        lines.append(pad + _loop_header(stmt))
        _print_stmt(stmt.body, indent + 1, lines)
    elif isinstance(stmt, BufferStore):
        lines.append(f"{pad}{stmt.buffer.name}[{_indices(stmt.indices)}] = {stmt.value}")
    elif isinstance(stmt, LetStmt):
        lines.append(f"{pad}{stmt.var.name}: T.{stmt.var.dtype} = {stmt.value}")
        _print_stmt(stmt.body, indent, lines)
    elif isinstance(stmt, IfThenElse):
        lines.append(f"{pad}if {stmt.condition}:")
        _print_stmt(stmt.then_case, indent + 1, lines)
        if stmt.else_case is not None:
            lines.append(f"{pad}else:")
            _print_stmt(stmt.else_case, indent + 1, lines)
    elif isinstance(stmt, Allocate):
        decl = _buffer_decl(stmt.buffer, "T.alloc_buffer")
        lines.append(f"{pad}{stmt.buffer.name} = {decl}")
        _print_stmt(stmt.body, indent, lines)
    elif isinstance(stmt, Evaluate):
        lines.append(f"{pad}T.evaluate({stmt.value})")
    else:
        raise VMTypeError(f"script: cannot print a {type(stmt).__name__}")


def prim_func_to_str(func: PrimFunc) -> str:
    """``@T.prim_func`` text for ``func``."""
    params = []
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None:
            params.append(f"{param.name}: T.{param.dtype}")
        else:
            params.append(f"{buffer.name}: {_buffer_decl(buffer)}")
    lines = ["@T.prim_func", f"def {func.name}({', '.join(params)}):"]
    if func.attrs:
        lines.append(f"{_INDENT}T.func_attr({_dict_text(func.attrs)})")
    # Symbolic shape variables are declared first, as TVMScript does (`n = T.int64()`).
    declared: dict[Var, None] = {}
    for param in func.params:
        buffer = func.buffer_map.get(param)
        if buffer is None:
            continue
        for extent in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            for var in _vars_of(extent):
                if var not in func.params:
                    declared.setdefault(var)
    lines.extend(f"{_INDENT}{var.name} = T.{var.dtype}()" for var in declared)
    _print_stmt(func.body, 1, lines)
    return "\n".join(lines)


def _vars_of(expr: PrimExpr) -> list[Var]:
    from ..expr_functor import free_vars

    return free_vars(expr)
