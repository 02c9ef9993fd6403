"""Tensor expressions (TVM's ``te``): describe a kernel as formulas, lower it to a PrimFunc.

::

    n = Var("n")
    A = te.placeholder((n, 4), "float32", name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] * 2.0, name="B")
    func = te.create_prim_func([A, B])

Each tensor owns a TIR :class:`~relaxvm.ir.tir.Buffer`, and ``A[i, j]`` is directly a
``BufferLoad`` of it, so a compute body is already a TIR expression over the stage's index
variables; lowering only wraps it in loops.

Lowering (:func:`create_prim_func`) emits one stage per computed tensor, in dependency
order, in TVM's block form: the stage's loops around a block named after it (made unique),
whose iteration variables ``v_<axis>`` are bound to the loops, with its ``T.reads`` /
``T.writes`` regions (see :mod:`relaxvm.ir.tir.te_block`). A reduction (``te.sum`` /
``te.max`` / ``te.min``, the whole body of its stage) gets reduction (``"R"``) iteration
variables and ``with T.init():``. Tensors passed to ``create_prim_func`` become parameters
(in the order given); **intermediate stages not passed are scratch buffers**
(``T.alloc_buffer``, an ``Allocate`` wrapping the whole body, as relaxvm's TVMScript parser
reads a function-level ``T.alloc_buffer``). :func:`~relaxvm.ir.tir.lower_blocks.lower_blocks`
lowers the blocks to the plain loop nests :func:`create_loop_func` builds directly
(``C[i, j] = init; for k: C[i, j] = combine(C[i, j], source)``).
"""

from __future__ import annotations

import inspect
import math
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import VMTypeError, VMValueError
from ...runtime.dtype import DataType
from .._scalar import dtype_int_range, is_bool_dtype, is_float_dtype
from ..expr import ExprLike, FloatImm, IntImm, PrimExpr, Range, Var
from ..expr_functor import post_order_visit
from ..op import add, convert, max_expr, min_expr
from .analysis import undefined_vars
from .buffer import Buffer, BufferLoad, as_index_list
from .function import PrimFunc
from .stmt import Allocate, Stmt, seq
from .te_arith import TensorArithmetic
from .te_block import BlockNames, StageParts, block_stage, loop_stage

__all__ = [
    "ComputeOp",
    "IterVar",
    "PlaceholderOp",
    "Reduce",
    "Tensor",
    "compute",
    "create_loop_func",
    "create_prim_func",
    "max",
    "min",
    "placeholder",
    "reduce_axis",
    "sum",
]

# The tensor that owns each buffer, so a compute body's loads can be traced to their stages.
# The value is a weak reference: a strong one would keep its own key (``tensor.buffer``) alive
# and the map would grow by every tensor ever made (about 20 KiB per relaxvm.compile).
_TENSOR_OF: weakref.WeakKeyDictionary[Buffer, weakref.ref[Tensor]] = weakref.WeakKeyDictionary()
# The tensors read while a compute body is being built, kept alive until their stage records
# them as inputs (a body may index a temporary: ``lambda i: te.compute(...)[i]``).
_reading = threading.local()


class IterVar:
    """An iteration variable with its domain: a data axis of a stage, or a reduction axis."""

    __slots__ = ("dom", "kind", "var")

    def __init__(self, var: Var, dom: Range, kind: str) -> None:
        self.var, self.dom, self.kind = var, dom, kind

    # An IterVar computes like its variable (`k + 1`, `i * 4`), as in TVM. Written out, not
    # generated, so that type checkers see the operators.
    def __add__(self, other: ExprLike) -> PrimExpr:
        return self.var.__add__(other)

    def __radd__(self, other: ExprLike) -> PrimExpr:
        return self.var.__radd__(other)

    def __sub__(self, other: ExprLike) -> PrimExpr:
        return self.var.__sub__(other)

    def __rsub__(self, other: ExprLike) -> PrimExpr:
        return self.var.__rsub__(other)

    def __mul__(self, other: ExprLike) -> PrimExpr:
        return self.var.__mul__(other)

    def __rmul__(self, other: ExprLike) -> PrimExpr:
        return self.var.__rmul__(other)

    def __floordiv__(self, other: ExprLike) -> PrimExpr:
        return self.var.__floordiv__(other)

    def __rfloordiv__(self, other: ExprLike) -> PrimExpr:
        return self.var.__rfloordiv__(other)

    def __mod__(self, other: ExprLike) -> PrimExpr:
        return self.var.__mod__(other)

    def __rmod__(self, other: ExprLike) -> PrimExpr:
        return self.var.__rmod__(other)

    def __lt__(self, other: ExprLike) -> PrimExpr:
        return self.var.__lt__(other)

    def __le__(self, other: ExprLike) -> PrimExpr:
        return self.var.__le__(other)

    def __gt__(self, other: ExprLike) -> PrimExpr:
        return self.var.__gt__(other)

    def __ge__(self, other: ExprLike) -> PrimExpr:
        return self.var.__ge__(other)

    def equal(self, other: ExprLike) -> PrimExpr:
        return self.var.equal(other)

    def __neg__(self) -> PrimExpr:
        return -self.var

    def astype(self, dtype: str | DataType) -> PrimExpr:
        return self.var.astype(dtype)

    def __repr__(self) -> str:
        end = self.dom.min + self.dom.extent
        return f"IterVar({self.var.name}, [{self.dom.min}, {end}), {self.kind})"


class PlaceholderOp:
    """The producer of an input tensor."""

    def __init__(self, name: str) -> None:
        self.name = name


class Reduce:
    """A reduction ``combiner(source over axis)``; only valid as a whole compute body."""

    def __init__(
        self,
        combiner: str,
        source: PrimExpr,
        axis: list[IterVar],
        condition: PrimExpr | None,
        init: PrimExpr,
    ) -> None:
        self.combiner, self.source, self.axis = combiner, source, axis
        self.condition, self.init = condition, init
        self.dtype = source.dtype

    def combine(self, accumulated: PrimExpr) -> PrimExpr:
        """The update ``combiner(accumulated, source)``."""
        return _COMBINERS[self.combiner](accumulated, self.source)

    def _misuse(self, *args: Any) -> Any:
        raise VMTypeError(
            f"te.{self.combiner}(...) must be the whole body of te.compute; compute it in its "
            "own stage and use that tensor in the arithmetic"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _misuse
    __truediv__ = __rtruediv__ = __neg__ = _misuse


_COMBINERS: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "sum": add,
    "max": max_expr,
    "min": min_expr,
}


class ComputeOp:
    """The producer of a computed tensor: index variables, a body and the tensors it reads."""

    def __init__(
        self, name: str, axis: list[IterVar], body: PrimExpr | Reduce, inputs: list[Tensor]
    ) -> None:
        self.name, self.axis, self.body, self.inputs = name, axis, body, inputs


class Tensor(TensorArithmetic):
    """A te tensor: the output of a placeholder or compute stage. ``T[i, j]`` reads it.

    ``+ - * /``, unary ``-`` and :meth:`astype` make new elementwise stages (see
    :class:`~relaxvm.ir.tir.te_arith.TensorArithmetic`).
    """

    def __init__(self, shape: tuple[PrimExpr, ...], dtype: DataType, name: str, op: Any) -> None:
        self.shape, self.dtype, self.name, self.op = shape, dtype, name, op
        self.buffer = Buffer(name, shape, dtype)
        _TENSOR_OF[self.buffer] = weakref.ref(self)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def __getitem__(self, indices: Any) -> BufferLoad:
        reads: list[Tensor] | None = getattr(_reading, "tensors", None)
        if reads is not None:
            reads.append(self)
        return BufferLoad(self.buffer, indices)

    def __repr__(self) -> str:
        return f"te.Tensor({self.name}, {self.buffer.shape}, {self.dtype})"


def placeholder(
    shape: Sequence[ExprLike] | ExprLike,
    dtype: str | DataType = "float32",
    name: str = "placeholder",
) -> Tensor:
    """An input tensor of the given (possibly symbolic) shape."""
    extents = as_index_list(f"te.placeholder({name}) shape", shape)
    return Tensor(extents, DataType(dtype), name, PlaceholderOp(name))


def reduce_axis(dom: Range | tuple[ExprLike, ExprLike], name: str = "rv") -> IterVar:
    """A reduction axis over ``[lo, hi)`` (a ``(lo, hi)`` pair or a :class:`Range`)."""
    if not isinstance(dom, Range):
        if not isinstance(dom, (tuple, list)) or len(dom) != 2:
            raise VMTypeError(
                f"te.reduce_axis({name}): dom must be (lo, hi) or a Range, got {dom!r}"
            )
        dom = Range(*dom)
    return IterVar(Var(name, dom.extent.dtype), dom, "reduce")


def _reduction(combiner: str) -> Callable[..., Reduce]:
    def build(
        expr: ExprLike,
        axis: IterVar | Sequence[IterVar],
        where: ExprLike | None = None,
        init: ExprLike | None = None,
    ) -> Reduce:
        source = convert(expr)
        axes = [axis] if isinstance(axis, IterVar) else list(axis)
        if not axes or not all(isinstance(a, IterVar) and a.kind == "reduce" for a in axes):
            raise VMTypeError(f"te.{combiner}: axis must be te.reduce_axis iteration variables")
        condition = None if where is None else convert(where)
        if condition is not None and not is_bool_dtype(condition.dtype):
            raise VMTypeError(
                f"te.{combiner}: where must be a bool expression, got {condition.dtype}"
            )
        start = _identity(combiner, source.dtype) if init is None else _const_of(init, source.dtype)
        return Reduce(combiner, source, axes, condition, start)

    build.__name__ = combiner
    build.__doc__ = f"``te.{combiner}(expr, axis, where=None, init=None)``: a {combiner} reduction."
    return build


def _const_of(value: ExprLike, dtype: DataType) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    return FloatImm(dtype, float(value)) if is_float_dtype(dtype) else IntImm(dtype, int(value))


def _identity(combiner: str, dtype: DataType) -> PrimExpr:
    if combiner == "sum":
        return _const_of(0, dtype)
    if is_float_dtype(dtype):
        return FloatImm(dtype, -math.inf if combiner == "max" else math.inf)
    low, high = dtype_int_range(dtype)
    return IntImm(dtype, low if combiner == "max" else high)


sum = _reduction("sum")
max = _reduction("max")
min = _reduction("min")


def _axis_names(fcompute: Callable[..., Any], ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if params and len(params) == len(positional) and len(positional) != ndim:
        raise VMTypeError(
            f"te.compute: fcompute takes {len(positional)} index arguments but the shape has "
            f"{ndim} dimensions"
        )
    if len(positional) == ndim:
        return [p.name for p in positional]
    return [f"i{k}" for k in range(ndim)]


def compute(
    shape: Sequence[ExprLike] | ExprLike,
    fcompute: Callable[..., ExprLike | Reduce],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """A tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    ``fcompute`` receives one index Var per dimension (named after its parameters) and
    returns an expression, or a reduction (``te.sum(...)``) as the whole body.
    """
    extents = as_index_list(f"te.compute({name}) shape", shape)
    names = _axis_names(fcompute, len(extents))
    axis = [
        IterVar(Var(axis_name, extent.dtype), Range.from_min_extent(0, extent), "data_par")
        for axis_name, extent in zip(names, extents, strict=True)
    ]
    outer = getattr(_reading, "tensors", None)
    reads: list[Tensor] = []
    _reading.tensors = reads
    try:
        result = fcompute(*(iv.var for iv in axis))
    finally:
        _reading.tensors = outer
    body: PrimExpr | Reduce = result if isinstance(result, Reduce) else convert(result)
    if isinstance(body, Reduce):
        roots = [body.source, body.init] + ([body.condition] if body.condition is not None else [])
    else:
        roots = [body]
    inputs: dict[Tensor, None] = {}
    for root in roots:
        post_order_visit(root, lambda node: _note_input(name, node, inputs))
    del reads  # every tensor read is now held by `inputs`
    return Tensor(extents, body.dtype, name, ComputeOp(name, axis, body, list(inputs)))


def _note_input(stage: str, node: PrimExpr, inputs: dict[Tensor, None]) -> None:
    if isinstance(node, BufferLoad):
        ref = _TENSOR_OF.get(node.buffer)
        tensor = ref() if ref is not None else None
        if tensor is None:
            raise VMTypeError(
                f"te.compute({stage}): reads buffer {node.buffer.name!r}, which is not a te "
                "tensor; use te.placeholder for inputs"
            )
        inputs.setdefault(tensor)


def _stage_order(outputs: list[Tensor]) -> list[Tensor]:
    """Every tensor the outputs depend on, producers before consumers."""
    order: list[Tensor] = []
    state: dict[Tensor, str] = {}
    for root in outputs:
        stack: list[tuple[Tensor, bool]] = [(root, False)]
        while stack:
            tensor, expanded = stack.pop()
            if expanded:
                state[tensor] = "done"
                order.append(tensor)
                continue
            if state.get(tensor) is not None:
                continue
            state[tensor] = "open"
            stack.append((tensor, True))
            if isinstance(tensor.op, ComputeOp):
                stack.extend((t, False) for t in reversed(tensor.op.inputs) if t not in state)
    return order


def _block_stage(tensor: Tensor, names: BlockNames) -> Stmt:
    return block_stage(tensor.buffer, *_stage_parts(tensor), name=names(tensor.op.name))


def _loop_stage(tensor: Tensor, names: BlockNames) -> Stmt:
    del names  # loop nests have no blocks to name
    return loop_stage(tensor.buffer, *_stage_parts(tensor))


def _stage_parts(tensor: Tensor) -> StageParts:
    op: ComputeOp = tensor.op
    axes = [(iv.var, iv.dom, False) for iv in op.axis]
    body = op.body
    if not isinstance(body, Reduce):
        return axes, len(axes), body, None, None
    axes += [(iv.var, iv.dom, True) for iv in body.axis]
    # `combine` (not the combiner's name) makes the update: a topi reducer may override it.
    update = body.combine(tensor[tuple(iv.var for iv in op.axis)])
    return axes, len(op.axis), update, body.init, body.condition


def create_prim_func(
    args: Sequence[Tensor | Var], name: str = "main", *, index_dtype_override: str | None = None
) -> PrimFunc:
    """Lower te tensors to a :class:`PrimFunc` in TVM's block form; its parameters are
    ``args``, in order.

    Each compute stage becomes its loops around a ``T.block`` named after the stage (``C``,
    then ``C_1``, ... when names repeat) with iteration variables ``v_<axis name>`` and its
    read/write regions; a reduction has ``"R"`` iteration variables and a ``T.init()``. The
    function has the attributes ``global_symbol`` (``name``) and ``tir.noalias``.

    Parameters
    ----------
    args : sequence of Tensor or Var
        Inputs and outputs (tensors become buffer parameters), and integer Vars to pass as
        scalar parameters. Every placeholder used must be among them.
    name : str
        The ``global_symbol`` attribute.
    index_dtype_override : str, optional
        TVM's parameter, keyword-only here (the second positional parameter is ``name``).
        relaxvm indexes in ``int64`` already (a Python int extent is an ``int64`` constant),
        so ``None`` and ``"int64"`` are accepted; ``"int64"`` also checks that every extent
        is ``int64``.

    Raises
    ------
    VMValueError
        A placeholder that is used but not passed, a tensor passed twice, a symbolic
        variable that no parameter binds, an ``index_dtype_override`` other than ``int64``,
        or (with ``"int64"``) an extent of another dtype.
    """
    return _build(args, name, index_dtype_override, _block_stage, "create_prim_func")


def create_loop_func(
    args: Sequence[Tensor | Var], name: str = "main", *, index_dtype_override: str | None = None
) -> PrimFunc:
    """:func:`create_prim_func` as plain loop nests (relaxvm's; TVM has no such function).

    The result is what :func:`~relaxvm.ir.tir.lower_blocks.lower_blocks` makes of
    :func:`create_prim_func`'s blocks: one nest of serial loops per stage around
    ``Y[i, j] = value``, or for a reduction ``Y[i, j] = init`` followed by the reduction
    loops around ``Y[i, j] = combine(Y[i, j], source)``. This is the form the CPU and CUDA
    schedules, FuseTIR and op-pattern analysis read, built without making blocks first.
    Parameters and errors are those of :func:`create_prim_func`.
    """
    return _build(args, name, index_dtype_override, _loop_stage, "create_loop_func")


def _build(
    args: Sequence[Tensor | Var],
    name: str,
    index_dtype_override: str | None,
    lower_stage: Callable[[Tensor, BlockNames], Stmt],
    where: str,
) -> PrimFunc:
    tensors = [a for a in args if isinstance(a, Tensor)]
    _check_index_dtype(index_dtype_override, tensors)
    for position, arg in enumerate(args):
        if not isinstance(arg, (Tensor, Var)):
            raise VMTypeError(
                f"te.{where}: argument {position} must be a te.Tensor or a Var, "
                f"got {type(arg).__name__}"
            )
    if len(set(map(id, args))) != len(args):
        raise VMValueError(f"te.{where}: an argument is passed twice")
    passed = set(tensors)
    stages: list[Stmt] = []
    scratch: list[Buffer] = []
    names = BlockNames()
    for tensor in _stage_order(tensors):
        if isinstance(tensor.op, PlaceholderOp):
            if tensor not in passed:
                raise VMValueError(
                    f"te.{where}: placeholder {tensor.name!r} is used but not passed "
                    "in the argument list"
                )
            continue
        stages.append(lower_stage(tensor, names))
        if tensor not in passed:
            scratch.append(tensor.buffer)
    body = seq(*stages) if stages else seq()
    for buffer in reversed(scratch):
        body = Allocate(buffer, body)
    params: list[Var | Buffer] = [a.buffer if isinstance(a, Tensor) else a for a in args]
    func = PrimFunc(params, body, attrs={"global_symbol": name, "tir.noalias": True})
    missing = undefined_vars(func)
    if missing:
        raise VMValueError(
            f"te.{where}({name}): symbolic variable(s) "
            f"{', '.join(repr(v.name) for v in missing)} are not bound by any parameter's "
            "shape; pass them as scalar Var arguments"
        )
    return func


def _check_index_dtype(override: str | None, tensors: Sequence[Tensor]) -> None:
    # Rewriting every index to another dtype (TVM's int32 override) is not implemented:
    # relaxvm's kernels index in int64, which is what the override asks for in practice.
    if override is None:
        return
    if str(override) != "int64":
        raise VMValueError(
            f"te.create_prim_func: index_dtype_override must be None or 'int64' (relaxvm "
            f"indexes in int64), got {override!r}"
        )
    for tensor in tensors:
        for extent in tensor.shape:
            if str(extent.dtype) != "int64":
                raise VMValueError(
                    f"te.create_prim_func: index_dtype_override='int64' but tensor "
                    f"{tensor.name!r} has the {extent.dtype} extent {extent}; make its shape "
                    "from int64 values"
                )
