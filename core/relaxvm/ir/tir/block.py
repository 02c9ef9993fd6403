"""TIR blocks: TVM's ``Block`` / ``BlockRealize`` with iteration variables and regions.

A block is the unit TVM's schedules work on: it names its iteration variables (each with a
domain and a kind, spatial or reduction), the buffer regions it reads and writes, an optional
``init`` statement (what a reduction starts from), the scratch buffers it allocates and a
body. A :class:`BlockRealize` binds the iteration variables to values (usually the enclosing
loop variables) under a predicate (``T.where``).

Kernels written in block form are lowered to plain loops by
:func:`relaxvm.ir.tir.lower_blocks.lower_blocks` before they are interpreted or compiled.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import VMTypeError, VMValueError
from .._scalar import is_bool_dtype, is_int_dtype
from ..expr import ExprLike, IntImm, PrimExpr, Range, Var
from ..op import cast, const, convert
from .buffer import Buffer, format_shape
from .stmt import Stmt

__all__ = [
    "Block",
    "BlockRealize",
    "BufferRegion",
    "IterVar",
    "IterVarType",
    "MatchBufferRegion",
]


class IterVarType(enum.IntEnum):
    """The kind of a block iteration variable (TVM's ``tir.IterVar`` types, same numbering)."""

    DATA_PAR = 0  #: spatial: ``T.axis.spatial`` / ``"S"``
    THREAD_INDEX = 1
    COMM_REDUCE = 2  #: reduction: ``T.axis.reduce`` / ``"R"``
    ORDERED = 3  #: scan: ``T.axis.scan``
    OPAQUE = 4  #: ``T.axis.opaque``


class IterVar:
    """A block iteration variable: ``var`` ranging over ``dom``, of kind ``iter_type``.

    Parameters
    ----------
    dom : Range
        The domain ``[dom.min, dom.min + dom.extent)``.
    var : Var
        An integer variable; the domain is cast to its type.
    iter_type : IterVarType or int
    """

    __slots__ = ("dom", "iter_type", "var")
    dom: Range
    var: Var
    iter_type: IterVarType

    def __init__(self, dom: Range, var: Var, iter_type: IterVarType | int) -> None:
        if not isinstance(var, Var) or not is_int_dtype(var.dtype):
            raise VMTypeError(f"IterVar: var must be an integer Var, got {var!r}")
        if not isinstance(dom, Range):
            raise VMTypeError(f"IterVar {var.name}: dom must be a Range, got {dom!r}")
        try:
            kind = IterVarType(iter_type)
        except ValueError:
            raise VMValueError(f"IterVar {var.name}: unknown iter_type {iter_type!r}") from None
        dtype = var.dtype
        dom = Range.from_min_extent(cast(dom.min, dtype), cast(dom.extent, dtype))
        object.__setattr__(self, "dom", dom)
        object.__setattr__(self, "var", var)
        object.__setattr__(self, "iter_type", kind)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("IterVar is immutable")

    def __repr__(self) -> str:
        return (
            f"IterVar({self.var.name}, [{self.dom.min}, +{self.dom.extent}), {self.iter_type.name})"
        )


class BufferRegion:
    """A rectangular region of a buffer: one :class:`Range` per dimension (``A[i, 0:4]``)."""

    __slots__ = ("buffer", "region")
    buffer: Buffer
    region: tuple[Range, ...]

    def __init__(self, buffer: Buffer, region: Sequence[Range]) -> None:
        if not isinstance(buffer, Buffer):
            raise VMTypeError(f"BufferRegion: expected a Buffer, got {type(buffer).__name__}")
        ranges = tuple(region)
        if len(ranges) != len(buffer.shape):
            raise VMValueError(
                f"BufferRegion of {buffer.name!r}: {len(ranges)} ranges for a buffer of "
                f"{len(buffer.shape)} dimensions"
            )
        for item in ranges:
            if not isinstance(item, Range):
                raise VMTypeError(f"BufferRegion of {buffer.name!r}: expected Ranges, got {item!r}")
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "region", ranges)

    @classmethod
    def full(cls, buffer: Buffer) -> BufferRegion:
        """The whole of ``buffer``."""
        return cls(buffer, [Range.from_min_extent(const(0, "int64"), e) for e in buffer.shape])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("BufferRegion is immutable")

    def __repr__(self) -> str:
        parts = ", ".join(f"{r.min}:+{r.extent}" for r in self.region)
        return f"BufferRegion({self.buffer.name}[{parts}])"


class MatchBufferRegion:
    """A buffer bound to a region of another buffer inside a block (TVM's
    ``tir.MatchBufferRegion``, the block-level ``T.match_buffer``).

    Accesses to ``buffer`` stand for accesses to ``source``'s buffer shifted by the region's
    start. ``buffer`` has at most as many dimensions as the region; the region's leading extra
    dimensions must have extent 1 and the others the extents of ``buffer`` (checked where
    they are constants, as TVM's analyzer proves them).

    Parameters
    ----------
    buffer : Buffer
        The view (``A_sub`` in ``A_sub = T.match_buffer(A[i, 0:4], (4,))``).
    source : BufferRegion
        The region it is bound to.
    """

    __slots__ = ("buffer", "source")
    buffer: Buffer
    source: BufferRegion

    def __init__(self, buffer: Buffer, source: BufferRegion) -> None:
        if not isinstance(buffer, Buffer):
            raise VMTypeError(f"MatchBufferRegion: expected a Buffer, got {buffer!r}")
        where = f"match_buffer {buffer.name!r}"
        if not isinstance(source, BufferRegion):
            raise VMTypeError(
                f"{where}: the source must be a buffer region such as A[i, 0:4], got {source!r}"
            )
        if buffer.dtype != source.buffer.dtype:
            raise VMTypeError(
                f"{where}: dtype {buffer.dtype} differs from {source.buffer.name!r}'s "
                f"{source.buffer.dtype}"
            )
        region = source.region
        if buffer.ndim > len(region):
            raise VMValueError(
                f"{where}: a {buffer.ndim}-d buffer cannot match a {len(region)}-d region of "
                f"{source.buffer.name!r}"
            )
        lead = len(region) - buffer.ndim
        expected = [1] * lead + list(buffer.shape)
        for dim, (rng, want) in enumerate(zip(region, expected, strict=True)):
            if not _maybe_equal(rng.extent, want):
                raise VMValueError(
                    f"{where}: the region of {source.buffer.name!r} has extent {rng.extent} in "
                    f"dimension {dim}, but the buffer expects {want} (buffer shape "
                    f"{format_shape(buffer.shape)})"
                )
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "source", source)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("MatchBufferRegion is immutable")

    def __repr__(self) -> str:
        return f"MatchBufferRegion({self.buffer.name} <- {self.source!r})"


def _maybe_equal(a: Any, b: Any) -> bool:
    # Constants must agree; a symbolic pair is accepted unless it simplifies to a
    # constant difference other than 0.
    from ..arith import Analyzer

    diff = Analyzer().simplify(cast(convert(a), "int64") - cast(convert(b), "int64"))
    return not isinstance(diff, IntImm) or diff.value == 0


class Block(Stmt):
    """A block (``with T.block("name"):``): iteration variables, accessed regions, body.

    Parameters
    ----------
    iter_vars : sequence of IterVar
    reads, writes : sequence of BufferRegion
        The regions the block reads and writes (``T.reads`` / ``T.writes``).
    name_hint : str
    body : Stmt
    init : Stmt, optional
        Run before the first iteration of the reduction variables (``with T.init():``).
    alloc_buffers : sequence of Buffer, optional
        Scratch buffers that live as long as the block.
    match_buffers : sequence of MatchBufferRegion, optional
        Buffers bound to regions of outer buffers (block-level ``T.match_buffer``).
    annotations : mapping, optional
        ``T.block_attr({...})``.
    """

    __slots__ = (
        "alloc_buffers",
        "annotations",
        "body",
        "init",
        "iter_vars",
        "match_buffers",
        "name_hint",
        "reads",
        "writes",
    )
    fields = (
        "iter_vars",
        "reads",
        "writes",
        "name_hint",
        "body",
        "init",
        "alloc_buffers",
        "match_buffers",
        "annotations",
    )
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    name_hint: str
    body: Stmt
    init: Stmt | None
    alloc_buffers: tuple[Buffer, ...]
    match_buffers: tuple[MatchBufferRegion, ...]
    annotations: dict[str, Any]

    def __init__(
        self,
        iter_vars: Sequence[IterVar],
        reads: Sequence[BufferRegion],
        writes: Sequence[BufferRegion],
        name_hint: str,
        body: Stmt,
        init: Stmt | None = None,
        alloc_buffers: Sequence[Buffer] = (),
        match_buffers: Sequence[MatchBufferRegion] = (),
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        where = f"Block {name_hint!r}"
        if not isinstance(name_hint, str):
            raise VMTypeError(f"Block: name_hint must be a str, got {name_hint!r}")
        for item in iter_vars:
            if not isinstance(item, IterVar):
                raise VMTypeError(f"{where}: iter_vars must be IterVars, got {item!r}")
        for role, regions in (("reads", reads), ("writes", writes)):
            for region in regions:
                if not isinstance(region, BufferRegion):
                    raise VMTypeError(f"{where}: {role} must be BufferRegions, got {region!r}")
        for buffer in alloc_buffers:
            if not isinstance(buffer, Buffer):
                raise VMTypeError(f"{where}: alloc_buffers must be Buffers, got {buffer!r}")
        for match in match_buffers:
            if not isinstance(match, MatchBufferRegion):
                raise VMTypeError(
                    f"{where}: match_buffers must be MatchBufferRegions, got {match!r}"
                )
        for name, value in (("body", body), ("init", init)):
            if (value is not None or name == "body") and not isinstance(value, Stmt):
                raise VMTypeError(f"{where}: {name} must be a Stmt, got {type(value).__name__}")
        self._set(
            iter_vars=tuple(iter_vars),
            reads=tuple(reads),
            writes=tuple(writes),
            name_hint=name_hint,
            body=body,
            init=init,
            alloc_buffers=tuple(alloc_buffers),
            match_buffers=tuple(match_buffers),
            annotations=dict(annotations or {}),
        )


class BlockRealize(Stmt):
    """Runs ``block`` with its iteration variables bound to ``iter_values`` when
    ``predicate`` holds (``T.where``)."""

    __slots__ = ("block", "iter_values", "predicate")
    fields = ("iter_values", "predicate", "block")
    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block

    def __init__(self, iter_values: Sequence[ExprLike], predicate: ExprLike, block: Block) -> None:
        if not isinstance(block, Block):
            raise VMTypeError(f"BlockRealize: expected a Block, got {type(block).__name__}")
        where = f"BlockRealize of {block.name_hint!r}"
        if len(iter_values) != len(block.iter_vars):
            raise VMValueError(
                f"{where}: {len(iter_values)} values for {len(block.iter_vars)} iteration variables"
            )
        values = []
        for item, value in zip(block.iter_vars, iter_values, strict=True):
            expr = convert(value)
            if not is_int_dtype(expr.dtype):
                raise VMTypeError(
                    f"{where}: the value `{expr}` of {item.var.name} must be an integer, "
                    f"got {expr.dtype}"
                )
            values.append(cast(expr, item.var.dtype))
        pred = convert(predicate)
        if not is_bool_dtype(pred.dtype):
            raise VMTypeError(f"{where}: predicate `{pred}` must be bool, got {pred.dtype}")
        self._set(iter_values=tuple(values), predicate=pred, block=block)
