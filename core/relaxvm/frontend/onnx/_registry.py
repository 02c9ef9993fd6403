"""The table of ONNX operator converters, by (domain, op type) and opset.

A converter is registered with :func:`converter` next to its definition, once per opset
version at which its behaviour changed (``since``)::

    @converter("Relu", since=6)
    def relu(ctx: Context, node: Node) -> RelaxExpr:
        \"\"\"Rectified linear unit.\"\"\"
        return op.nn.relu(node.input(0))

The importer picks, for a model importing opset ``v`` of the node's domain, the registration
with the largest ``since <= v``. ``check(node)`` (optional) runs before any conversion and
returns a reason the node cannot be converted (an unsupported attribute value, say), or None;
the importer gathers those reasons for every node and reports them all in one error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._context import Context, Node

__all__ = ["Converter", "converter", "find_converter", "registered_ops"]

ConvertFn = Callable[["Context", "Node"], Any]
CheckFn = Callable[["Node"], "str | None"]


@dataclass(frozen=True)
class Converter:
    """One registration: the op, the first opset it covers, and its functions."""

    op_type: str
    domain: str
    since: int
    convert: ConvertFn
    check: CheckFn | None
    #: A short note for the coverage table in docs/onnx.md (the converter's docstring line).
    note: str


_TABLE: dict[tuple[str, str], list[Converter]] = {}


def _normal_domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def converter(
    op_type: str, since: int = 1, *, domain: str = "", check: CheckFn | None = None
) -> Callable[[ConvertFn], ConvertFn]:
    """Register the decorated function as the converter of ``op_type`` from opset ``since``."""

    def register(fn: ConvertFn) -> ConvertFn:
        doc = (fn.__doc__ or "").strip().splitlines()
        entry = Converter(op_type, _normal_domain(domain), since, fn, check, doc[0] if doc else "")
        versions = _TABLE.setdefault((entry.domain, op_type), [])
        if any(v.since == since for v in versions):
            raise ValueError(f"ONNX converter {op_type} since opset {since} registered twice")
        versions.append(entry)
        versions.sort(key=lambda v: v.since)
        return fn

    return register


def find_converter(domain: str, op_type: str, opset: int) -> Converter | None:
    """The registration for ``op_type`` at ``opset``, or None (unknown op, or opset too old)."""
    _load_converters()
    best = None
    for entry in _TABLE.get((_normal_domain(domain), op_type), ()):
        if entry.since <= opset:
            best = entry
    return best


def registered_ops() -> dict[tuple[str, str], list[Converter]]:
    """Every registration: ``{(domain, op_type): [Converter, ...]}`` sorted by ``since``."""
    _load_converters()
    return {key: list(value) for key, value in sorted(_TABLE.items())}


_LOADED = False


def _load_converters() -> None:
    # The converter modules register themselves on import; import them on first lookup so
    # that importing this table alone stays cheap and cycle-free.
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import (  # noqa: F401
        ops_control,
        ops_control_loop,
        ops_control_scan,
        ops_elementwise,
        ops_elementwise_activation,
        ops_elementwise_cast,
        ops_elementwise_logic,
        ops_elementwise_unary,
        ops_nn,
        ops_nn_attention,
        ops_nn_conv,
        ops_nn_norm,
        ops_nn_pool,
        ops_nn_pool_argmax,
        ops_nn_quant,
        ops_nn_resize,
        ops_nn_resize_kernel,
        ops_reduce,
        ops_shape,
        ops_shape_extra,
        ops_shape_index,
    )
