"""ONNX converters: If, and the helpers shared with the loops (ops_control_loop.py).

Subgraphs become private functions of the module (see ``GraphImporter.nested``); the outer
values a subgraph reads are passed to them as extra arguments.

An ``If`` whose condition is known at import time is inlined: only the taken branch is
converted. Otherwise it becomes a call of a function ``onnx_if(cond, captured...)`` whose body
is ``R.If(cond, onnx_if_then(...), onnx_if_else(...))``: the If sits in a function of its own
because Relax allows no If inside the dataflow block of ``main``.
"""

from __future__ import annotations

from typing import Any

from ...errors import FrontendError
from ...ir import tir
from ...ir.relax import (
    BindingBlock,
    Call,
    If,
    RelaxExpr,
    SeqExpr,
    StructInfo,
    TensorStructInfo,
    TupleGetItem,
    TupleStructInfo,
    Var,
    VarBinding,
    op,
)
from ...ir.relax.structural import structural_equal
from ._context import Context, Node
from ._registry import converter


# ---- helpers ------------------------------------------------------------------------------
def tensor_outputs(graph: Any, what: str) -> str | None:
    """A reason when some input or output of ``graph`` is not a tensor."""
    for value in list(graph.input) + list(graph.output):
        if value.type.WhichOneof("value") not in (None, "tensor_type"):
            kind = value.type.WhichOneof("value").replace("_type", "")
            article = "an" if kind[0] in "aeiou" else "a"
            return f"{what} value '{value.name}' is {article} {kind}; only tensors are supported"
    return None


def scalar_input(ctx: Context, node: Node, value: RelaxExpr, dtype: str, what: str) -> RelaxExpr:
    """``value`` (a one-element tensor of ``dtype``) as a 0-d tensor."""
    have = ctx.dtype(value)
    if have is not None and have != dtype:
        raise FrontendError(f"from_onnx: {node.label}: {what} must be {dtype}, got {have}")
    shape = ctx.static_shape(value)
    if shape == []:
        return value
    if shape is not None and all(d == 1 for d in shape):
        return ctx.emit(op.reshape(value, []))
    if ctx.ndim(value) == 0:
        return value
    raise node.unsupported(f"{what} must be a single element, got shape {ctx.shape(value)}")


def param_sinfo(sinfo: StructInfo | None, node: Node, what: str) -> TensorStructInfo:
    """The struct info of a parameter that receives ``sinfo``: dims that are expressions
    (``n * 2``) become fresh symbolic vars, since a parameter can only bind plain vars."""
    if not isinstance(sinfo, TensorStructInfo):
        raise node.unsupported(f"{what} is not a tensor")
    if sinfo.shape_values is None:
        return sinfo
    dims: list[Any] = [
        d if isinstance(d, (tir.IntImm, tir.Var)) else tir.Var(f"d{i}", "int64")
        for i, d in enumerate(sinfo.shape_values)
    ]
    return TensorStructInfo(dims, sinfo.dtype)


def _fresh_dims(sinfo: StructInfo | None, hint: str) -> TensorStructInfo | None:
    """For a tensor of known rank but unknown shape, fresh symbolic dims to match it to."""
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape_values is not None:
        return None
    if sinfo.ndim < 0 or sinfo.dtype is None:
        return None
    return TensorStructInfo(
        [tir.Var(f"{hint}_dim{i}", "int64") for i in range(sinfo.ndim)], sinfo.dtype
    )


def _named_shape(ctx: Context, value: RelaxExpr, hint: str) -> RelaxExpr:
    """``value`` matched to a shape of fresh dims when its struct info has only a rank, so that
    later converters see a shape."""
    target = _fresh_dims(value.struct_info, hint)
    return value if target is None else ctx.bb.match_cast(value, target)


def _join(first: StructInfo, second: StructInfo) -> StructInfo:
    """The struct info both values satisfy, field by field for tuples."""
    if isinstance(first, TupleStructInfo) and isinstance(second, TupleStructInfo):
        return TupleStructInfo(
            [_join(a, b) for a, b in zip(first.fields, second.fields, strict=True)]
        )
    if structural_equal(first, second):
        return first
    if isinstance(first, TensorStructInfo) and isinstance(second, TensorStructInfo):
        dtype = first.dtype if first.dtype == second.dtype else None
        ndim = first.ndim if first.ndim == second.ndim else -1
        return TensorStructInfo(None, dtype, ndim=ndim)
    raise FrontendError(f"from_onnx: cannot join struct infos {first} and {second}")


def fresh_params(captures: list[tuple[str, RelaxExpr]], node: Node) -> list[Var]:
    return [
        Var(_var_name(name), param_sinfo(value.struct_info, node, f"outer value '{name}'"))
        for name, value in captures
    ]


def sinfo_of(var: Var) -> StructInfo:
    assert var.struct_info is not None  # every Var made here has struct info
    return var.struct_info


def _var_name(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "v_" + out


def unpack_outputs(ctx: Context, result: RelaxExpr, count: int, hint: str) -> list[RelaxExpr]:
    if not isinstance(result.struct_info, TupleStructInfo):
        return [_named_shape(ctx, result, hint)]
    tup = ctx.emit(result)
    return [_named_shape(ctx, ctx.emit(TupleGetItem(tup, i)), f"{hint}{i}") for i in range(count)]


# ---- If -----------------------------------------------------------------------------------
def _check_if(node: Node) -> str | None:
    for name in ("then_branch", "else_branch"):
        graph = node.attrs.get(name)
        if graph is None:
            return None  # the converter reports the missing attribute
        reason = tensor_outputs(graph, f"{name} output")
        if reason:
            return reason
    return None


@converter("If", since=1, check=_check_if)
def if_(ctx: Context, node: Node) -> Any:
    """Tensor outputs; branches may read outer values; a condition known at import is inlined."""
    then_graph, else_graph = node.attr("then_branch"), node.attr("else_branch")
    count = len(node.output_names)
    for graph, label in ((then_graph, "then_branch"), (else_graph, "else_branch")):
        if len(graph.output) != count:
            raise FrontendError(
                f"from_onnx: {node.label}: {label} has {len(graph.output)} outputs, the node "
                f"{count}"
            )
    cond = node.input(0)
    known = ctx.known(cond)
    if known is not None and known.dtype != object and known.size == 1:
        taken = then_graph if bool(known.reshape(-1)[0]) else else_graph
        return ctx.importer.convert_inline(taken)
    cond = scalar_input(ctx, node, cond, "bool", "the condition")
    importer = ctx.importer
    captures = importer.captures([then_graph, else_graph])
    with importer.nested() as nested:
        branches = []
        for graph, label in ((then_graph, "then"), (else_graph, "else")):
            params = fresh_params(captures, node)
            bindings = {name: p for (name, _), p in zip(captures, params, strict=True)}
            branches.append(importer.convert_function(graph, f"onnx_if_{label}", params, bindings))
        params = [Var("cond", cond.struct_info), *fresh_params(captures, node)]
        bb = nested.bb
        with bb.function("onnx_if", params, private=True):
            calls = [bb.normalize(Call(gvar, params[1:])) for gvar in branches]
            sinfo = _join(calls[0].struct_info, calls[1].struct_info)
            for call in calls:
                if _dtypes(call.struct_info) != _dtypes(sinfo):
                    raise FrontendError(
                        f"from_onnx: {node.label}: the branches' outputs differ in dtype "
                        f"({_dtypes(calls[0].struct_info)} vs {_dtypes(calls[1].struct_info)})"
                    )
            result = bb.emit(If(params[0], calls[0], calls[1], sinfo))
            if_gvar = bb.emit_func_output(result)
    call = Call(nested.outer(if_gvar), [cond, *[value for _, value in captures]])
    return unpack_outputs(ctx, ctx.emit(call), count, "if_out")


def _dtypes(sinfo: StructInfo) -> list[Any]:
    if isinstance(sinfo, TupleStructInfo):
        return [_dtypes(f) for f in sinfo.fields]
    return [sinfo.dtype if isinstance(sinfo, TensorStructInfo) else None]


class BranchBindings:
    """The bindings of an If branch, built by hand: the builder binds a branch's nested
    expressions itself, but would repeat a call used twice (``step[0]``, ``step[1]``)."""

    def __init__(self, bb: Any) -> None:
        self.bb = bb
        self.bindings: list[VarBinding] = []

    def bind(self, expr: RelaxExpr, hint: str) -> Var:
        value = self.bb.normalize(expr)  # every argument is already a leaf: binds nothing
        var = Var(hint, value.struct_info)
        self.bindings.append(VarBinding(var, value))
        return var

    def seq(self, result: RelaxExpr) -> SeqExpr:
        return SeqExpr([BindingBlock(self.bindings)], result)
