"""Legalizations of gather_elements, gather_nd, scatter_elements, scatter_nd and one_hot.

Every index read from a tensor is checked (:mod:`.index_check`) before the kernel uses it: an
index out of range raises ``VMIndexError`` naming the op (``gather`` or ``scatter``), the data
axis and the index, on every target; negative indices count from the end (numpy's rule, which
TVM's ``scatter_elements`` follows; TVM's ``gather_elements``/``gather_nd`` kernels do not wrap
a negative index and read outside the buffer, which we never do). Extents the inference could
not compare (symbolic shapes) are checked when the kernel starts, with the same error for the
first position that would fall outside ``data`` or ``updates``.

Scatter kernels are opaque (``op_pattern`` 8: no schedule, no fusion) and their update loop is
serial, so repeated indices combine in row-major order of ``indices``: the last update wins for
``reduction="update"``, as in TVM's sequential kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaxvm.ir import IntImm, PrimExpr, Var, select
from relaxvm.ir import op as sop
from relaxvm.ir.relax import BlockBuilder, Call, RelaxExpr
from relaxvm.ir.tir import Buffer, BufferStore, Evaluate, IfThenElse, PrimFunc, Stmt, seq, te
from relaxvm.ir.tir import intrin as T

from ._kernel import (
    LegalizationError,
    OpPattern,
    _finish,
    _Inputs,
    attr,
    call_tir_loops,
    legalizes,
    op_name,
    out_tensor_sinfo,
    shape_of,
    tensor_arg,
)
from .index_check import _nest, index_check_loops

__all__ = [
    "legalize_gather_elements",
    "legalize_gather_nd",
    "legalize_one_hot",
    "legalize_scatter_elements",
    "legalize_scatter_nd",
]

Reduce = Callable[[PrimExpr, PrimExpr], PrimExpr]


def _wrap(index: PrimExpr, extent: PrimExpr) -> PrimExpr:
    """A checked index as int64, a negative one counted from the end."""
    i = sop.cast(index, "int64")
    return select(sop.less(i, 0), sop.add(i, sop.cast(extent, "int64")), i)


def _extent_guards(pairs: Sequence[tuple[PrimExpr, PrimExpr, int]], op: str) -> list[Stmt]:
    """For each ``(used, size, axis)``: a check, when the kernel starts, that positions
    ``0 .. used-1`` lie within ``size`` (skipped where both are constants that agree; inference
    already rejected constants that do not)."""
    guards: list[Stmt] = []
    for used, size, axis in pairs:
        if isinstance(used, IntImm) and isinstance(size, IntImm) and used.value <= size.value:
            continue
        last = sop.sub(sop.cast(used, "int64"), 1)
        check = Evaluate(T.check_index(last, size, axis, op))
        guards.append(IfThenElse(sop.greater(used, 0), check))
    return guards


def _loops(shape: Sequence[PrimExpr], prefix: str) -> list[tuple[Var, PrimExpr]]:
    return [(Var(f"{prefix}{d}", "int64"), extent) for d, extent in enumerate(shape)]


def _constant_depth(call: Call, ishape: Sequence[PrimExpr]) -> int:
    depth = ishape[-1] if ishape else None
    if not isinstance(depth, IntImm):
        raise LegalizationError(
            f"{op_name(call)}: cannot legalize: the last extent of indices ({depth}) must be a "
            "constant"
        )
    return int(depth.value)


def _finish_te(
    bb: BlockBuilder,
    inputs: _Inputs,
    out: te.Tensor,
    prologue: list[Stmt],
    name: str,
) -> RelaxExpr:
    def make(scalars: list[Var]) -> PrimFunc:
        func = te.create_loop_func([*inputs.placeholders, out, *scalars], name=name)
        return func.with_body(seq(*prologue, func.body)) if prologue else func

    return _finish(bb, inputs, [out.buffer], make, name, OpPattern.INJECTIVE, None)


# ---- gathers --------------------------------------------------------------------------------
@legalizes("relax.gather_elements")
def legalize_gather_elements(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[i] = data[i with axis replaced by indices[i]]``, indices checked first."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    ishape = shape_of(tensor_arg(call, 1, "indices"))
    axis = attr(call, "axis", 0) % len(shape)
    inputs = _Inputs(op_name(call))
    data, indices = inputs.convert([call.args[0], call.args[1]])

    def body(*i: Any) -> PrimExpr:
        k = _wrap(indices[tuple(i)], shape[axis])
        return data[tuple([*i[:axis], k, *i[axis + 1 :]])]

    out = te.compute(ishape, body, name="T_gather_elements")
    pairs = [(ishape[a], shape[a], a) for a in range(len(shape)) if a != axis]
    prologue = [
        *_extent_guards(pairs, "gather"),
        index_check_loops(indices.buffer, shape[axis], axis, "gather"),
    ]
    return _finish_te(bb, inputs, out, prologue, "gather_elements")


@legalizes("relax.gather_nd")
def legalize_gather_nd(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``out[p, r] = data[p[:batch_dims], indices[p, :], r]``, each component checked against
    its data axis first."""
    shape = shape_of(tensor_arg(call, 0, "data"))
    ishape = shape_of(tensor_arg(call, 1, "indices"))
    out_shape = shape_of(out_tensor_sinfo(call))
    batch = attr(call, "batch_dims", 0)
    depth = _constant_depth(call, ishape)
    prefix_rank = len(ishape) - 1
    inputs = _Inputs(op_name(call))
    data, indices = inputs.convert([call.args[0], call.args[1]])

    def body(*i: Any) -> PrimExpr:
        prefix, rest = list(i[:prefix_rank]), list(i[prefix_rank:])
        picked = [
            _wrap(indices[tuple([*prefix, IntImm("int64", j)])], shape[batch + j])
            for j in range(depth)
        ]
        return data[tuple([*prefix[:batch], *picked, *rest])]

    out = te.compute(out_shape, body, name="T_gather_nd")
    prologue = _extent_guards([(ishape[b], shape[b], b) for b in range(batch)], "gather")
    for j in range(depth):
        prologue.append(index_check_loops(indices.buffer, shape[batch + j], batch + j, "gather", j))
    return _finish_te(bb, inputs, out, prologue, "gather_nd")


# ---- scatters -------------------------------------------------------------------------------
def _reducer(call: Call, dtype: str) -> Reduce:
    reduction = attr(call, "reduction", "update")
    two = sop.const(2, dtype)
    halve: Reduce = sop.true_div if dtype.startswith(("float", "bfloat")) else sop.truncdiv
    table: dict[str, Reduce] = {
        "update": lambda old, new: new,
        "add": sop.add,
        "mul": sop.mul,
        # TVM's running mean: each update averages with the value so far.
        "mean": lambda old, new: halve(sop.add(old, new), two),
        "max": sop.max_expr,
        "min": sop.min_expr,
    }
    if reduction not in table:
        raise LegalizationError(f"{op_name(call)}: unsupported reduction {reduction!r}")
    return table[reduction]


def _copy(out: Buffer, data: Buffer) -> Stmt:
    loops = _loops(out.shape, "c")
    at = [var for var, _ in loops]
    return _nest(BufferStore(out, data[tuple(at)], at), loops)


@legalizes("relax.scatter_elements")
def legalize_scatter_elements(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A copy of ``data``, then the updates applied one by one in row-major order of
    ``indices`` (serial: repeated indices combine deterministically)."""
    info = out_tensor_sinfo(call)
    shape, dtype = shape_of(info), str(info.dtype)
    ishape = shape_of(tensor_arg(call, 1, "indices"))
    ushape = shape_of(tensor_arg(call, 2, "updates"))
    axis = attr(call, "axis", 0) % len(shape)
    reduce = _reducer(call, dtype)

    def build(data: te.Tensor, indices: te.Tensor, updates: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer("T_scatter_elements", shape, dtype)
        loops = _loops(ishape, "i")
        at = [var for var, _ in loops]
        k = _wrap(indices.buffer[tuple(at)], shape[axis])
        pos = [*at[:axis], k, *at[axis + 1 :]]
        value = reduce(out[tuple(pos)], updates.buffer[tuple(at)])
        pairs = [(ishape[a], shape[a], a) for a in range(len(shape)) if a != axis]
        pairs += [(ishape[a], ushape[a], a) for a in range(len(shape))]
        body = seq(
            *_extent_guards(pairs, "scatter"),
            index_check_loops(indices.buffer, shape[axis], axis, "scatter"),
            _copy(out, data.buffer),
            _nest(BufferStore(out, value, pos), loops),
        )
        return [out], body

    return call_tir_loops(
        bb, build, *call.args[:3], primfunc_name_hint="scatter_elements",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip


@legalizes("relax.scatter_nd")
def legalize_scatter_nd(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """A copy of ``data``, then each slice of ``updates`` applied at its index tuple, in
    row-major order of ``indices`` (serial), each tuple component checked first."""
    info = out_tensor_sinfo(call)
    shape, dtype = shape_of(info), str(info.dtype)
    ishape = shape_of(tensor_arg(call, 1, "indices"))
    ushape = shape_of(tensor_arg(call, 2, "updates"))
    depth = _constant_depth(call, ishape)
    prefix_rank = len(ishape) - 1
    reduce = _reducer(call, dtype)

    def build(data: te.Tensor, indices: te.Tensor, updates: te.Tensor) -> tuple[list[Buffer], Stmt]:
        out = Buffer("T_scatter_nd", shape, dtype)
        outer = _loops(ishape[:-1], "i")
        inner = _loops(shape[depth:], "r")
        prefix, rest = [v for v, _ in outer], [v for v, _ in inner]
        picked = [
            _wrap(indices.buffer[tuple([*prefix, IntImm("int64", j)])], shape[j])
            for j in range(depth)
        ]
        pos = [*picked, *rest]
        value = reduce(out[tuple(pos)], updates.buffer[tuple([*prefix, *rest])])
        pairs = [(ishape[a], ushape[a], a) for a in range(prefix_rank)]
        pairs += [
            (shape[depth + b], ushape[prefix_rank + b], prefix_rank + b) for b in range(len(rest))
        ]
        checks = [
            index_check_loops(indices.buffer, shape[j], j, "scatter", j) for j in range(depth)
        ]
        body = seq(
            *_extent_guards(pairs, "scatter"),
            *checks,
            _copy(out, data.buffer),
            _nest(BufferStore(out, value, pos), [*outer, *inner]),
        )
        return [out], body

    return call_tir_loops(
        bb, build, *call.args[:3], primfunc_name_hint="scatter_nd",
        op_pattern=OpPattern.OPAQUE, op=op_name(call),
    )  # fmt: skip


# ---- one_hot --------------------------------------------------------------------------------
@legalizes("relax.one_hot")
def legalize_one_hot(bb: BlockBuilder, call: Call) -> RelaxExpr:
    """``on_value`` where ``indices[...] == k``, else ``off_value``; an index outside
    ``[0, depth)`` gives a row of ``off_value`` (TVM's rule; it never addresses memory)."""
    info = out_tensor_sinfo(call)
    out_shape, dtype = shape_of(info), str(info.dtype)
    axis = attr(call, "axis", -1) % len(out_shape)
    inputs = _Inputs(op_name(call))
    indices, on, off = inputs.convert(list(call.args[:3]))
    on, off = sop.cast(on, dtype), sop.cast(off, dtype)

    def body(*i: Any) -> PrimExpr:
        where = tuple([*i[:axis], *i[axis + 1 :]])
        # Compare as int64, or as uint64 for an unsigned index: a huge one must not wrap to k.
        wide = "uint64" if str(indices.dtype).startswith("uint") else "int64"
        hit = sop.equal(sop.cast(indices[where], wide), sop.cast(i[axis], wide))
        return select(hit, on, off)

    out = te.compute(out_shape, body, name="T_one_hot")
    return _finish_te(bb, inputs, out, [], "one_hot")
