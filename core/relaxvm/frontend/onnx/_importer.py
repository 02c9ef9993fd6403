"""The ONNX graph walk: inputs and initializers, one converter call per node, outputs.

Before converting anything, every node is checked against the converter table (op type,
opset, each converter's own ``check``), so a model with several unsupported operators gets one
:class:`~relaxvm.errors.OpNotImplemented` that lists them all.

Subgraphs (the bodies of If and Loop) become private functions of the module. The BlockBuilder
builds one function at a time, so a control-flow converter opens a :meth:`GraphImporter.nested`
builder (a fresh BlockBuilder that converters see as ``ctx.bb`` meanwhile), converts the
subgraph there with :meth:`GraphImporter.convert_function` (outer values the subgraph reads
become extra parameters, see :meth:`GraphImporter.captures`), and on leaving the block the new
functions and kernels are moved into the enclosing builder.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any

from ...errors import FrontendError, OpNotImplemented, RelaxVMError
from ...ir import tir
from ...ir.relax import (
    BlockBuilder,
    Constant,
    GlobalVar,
    IRModule,
    RelaxExpr,
    TensorStructInfo,
    Tuple,
    Var,
)
from ._context import Context, NestedBuilder, Node, free_names, move_functions
from ._loader import decode_attributes, onnx_dtype, tensor_to_numpy
from ._registry import find_converter

__all__ = ["GraphImporter"]

#: The opset a model without a default-domain import is read at (ONNX's own rule: absent
#: means the oldest; in practice such files come from tools that targeted opset 1).
_DEFAULT_OPSET = 1


class GraphImporter:
    """Converts one ONNX ``GraphProto`` into the ``main`` function of an IRModule."""

    def __init__(
        self,
        model: Any,
        shape_dict: Mapping[str, Sequence[Any]] | None,
        dtype_dict: str | Mapping[str, str] | None,
        opset: int | None,
        keep_params_in_input: bool,
        sanitize_input_names: bool = True,
    ) -> None:
        self.model = model
        self.graph = model.graph
        self.opsets = {
            ("" if imp.domain in ("", "ai.onnx") else imp.domain): int(imp.version)
            for imp in model.opset_import
        }
        if opset is not None:
            if not isinstance(opset, int) or isinstance(opset, bool) or opset < 1:
                raise FrontendError(f"from_onnx: opset must be a positive int, got {opset!r}")
            self.opsets[""] = opset
        self.opsets.setdefault("", _DEFAULT_OPSET)
        self.shape_dict = dict(shape_dict or {})
        self.dtype_dict = dtype_dict
        self.keep_params_in_input = keep_params_in_input
        self.sanitize_input_names = sanitize_input_names
        #: Symbolic dims by name, shared by every input that names them.
        self.sym_vars: dict[str, tir.Var] = {}
        #: ONNX value name -> Relax expression, in the graph (or subgraph) being converted.
        self.values: MutableMapping[str, RelaxExpr] = {}
        self.bb = BlockBuilder()
        self.ctx = Context(self.bb, self.opsets[""], self)
        self._node_names: dict[int, str] = {}

    # ---- entry ------------------------------------------------------------------------------
    def import_module(self) -> IRModule:
        if not self.graph.output:
            raise FrontendError(
                "from_onnx: the model's graph has no outputs (an empty or truncated file, or "
                "not an ONNX model?)"
            )
        initializers = {init.name: init for init in self.graph.initializer}
        self._check_shape_dict(initializers)
        self._check_supported(self.graph)
        inputs = self._make_inputs(initializers)
        param_vars: list[Var] = []
        param_values: list[Any] = []
        for name, init in initializers.items():
            array = tensor_to_numpy(init, f"initializer '{name}'")
            if self.keep_params_in_input:
                var = Var(self._var_name(name), TensorStructInfo(array.shape, str(array.dtype)))
                param_vars.append(var)
                param_values.append(_tensor(array))
                self.values[name] = var
            else:
                self.values[name] = self.ctx.const(array, _dtype_name(array))
        for name, var in inputs:
            self.values[name] = var
        params = [var for _, var in inputs] + param_vars
        attrs: dict[str, Any] = {}
        if self.keep_params_in_input:
            attrs["num_input"] = len(inputs)
            attrs["params"] = param_values
        with self.bb.function("main", params, attrs=attrs):
            with self.bb.dataflow():
                self.convert_nodes(self.graph)
                outputs = [self._output(out.name) for out in self.graph.output]
                result: RelaxExpr = outputs[0] if len(outputs) == 1 else Tuple(outputs)
                result = self.bb.emit_output(result)
            self.bb.emit_func_output(result)
        # Shape arithmetic folded at import leaves kernels nothing reads (the run-time copies
        # of known values): drop them so they do not run on every call.
        from ...transform import DeadCodeElimination

        return DeadCodeElimination()(self.bb.get())

    # ---- nodes ------------------------------------------------------------------------------
    def convert_nodes(self, graph: Any) -> None:
        """Convert every node of ``graph`` into the current function, in order."""
        for index, proto in enumerate(graph.node):
            node = self._make_node(proto, index)
            domain = node.domain
            entry = find_converter(domain, node.op_type, node.opset)
            if entry is None:  # _check_supported ran first; this is a subgraph mismatch
                raise OpNotImplemented(f"from_onnx: no converter for {node.label}")
            try:
                result = entry.convert(self.ctx, node)
            except RelaxVMError as exc:
                if isinstance(exc, FrontendError) or node.label in str(exc):
                    raise
                raise FrontendError(f"from_onnx: {node.label}: {exc}") from exc
            except (TypeError, ValueError, IndexError, KeyError, ArithmeticError) as exc:
                # A converter bug or an input it did not expect: still name the node.
                raise FrontendError(
                    f"from_onnx: {node.label} (opset {node.opset}) could not be converted: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            self._bind_outputs(node, result)

    def _make_node(self, proto: Any, index: int) -> Node:
        domain = "" if proto.domain in ("", "ai.onnx") else proto.domain
        inputs: list[RelaxExpr | None] = []
        for name in proto.input:
            if not name:
                inputs.append(None)
                continue
            if name not in self.values:
                raise FrontendError(
                    f"from_onnx: node '{proto.name or proto.op_type}' reads '{name}', which no "
                    "earlier node, input or initializer defines (is the graph topologically "
                    "sorted?)"
                )
            inputs.append(self.values[name])
        return Node(
            proto.op_type,
            proto.name or f"{proto.op_type}_{index}",
            domain,
            self.opsets.get(domain, 1),
            inputs,
            list(proto.input),
            list(proto.output),
            decode_attributes(proto),
            proto,
        )

    def _bind_outputs(self, node: Node, result: Any) -> None:
        names = node.output_names
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(results) < len([n for n in names if n]):
            # A converter returning a Relax tuple for several outputs: unpack it.
            if len(results) == 1 and len(names) > 1:
                tup = self.ctx.emit(results[0])
                from ...ir.relax import TupleGetItem

                results = [self.ctx.emit(TupleGetItem(tup, i)) for i in range(len(names))]
            else:
                raise FrontendError(
                    f"from_onnx: {node.label} produced {len(results)} outputs, the model names "
                    f"{len(names)}"
                )
        for name, value in zip(names, results, strict=False):
            if not name or value is None:
                continue
            self.values[name] = self.ctx.emit(value, self._var_name(name))

    def _output(self, name: str) -> RelaxExpr:
        if name not in self.values:
            raise FrontendError(f"from_onnx: graph output '{name}' is never computed")
        return self.values[name]

    # ---- subgraphs --------------------------------------------------------------------------
    def captures(self, graphs: Sequence[Any]) -> list[tuple[str, RelaxExpr]]:
        """The outer values ``graphs`` read (their free names, nested subgraphs included), as
        ``(name, expr)`` in first-use order; constants are left out (a subgraph function
        embeds them instead of taking them as parameters)."""
        found: dict[str, RelaxExpr] = {}
        for graph in graphs:
            for name in free_names(graph):
                if name in found:
                    continue
                if name not in self.values:
                    raise FrontendError(
                        f"from_onnx: subgraph '{graph.name}' reads '{name}', which neither the "
                        "subgraph nor an enclosing graph defines"
                    )
                found[name] = self.values[name]
        return [(n, v) for n, v in found.items() if not isinstance(v, Constant)]

    @contextmanager
    def nested(self) -> Iterator[NestedBuilder]:
        """A fresh builder for subgraph functions; converters see it as ``ctx.bb`` inside the
        block. On a normal exit its functions (and kernels) move into the enclosing builder;
        :meth:`NestedBuilder.outer` maps its GlobalVars to theirs."""
        nested = NestedBuilder()
        saved = self.bb
        self.bb = self.ctx.bb = nested.bb
        try:
            yield nested
        finally:
            self.bb = self.ctx.bb = saved
        nested.mapping = move_functions(nested.bb.get(), saved, nested.aliases)

    def convert_function(
        self,
        graph: Any,
        name: str,
        params: list[Var],
        bindings: Mapping[str, RelaxExpr],
        finish: Callable[[list[RelaxExpr]], RelaxExpr] | None = None,
        prepare: Callable[[], Mapping[str, RelaxExpr]] | None = None,
    ) -> GlobalVar:
        """Convert ``graph`` into a new private function of the current builder (which must
        have no function open: use it inside :meth:`nested`).

        Parameters
        ----------
        graph : onnx.GraphProto
        name : str
            The function's name hint.
        params : list of Var
            The function's parameters, read when the function is finished (``finish`` may
            append to the list).
        bindings : mapping
            ONNX name -> expression for the graph's inputs and the captured outer values (the
            Vars of ``params``); outer constants are added automatically.
        finish : callable, optional
            Given the graph's outputs, returns the function's result (inside its dataflow
            block); by default the output, or a tuple of the outputs.
        prepare : callable, optional
            Called inside the new function before its nodes are converted; returns more
            bindings, computed there (Scan's per-iteration slices).
        """
        scope: dict[str, RelaxExpr] = {}
        for free in free_names(graph):
            value = self.values.get(free)
            if isinstance(value, Constant):
                scope[free] = value
        scope.update(bindings)
        self._add_initializers(graph, scope)
        saved = self.values
        self.values = scope
        try:
            with self.bb.function(name, private=True):
                with self.bb.dataflow():
                    if prepare is not None:
                        scope.update(prepare())
                    self.convert_nodes(graph)
                    outputs = [self._output(out.name) for out in graph.output]
                    if finish is not None:
                        result = finish(outputs)
                    else:
                        result = outputs[0] if len(outputs) == 1 else Tuple(outputs)
                    result = self.bb.emit_output(result)
                return self.bb.emit_func_output(result, params=list(params))
        finally:
            self.values = saved

    def convert_inline(
        self, graph: Any, bindings: Mapping[str, RelaxExpr] | None = None
    ) -> list[RelaxExpr]:
        """Convert ``graph`` into the current function, as if its nodes were the enclosing
        graph's, with its inputs bound by ``bindings``; returns its outputs. Its own names stay
        local."""
        local: dict[str, RelaxExpr] = dict(bindings or {})
        self._add_initializers(graph, local)
        saved = self.values
        self.values = ChainMap(local, saved)
        try:
            self.convert_nodes(graph)
            return [self._output(out.name) for out in graph.output]
        finally:
            self.values = saved

    def _add_initializers(self, graph: Any, scope: MutableMapping[str, RelaxExpr]) -> None:
        for init in graph.initializer:
            array = tensor_to_numpy(init, f"initializer '{init.name}' of '{graph.name}'")
            scope[init.name] = self.ctx.const(array, _dtype_name(array))

    # ---- support check ----------------------------------------------------------------------
    def _check_supported(self, graph: Any) -> None:
        problems: list[str] = []
        self._collect_unsupported(graph, problems)
        if problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            raise OpNotImplemented(
                f"from_onnx: {len(problems)} node(s) of the model are not supported:\n{listed}\n"
                "(docs/onnx.md lists the supported operators and opsets)"
            )

    def _collect_unsupported(self, graph: Any, problems: list[str]) -> None:
        for index, proto in enumerate(graph.node):
            domain = "" if proto.domain in ("", "ai.onnx") else proto.domain
            opset = self.opsets.get(domain, 1)
            label = f"{proto.op_type} node '{proto.name or f'{proto.op_type}_{index}'}'"
            where = f"{label} (domain '{domain or 'ai.onnx'}', opset {opset})"
            entry = find_converter(domain, proto.op_type, opset)
            if entry is None:
                problems.append(f"{where}: operator not supported")
                continue
            attrs = None
            if entry.check is not None:
                try:
                    attrs = decode_attributes(proto)
                except FrontendError as exc:
                    problems.append(f"{where}: {exc}")
                    continue
                node = Node(
                    proto.op_type,
                    label,
                    domain,
                    opset,
                    [],
                    list(proto.input),
                    list(proto.output),
                    attrs,
                    proto,
                )
                reason = entry.check(node)
                if reason:
                    problems.append(f"{where}: {reason}")
            for attr in proto.attribute:  # subgraphs (If/Loop/Scan bodies)
                subgraphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
                for sub in subgraphs:
                    self._collect_unsupported(sub, problems)

    # ---- inputs -----------------------------------------------------------------------------
    def _check_shape_dict(self, initializers: Mapping[str, Any]) -> None:
        names = {i.name for i in self.graph.input} - set(initializers)
        for key, shape in self.shape_dict.items():
            if key not in names:
                raise FrontendError(
                    f"from_onnx: shape_dict names '{key}', which is not an input of the graph "
                    f"(inputs: {', '.join(sorted(names)) or 'none'})"
                )
            if isinstance(shape, (str, bytes)) or not isinstance(shape, (list, tuple)):
                raise FrontendError(
                    f"from_onnx: shape_dict['{key}'] must be a list or tuple of dims, got {shape!r}"
                )
        if self.dtype_dict is not None and not isinstance(self.dtype_dict, (str, Mapping)):
            raise FrontendError(
                f"from_onnx: dtype_dict must be a dtype name or a dict of them, got "
                f"{self.dtype_dict!r}"
            )
        if isinstance(self.dtype_dict, Mapping):
            for key in self.dtype_dict:
                if key not in names:
                    raise FrontendError(
                        f"from_onnx: dtype_dict names '{key}', which is not an input of the "
                        f"graph (inputs: {', '.join(sorted(names)) or 'none'})"
                    )

    def _make_inputs(self, initializers: Mapping[str, Any]) -> list[tuple[str, Var]]:
        inputs = []
        for value_info in self.graph.input:
            name = value_info.name
            if name in initializers:  # an initializer listed as input (old exporters)
                continue
            inputs.append((name, Var(self._var_name(name), self._input_sinfo(value_info))))
        return inputs

    def _input_sinfo(self, value_info: Any) -> TensorStructInfo:
        name = value_info.name
        tensor_type = value_info.type.tensor_type
        if not value_info.type.HasField("tensor_type"):
            raise OpNotImplemented(
                f"from_onnx: input '{name}' is not a tensor (sequences, maps and optionals are "
                "not supported)"
            )
        if isinstance(self.dtype_dict, Mapping):
            dtype = self.dtype_dict.get(name)
        else:
            dtype = self.dtype_dict
        if dtype is None:
            dtype = onnx_dtype(tensor_type.elem_type, f"input '{name}'")
        else:
            dtype = _checked_dtype(dtype, name)
        if name in self.shape_dict:
            dims = [self._dim(d, name, i) for i, d in enumerate(self.shape_dict[name])]
            return TensorStructInfo(dims, dtype)
        if not tensor_type.HasField("shape"):
            raise FrontendError(
                f"from_onnx: input '{name}' has no shape in the model (not even a rank); give "
                f"one with shape_dict={{'{name}': [...]}} (names make symbolic dims)"
            )
        dims = []
        for i, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                dims.append(self._dim(int(dim.dim_value), name, i))
            elif dim.HasField("dim_param") and dim.dim_param:
                dims.append(self._dim(dim.dim_param, name, i))
            else:
                dims.append(self._dim(None, name, i))
        return TensorStructInfo(dims, dtype)

    def _dim(self, dim: Any, input_name: str, axis: int) -> Any:
        if isinstance(dim, tir.Var):
            return dim
        if dim is None or (isinstance(dim, int) and dim < 0):
            dim = f"{self._var_name(input_name)}_dim{axis}"
        if isinstance(dim, str):
            # Keyed by the model's own name ("batch size" and "batch_size" are different
            # dims); the variable gets a unique identifier made from it.
            if dim not in self.sym_vars:
                taken = {var.name for var in self.sym_vars.values()}
                base = candidate = _identifier(dim)
                suffix = 1
                while candidate in taken:
                    candidate, suffix = f"{base}_{suffix}", suffix + 1
                self.sym_vars[dim] = tir.SizeVar(candidate, "int64")
            return self.sym_vars[dim]
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise FrontendError(
                f"from_onnx: shape of input '{input_name}' dim {axis} must be an int, a name or "
                f"None, got {dim!r}"
            )
        return dim

    def _var_name(self, name: str) -> str:
        return _identifier(name) if self.sanitize_input_names else name


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not out or out[0].isdigit():
        out = "v_" + out
    return out


def _checked_dtype(dtype: Any, input_name: str) -> str:
    from ...runtime.dtype import DataType

    try:
        return str(DataType(dtype))
    except (TypeError, ValueError) as exc:
        raise FrontendError(
            f"from_onnx: dtype {dtype!r} given for input '{input_name}' is not a dtype: {exc}"
        ) from None


def _dtype_name(array: Any) -> str:
    return "bool" if array.dtype == bool else str(array.dtype)


def _tensor(array: Any) -> Any:
    from ...runtime import tensor

    return tensor(array)
