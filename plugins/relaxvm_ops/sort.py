"""Sorting and einsum legalizations: sort, argsort, topk (a merge-sort TIR kernel) and einsum
(one TE reduction).

The sort kernel sorts every line along the axis independently; the lines run in parallel (one
``T.parallel`` loop over the flattened outer dimensions). Per line it is a bottom-up merge
sort on scratch buffers: copy the line with its indices into ``keys``/``order``, then for
widths 1, 2, 4 ... merge neighbouring runs, alternating between ``keys``/``order`` and
``keys2``/``order2`` (ping-pong, nothing is copied back). Cost per line of ``n`` elements:
``ceil(log2 n)`` passes of at most ``n`` comparisons and ``n`` moves, so ``O(n log n)`` time,
and ``2n`` keys + ``2n`` int64 indices of scratch per line (on the stack when small and static,
else heap). With a symbolic ``n`` the pass count is unknown, so the kernel runs 63 guarded
passes (the guard ``width < n`` is all an unused pass costs).

Merging takes from the right run only when its head comes strictly before the left run's, so
the sort is stable. "Before" is ``<`` (``>`` descending) with NaN greater than every number:
NaN sorts last ascending, first descending; ties and NaNs keep their original order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, cast
from relaxvm.ir import op as sop
from relaxvm.ir.dtype import is_float_dtype
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr, TensorStructInfo, TupleStructInfo
from relaxvm.ir.relax.op.einsum_spec import label_dims, parse_einsum
from relaxvm.ir.tir import Allocate, Buffer, BufferStore, For, ForKind, IfThenElse, Stmt, seq, te
from relaxvm.runtime.dtype import DataType

from ._kernel import (
    LegalizationError,
    OpPattern,
    attr,
    call_te,
    call_tir_loops,
    known_tensor,
    legalizes,
    op_name,
    out_tensor_sinfo,
    product,
    shape_of,
    tensor_arg,
    tuple_fields,
    unravel_index,
)

__all__ = ["legalize_einsum", "legalize_sort"]

_I64 = "int64"
#: Passes of a line of symbolic length: enough for any int64 extent.
_MAX_PASSES = 63


def _i64(value: int) -> PrimExpr:
    return IntImm(_I64, value)


def _loop(
    name: str, extent: PrimExpr, body: Callable[[Var], Stmt], kind: ForKind = ForKind.SERIAL
) -> Stmt:
    var = Var(name, _I64)
    return For(var, _i64(0), sop.cast(extent, _I64), kind, body(var))


def _before(dtype: DataType, descending: bool) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    """``before(a, b)``: ``a`` strictly precedes ``b`` in the sorted order (NaN greatest)."""
    strict = sop.greater if descending else sop.less

    def before(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if not is_float_dtype(dtype):
            return strict(a, b)
        # No comparison with NaN is true, so NaN's place is spelled out: ascending, a number
        # precedes a NaN; descending, a NaN precedes a number.
        nan_rule = (
            sop.logical_and(sop.not_equal(a, a), sop.equal(b, b))
            if descending
            else sop.logical_and(sop.equal(a, a), sop.not_equal(b, b))
        )
        return sop.logical_or(strict(a, b), nan_rule)

    return before


def _pass_count(n: PrimExpr) -> int:
    if isinstance(n, IntImm):
        return max(0, (int(n.value) - 1).bit_length())
    return _MAX_PASSES


def _sort_line(
    read: Callable[[PrimExpr], PrimExpr],
    n: PrimExpr,
    dtype: DataType,
    descending: bool,
    finish: Callable[[Buffer, Buffer], Stmt],
) -> Stmt:
    """Sort one line (``read(k)`` for ``k < n``) and run ``finish(keys, order)`` on the result."""
    keys, keys2 = Buffer("keys", [n], dtype), Buffer("keys2", [n], dtype)
    order, order2 = Buffer("order", [n], _I64), Buffer("order2", [n], _I64)
    # heads: [left run position, right run position, run width, passes run mod 2]
    heads = Buffer("heads", [4], _I64, scope="local")
    before = _before(dtype, descending)
    left_at, right_at, width_at, parity_at = _i64(0), _i64(1), _i64(2), _i64(3)

    def load(k: Var) -> Stmt:
        return seq(BufferStore(keys, read(k), [k]), BufferStore(order, k, [k]))

    def merge_pass(src: tuple[Buffer, Buffer], dst: tuple[Buffer, Buffer]) -> Stmt:
        """Merge the runs of width ``heads[2]`` of ``src`` into ``dst``, if there are two."""
        (skeys, sorder), (dkeys, dorder) = src, dst

        def merge(k: Var) -> Stmt:
            width = heads[width_at]
            lo = sop.sub(k, sop.floormod(k, sop.mul(width, 2)))
            mid = sop.min_expr(sop.add(lo, width), n)
            hi = sop.min_expr(sop.add(mid, width), n)
            left, right = heads[left_at], heads[right_at]

            def take(pos: PrimExpr, slot: PrimExpr) -> Stmt:
                return seq(
                    BufferStore(dkeys, skeys[pos], [k]),
                    BufferStore(dorder, sorder[pos], [k]),
                    BufferStore(heads, sop.add(heads[slot], 1), [slot]),
                )

            start = IfThenElse(
                sop.equal(k, lo),
                seq(BufferStore(heads, lo, [left_at]), BufferStore(heads, mid, [right_at])),
            )
            # Nested ifs, not one boolean: a run's head is only read while the run lasts.
            # The right head is taken only when strictly before the left one: stability.
            choose = IfThenElse(
                sop.less(left, mid),
                IfThenElse(
                    sop.less(right, hi),
                    IfThenElse(
                        before(skeys[right], skeys[left]),
                        take(right, right_at),
                        take(left, left_at),
                    ),
                    take(left, left_at),
                ),
                take(right, right_at),
            )
            return seq(start, choose)

        return IfThenElse(
            sop.less(heads[width_at], n),
            seq(
                _loop("k", n, merge),
                BufferStore(heads, sop.mul(heads[width_at], 2), [width_at]),
                BufferStore(heads, sop.sub(_i64(1), heads[parity_at]), [parity_at]),
            ),
        )

    # Ping-pong: a pair of passes merges keys -> keys2 -> keys, so nothing is copied back.
    a, b = (keys, order), (keys2, order2)
    pair = seq(merge_pass(a, b), merge_pass(b, a))
    passes = _pass_count(n)
    if isinstance(n, IntImm):
        # The pass count is known: so is the buffer the last pass wrote.
        done = finish(*(b if passes % 2 else a))
    else:
        done = IfThenElse(sop.equal(heads[parity_at], 0), finish(*a), finish(*b))
    body = seq(
        _loop("k", n, load),
        BufferStore(heads, _i64(1), [width_at]),
        BufferStore(heads, _i64(0), [parity_at]),
        *([_loop("p", _i64((passes + 1) // 2), lambda _p: pair)] if passes else []),
        done,
    )
    for buffer in (heads, order2, order, keys2, keys):
        body = Allocate(buffer, body)
    return body


def _fits(extent: PrimExpr, n: PrimExpr) -> bool:
    """Whether an output extent is provably at most the line length ``n``."""
    if extent is n:
        return True
    return isinstance(extent, IntImm) and isinstance(n, IntImm) and extent.value <= n.value


def _outputs(call: Call) -> list[TensorStructInfo]:
    sinfo = call.struct_info
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else [sinfo]
    return [known_tensor(call, f, "the result") for f in fields]


@legalizes("relax.sort", "relax.argsort", "relax.topk")
def legalize_sort(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One kernel per call: the merge sort of every line, then the values and/or indices
    (``topk``: the first ``k`` of each line) written out."""
    name = op_name(call).removeprefix("relax.")
    data = tensor_arg(call, 0, "data")
    shape, dtype = shape_of(data), data.dtype
    assert dtype is not None
    ndim = len(shape)
    raw_axis = attr(call, "axis", -1)
    if not -ndim <= raw_axis < ndim:
        raise LegalizationError(f"relax.{name}: axis {raw_axis} is out of range for rank {ndim}")
    axis = raw_axis % ndim
    if name == "topk":
        descending = bool(attr(call, "largest", True))
        ret_type = attr(call, "ret_type", "both")
        kinds = {"both": ["values", "indices"], "values": ["values"]}.get(ret_type, ["indices"])
    else:
        descending = bool(attr(call, "descending", False))
        kinds = ["values"] if name == "sort" else ["indices"]
    out_infos = _outputs(call)
    n = sop.cast(shape[axis], _I64)
    outer = [d for a, d in enumerate(shape) if a != axis]

    def build(x: te.Tensor) -> tuple[list[Buffer], Stmt]:
        outs = [
            Buffer(f"T_{name}_{kind}", shape_of(info), info.dtype or dtype)
            for kind, info in zip(kinds, out_infos, strict=True)
        ]
        extent = shape_of(out_infos[0])[axis]

        def per_line(flat: Var) -> Stmt:
            outer_idx = unravel_index(flat, outer)

            def full(k: PrimExpr) -> tuple[PrimExpr, ...]:
                rest = iter(outer_idx)
                return tuple(k if a == axis else next(rest) for a in range(ndim))

            def finish(keys: Buffer, order: Buffer) -> Stmt:
                def write(k: Var) -> Stmt:
                    stores = []
                    for kind, out in zip(kinds, outs, strict=True):
                        src = keys[k] if kind == "values" else cast(order[k], out.dtype)
                        stores.append(BufferStore(out, src, full(k)))
                    if _fits(extent, n):
                        return seq(stores)
                    # topk with k past a symbolic line length: the surplus is left as zeros.
                    zero = [BufferStore(o, sop.const(0, o.dtype), full(k)) for o in outs]
                    return IfThenElse(sop.less(k, n), seq(stores), seq(zero))

                return _loop("k", extent, write)

            return _sort_line(lambda k: x[full(k)], n, dtype, descending, finish)

        return outs, _loop("line", product(outer), per_line, ForKind.PARALLEL)

    result = call_tir_loops(
        bb, build, call.args[0], primfunc_name_hint=name,
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip
    return result


# ---- einsum ---------------------------------------------------------------------------------
def _einsum_te(
    operands: Sequence[te.Tensor], subscripts: str, out_shape: Sequence[PrimExpr]
) -> te.Tensor:
    shapes = [list(t.shape) for t in operands]
    spec = parse_einsum(subscripts, [len(s) for s in shapes])
    dims = label_dims(spec, shapes)
    extents = dict(zip(spec.output, out_shape, strict=True))
    for label in spec.reduced:
        # A broadcast (size 1) extent yields to the others, as numpy broadcasts it.
        sizes = [d for d in dims[label] if not (isinstance(d, IntImm) and d.value == 1)]
        extents[label] = sizes[0] if sizes else dims[label][0]

    def body(*idx: Var) -> Any:
        index: dict[str, Any] = dict(zip(spec.output, idx, strict=True))
        red = [te.reduce_axis((0, extents[label]), name=f"r_{label}") for label in spec.reduced]
        index.update((label, rv.var) for label, rv in zip(spec.reduced, red, strict=True))
        term: PrimExpr | None = None
        for tensor, labels in zip(operands, spec.inputs, strict=True):
            at = tuple(
                _i64(0) if isinstance(d, IntImm) and d.value == 1 else index[label]
                for label, d in zip(labels, tensor.shape, strict=True)
            )
            value = cast(tensor[at], "int8") if logical else tensor[at]
            term = value if term is None else term * value
        assert term is not None  # inference requires one operand at least
        if not red:
            return term
        # bool: "any" of the "and"s, as numpy's einsum; 0/1 products make max an "any".
        return te.max(term, axis=red) if logical else te.sum(term, axis=red)

    logical = bool(operands) and operands[0].dtype == DataType("bool")
    result = te.compute(list(out_shape), body, name="T_einsum")
    if not logical:
        return result
    return te.compute(list(out_shape), lambda *i: sop.not_equal(result[i], 0), name="T_einsum_bool")


@legalizes("relax.einsum")
def legalize_einsum(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """One TE kernel: the product of the operands at every label assignment, summed over the
    labels absent from the output (none: a plain product, e.g. an outer product). bool
    operands give numpy's logical einsum: "or" over the reduced labels of the "and"s."""
    subscripts = attr(call, "subscripts", "")
    fields = tuple_fields(bb, call, call.args[0], "operands")
    for index, field in enumerate(fields):
        known_tensor(call, field.struct_info, f"operand {index}")
    out = out_tensor_sinfo(call)

    def kernel(*operands: te.Tensor) -> te.Tensor:
        return _einsum_te(operands, subscripts, shape_of(out))

    return call_te(
        bb, kernel, *fields, primfunc_name_hint="einsum",
        op_pattern=OpPattern.OUT_EWISE_FUSABLE, op=op_name(call),
    )  # fmt: skip
