"""``BlockBuilder.emit_te``: turn a TE function of Relax tensors into ``R.call_tir``.

Relax tensor arguments become ``te.placeholder`` s that reuse the tensors' (possibly symbolic)
dims, so the PrimFunc's buffers and the call's output struct info name the same symbolic
variables as the Relax function around the call.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import VMValueError
from ..expr import Var as TirVar
from ..expr_functor import free_vars
from ..tir import te
from ..tir.function import PrimFunc
from ._base import RelaxExpr
from .expr import Call, PrimValue, ShapeExpr
from .op import call_tir
from .struct_info import PrimStructInfo, StructInfo, TensorStructInfo

if TYPE_CHECKING:
    from .block_builder import BlockBuilder

__all__ = ["build_call_tir"]


class _Converter:
    """Replaces Relax tensors by placeholders, remembering them in argument order."""

    def __init__(self, builder: BlockBuilder) -> None:
        self.builder = builder
        self.inputs: list[RelaxExpr] = []
        self.placeholders: list[te.Tensor] = []
        self._by_expr: dict[int, te.Tensor] = {}
        self._names: set[str] = set()

    def convert(self, value: Any) -> Any:
        from .block_builder import BlockBuilderError

        if isinstance(value, (list, tuple)):
            return type(value)(self.convert(item) for item in value)
        if isinstance(value, Mapping):
            return {key: self.convert(item) for key, item in value.items()}
        if not isinstance(value, RelaxExpr):
            return value  # plain Python values (axes, flags) pass through
        leaf = self.builder._normalize_arg(value)
        if isinstance(leaf, PrimValue):
            return leaf.value
        if isinstance(leaf, ShapeExpr):
            return list(leaf.values)
        sinfo = leaf.struct_info
        if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
            # An ``R.Prim(value=n)`` variable stands for its symbolic value, as in TVM; a
            # symbol no input shape binds becomes one of the call's tir_vars.
            return sinfo.value
        if not isinstance(sinfo, TensorStructInfo):
            raise BlockBuilderError(
                f"BlockBuilder.emit_te: argument {leaf} is {sinfo}, not a tensor, shape or "
                "prim value"
            )
        if sinfo.shape_values is None or sinfo.dtype is None:
            raise BlockBuilderError(
                f"BlockBuilder.emit_te: tensor argument {leaf} has unknown shape or dtype "
                f"({sinfo}); match_cast it to a known shape first"
            )
        found = self._by_expr.get(id(leaf))
        if found is None:
            name = self._unique(getattr(leaf, "name_hint", "A"))
            found = te.placeholder(list(sinfo.shape_values), sinfo.dtype, name=name)
            self._by_expr[id(leaf)] = found
            self.inputs.append(leaf)
            self.placeholders.append(found)
        return found

    def _unique(self, name: str) -> str:
        candidate, suffix = name, 1
        while candidate in self._names:
            candidate, suffix = f"{name}_{suffix}", suffix + 1
        self._names.add(candidate)
        return candidate


def _outputs(result: Any) -> list[te.Tensor]:
    from .block_builder import BlockBuilderError

    items = list(result) if isinstance(result, (list, tuple)) else [result]
    if not items or not all(isinstance(item, te.Tensor) for item in items):
        raise BlockBuilderError(
            "BlockBuilder.emit_te: the TE function must return a te.Tensor or a list of them, "
            f"got {result!r}"
        )
    return items


def _primfunc_name(te_func: Callable[..., Any], hint: str | None) -> str:
    if hint:
        return hint
    name = re.sub(r"\W", "_", getattr(te_func, "__name__", "te_func")).strip("_")
    # A lambda is named "<lambda>": a keyword once cleaned, which the printer would rename.
    if not name or keyword.iskeyword(name):
        return "te_func"
    return name


def _symbols_used(outputs: Sequence[te.Tensor]) -> list[TirVar]:
    """The symbolic variables the kernel of ``outputs`` needs, in first-use order: those of
    every computed tensor's shape and those its compute bodies read (``te.compute(..., lambda
    i: x[i] * n)``), less the stages' own index variables."""
    found: dict[TirVar, None] = {}

    def note(expr: Any, local: set[TirVar]) -> None:
        for var in free_vars(expr):
            # Buffer data handles (of the tensors a body reads) are not symbols.
            if var not in local and str(var.dtype).startswith(("int", "uint")):
                found[var] = None

    for tensor in te._stage_order(list(outputs)):
        for dim in tensor.shape:
            note(dim, set())
        op = tensor.op
        if not isinstance(op, te.ComputeOp):
            continue
        local = {iv.var for iv in op.axis}
        body = op.body
        if isinstance(body, te.Reduce):
            local |= {iv.var for iv in body.axis}
            for iv in body.axis:  # extents may depend on the stage's own indices
                note(iv.dom.min, local)
                note(iv.dom.extent, local)
            parts = [body.source, body.init] + (
                [body.condition] if body.condition is not None else []
            )
        else:
            parts = [body]
        for part in parts:
            note(part, local)
    return list(found)


def build_call_tir(
    builder: BlockBuilder,
    te_func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    name_hint: str | None,
    primfunc_attrs: Mapping[str, Any] | None = None,
) -> Call:
    """Make the PrimFunc for ``te_func(*args, **kwargs)``, add it to the builder's module and
    return the (not yet emitted) ``R.call_tir`` of it."""
    from .block_builder import BlockBuilderError

    if not callable(te_func):
        raise BlockBuilderError(
            f"BlockBuilder.emit_te: te_func must be callable, got {type(te_func).__name__}"
        )
    converter = _Converter(builder)
    te_args = converter.convert(list(args))
    te_kwargs = converter.convert(dict(kwargs))
    outputs = _outputs(te_func(*te_args, **te_kwargs))
    # Symbolic variables that no input shape binds directly are passed as scalar parameters
    # (the call's tir_vars), as TVM does; otherwise the kernel could not know their values.
    bound: set[TirVar] = set()
    for placeholder in converter.placeholders:
        bound.update(dim for dim in placeholder.shape if isinstance(dim, TirVar))
    extra: dict[TirVar, None] = {}
    for var in _symbols_used(outputs):
        if var not in bound:
            extra[var] = None
    name = _primfunc_name(te_func, name_hint)
    try:
        func = te.create_prim_func([*converter.placeholders, *outputs, *extra], name=name)
    except VMValueError as err:
        raise BlockBuilderError(f"BlockBuilder.emit_te({name}): {err}") from err
    # As TVM: the kernel is private to the module (no global_symbol; code generation's
    # AttachGlobalSymbol names it later) and carries the caller's extra attributes.
    func = PrimFunc(
        func.params,
        func.body,
        func.buffer_map,
        {
            **{k: v for k, v in func.attrs.items() if k != "global_symbol"},
            **dict(primfunc_attrs or {}),
        },
    )
    gvar = builder.add_func(func, name)
    out_sinfo: list[StructInfo] = [
        TensorStructInfo(list(output.shape), output.dtype) for output in outputs
    ]
    tir_vars = ShapeExpr(list(extra)) if extra else None
    return call_tir(gvar, converter.inputs, out_sinfo, tir_vars)
