"""ONNX converters: Scan (opset 9+), built on the recursive loop of ops_control_loop.py.

Each scan input is sliced along its axis (from the end when its direction is 1) at the
iteration number inside the body function; each scan output is accumulated along axis 0 and
then flipped (direction 1) and moved to its axis.
"""

from __future__ import annotations

from typing import Any

from ...errors import FrontendError
from ...ir import tir
from ...ir.relax import Call, RelaxExpr, op
from ...ir.relax.expr import ShapeExpr
from ...ir.relax.op.manipulate_extra import flip
from ...ir.tir import te
from ._context import Context, Node
from ._registry import converter
from .ops_control import param_sinfo, tensor_outputs, unpack_outputs
from .ops_control_loop import LoopSpec, build_loop, match_rows


def _check_scan(node: Node) -> str | None:
    if node.opset < 9:
        return "the opset-8 form (batch axis, sequence_lens) is not supported; opset 9+ is"
    body = node.attrs.get("body")
    return None if body is None else tensor_outputs(body, "body")


def _axes(node: Node, name: str, count: int, ranks: list[int]) -> list[int]:
    values = list(node.attr(name, [0] * count))
    if len(values) != count:
        raise FrontendError(
            f"from_onnx: {node.label}: {name} has {len(values)} entries, not {count}"
        )
    out = []
    for value, rank in zip(values, ranks, strict=True):
        if not -rank <= value < rank:
            raise FrontendError(f"from_onnx: {node.label}: {name} entry {value} is out of range")
        out.append(value % rank)
    return out


def _directions(node: Node, name: str, count: int) -> list[bool]:
    values = list(node.attr(name, [0] * count))
    if len(values) != count or any(v not in (0, 1) for v in values):
        raise FrontendError(f"from_onnx: {node.label}: {name} must be {count} zeros or ones")
    return [v == 1 for v in values]


@converter("Scan", since=8, check=_check_scan)
def scan(ctx: Context, node: Node) -> Any:
    """Opset 9+: states, input/output axes and directions; up to ~1500 iterations; not opset 8.

    The opset-8 form (a batch axis and ``sequence_lens``) is refused."""
    body = node.attr("body")
    inputs = [node.input(i) for i in range(len(node.inputs))]
    m = int(node.attr("num_scan_inputs"))
    n = len(inputs) - m
    k = len(body.output) - n
    if m < 1 or n < 0 or len(body.input) != n + m or k < 0 or len(node.output_names) != n + k:
        raise FrontendError(
            f"from_onnx: {node.label}: {len(inputs)} inputs with num_scan_inputs={m}, a body of "
            f"{len(body.input)} inputs and {len(body.output)} outputs, and "
            f"{len(node.output_names)} node outputs do not fit together"
        )
    scanned = inputs[n:]
    ranks = [ctx.require_ndim(node, x, "a scan input") for x in scanned]
    in_axes = _axes(node, "scan_input_axes", m, ranks)
    in_reversed = _directions(node, "scan_input_directions", m)
    first_shape = ctx.shape(scanned[0])
    if first_shape is None:
        raise node.unsupported("the first scan input has an unknown shape")
    length = first_shape[in_axes[0]]
    spec = LoopSpec(
        has_trip=True,
        with_cond=False,
        cond_given=False,
        carried=[
            param_sinfo(v.struct_info, node, f"state value {j}") for j, v in enumerate(inputs[:n])
        ],
        sliced=[
            (param_sinfo(x.struct_info, node, f"scan input {j}"), axis, rev)
            for j, (x, axis, rev) in enumerate(zip(scanned, in_axes, in_reversed, strict=True))
        ],
    )
    loop_gvar, rows, captures = build_loop(ctx, node, spec)
    trip = _length(ctx, scanned[0], in_axes[0], length)
    accs = [ctx.emit(op.zeros(ShapeExpr([0, *dims]), dtype)) for dims, dtype in rows]
    args = [ctx.const(0, "int64"), trip, *inputs[:n], *accs, *scanned]
    result = ctx.emit(Call(loop_gvar, [*args, *[value for _, value in captures]]))
    outputs = unpack_outputs(ctx, result, n + k, "scan_out")
    out_axes = _axes(node, "scan_output_axes", k, [len(dims) + 1 for dims, _ in rows])
    out_reversed = _directions(node, "scan_output_directions", k)
    for j, row in enumerate(rows):
        value = match_rows(ctx, outputs[n + j], length, row, f"scan_len{j}")
        if out_reversed[j]:
            value = ctx.emit(flip(value, axis=0))
        if out_axes[j] != 0:
            order = list(range(1, len(row[0]) + 1))
            order.insert(out_axes[j], 0)
            value = ctx.emit(op.permute_dims(value, order))
        outputs[n + j] = value
    return outputs


def _length(ctx: Context, value: RelaxExpr, axis: int, dim: Any) -> RelaxExpr:
    """The extent of ``value`` along ``axis`` as a 0-d int64 tensor (a kernel reading it from
    the tensor's shape when it is symbolic)."""
    if isinstance(dim, tir.IntImm):
        return ctx.const(int(dim.value), "int64")

    def extent(data: Any) -> Any:
        return te.compute([], lambda: tir.Cast("int64", data.shape[axis]), name="extent")

    return ctx.bb.emit_te(extent, value, primfunc_name_hint="onnx_scan_length")
