"""ONNX converters: elementwise arithmetic, math, activations, comparisons, logic, casts."""

from __future__ import annotations

from typing import Any

from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter


@converter("Identity", since=1)
def identity(ctx: Context, node: Node) -> Any:
    """Passes its input through."""
    return node.input(0)


@converter("Add", since=7)
def add(ctx: Context, node: Node) -> Any:
    """Numpy-style broadcasting."""
    known = ctx.known_inputs(node)
    if known is not None:
        return ctx.from_known(known[0] + known[1], ctx.dtype(node.input(0)) or "int64")
    return op.add(node.input(0), node.input(1))


@converter("Relu", since=6)
def relu(ctx: Context, node: Node) -> Any:
    """Rectified linear unit."""
    return op.nn.relu(node.input(0))
