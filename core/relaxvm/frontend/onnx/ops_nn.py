"""ONNX converters: nn operators."""

from __future__ import annotations

from typing import Any

from ...ir.relax import op
from ._context import Context, Node
from ._registry import converter


@converter("MatMul", since=1)
def matmul(ctx: Context, node: Node) -> Any:
    """Numpy matmul semantics (batch broadcasting, 1-D promotion)."""
    return op.matmul(node.input(0), node.input(1))
