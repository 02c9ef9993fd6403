"""Make untrusted TIR memory-safe before it is compiled.

TIR read from a file whose tag does not verify is the work of whoever wrote the file: an
index can point anywhere. Before such kernels are compiled (:func:`harden`):

* every buffer index of every load and store goes through ``T.check_index`` against the
  buffer's extent on that axis, so a kernel never reads or writes outside a buffer (an out of
  range index stops the kernel with :class:`relaxvm.errors.VMIndexError`);
* loops run serially (``check_index`` runs only in a kernel's own serial code);
* buffers must be compact with no element offset (per-axis checks then bound the address);
* scratch allocations must have constant extents of at most :data:`MAX_SCRATCH_BYTES`
  (a failed ``malloc`` is not checked by the generated code).

The result computes what the original computes, more slowly: exporting it again signs it
with the user's key, and later loads use the fast object code (``docs/security.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from relaxvm.errors import ExecutableFormatError
from relaxvm.ir import expr_nodes as nodes
from relaxvm.ir.expr_base import FloatImm, IntImm, PrimExpr, Var
from relaxvm.ir.tir.buffer import Buffer, BufferLoad
from relaxvm.ir.tir.function import PrimFunc
from relaxvm.ir.tir.intrin import Call, check_index
from relaxvm.ir.tir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)

__all__ = ["MAX_SCRATCH_BYTES", "TIRGuard", "harden"]

#: Largest scratch buffer untrusted TIR may allocate.
MAX_SCRATCH_BYTES = 64 << 20
# The op a failed check's message names: a kernel rebuilt from a file nobody vouched for.
_OP = "untrusted kernel"


class TIRGuard:
    """The checks and rewrites that make one kernel's TIR memory-safe (see the module
    docstring), for the CPU.

    Another target hardens its kernels with a subclass: :attr:`module` names it in
    refusals, :meth:`loop` decides what a loop becomes and :meth:`scratch` which scratch
    allocations are allowed (the CUDA target keeps loops bound to threads and allows
    shared memory and run-time sized global scratch).

    Parameters
    ----------
    name : str
        The kernel's name, for the messages.
    """

    #: The kind of module that refusals name.
    module = "llvm"

    def __init__(self, name: str) -> None:
        self.name = name

    def refuse(self, why: str) -> ExecutableFormatError:
        """The error refusing this kernel because of ``why``."""
        return ExecutableFormatError(
            f"{self.module} module: kernel {self.name!r} from the file's TIR cannot be "
            f"compiled safely: {why}"
        )

    def buffer(self, buffer: Buffer) -> None:
        """Refuse ``buffer`` unless it is compact with no element offset."""
        if buffer.strides:
            raise self.refuse(f"buffer {buffer.name!r} has explicit strides")
        offset = buffer.elem_offset
        if not (isinstance(offset, IntImm) and offset.value == 0):
            raise self.refuse(f"buffer {buffer.name!r} has an element offset")

    def indices(self, buffer: Buffer, indices: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        """``indices`` into ``buffer``, each checked against its axis's extent."""
        self.buffer(buffer)
        return tuple(
            check_index(self.expr(index), extent, axis, _OP)
            for axis, (index, extent) in enumerate(zip(indices, buffer.shape, strict=True))
        )

    def expr(self, e: PrimExpr) -> PrimExpr:
        """``e`` with every buffer load's indices checked."""
        if isinstance(e, (Var, IntImm, FloatImm)):
            return e
        if isinstance(e, BufferLoad):
            return BufferLoad(e.buffer, self.indices(e.buffer, e.indices))
        if isinstance(e, Call):
            return Call(e.dtype, e.op, [self.expr(a) for a in e.args])
        if isinstance(e, nodes.Cast):
            return nodes.Cast(e.dtype, self.expr(e.value))
        if isinstance(e, (nodes.Not, nodes.Select, nodes.BinaryOpExpr)):
            return type(e)(*(self.expr(x) for x in e.operands))
        raise self.refuse(f"unexpected expression {type(e).__name__}")

    def stmt(self, s: Stmt) -> Stmt:
        """``s`` hardened: accesses checked, loops by :meth:`loop`, scratch by
        :meth:`scratch`."""
        if isinstance(s, SeqStmt):
            return SeqStmt([self.stmt(x) for x in s.seq])
        if isinstance(s, For):
            lo, extent, body = self.expr(s.min), self.expr(s.extent), self.stmt(s.body)
            return self.loop(s, lo, extent, body)
        if isinstance(s, BufferStore):
            indices = self.indices(s.buffer, s.indices)
            return BufferStore(s.buffer, self.expr(s.value), indices)
        if isinstance(s, LetStmt):
            return LetStmt(s.var, self.expr(s.value), self.stmt(s.body))
        if isinstance(s, IfThenElse):
            other = None if s.else_case is None else self.stmt(s.else_case)
            return IfThenElse(self.expr(s.condition), self.stmt(s.then_case), other)
        if isinstance(s, Allocate):
            return Allocate(self.scratch(s.buffer), self.stmt(s.body))
        if isinstance(s, Evaluate):
            return Evaluate(self.expr(s.value))
        raise self.refuse(f"unexpected statement {type(s).__name__}")

    def loop(self, loop: For, lo: PrimExpr, extent: PrimExpr, body: Stmt) -> Stmt:
        """``loop`` rebuilt over the hardened ``lo``, ``extent`` and ``body``: serial
        (``check_index`` runs only in a kernel's own serial code) unless unrolled."""
        kind = ForKind.UNROLLED if loop.kind == ForKind.UNROLLED else ForKind.SERIAL
        return For(loop.loop_var, lo, extent, kind, body)

    def scratch(self, buffer: Buffer) -> Buffer:
        """``buffer``, refused unless compact and of a constant size within
        :data:`MAX_SCRATCH_BYTES`."""
        self.buffer(buffer)
        if not all(isinstance(e, IntImm) and e.value >= 0 for e in buffer.shape):
            raise self.refuse(f"scratch buffer {buffer.name!r} has a symbolic size")
        self.scratch_size(buffer)
        return buffer

    def scratch_size(self, buffer: Buffer) -> None:
        """Refuse ``buffer`` (of constant extents) if larger than :data:`MAX_SCRATCH_BYTES`."""
        size = math.prod(int(e) for e in buffer.shape) * max(1, buffer.dtype.bits // 8)  # type: ignore[call-overload]
        if size > MAX_SCRATCH_BYTES:
            raise self.refuse(f"scratch buffer {buffer.name!r} of {size} bytes")


def harden(
    funcs: Sequence[tuple[str, PrimFunc]], guard: type[TIRGuard] = TIRGuard
) -> list[tuple[str, PrimFunc]]:
    """The kernels with every buffer access checked and every loop serial (see above).

    Parameters
    ----------
    funcs : Sequence[tuple[str, PrimFunc]]
        The kernels, by name.
    guard : type[TIRGuard]
        The checks to apply: a target's subclass of :class:`TIRGuard` (the CPU's by default).

    Raises
    ------
    ExecutableFormatError
        A kernel uses strided or offset buffers or an unbounded scratch allocation (or what
        ``guard`` refuses besides).
    """
    out = []
    for name, func in funcs:
        checks = guard(name)
        for buffer in func.buffer_map.values():
            checks.buffer(buffer)
        try:
            body = checks.stmt(func.body)
        except RecursionError:
            raise checks.refuse("nested too deeply") from None
        except ExecutableFormatError:
            raise
        except Exception as err:  # a constructor refusing what the checks built: ill-typed TIR
            raise checks.refuse(f"{type(err).__name__}: {err}") from None
        out.append((name, func.with_body(body)))
    return out
