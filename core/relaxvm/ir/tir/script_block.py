"""TVMScript text for TIR blocks, in TVM's form::

    with T.block("C"):
        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
        T.where(...)
        T.reads(A[vi, vk], B[vk, vj])
        T.writes(C[vi, vj])
        T.block_attr({...})
        X = T.alloc_buffer(...)
        X_sub = T.match_buffer(A[vi, 0:4], (4,), "float32")
        with T.init():
            C[vi, vj] = T.float32(0.0)
        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

Axes bound to an enclosing loop variable over that loop's whole domain print with
``T.axis.remap``; the others as ``T.axis.spatial(extent, value)`` (``(begin, end)`` when the
domain does not start at 0). ``T.reads``/``T.writes`` are always printed, so the text reads back
as the same block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..expr import IntImm, PrimExpr, Range, Var
from ..printer import INDENT, literal, quote
from ..structural import structural_equal
from .block import Block, BlockRealize, BufferRegion, IterVar, IterVarType

if TYPE_CHECKING:
    from .script import TirPrinter

__all__ = ["print_block"]

_AXIS_CALL = {
    IterVarType.DATA_PAR: "spatial",
    IterVarType.COMM_REDUCE: "reduce",
    IterVarType.ORDERED: "scan",
    IterVarType.OPAQUE: "opaque",
}
_REMAP_KIND = {IterVarType.DATA_PAR: "S", IterVarType.COMM_REDUCE: "R"}


def print_block(printer: TirPrinter, stmt: Block | BlockRealize, depth: int) -> None:
    """Append the lines of a block (realized or not) to ``printer``."""
    pad = INDENT * depth
    inner = INDENT * (depth + 1)
    realize = stmt if isinstance(stmt, BlockRealize) else None
    block = stmt.block if isinstance(stmt, BlockRealize) else stmt
    options = "" if realize is not None else ", no_realize=True"
    printer.lines.append(f"{pad}with T.block({quote(block.name_hint)}{options}):")
    printer.namer.push()
    values = realize.iter_values if realize is not None else ()
    _axes(printer, block.iter_vars, values, inner)
    if realize is not None and not _is_true(realize.predicate):
        printer.lines.append(f"{inner}T.where({printer.expr(realize.predicate)})")
    for call, regions in (("T.reads", block.reads), ("T.writes", block.writes)):
        text = ", ".join(_region(printer, region) for region in regions)
        printer.lines.append(f"{inner}{call}({text})")
    if block.annotations:
        printer.lines.append(f"{inner}T.block_attr({literal(block.annotations, printer.expr)})")
    for buffer in block.alloc_buffers:
        printer.declare_vars(buffer.shape, depth + 1)
        decl = f"T.alloc_buffer({printer.buffer_args(buffer)})"
        printer.lines.append(f"{inner}{printer.define_buffer(buffer)} = {decl}")
    for match in block.match_buffers:
        buffer = match.buffer
        source = _region(printer, match.source)
        decl = f"T.match_buffer({source}, {printer.buffer_args(buffer)})"
        printer.lines.append(f"{inner}{printer.define_buffer(buffer)} = {decl}")
    if block.init is not None:
        printer.lines.append(f"{inner}with T.init():")
        printer.namer.push()
        printer.stmt(block.init, depth + 2, True)
        printer.namer.pop()
    printer.stmt(block.body, depth + 1, True)
    printer.namer.pop()


def _is_true(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and bool(expr.value)


def _axes(
    printer: TirPrinter,
    iter_vars: tuple[IterVar, ...],
    values: tuple[PrimExpr, ...],
    pad: str,
) -> None:
    # Two or more consecutive axes bound to whole loops share one T.axis.remap line (TVM
    # prints a lone one as T.axis.spatial/reduce).
    pending: list[tuple[IterVar, PrimExpr]] = []

    def flush() -> None:
        if len(pending) == 1:
            item, value = pending.pop()
            _axis(printer, item, value, pad)
        if not pending:
            return
        kinds = "".join(_REMAP_KIND[item.iter_type] for item, _ in pending)
        bound = ", ".join(printer.expr(value) for _, value in pending)
        names = ", ".join(printer.namer.define(item.var, item.var.name) for item, _ in pending)
        printer.lines.append(f'{pad}{names} = T.axis.remap("{kinds}", [{bound}])')
        pending.clear()

    for index, item in enumerate(iter_vars):
        value = values[index] if index < len(values) else item.dom.min
        if _remappable(printer, item, value):
            pending.append((item, value))
            continue
        flush()
        _axis(printer, item, value, pad)
    flush()


def _axis(printer: TirPrinter, item: IterVar, value: PrimExpr, pad: str) -> None:
    dom = item.dom
    if isinstance(dom.min, IntImm) and dom.min.value == 0:
        dom_text = printer.expr(dom.extent)
    else:
        dom_text = f"({printer.expr(dom.min)}, {printer.expr(dom.min + dom.extent)})"
    call = _AXIS_CALL.get(item.iter_type, "opaque")
    bound_text = printer.expr(value)
    name = printer.namer.define(item.var, item.var.name)
    printer.lines.append(f"{pad}{name} = T.axis.{call}({dom_text}, {bound_text})")


def _remappable(printer: TirPrinter, item: IterVar, value: PrimExpr) -> bool:
    if item.iter_type not in _REMAP_KIND or not isinstance(value, Var):
        return False
    if value.dtype != item.var.dtype:
        return False
    loop = printer.loops.get(value)
    if loop is None:
        return False
    return structural_equal(loop.min, item.dom.min) and structural_equal(
        loop.extent, item.dom.extent
    )


def _region(printer: TirPrinter, region: BufferRegion) -> str:
    parts = [_range(printer, rng) for rng in region.region]
    return f"{printer.namer.name(region.buffer)}[{', '.join(parts) or '()'}]"


def _range(printer: TirPrinter, rng: Range) -> str:
    if isinstance(rng.extent, IntImm) and rng.extent.value == 1:
        return printer.expr(rng.min)
    return f"{printer.expr(rng.min)}:{printer.expr(rng.min + rng.extent)}"
