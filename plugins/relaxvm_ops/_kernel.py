"""Shared machinery of the legalizations: reading a call, making kernels, the op table.

Every legalization in this package is ``func(bb, call) -> Expr``. Most build a TE function of
the call's tensors and hand it to :func:`call_te`, which turns it into a PrimFunc (tagged with
its :class:`OpPattern` and a readable name), adds it to the builder's module and returns the
``R.call_tir`` of it *without binding it*: ``LegalizeOps`` binds the result where the original
call was. Kernels that TE's sum/max/min reductions cannot express (prod, argmax, cumsum) are
written as TIR loops and go through :func:`call_tir_loops`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relaxvm.errors import RelaxVMError
from relaxvm.ir import IntImm, PrimExpr, Var, free_vars
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo, TupleStructInfo
from relaxvm.ir.relax.expr import Constant, PrimValue, ShapeExpr, Tuple, TupleGetItem
from relaxvm.ir.relax.op import call_tir
from relaxvm.ir.relax.struct_info import PrimStructInfo, StructInfo
from relaxvm.ir.tir import Buffer, PrimFunc, Stmt, te, undefined_vars
from relaxvm.runtime.dtype import DataType

__all__ = [
    "LEGALIZATIONS",
    "LegalizationError",
    "OpPattern",
    "attr",
    "call_te",
    "call_tir_loops",
    "flat_index",
    "known_tensor",
    "legalizes",
    "out_tensor_sinfo",
    "product",
    "tensor_arg",
    "unravel_index",
]


class LegalizationError(RelaxVMError, ValueError):
    """A call that cannot be lowered to a kernel (unknown rank or shape, unsupported
    attribute); the message starts with the op name."""


class OpPattern(enum.IntEnum):
    """TVM's ``OpPatternKind``: how a kernel reads its inputs, for operator fusion."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_EWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


Legalization = Callable[[BlockBuilder, Call], RelaxExpr]

#: ``op name -> legalization``, filled by :func:`legalizes` as the family modules import.
LEGALIZATIONS: dict[str, Legalization] = {}


def legalizes(*op_names: str) -> Callable[[Legalization], Legalization]:
    """Decorator: record the function as the generic legalization of ``op_names``."""

    def record(func: Legalization) -> Legalization:
        for name in op_names:
            if name in LEGALIZATIONS:
                raise LegalizationError(f"{name}: legalized twice in relaxvm_ops")
            LEGALIZATIONS[name] = func
        return func

    return record


# ---- reading the call -----------------------------------------------------------------------
def op_name(call: Call) -> str:
    """The op's name (``relax.add``), for messages."""
    return str(getattr(call.op, "name", call.op))


def attr(call: Call, key: str, default: Any = None) -> Any:
    """Attribute ``key`` of ``call`` (``default`` when absent or None)."""
    attrs = call.attrs or {}
    value = attrs.get(key, default) if isinstance(attrs, Mapping) else default
    return default if value is None else value


def known_tensor(call: Call, sinfo: StructInfo | None, what: str) -> TensorStructInfo:
    """``sinfo`` as a tensor of known shape and dtype; a LegalizationError naming ``what``."""
    if not isinstance(sinfo, TensorStructInfo):
        raise LegalizationError(
            f"{op_name(call)}: cannot legalize: {what} is {sinfo}, not a tensor"
        )
    if sinfo.shape_values is None or sinfo.dtype is None:
        raise LegalizationError(
            f"{op_name(call)}: cannot legalize: {what} has unknown rank, shape or dtype "
            f"({sinfo}); match_cast it to a known shape and dtype first"
        )
    return sinfo


def tensor_arg(call: Call, index: int, what: str) -> TensorStructInfo:
    """The struct info of tensor argument ``index``; an error unless shape and dtype are known."""
    return known_tensor(call, call.args[index].struct_info, f"argument {what}")


def out_tensor_sinfo(call: Call) -> TensorStructInfo:
    """The call's own (inferred) result; an error unless its shape and dtype are known."""
    return known_tensor(call, call.struct_info, "the result")


def out_dtype(call: Call) -> DataType:
    """The dtype of the call's own (inferred) result; an error unless it is known."""
    dtype = out_tensor_sinfo(call).dtype
    assert dtype is not None  # out_tensor_sinfo raised otherwise
    return dtype


def shape_of(sinfo: TensorStructInfo) -> list[PrimExpr]:
    """The extents of a tensor known to have a shape."""
    assert sinfo.shape_values is not None  # callers went through tensor_arg/out_tensor_sinfo
    return list(sinfo.shape_values)


def tuple_fields(bb: BlockBuilder, call: Call, value: RelaxExpr, what: str) -> list[RelaxExpr]:
    """The fields of a tuple argument, as leaves (a tuple-typed variable is unpacked by
    binding ``TupleGetItem`` s)."""
    if isinstance(value, Tuple):
        return list(value.fields)
    sinfo = value.struct_info
    if not isinstance(sinfo, TupleStructInfo):
        raise LegalizationError(f"{op_name(call)}: cannot legalize: {what} is {sinfo}, not a tuple")
    return [bb.emit(TupleGetItem(value, i)) for i in range(len(sinfo.fields))]


# ---- making kernels -------------------------------------------------------------------------
class _Inputs:
    """Relax arguments turned into TE values, in first-use order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.exprs: list[RelaxExpr] = []
        self.placeholders: list[te.Tensor] = []
        self.scalar_vars: dict[Var, None] = {}
        self._seen: dict[int, te.Tensor] = {}
        self._names: set[str] = set()

    def convert(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and not isinstance(value, RelaxExpr):
            return type(value)(self.convert(item) for item in value)
        if not isinstance(value, RelaxExpr):
            return value
        if isinstance(value, PrimValue):
            return self._scalar(value.value)
        if isinstance(value, ShapeExpr):
            return [self._scalar(v) for v in value.values]
        sinfo = value.struct_info
        if isinstance(sinfo, PrimStructInfo) and not isinstance(value, Constant):
            if sinfo.value is None:
                raise LegalizationError(
                    f"{self.name}: cannot legalize: the scalar {value} has no known value "
                    f"({sinfo}); only PrimValues and symbolic values can feed a kernel"
                )
            return self._scalar(sinfo.value)
        if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is None:
            raise LegalizationError(
                f"{self.name}: cannot legalize: argument {value} is {sinfo}, not a tensor of "
                "known shape"
            )
        if sinfo.dtype is None:
            raise LegalizationError(
                f"{self.name}: cannot legalize: argument {value} has unknown dtype ({sinfo})"
            )
        found = self._seen.get(id(value))
        if found is None:
            found = te.placeholder(list(sinfo.shape_values), sinfo.dtype, self._unique(value))
            self._seen[id(value)] = found
            self.exprs.append(value)
            self.placeholders.append(found)
        return found

    def _scalar(self, expr: PrimExpr) -> PrimExpr:
        self.scalar_vars.update(dict.fromkeys(free_vars(expr)))
        return expr

    def _unique(self, value: RelaxExpr) -> str:
        base = str(getattr(value, "name_hint", "") or "A")
        candidate, suffix = base, 1
        while candidate in self._names:
            candidate, suffix = f"{base}_{suffix}", suffix + 1
        self._names.add(candidate)
        return candidate

    def bound_vars(self) -> set[Var]:
        """Symbolic variables a kernel learns from its buffer arguments' shapes."""
        return {dim for p in self.placeholders for dim in p.shape if isinstance(dim, Var)}


def _finish(
    bb: BlockBuilder,
    inputs: _Inputs,
    outputs: Sequence[Buffer],
    make: Callable[[list[Var]], PrimFunc],
    name: str,
    op_pattern: OpPattern,
    attrs: Mapping[str, Any] | None,
) -> Call:
    """Pass unbound symbolic variables as scalars, tag the PrimFunc, add it, make the call."""
    bound = inputs.bound_vars()
    extra: dict[Var, None] = {}
    # A variable seen only inside a compound extent (an input of shape (n * 3,)) cannot be
    # recovered from the buffers, so it is passed as a scalar like the outputs' variables.
    for buffer in [*(p.buffer for p in inputs.placeholders), *outputs]:
        for dim in buffer.shape:
            extra.update(dict.fromkeys(v for v in free_vars(dim) if v not in bound))
    extra.update(dict.fromkeys(v for v in inputs.scalar_vars if v not in bound))
    func = make(list(extra))
    missing = [v for v in undefined_vars(func) if v not in extra]
    if missing:
        func = make([*extra, *missing])
        extra.update(dict.fromkeys(missing))
    func = func.with_attr("op_pattern", int(op_pattern))
    for key, value in (attrs or {}).items():
        func = func.with_attr(key, value)
    gvar = bb.add_func(func, name)
    out_sinfo = [TensorStructInfo(list(b.shape), b.dtype) for b in outputs]
    tir_vars = ShapeExpr(list(extra)) if extra else None
    return call_tir(gvar, inputs.exprs, out_sinfo, tir_vars)


def call_te(
    bb: BlockBuilder,
    te_func: Callable[..., Any],
    *args: Any,
    primfunc_name_hint: str,
    op_pattern: OpPattern,
    attrs: Mapping[str, Any] | None = None,
    op: str = "",
    **kwargs: Any,
) -> Call:
    """``R.call_tir`` of the PrimFunc made from ``te_func(*args, **kwargs)``, not yet bound.

    Parameters
    ----------
    bb : BlockBuilder
        Receives the PrimFunc (an identical one already there is reused).
    te_func : callable
        Receives the arguments with Relax tensors replaced by ``te.placeholder`` s, PrimValues
        by their PrimExpr and ShapeExprs by lists of extents; returns a ``te.Tensor`` or a list.
    primfunc_name_hint : str
        The PrimFunc's name (made unique in the module).
    op_pattern : OpPattern
        Stored as the PrimFunc attribute ``op_pattern`` for fusion.
    attrs : mapping, optional
        Further PrimFunc attributes.
    op : str
        The op being legalized, for error messages.
    """
    inputs = _Inputs(op or primfunc_name_hint)
    te_args = inputs.convert(list(args))
    te_kwargs = {key: inputs.convert(value) for key, value in kwargs.items()}
    result = te_func(*te_args, **te_kwargs)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    if not outputs or not all(isinstance(t, te.Tensor) for t in outputs):
        raise LegalizationError(
            f"{inputs.name}: the TE function must return te.Tensor(s), got {result!r}"
        )

    def make(scalars: list[Var]) -> PrimFunc:
        return te.create_loop_func(
            [*inputs.placeholders, *outputs, *scalars], name=primfunc_name_hint
        )

    buffers = [t.buffer for t in outputs]
    return _finish(bb, inputs, buffers, make, primfunc_name_hint, op_pattern, attrs)


def call_tir_loops(
    bb: BlockBuilder,
    build: Callable[..., tuple[Sequence[Buffer], Stmt]],
    *args: Any,
    primfunc_name_hint: str,
    op_pattern: OpPattern,
    attrs: Mapping[str, Any] | None = None,
    op: str = "",
) -> Call:
    """Like :func:`call_te`, for a kernel written as TIR statements.

    ``build`` receives the converted arguments (tensors as ``te.placeholder`` s, whose
    ``.buffer`` it reads) and returns ``(output buffers, body)``.
    """
    inputs = _Inputs(op or primfunc_name_hint)
    converted = inputs.convert(list(args))
    outputs, body = build(*converted)

    def make(scalars: list[Var]) -> PrimFunc:
        params: list[Var | Buffer] = [*(p.buffer for p in inputs.placeholders), *outputs, *scalars]
        attrs_ = {"global_symbol": primfunc_name_hint, "tir.noalias": True}
        return PrimFunc(params, body, attrs=attrs_)

    return _finish(bb, inputs, list(outputs), make, primfunc_name_hint, op_pattern, attrs)


# ---- index helpers --------------------------------------------------------------------------
def is_one(dim: PrimExpr) -> bool:
    """Whether ``dim`` is the constant 1."""
    return isinstance(dim, IntImm) and dim.value == 1


def product(values: Sequence[PrimExpr]) -> PrimExpr:
    """The product of extents (1 for none)."""
    result: PrimExpr = IntImm("int64", 1)
    for value in values:
        result = sop.mul(result, value)
    return result


def flat_index(idx: Sequence[PrimExpr], shape: Sequence[PrimExpr]) -> PrimExpr:
    """The row-major offset of ``idx`` in ``shape``."""
    flat: PrimExpr = IntImm("int64", 0)
    for i, extent in zip(idx, shape, strict=True):
        flat = sop.add(sop.mul(flat, extent), i)
    return flat


def unravel_index(flat: PrimExpr, shape: Sequence[PrimExpr]) -> list[PrimExpr]:
    """The row-major index of offset ``flat`` in ``shape``."""
    out: list[PrimExpr] = []
    if any(isinstance(extent, IntImm) and extent.value == 0 for extent in shape):
        # An empty shape: no offset exists, and dividing by the zero extent would fail; the
        # kernel's loops run no iteration, so the index is never used.
        return [IntImm("int64", 0) for _ in shape]
    for extent in reversed(shape):
        out.append(sop.floormod(flat, extent))
        flat = sop.floordiv(flat, extent)
    return list(reversed(out))
