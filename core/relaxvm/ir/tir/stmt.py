"""TIR statements: loops, stores, lets, conditionals, scratch allocation, sequences.

Statements are immutable. Each has ``fields`` naming its attributes in a fixed order, which the
visitors and structural comparison in :mod:`relaxvm.ir.tir.stmt_functor` walk generically.
``str(stmt)`` prints TVMScript-style text (:mod:`relaxvm.ir.tir.script`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from ...errors import VMTypeError, VMValueError
from .._scalar import is_bool_dtype, is_int_dtype
from ..expr import ExprLike, PrimExpr, Var
from ..op import cast, convert
from .buffer import Buffer

__all__ = [
    "Allocate",
    "BufferStore",
    "DeclBuffer",
    "Evaluate",
    "For",
    "ForKind",
    "IfThenElse",
    "LetStmt",
    "SeqStmt",
    "Stmt",
    "seq",
]

#: The thread axes a THREAD_BINDING loop may bind to.
THREAD_TAGS = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
    "vthread",
)


class ForKind(enum.IntEnum):
    """How a loop runs (TVM's ``tir.ForKind``, same numbering)."""

    SERIAL = 0
    PARALLEL = 1
    VECTORIZED = 2
    UNROLLED = 3
    THREAD_BINDING = 4


class Stmt:
    """Base class of statements."""

    __slots__ = ()
    #: Attribute names in traversal order.
    fields: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new statement")

    def _set(self, **values: Any) -> None:
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def replace(self, **changes: Any) -> Stmt:
        """A copy with some fields changed (the constructor checks them again)."""
        values = {name: getattr(self, name) for name in self.fields}
        values.update(changes)
        return type(self)(**values)

    def __str__(self) -> str:
        from .script import stmt_to_str  # the printer imports this module

        return stmt_to_str(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(\n{self}\n)"

    def script(self, **options: Any) -> str:
        """The TVMScript-style text of this statement; ``options`` are TVM's printer options
        (see :mod:`relaxvm.ir.relax.text_options`)."""
        from ..relax.text_options import apply_layout, script_options

        return apply_layout(str(self), script_options(type(self).__name__, **options))


def _expr(where: str, value: ExprLike) -> PrimExpr:
    try:
        return convert(value)
    except VMTypeError as err:
        raise VMTypeError(f"{where}: {err}") from None


def _stmt(where: str, value: Any) -> Stmt:
    if not isinstance(value, Stmt):
        raise VMTypeError(f"{where}: expected a Stmt, got {type(value).__name__}")
    return value


class For(Stmt):
    """``for loop_var in range(min, min + extent): body``.

    Parameters
    ----------
    loop_var : Var
        An integer variable defined by the loop.
    min, extent : int or PrimExpr
        Start and trip count (converted to ``loop_var``'s type).
    kind : ForKind
        SERIAL, PARALLEL, VECTORIZED, UNROLLED or THREAD_BINDING.
    body : Stmt
    thread_binding : str, optional
        The thread axis (``"threadIdx.x"``, ``"blockIdx.x"``, ...); required exactly when
        ``kind`` is THREAD_BINDING.
    annotations : mapping, optional
        Free-form loop annotations (``{"pragma_unroll_explicit": 1}``).
    """

    __slots__ = ("annotations", "body", "extent", "kind", "loop_var", "min", "thread_binding")
    fields = ("loop_var", "min", "extent", "kind", "body", "thread_binding", "annotations")
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: str | None
    annotations: dict[str, Any]

    def __init__(
        self,
        loop_var: Var,
        min: ExprLike,
        extent: ExprLike,
        kind: ForKind | int,
        body: Stmt,
        thread_binding: str | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(loop_var, Var) or not is_int_dtype(loop_var.dtype):
            raise VMTypeError(f"For: loop_var must be an integer Var, got {loop_var!r}")
        where = f"For {loop_var.name}"
        bounds = []
        for role, value in (("min", min), ("extent", extent)):
            expr = _expr(f"{where} {role}", value)
            if not is_int_dtype(expr.dtype):
                raise VMTypeError(f"{where}: {role} `{expr}` must be an integer, got {expr.dtype}")
            bounds.append(cast(expr, loop_var.dtype))
        try:
            kind = ForKind(kind)
        except ValueError:
            raise VMValueError(f"{where}: unknown loop kind {kind!r}") from None
        if kind == ForKind.THREAD_BINDING:
            if thread_binding not in THREAD_TAGS:
                raise VMValueError(
                    f"{where}: a THREAD_BINDING loop needs thread_binding in {THREAD_TAGS}, "
                    f"got {thread_binding!r}"
                )
        elif thread_binding is not None:
            raise VMValueError(
                f"{where}: thread_binding={thread_binding!r} given for a {kind.name} loop; "
                "use kind=ForKind.THREAD_BINDING"
            )
        self._set(
            loop_var=loop_var,
            min=bounds[0],
            extent=bounds[1],
            kind=kind,
            body=_stmt(f"{where} body", body),
            thread_binding=thread_binding,
            annotations=dict(annotations or {}),
        )


class BufferStore(Stmt):
    """``buffer[indices] = value`` (TVM's argument order: buffer, value, indices)."""

    __slots__ = ("buffer", "indices", "value")
    fields = ("buffer", "value", "indices")
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]

    def __init__(self, buffer: Buffer, value: ExprLike, indices: Any) -> None:
        if not isinstance(buffer, Buffer):
            raise VMTypeError(f"BufferStore: expected a Buffer, got {type(buffer).__name__}")
        exprs = buffer._check_indices(tuple(indices) if isinstance(indices, list) else indices)
        expr = value if isinstance(value, PrimExpr) else _const_like(value, buffer)
        if expr.dtype != buffer.dtype:
            raise VMTypeError(
                f"BufferStore into {buffer.name!r}: value `{expr}` has type {expr.dtype} but the "
                f"buffer holds {buffer.dtype}; cast the value"
            )
        self._set(buffer=buffer, value=expr, indices=exprs)


def _const_like(value: Any, buffer: Buffer) -> PrimExpr:
    # A Python number stored into a buffer takes the buffer's element type.
    from ..op import const

    try:
        return const(value, buffer.dtype)
    except (VMTypeError, VMValueError) as err:
        raise VMTypeError(f"BufferStore into {buffer.name!r}: {err}") from None


class LetStmt(Stmt):
    """``var = value`` in scope for ``body``."""

    __slots__ = ("body", "value", "var")
    fields = ("var", "value", "body")
    var: Var
    value: PrimExpr
    body: Stmt

    def __init__(self, var: Var, value: ExprLike, body: Stmt) -> None:
        if not isinstance(var, Var):
            raise VMTypeError(f"LetStmt: var must be a Var, got {var!r}")
        expr = _expr(f"LetStmt {var.name}", value)
        if not isinstance(value, PrimExpr):
            expr = cast(expr, var.dtype)
        if expr.dtype != var.dtype:
            raise VMTypeError(
                f"LetStmt {var.name}: value `{expr}` has type {expr.dtype}, the variable {var.dtype}"
            )
        self._set(var=var, value=expr, body=_stmt(f"LetStmt {var.name} body", body))


class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (``else_case`` may be None)."""

    __slots__ = ("condition", "else_case", "then_case")
    fields = ("condition", "then_case", "else_case")
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None

    def __init__(self, condition: ExprLike, then_case: Stmt, else_case: Stmt | None = None) -> None:
        expr = _expr("IfThenElse condition", condition)
        if not is_bool_dtype(expr.dtype):
            raise VMTypeError(f"IfThenElse: condition `{expr}` must be bool, got {expr.dtype}")
        self._set(
            condition=expr,
            then_case=_stmt("IfThenElse then_case", then_case),
            else_case=None if else_case is None else _stmt("IfThenElse else_case", else_case),
        )


class Allocate(Stmt):
    """Scratch memory for ``buffer`` while ``body`` runs (local, shared or global scope).

    Unlike TVM's ``Allocate``, which allocates a flat handle, this takes the whole buffer
    (TVM's ``Allocate`` + ``DeclBuffer`` pair): loads and stores in ``body`` name the buffer.
    """

    __slots__ = ("body", "buffer")
    fields = ("buffer", "body")
    buffer: Buffer
    body: Stmt

    def __init__(self, buffer: Buffer, body: Stmt) -> None:
        if not isinstance(buffer, Buffer):
            raise VMTypeError(f"Allocate: expected a Buffer, got {type(buffer).__name__}")
        if buffer.strides:
            raise VMValueError(
                f"Allocate {buffer.name!r}: an allocated buffer is compact; strides are not allowed"
            )
        self._set(buffer=buffer, body=_stmt(f"Allocate {buffer.name!r} body", body))


class DeclBuffer(Stmt):
    """Declares ``buffer`` over memory that already exists while ``body`` runs (TVM's
    ``DeclBuffer``, ``B = T.decl_buffer(shape, dtype, data=A.data)``).

    ``buffer.data`` is the handle of another buffer (an alias with its own shape, strides and
    offset) or a ``T.handle`` parameter. A ``T.decl_buffer`` without ``data`` allocates, and
    is an :class:`Allocate` (which already declares its buffer).
    """

    __slots__ = ("body", "buffer")
    fields = ("buffer", "body")
    buffer: Buffer
    body: Stmt

    def __init__(self, buffer: Buffer, body: Stmt) -> None:
        if not isinstance(buffer, Buffer):
            raise VMTypeError(f"DeclBuffer: expected a Buffer, got {type(buffer).__name__}")
        self._set(buffer=buffer, body=_stmt(f"DeclBuffer {buffer.name!r} body", body))


class Evaluate(Stmt):
    """Evaluate an expression for its effect (``T.evaluate(expr)``)."""

    __slots__ = ("value",)
    fields = ("value",)
    value: PrimExpr

    def __init__(self, value: ExprLike) -> None:
        self._set(value=_expr("Evaluate", value))


class SeqStmt(Stmt):
    """Statements run one after another."""

    __slots__ = ("seq",)
    fields = ("seq",)
    seq: tuple[Stmt, ...]

    def __init__(self, seq: Sequence[Stmt]) -> None:
        if isinstance(seq, Stmt) or not isinstance(seq, Iterable):
            raise VMTypeError("SeqStmt: expected a sequence of statements")
        stmts = tuple(_stmt(f"SeqStmt item {i}", item) for i, item in enumerate(seq))
        self._set(seq=stmts)

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, index: int) -> Stmt:
        return self.seq[index]


def seq(*stmts: Stmt | Sequence[Stmt]) -> Stmt:
    """Sequence statements, flattening nested sequences; one statement is returned as is."""
    flat: list[Stmt] = []
    pending: list[Any] = list(reversed(stmts))
    while pending:
        item = pending.pop()
        if isinstance(item, SeqStmt):
            pending.extend(reversed(item.seq))
        elif isinstance(item, Stmt):
            flat.append(item)
        elif isinstance(item, (list, tuple)):
            pending.extend(reversed(item))
        else:
            raise VMTypeError(f"seq: expected statements, got {type(item).__name__}")
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(flat)
