"""ONNX converters: Loop, and the recursive loop function it shares with Scan
(ops_control_scan.py).

A Loop with no condition and a small trip count known at import is unrolled: the body is
converted inline once per iteration. Otherwise Loop and Scan become a recursive private function ``onnx_loop(i, [M], [cond], carried..., accs...,
[scanned inputs...], captured...)``: while ``i < M`` (and ``cond``) it calls the body function
(the converted subgraph), appends each scan output row to its accumulator and calls itself
with the new values; otherwise it returns the carried values and the accumulators. The function
runs up to ``_UNROLL`` (8) iterations, each behind its own test, before it calls itself, so a
loop runs at most 8 x ``VirtualMachine.max_call_depth`` iterations (about 1500 with Python's
default recursion limit; raise ``sys.setrecursionlimit`` and ``vm.max_call_depth`` for more).

A carried value whose shape changes between iterations (a growing sequence) is found when the
body is first converted with the initial shapes; the body is then converted again with fresh
symbolic dims for it, and the loop returns it with its rank only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import FrontendError
from ...ir import tir
from ...ir.relax import (
    Call,
    FuncStructInfo,
    GlobalVar,
    If,
    RelaxExpr,
    SeqExpr,
    TensorStructInfo,
    Tuple,
    TupleGetItem,
    TupleStructInfo,
    Var,
    op,
    update_struct_info,
)
from ...ir.relax.expr import ShapeExpr
from ...ir.relax.structural import structural_equal
from ._context import Context, Node
from ._registry import converter
from .ops_control import (
    BranchBindings,
    fresh_params,
    param_sinfo,
    scalar_input,
    sinfo_of,
    tensor_outputs,
    unpack_outputs,
)

#: Iterations per VM call frame of the loop function (the body is called from this many nested
#: branches before the function calls itself).
_UNROLL = 8
#: A Loop whose trip count is known at import (and that has no condition) is unrolled when it
#: runs at most this many iterations and this many nodes in all.
_INLINE_TRIPS = 16
_INLINE_NODES = 400
#: A scan output's per-iteration dims and dtype.
_Row = tuple[list[Any], str]


@dataclass
class LoopSpec:
    """What differs between a Loop and a Scan."""

    has_trip: bool  # a trip count param (Loop's M, Scan's length)
    with_cond: bool  # Loop: a cond param, the body's first input and output
    cond_given: bool  # Loop: the node's cond input is given, so it ends the loop
    carried: list[TensorStructInfo]
    #: Scan inputs: (param struct info, axis, reversed); one slice of each per iteration.
    sliced: list[tuple[TensorStructInfo, int, bool]] = field(default_factory=list)
    #: Carried values whose shape changes between iterations.
    varying: set[int] = field(default_factory=set)


class _ShapeChanges(Exception):
    """A carried value's shape changes between iterations: rebuild with these params."""

    def __init__(self, sinfos: list[TensorStructInfo], varying: set[int]) -> None:
        super().__init__("carried shapes change")
        self.sinfos = sinfos
        self.varying = varying


def build_loop(ctx: Context, node: Node, spec: LoopSpec) -> tuple[GlobalVar, list[_Row], list[Any]]:
    try:
        return _LoopBuilder(ctx, node, spec).build()
    except _ShapeChanges as changes:
        spec.carried, spec.varying = changes.sinfos, changes.varying
    try:
        return _LoopBuilder(ctx, node, spec).build()
    except _ShapeChanges as changes:  # cannot happen: the second build accepts any shape
        raise node.unsupported(f"loop-carried values {sorted(changes.varying)}") from None


def match_rows(ctx: Context, value: RelaxExpr, length: Any, row: _Row, hint: str) -> RelaxExpr:
    if length is None:
        length = tir.Var(hint, "int64")
    return ctx.bb.match_cast(value, TensorStructInfo([length, *row[0]], row[1]))


# ---- Loop ---------------------------------------------------------------------------------
def _check_loop(node: Node) -> str | None:
    body = node.attrs.get("body")
    if body is None:
        return None
    inputs = list(node.input_names)
    has_trip = len(inputs) > 0 and bool(inputs[0])
    has_cond = len(inputs) > 1 and bool(inputs[1])
    if not has_trip and not has_cond:
        return "neither a trip count M nor a condition is given (an endless loop)"
    return tensor_outputs(body, "body")


@converter("Loop", since=1, check=_check_loop)
def loop(ctx: Context, node: Node) -> Any:
    """M and/or cond; carried values (may change shape); scan outputs; up to ~1500 iterations.

    Scan outputs must keep one shape across iterations; the iteration limit is the VM's call
    depth (see the module notes)."""
    body = node.attr("body")
    initial = [node.input(i) for i in range(2, len(node.inputs))]
    count = len(initial)
    scans = len(body.output) - 1 - count
    if len(body.input) != 2 + count or scans < 0:
        raise FrontendError(
            f"from_onnx: {node.label}: the body takes {len(body.input)} inputs and gives "
            f"{len(body.output)} outputs for {count} loop-carried value(s) (expected "
            f"{2 + count} inputs and at least {1 + count} outputs)"
        )
    if len(node.output_names) != count + scans:
        raise FrontendError(
            f"from_onnx: {node.label} has {len(node.output_names)} outputs, the body makes "
            f"{count} carried value(s) and {scans} scan output(s)"
        )
    trip = node.optional_input(0)
    cond = node.optional_input(1)
    trip = None if trip is None else scalar_input(ctx, node, trip, "int64", "the trip count M")
    known_trip = None if trip is None else ctx.known(trip)
    if cond is None and known_trip is not None and known_trip.dtype != object:
        iterations = int(known_trip.reshape(-1)[0])
        if 1 <= iterations <= _INLINE_TRIPS and iterations * len(body.node) <= _INLINE_NODES:
            return _unrolled(ctx, node, iterations, initial, scans)
    spec = LoopSpec(
        has_trip=trip is not None,
        with_cond=True,
        cond_given=cond is not None,
        carried=[
            param_sinfo(v.struct_info, node, f"loop-carried value {k}")
            for k, v in enumerate(initial)
        ],
    )
    cond = (
        ctx.const(True, "bool") if cond is None else scalar_input(ctx, node, cond, "bool", "cond")
    )
    loop_gvar, rows, captures = build_loop(ctx, node, spec)
    accs = [ctx.emit(op.zeros(ShapeExpr([0, *dims]), dtype)) for dims, dtype in rows]
    args = [ctx.const(0, "int64"), *([trip] if trip is not None else []), cond, *initial]
    result = ctx.emit(Call(loop_gvar, [*args, *accs, *[value for _, value in captures]]))
    outputs = unpack_outputs(ctx, result, count + scans, "loop_out")
    length = None
    known = ctx.known(trip) if trip is not None and not spec.cond_given else None
    if known is not None and known.dtype != object:
        length = max(int(known.reshape(-1)[0]), 0)
    for j, row in enumerate(rows):
        outputs[count + j] = match_rows(ctx, outputs[count + j], length, row, f"loop_len{j}")
    return outputs


def _unrolled(
    ctx: Context, node: Node, iterations: int, initial: list[RelaxExpr], scans: int
) -> list[RelaxExpr]:
    """A counted loop with a trip count known at import, converted inline once per iteration
    (the iteration number is then a constant, so shape arithmetic on it folds)."""
    body = node.attr("body")
    names = [value_info.name for value_info in body.input]
    carried = list(initial)
    cond: RelaxExpr = ctx.const(True, "bool")
    rows: list[list[RelaxExpr]] = [[] for _ in range(scans)]
    for iteration in range(iterations):
        bindings = {names[0]: ctx.const(iteration, "int64"), names[1]: cond}
        bindings.update(zip(names[2:], carried, strict=True))
        outputs = ctx.importer.convert_inline(body, bindings)
        cond, carried = outputs[0], outputs[1 : 1 + len(carried)]
        for j, row in enumerate(outputs[1 + len(carried) :]):
            rows[j].append(ctx.emit(op.expand_dims(row, [0])))
    stacked = [ctx.emit(op.concat(Tuple(parts), axis=0)) for parts in rows]
    return [*carried, *stacked]


# ---- the functions ------------------------------------------------------------------------
class _LoopBuilder:
    """Builds the body function and the recursive loop function of one Loop or Scan node."""

    def __init__(self, ctx: Context, node: Node, spec: LoopSpec) -> None:
        self.ctx, self.node, self.spec = ctx, node, spec
        self.body = node.attr("body")
        self.importer = ctx.importer
        self.captures = self.importer.captures([self.body])
        # Symbolic dims defined outside the loop: a scan output row may use them.
        self.outer_vars: set[int] = set()
        for value in [*node.inputs, *[v for _, v in self.captures]]:
            sinfo = None if value is None else value.struct_info
            if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None:
                self.outer_vars.update(id(d) for d in sinfo.shape_values if isinstance(d, tir.Var))

    def build(self) -> tuple[GlobalVar, list[_Row], list[Any]]:
        with self.importer.nested() as nested:
            body_gvar, rows = self._body_function()
            loop_gvar = self._loop_function(nested, body_gvar, rows)
        return nested.outer(loop_gvar), rows, self.captures

    def _params(self) -> tuple[list[Var], list[Var], list[Var]]:
        """(head: iter, [trip], [cond], carried...; the scanned inputs; the captured values)."""
        spec = self.spec
        head = [Var("iter", TensorStructInfo([], "int64"))]
        if spec.has_trip:
            head.append(Var("trip_count", TensorStructInfo([], "int64")))
        if spec.with_cond:
            head.append(Var("cond", TensorStructInfo([], "bool")))
        head += [Var(f"carried{k}", s) for k, s in enumerate(spec.carried)]
        sliced = [Var(f"scanned{j}", s) for j, (s, _, _) in enumerate(spec.sliced)]
        return head, sliced, fresh_params(self.captures, self.node)

    def _body_function(self) -> tuple[GlobalVar, list[_Row]]:
        node, body, spec = self.node, self.body, self.spec
        head, sliced, caps = self._params()
        carried = head[len(head) - len(spec.carried) :]
        names = [value_info.name for value_info in body.input]
        bindings: dict[str, RelaxExpr] = {}
        if spec.with_cond:
            bindings[names[0]] = head[0]
            bindings[names[1]] = head[-len(carried) - 1]
            names = names[2:]
        bindings.update(zip(names, carried, strict=False))
        bindings.update({name: p for (name, _), p in zip(self.captures, caps, strict=True)})

        def prepare() -> dict[str, RelaxExpr]:
            out: dict[str, RelaxExpr] = {}
            for name, full, (_, axis, rev) in zip(
                names[len(carried) :], sliced, spec.sliced, strict=True
            ):
                index: RelaxExpr = head[0]
                if rev:
                    last = self.ctx.emit(op.subtract(head[1], self.ctx.const(1, "int64")))
                    index = self.ctx.emit(op.subtract(last, head[0]))
                out[name] = self.ctx.emit(op.take(full, index, axis=axis))
            return out

        rows: list[_Row] = []
        offset = 1 if spec.with_cond else 0

        def finish(outputs: list[RelaxExpr]) -> RelaxExpr:
            first = []
            if spec.with_cond:
                first = [scalar_input(self.ctx, node, outputs[0], "bool", "the body's condition")]
            outs = outputs[offset : offset + len(carried)]
            for k, out in enumerate(outs):
                outs[k] = self._declared(out, body.output[offset + k], spec.carried[k])
            self._check_carried(outs)
            items = outputs[offset + len(carried) :]
            for j, item in enumerate(items):
                items[j] = self._declared(item, body.output[offset + len(carried) + j], None)
                rows.append(self._row(items[j], j))
            return Tuple([*first, *outs, *items])

        params = [*head, *sliced, *caps]
        gvar = self.importer.convert_function(
            body, "onnx_loop_body", params, bindings, finish, prepare if sliced else None
        )
        return gvar, rows

    def _check_carried(self, outs: list[RelaxExpr]) -> None:
        node, spec = self.node, self.spec
        changed: set[int] = set()
        sinfos = []
        for k, (out, param) in enumerate(zip(outs, spec.carried, strict=True)):
            have = out.struct_info
            if not isinstance(have, TensorStructInfo):
                raise node.unsupported(f"loop-carried output {k} is not a tensor")
            if have.dtype != param.dtype:
                raise FrontendError(
                    f"from_onnx: {node.label}: loop-carried value {k} is {param.dtype} but the "
                    f"body makes {have.dtype}"
                )
            if structural_equal(have, param) or (
                k in spec.varying and (param.ndim < 0 or have.ndim == param.ndim)
            ):
                sinfos.append(param)
                continue
            changed.add(k)
            ndim = have.ndim if have.ndim == param.ndim else -1
            dims = [tir.Var(f"c{k}_{i}", "int64") for i in range(max(ndim, 0))]
            sinfos.append(TensorStructInfo(dims if ndim >= 0 else None, have.dtype, ndim=ndim))
        if changed:
            raise _ShapeChanges(sinfos, changed | spec.varying)

    def _declared(
        self, value: RelaxExpr, value_info: Any, want: TensorStructInfo | None
    ) -> RelaxExpr:
        """``value`` matched to the static shape the body declares for it, when inference lost
        that shape (a Slice with computed bounds, say) and the declared shape is what the loop
        needs (``want``'s, or for a scan output any static one); checked at run time."""
        sinfo = value.struct_info
        if not isinstance(sinfo, TensorStructInfo) or (
            want is not None and structural_equal(sinfo, want)
        ):
            return value
        tensor_type = value_info.type.tensor_type
        if not tensor_type.HasField("shape"):
            return value
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
        if any(d is None for d in dims) or (sinfo.ndim >= 0 and sinfo.ndim != len(dims)):
            return value
        declared = TensorStructInfo([int(d) for d in dims if d is not None], sinfo.dtype)
        if want is not None and not structural_equal(declared, want):
            return value
        if sinfo.shape_values is not None and all(
            isinstance(d, tir.IntImm) for d in sinfo.shape_values
        ):
            return value  # a static shape that disagrees: left for the checks to report
        return self.ctx.bb.match_cast(value, declared)

    def _row(self, item: RelaxExpr, j: int) -> _Row:
        sinfo = item.struct_info
        if isinstance(sinfo, TensorStructInfo) and sinfo.shape_values is not None:
            dims = sinfo.shape_values
            if all(isinstance(d, tir.IntImm) or id(d) in self.outer_vars for d in dims):
                return list(dims), str(sinfo.dtype)
        raise self.node.unsupported(
            f"scan output {j} has shape {getattr(sinfo, 'shape', None)}, which may change "
            "between iterations (only scan outputs of one shape are supported)"
        )

    def _loop_function(self, nested: Any, body_gvar: GlobalVar, rows: list[_Row]) -> GlobalVar:
        bb, spec = nested.bb, self.spec
        head, sliced, caps = self._params()
        accs = [
            Var(f"scan{j}", TensorStructInfo([tir.Var(f"n{j}", "int64"), *dims], dtype))
            for j, (dims, dtype) in enumerate(rows)
        ]
        params = [*head, *accs, *sliced, *caps]
        carried = head[len(head) - len(spec.carried) :]
        ret = TupleStructInfo(
            [
                TensorStructInfo(None, s.dtype, ndim=s.ndim) if k in spec.varying else s
                for k, s in enumerate(spec.carried)
            ]
            + [TensorStructInfo(None, dtype, ndim=len(dims) + 1) for dims, dtype in rows]
        )
        placeholder = GlobalVar("onnx_loop")
        update_struct_info(placeholder, FuncStructInfo([sinfo_of(p) for p in params], ret))
        self._ret, self._placeholder, self._body_gvar = ret, placeholder, body_gvar
        self._sliced_caps = [*sliced, *caps]
        with bb.function("onnx_loop", params, private=True):
            go = self._go(bb.emit, head)
            first = self._steps(bb, 0, head, accs)
            loop_gvar = bb.emit_func_output(bb.emit(If(go, first, Tuple([*carried, *accs]), ret)))
        nested.alias(placeholder, loop_gvar)
        return loop_gvar  # type: ignore[no-any-return]

    def _go(self, emit: Any, head: list[Any]) -> Any:
        """Whether to run another iteration: ``i < M`` and/or ``cond``."""
        spec = self.spec
        cond = head[-len(spec.carried) - 1] if spec.with_cond else None
        if not spec.has_trip:
            return cond
        go = emit(op.less(head[0], head[1]), "go")
        if cond is not None and spec.cond_given:
            go = emit(op.logical_and(go, cond), "go")
        return go

    def _steps(self, bb: Any, level: int, head: list[Any], accs: list[Any]) -> SeqExpr:
        """The branch that runs one iteration and then, ``_UNROLL`` levels deep, the next
        ones (each behind its own test), before the recursive call: ``_UNROLL`` iterations
        per VM call frame."""
        spec = self.spec
        step = BranchBindings(bb)
        result = step.bind(Call(self._body_gvar, [*head, *self._sliced_caps]), "step")
        first = 1 if spec.with_cond else 0
        count = len(spec.carried)
        items = [step.bind(TupleGetItem(result, i), "out") for i in range(first + count)]
        grown = []
        for j, acc in enumerate(accs):
            item = step.bind(TupleGetItem(result, first + count + j), "scan_item")
            row = step.bind(op.expand_dims(item, [0]), "scan_row")
            grown.append(step.bind(op.concat(Tuple([acc, row]), axis=0), "scan_acc"))
        next_i = step.bind(op.add(head[0], self.ctx.const(1, "int64")), "next_iter")
        new_head = [next_i, *([head[1]] if spec.has_trip else []), *items]
        if level + 1 == _UNROLL:
            again = [*new_head, *grown, *self._sliced_caps]
            return step.seq(step.bind(Call(self._placeholder, again), "rest"))
        go = self._go(step.bind, new_head)
        inner = self._steps(bb, level + 1, new_head, grown)
        done = Tuple([*items[first:], *grown])
        return step.seq(step.bind(If(go, inner, done, self._ret), "more"))
