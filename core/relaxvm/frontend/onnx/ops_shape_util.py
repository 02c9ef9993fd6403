"""Helpers shared by the shape, index and reduce converters: axes, inputs read at import time,
known values, and shapes that only the running model knows.

Run-time shapes
---------------
When an ONNX "attribute-like" input (a Reshape shape, Slice starts, reduce axes) is a real
tensor of the graph, its values exist only at run time. Where the rank of the result is still
fixed at import time, the converters compute the result's shape in a small kernel, turn it
into a Relax shape (``R.tensor_to_shape``) and ``R.match_cast`` it to fresh symbolic dims; the
kernel that produces the result then reads the parameter tensors itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import FrontendError
from ...ir import op as sop
from ...ir import tir
from ...ir.expr_functor import free_vars
from ...ir.relax import RelaxExpr, ShapeStructInfo, TensorStructInfo, Var, op
from ...ir.tir import te
from ._context import Context, Node

__all__ = [
    "as_int64",
    "attr_or_input_ints",
    "axis_checks",
    "bindable",
    "emit_kernel",
    "int64",
    "known_ints",
    "known_value",
    "norm_axis",
    "not_in",
    "note_dims",
    "product",
    "require_ints",
    "require_shape",
    "runtime_dims",
    "runtime_input",
    "scalar_of",
    "select_chain",
    "tidy_shape",
    "wrap_axis",
]

_FRESH = itertools.count()


def norm_axis(node: Node, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[0, rank)`` (negative counts from the end); a FrontendError when out of
    range."""
    if not -rank <= axis < rank:
        raise FrontendError(
            f"from_onnx: {node.label}: {what} {axis} is out of range for rank {rank}"
        )
    return axis + rank if axis < 0 else axis


def _int_list(node: Node, value: np.ndarray, what: str) -> list[int] | None:
    flat = np.asarray(value).reshape(-1).tolist()
    out = []
    for element in flat:
        if isinstance(element, tir.IntImm):
            element = int(element.value)
        if isinstance(element, tir.PrimExpr):
            return None  # symbolic: not an int at import time
        if isinstance(element, float) and not float(element).is_integer():
            raise FrontendError(f"from_onnx: {node.label}: {what} must be integers, got {flat}")
        out.append(int(element))
    return out


def known_ints(ctx: Context, node: Node, index: int, what: str) -> list[int] | None:
    """Input ``index`` as Python ints when the importer knows them (None when unknown or
    symbolic; an absent input is the caller's business)."""
    value = ctx.known(node.optional_input(index))
    if value is None:
        return None
    return _int_list(node, value, what)


def require_ints(ctx: Context, node: Node, index: int, what: str) -> list[int]:
    """Input ``index`` as ints; :class:`OpNotImplemented` when only the run time knows it."""
    values = known_ints(ctx, node, index, what)
    if values is None:
        raise node.unsupported(
            f"input {index} ({what}, '{node.input_names[index]}') is computed at run time; "
            "only values known at import time (initializers, constants, shape arithmetic) "
            "are supported"
        )
    return values


def attr_or_input_ints(
    ctx: Context, node: Node, name: str, index: int, since: int
) -> list[int] | None:
    """The ints of attribute ``name`` (opsets before ``since``) or input ``index`` (from
    ``since``); None when absent or known only at run time (see :func:`runtime_input`)."""
    if node.opset < since:
        value = node.attr(name, None)
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]
    if node.optional_input(index) is None:
        return None
    return known_ints(ctx, node, index, name)


def runtime_input(ctx: Context, node: Node, index: int, since: int = 0) -> bool:
    """True when input ``index`` is present (from opset ``since``) but only known at run
    time."""
    if node.opset < since or node.optional_input(index) is None:
        return False
    return known_ints(ctx, node, index, node.input_names[index]) is None


def require_shape(ctx: Context, node: Node, expr: RelaxExpr, what: str) -> list[Any]:
    """The dims of ``expr`` (ints or PrimExprs); :class:`OpNotImplemented` when unknown."""
    dims = ctx.shape(expr)
    if dims is None:
        raise node.unsupported(f"{what} has an unknown shape")
    note_dims(ctx, dims)
    return [int(d.value) if isinstance(d, tir.IntImm) else d for d in dims]


#: No real extent reaches this; slice ends past it mean "to the end".
MAX_EXTENT = 1 << 40


def note_dims(ctx: Context, dims: Sequence[Any]) -> None:
    """Tell the analyzer that the variables of ``dims`` are extents (``0 <= n < 2**40``), so
    that ``max(seq, 0)`` and ``min(seq, 2**40)`` simplify to ``seq``."""
    for dim in dims:
        if isinstance(dim, tir.PrimExpr) and not isinstance(dim, tir.IntImm):
            for var in free_vars(dim):
                if str(var.dtype).startswith("int"):
                    ctx.analyzer.update(var, 0, MAX_EXTENT - 1)


def tidy_shape(ctx: Context, expr: RelaxExpr) -> RelaxExpr:
    """``expr`` match-cast to its dims simplified under :func:`note_dims` facts when that
    changes them (``min(seq, 2**40) - min(seq, 0)`` -> ``seq``), so later shapes stay
    readable and comparable."""
    dims = ctx.shape(expr)
    if dims is None or all(isinstance(d, tir.IntImm) for d in dims):
        return expr
    note_dims(ctx, dims)
    simple = [ctx.simplify(d) for d in dims]
    if all(str(a) == str(b) for a, b in zip(dims, simple, strict=True)):
        return expr
    return ctx.bb.match_cast(expr, TensorStructInfo(simple, ctx.dtype(expr)))


# ---- known values -----------------------------------------------------------------------------
def known_value(
    ctx: Context, value: Any, dtype: str, anchors: Sequence[RelaxExpr] = ()
) -> RelaxExpr:
    """``ctx.from_known``, with symbolic elements materialized by a kernel that receives the
    tensors binding their variables (so that the kernel can read them); ``anchors`` are such
    tensors the importer has not bound to a name."""
    array = np.asarray(value, dtype=object) if _symbolic(value) else np.asarray(value)
    if array.dtype != object:
        return ctx.from_known(array, dtype)
    flat = [ctx.simplify(_plain(e)) for e in array.reshape(-1).tolist()]
    if not any(isinstance(e, tir.PrimExpr) and not isinstance(e, tir.IntImm) for e in flat):
        ints = [int(e.value) if isinstance(e, tir.IntImm) else e for e in flat]
        return ctx.from_known(np.asarray(ints).reshape(array.shape), dtype)
    needed: dict[Any, None] = {}
    for element in flat:
        if isinstance(element, tir.PrimExpr):
            needed.update(dict.fromkeys(free_vars(element)))
    anchors = _anchors(ctx, list(needed), anchors)
    elements = [
        sop.cast(e, dtype) if isinstance(e, tir.PrimExpr) else tir.const(int(e), dtype)
        for e in flat
    ]
    shape = list(array.shape)

    def compute(*_: Any) -> te.Tensor:
        def element(*index: Any) -> Any:
            linear: Any = tir.const(0, "int64")
            for dim, i in zip(shape, index, strict=True):
                linear = sop.add(sop.mul(linear, dim), i)
            return select_chain(linear, elements)

        return te.compute(shape, element, name="known_value")

    expr = ctx.bb.emit_te(compute, *anchors, primfunc_name_hint="onnx_known_value")
    result = np.asarray(flat, dtype=object).reshape(array.shape)
    ctx.record_known(expr, result)
    return expr


def _plain(element: Any) -> Any:
    return int(element) if isinstance(element, (np.integer, bool)) else element


def _symbolic(value: Any) -> bool:
    if isinstance(value, np.ndarray) and value.dtype != object:
        return False
    array = np.asarray(value, dtype=object)
    return any(
        isinstance(e, tir.PrimExpr) and not isinstance(e, tir.IntImm)
        for e in array.reshape(-1).tolist()
    )


def _anchors(ctx: Context, needed: list[Any], extra: Sequence[RelaxExpr]) -> list[RelaxExpr]:
    """Tensors whose shapes name every variable in ``needed`` (a kernel argument binds the
    variables of its shape)."""
    values = getattr(ctx.importer, "values", {}) or {}
    anchors: list[RelaxExpr] = []
    missing = set(needed)
    for expr in [*extra, *values.values()]:
        if not missing:
            break
        if not isinstance(expr, Var) or not isinstance(expr.struct_info, TensorStructInfo):
            continue
        dims = ctx.shape(expr) or []
        found = {d for d in dims if d in missing}
        if found:
            anchors.append(expr)
            missing -= found
    if missing:
        names = ", ".join(sorted(str(v) for v in missing))
        raise FrontendError(
            f"from_onnx: cannot compute the value of symbolic dim(s) {names} at run time: no "
            "tensor of the model has them in its shape"
        )
    return anchors


# ---- run-time shapes --------------------------------------------------------------------------
def int64(value: int) -> Any:
    """An int64 constant."""
    return tir.const(value, "int64")


def product(dims: Sequence[Any]) -> Any:
    """The product of ints and PrimExprs (an int while every factor is one)."""
    total: Any = 1
    for dim in dims:
        if isinstance(total, int) and isinstance(dim, int):
            total *= dim
        else:
            total = sop.mul(int64(total) if isinstance(total, int) else total, dim)
    return total


def wrap_axis(axis: Any, rank: int) -> Any:
    """A run-time axis with negative values counted from the end."""
    return sop.select(sop.less(axis, 0), sop.add(axis, rank), axis)


def not_in(position: int, axes: Sequence[Any]) -> Any:
    """The condition that no run-time axis in ``axes`` equals ``position``."""
    result: Any = tir.const(True, "bool")
    for axis in axes:
        result = sop.logical_and(result, sop.not_equal(axis, position))
    return result


def select_chain(index: Any, elements: Sequence[Any]) -> Any:
    """``elements[index]`` for a PrimExpr ``index`` (a Select per position)."""
    result = elements[-1]
    for position in range(len(elements) - 2, -1, -1):
        cond = sop.equal(index, tir.const(position, str(index.dtype)))
        result = sop.select(cond, elements[position], result)
    return result


def as_int64(value: Any) -> Any:
    """A PrimExpr as int64 (a no-op when it already is)."""
    if isinstance(value, int):
        return tir.const(value, "int64")
    return value if str(value.dtype) == "int64" else sop.cast(value, "int64")


def scalar_of(tensor: te.Tensor, position: int = 0) -> Any:
    """Element ``position`` of a 0-d or 1-d placeholder, as int64."""
    if len(tensor.shape) == 0:
        return as_int64(tensor[()])
    return as_int64(tensor[position])


def bindable(ctx: Context, expr: RelaxExpr) -> RelaxExpr:
    """``expr``, or an alias of it whose compound dims (``n * 4``) are fresh variables: a
    kernel can only read variables that some buffer's shape names directly."""
    dims = ctx.shape(expr)
    if dims is None or all(isinstance(d, (tir.IntImm, tir.Var)) for d in dims):
        return expr
    fresh = [
        d if isinstance(d, (tir.IntImm, tir.Var)) else tir.Var(f"d{next(_FRESH)}", "int64")
        for d in dims
    ]
    return ctx.bb.match_cast(expr, TensorStructInfo(fresh, ctx.dtype(expr)))


def emit_kernel(ctx: Context, fn: Callable[..., Any], *tensors: RelaxExpr, name: str) -> Any:
    """``ctx.bb.emit_te(fn, *tensors)`` with every tensor made :func:`bindable` first."""
    args = [bindable(ctx, t) for t in tensors]
    return ctx.bb.emit_te(fn, *args, primfunc_name_hint=name)


def axis_checks(raw: Sequence[Any], rank: int) -> list[Any]:
    """Conditions that run-time axes ``raw`` are in ``[-rank, rank)`` and name distinct
    axes."""
    flags: list[Any] = []
    wrapped = [wrap_axis(a, rank) for a in raw]
    for k, axis in enumerate(wrapped):
        flags.append(sop.logical_and(sop.greater_equal(axis, 0), sop.less(axis, rank)))
        flags.extend(sop.not_equal(axis, other) for other in wrapped[:k])
    return flags


def runtime_dims(
    ctx: Context,
    node: Node,
    count: int,
    elements: Callable[..., Sequence[Any]],
    tensors: Sequence[RelaxExpr],
    checks: Callable[..., Sequence[Any]] | None = None,
) -> list[tir.Var]:
    """Fresh symbolic dims bound at run time to ``elements(*placeholders)`` (``count``
    int64 PrimExprs computed from ``tensors``' values and shapes).

    ``checks(*placeholders)`` gives conditions the values must meet (valid axes, matching
    element counts); each becomes a trailing entry of the shape that the ``match_cast``
    requires to be 1, so a model feeding bad values fails at run time instead of reading
    past a buffer. Every dim is also checked to be non-negative.
    """
    for tensor in tensors:
        if ctx.shape(tensor) is None:
            raise node.unsupported("an input used to compute the result shape has an unknown shape")

    def compute(*placeholders: te.Tensor) -> te.Tensor:
        values = [as_int64(v) for v in elements(*placeholders)]
        flags = [sop.greater_equal(v, 0) for v in values]
        flags += list(checks(*placeholders)) if checks is not None else []
        ok: Any = tir.const(True, "bool")
        for flag in flags:
            ok = sop.logical_and(ok, flag)
        values.append(sop.select(ok, tir.const(1, "int64"), tir.const(0, "int64")))
        return te.compute([len(values)], lambda i: select_chain(i, values), name="shape")

    vector = emit_kernel(ctx, compute, *tensors, name="onnx_runtime_shape")
    shape = ctx.bb.emit(op.tensor_to_shape(vector))
    stem = "".join(c if c.isalnum() else "_" for c in node.op_type.lower())
    dims = [tir.Var(f"{stem}_n{next(_FRESH)}", "int64") for _ in range(count)]
    # The trailing 1 is the validity flag: the match_cast fails when it is 0.
    ctx.bb.match_cast(shape, ShapeStructInfo([*dims, tir.const(1, "int64")]))
    return dims
