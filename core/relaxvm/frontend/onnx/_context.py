"""What a converter sees: the node being converted (:class:`Node`) and the import state
(:class:`Context`): the BlockBuilder, the opset, and values known at import time.

Known values
------------
ONNX graphs compute shapes with tensors (``Shape -> Gather -> Concat -> Reshape``). A Relax
reshape wants the shape itself, so the importer tracks, for int tensors whose elements it can
tell at import time, those elements: numbers for constants, symbolic expressions (``batch``,
``seq * 64``) for dims read from a tensor's struct info. :meth:`Context.known` returns such a
value as a numpy array (dtype ``object`` when an element is symbolic), and converters of shape
arithmetic compute on those arrays instead of emitting kernels. A known value is still a real
tensor in the graph when something consumes it as data (:meth:`Context.from_known`).

Subgraphs
---------
Control-flow converters build private functions with a :class:`NestedBuilder` (from
``ctx.importer.nested()``); :func:`move_functions` moves what it built into the enclosing
builder, and :func:`free_names` lists the outer values a subgraph reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import FrontendError, OpNotImplemented
from ...ir import tir
from ...ir.arith import Analyzer
from ...ir.relax import (
    BlockBuilder,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    RelaxExpr,
    TensorStructInfo,
    const,
)
from ...ir.relax.expr import ShapeExpr
from ...ir.relax.expr_functor import ExprMutator

if TYPE_CHECKING:
    from ...ir.expr import PrimExpr

__all__ = ["MISSING", "Context", "NestedBuilder", "Node", "free_names", "move_functions"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Node:
    """One ONNX node, its inputs already converted to Relax expressions.

    Attributes
    ----------
    op_type, name, domain : str
        As in the NodeProto (``name`` falls back to ``"<op_type>_<index>"``).
    opset : int
        The opset version the model imports for the node's domain.
    inputs : list of RelaxExpr or None
        Converted inputs; None where the ONNX input is omitted (an empty name).
    input_names, output_names : list of str
    attrs : dict
        Decoded attributes (see :func:`~._loader.decode_attributes`).
    """

    def __init__(
        self,
        op_type: str,
        name: str,
        domain: str,
        opset: int,
        inputs: list[RelaxExpr | None],
        input_names: list[str],
        output_names: list[str],
        attrs: dict[str, Any],
        proto: Any = None,
    ) -> None:
        self.op_type = op_type
        self.name = name
        self.domain = domain
        self.opset = opset
        self.inputs = inputs
        self.input_names = input_names
        self.output_names = output_names
        self.attrs = attrs
        self.proto = proto

    @property
    def label(self) -> str:
        """``"Conv node 'conv1'"``: how errors name the node."""
        return f"{self.op_type} node '{self.name}'"

    def input(self, index: int) -> RelaxExpr:
        """Input ``index``; a :class:`FrontendError` when it is absent."""
        value = self.inputs[index] if index < len(self.inputs) else None
        if value is None:
            raise FrontendError(f"from_onnx: {self.label} needs input {index}, which is absent")
        return value

    def optional_input(self, index: int) -> RelaxExpr | None:
        """Input ``index``, or None when the model leaves it out."""
        return self.inputs[index] if index < len(self.inputs) else None

    def attr(self, name: str, default: Any = MISSING) -> Any:
        """Attribute ``name``; ``default`` when absent (a :class:`FrontendError` when the
        attribute is required, i.e. no default is given)."""
        if name in self.attrs:
            return self.attrs[name]
        if default is MISSING:
            raise FrontendError(f"from_onnx: {self.label} lacks required attribute '{name}'")
        return default

    def unsupported(self, reason: str) -> OpNotImplemented:
        """The error for an attribute or input this importer does not handle."""
        return OpNotImplemented(
            f"from_onnx: {self.label} (opset {self.opset}) is not supported: {reason}"
        )


class Context:
    """The import state converters use.

    Attributes
    ----------
    bb : BlockBuilder
        The builder of the function being made; converters may emit into it directly
        (``ctx.bb.emit_te(...)``).
    opset : int
        The default domain's opset version.
    """

    def __init__(self, bb: BlockBuilder, opset: int, importer: Any = None) -> None:
        self.bb = bb
        self.opset = opset
        self.importer = importer
        self.analyzer = Analyzer()
        # id(expr) -> (expr, known elements); the expr is kept alive so ids stay unique.
        self._known: dict[int, tuple[RelaxExpr, np.ndarray]] = {}

    # ---- emitting ---------------------------------------------------------------------------
    def emit(self, expr: RelaxExpr, name_hint: str = "") -> RelaxExpr:
        """Bind ``expr`` to a new variable (constants and variables pass through unbound)."""
        from ...ir.relax import Var

        if isinstance(expr, (Constant, Var)):
            return expr
        return self.bb.emit(expr, name_hint)

    @staticmethod
    def const(value: Any, dtype: str | None = None) -> Constant:
        """A Relax constant (``relax.const``)."""
        return const(value, dtype)

    # ---- static facts -----------------------------------------------------------------------
    @staticmethod
    def struct_info(expr: RelaxExpr) -> Any:
        return expr.struct_info

    def shape(self, expr: RelaxExpr) -> list[PrimExpr] | None:
        """The dims of a tensor as its struct info knows them (ints as IntImm), or None."""
        sinfo = expr.struct_info
        if not isinstance(sinfo, TensorStructInfo) or not isinstance(sinfo.shape, ShapeExpr):
            return None
        return list(sinfo.shape.values)

    def static_shape(self, expr: RelaxExpr) -> list[int] | None:
        """The dims as Python ints when every dim is a constant, else None."""
        dims = self.shape(expr)
        if dims is None:
            return None
        ints = [int(d.value) for d in dims if isinstance(d, tir.IntImm)]
        return ints if len(ints) == len(dims) else None

    @staticmethod
    def ndim(expr: RelaxExpr) -> int:
        """The rank, or -1 when unknown."""
        sinfo = expr.struct_info
        return sinfo.ndim if isinstance(sinfo, TensorStructInfo) else -1

    @staticmethod
    def dtype(expr: RelaxExpr) -> str | None:
        """The element type's name, or None when unknown."""
        sinfo = expr.struct_info
        if isinstance(sinfo, TensorStructInfo) and sinfo.dtype is not None:
            return str(sinfo.dtype)
        return None

    def require_ndim(self, node: Node, expr: RelaxExpr, what: str) -> int:
        """The rank of ``expr``; an :class:`OpNotImplemented` naming ``what`` when unknown."""
        rank = self.ndim(expr)
        if rank < 0:
            raise node.unsupported(f"{what} has an unknown rank")
        return rank

    # ---- known values -----------------------------------------------------------------------
    def known(self, expr: RelaxExpr | None) -> np.ndarray | None:
        """The value of ``expr`` if the importer knows it: a numpy array (``object`` dtype when
        some elements are symbolic PrimExprs), or None."""
        if expr is None:
            return None
        if isinstance(expr, Constant):
            return expr.data.numpy()
        entry = self._known.get(id(expr))
        return None if entry is None else entry[1]

    def known_inputs(self, node: Node) -> list[Any] | None:
        """The known values of all present inputs (None for absent ones), or None when some
        present input is not known."""
        values: list[Any] = []
        for expr in node.inputs:
            if expr is None:
                values.append(None)
                continue
            value = self.known(expr)
            if value is None:
                return None
            values.append(value)
        return values

    def from_known(self, value: Any, dtype: str) -> RelaxExpr:
        """A Relax value for a computed known value: a constant when every element is a number,
        otherwise a tensor built at run time from the symbolic elements (and remembered as
        known, so later shape arithmetic keeps folding)."""
        array = np.asarray(value, dtype=object if _has_symbolic(value) else None)
        if array.dtype != object:
            return const(array.astype(dtype if dtype != "bool" else np.bool_), dtype)
        simplified = np.empty(array.shape, dtype=object)
        flat = array.reshape(-1)
        out = simplified.reshape(-1)
        for i, element in enumerate(flat):
            out[i] = self.simplify(element)
        if not any(isinstance(e, tir.PrimExpr) and not isinstance(e, tir.IntImm) for e in out):
            numbers = [int(e.value) if isinstance(e, tir.IntImm) else e for e in out]
            return const(np.asarray(numbers).reshape(array.shape).astype(dtype), dtype)
        expr = self._materialize(simplified, dtype)
        self._known[id(expr)] = (expr, simplified)
        return expr

    def record_known(self, expr: RelaxExpr, value: np.ndarray) -> None:
        """Remember that ``expr`` (already emitted) holds ``value``."""
        self._known[id(expr)] = (expr, value)

    def simplify(self, element: Any) -> Any:
        """A symbolic element simplified (``n * 2 // 2`` -> ``n``); numbers pass through."""
        if isinstance(element, tir.PrimExpr):
            return self.analyzer.simplify(element)
        return element

    def shape_values(self, node: Node, index: int, what: str) -> list[Any] | None:
        """Input ``index`` read as a list of dims (ints or PrimExprs) when known, else None."""
        value = self.known(node.optional_input(index))
        if value is None:
            return None
        if value.ndim != 1:
            raise FrontendError(f"from_onnx: {node.label}: {what} must be 1-D, got {value.ndim}-D")
        return [_as_dim(v) for v in value.tolist()]

    def _materialize(self, array: np.ndarray, dtype: str) -> RelaxExpr:
        from ...ir.tir import te

        flat = [
            tir.const(int(e), dtype) if not isinstance(e, tir.PrimExpr) else e
            for e in array.reshape(-1).tolist()
        ]
        flat = [e if str(e.dtype) == dtype else tir.Cast(dtype, e) for e in flat]
        shape = list(array.shape)

        def compute() -> Any:
            def element(*index: Any) -> Any:
                linear: Any = tir.const(0, "int64")
                for dim, i in zip(shape, index, strict=False):
                    linear = linear * dim + i
                result = flat[-1]
                for position in range(len(flat) - 2, -1, -1):
                    # PrimExpr == compares structurally; .equal builds the comparison
                    result = tir.Select(linear.equal(position), flat[position], result)
                return result

            # emit_te passes the symbolic dims the elements read as scalar parameters.
            return te.compute(shape, element, name="known_value")

        return self.bb.emit_te(compute, primfunc_name_hint="onnx_known_value")


def _has_symbolic(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype == object and any(
            isinstance(e, tir.PrimExpr) for e in value.reshape(-1).tolist()
        )
    if isinstance(value, (list, tuple)):
        return any(_has_symbolic(v) for v in value)
    return isinstance(value, tir.PrimExpr)


def _as_dim(value: Any) -> Any:
    if isinstance(value, tir.IntImm):
        return int(value.value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    return value


def dims_of(values: Sequence[Any]) -> list[Any]:
    """Dims as ints where constant, PrimExprs where symbolic."""
    return [_as_dim(v) for v in values]


class NestedBuilder:
    """The builder :meth:`GraphImporter.nested` opens, and what it moved out on exit."""

    def __init__(self) -> None:
        self.bb = BlockBuilder()
        #: Placeholder GlobalVar -> the GlobalVar (of this builder) it stands for.
        self.aliases: dict[GlobalVar, GlobalVar] = {}
        self.mapping: dict[GlobalVar, GlobalVar] = {}

    def alias(self, placeholder: GlobalVar, target: GlobalVar) -> None:
        """Make calls through ``placeholder`` call ``target``: how a function calls itself
        (recursion) before it is in the module."""
        self.aliases[placeholder] = target

    def outer(self, gvar: GlobalVar) -> GlobalVar:
        """The enclosing builder's GlobalVar for ``gvar`` (after the block is left)."""
        return self.mapping[gvar]


class _RenameGlobals(ExprMutator):
    def __init__(self, mapping: Mapping[GlobalVar, GlobalVar]) -> None:
        super().__init__()
        self.mapping = mapping

    def visit_leaf_(self, expr: RelaxExpr) -> RelaxExpr:
        if isinstance(expr, GlobalVar):
            return self.mapping.get(expr, expr)
        return expr

    def visit_if_(self, expr: If) -> RelaxExpr:
        # Renaming changes no types: keep the If's own struct info (a joined one may be
        # coarser, e.g. for tuples whose fields differ between the branches).
        new = super().visit_if_(expr)
        if new is expr or not isinstance(new, If):
            return new
        return If(new.cond, new.true_branch, new.false_branch, expr.struct_info, expr.span)


def move_functions(
    mod: IRModule, into: BlockBuilder, aliases: Mapping[GlobalVar, GlobalVar]
) -> dict[GlobalVar, GlobalVar]:
    """Add every function of ``mod`` to ``into`` (kernels equal to one there are shared,
    names made unique) and point the calls at the new GlobalVars."""
    mapping: dict[GlobalVar, GlobalVar] = {}
    functions = []
    for gvar, func in mod.items():
        mapping[gvar] = into.add_func(func, gvar.name_hint)
        if isinstance(func, Function):
            functions.append((mapping[gvar], func))
    for placeholder, target in aliases.items():
        mapping[placeholder] = mapping[target]
    renamer = _RenameGlobals(mapping)
    for gvar, func in functions:
        renamed = renamer.visit_expr(func)
        if renamed is not func:
            into.update_func(gvar, renamed)
    return mapping


def free_names(graph: Any) -> list[str]:
    """The names ``graph`` reads without defining them (outer-scope values), nested subgraphs
    included, in first-use order."""
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    found: dict[str, None] = {}
    for node in graph.node:
        reads = [n for n in node.input if n]
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                reads.extend(free_names(sub))
        for name in reads:
            if name not in defined:
                found.setdefault(name)
        defined.update(n for n in node.output if n)
    for out in graph.output:
        if out.name not in defined:
            found.setdefault(out.name)
    return list(found)
