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

__all__ = ["MAX_SCRATCH_BYTES", "harden"]

#: Largest scratch buffer untrusted TIR may allocate.
MAX_SCRATCH_BYTES = 64 << 20
# The op a failed check's message names: a kernel rebuilt from a file nobody vouched for.
_OP = "untrusted kernel"


def _refuse(name: str, why: str) -> ExecutableFormatError:
    return ExecutableFormatError(
        f"llvm module: kernel {name!r} from the file's TIR cannot be compiled safely: {why}"
    )


class _Guard:
    def __init__(self, name: str) -> None:
        self.name = name

    def buffer(self, buffer: Buffer) -> None:
        if buffer.strides:
            raise _refuse(self.name, f"buffer {buffer.name!r} has explicit strides")
        offset = buffer.elem_offset
        if not (isinstance(offset, IntImm) and offset.value == 0):
            raise _refuse(self.name, f"buffer {buffer.name!r} has an element offset")

    def indices(self, buffer: Buffer, indices: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        self.buffer(buffer)
        return tuple(
            check_index(self.expr(index), extent, axis, _OP)
            for axis, (index, extent) in enumerate(zip(indices, buffer.shape, strict=True))
        )

    def expr(self, e: PrimExpr) -> PrimExpr:
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
        raise _refuse(self.name, f"unexpected expression {type(e).__name__}")

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, SeqStmt):
            return SeqStmt([self.stmt(x) for x in s.seq])
        if isinstance(s, For):
            kind = ForKind.UNROLLED if s.kind == ForKind.UNROLLED else ForKind.SERIAL
            return For(s.loop_var, self.expr(s.min), self.expr(s.extent), kind, self.stmt(s.body))
        if isinstance(s, BufferStore):
            indices = self.indices(s.buffer, s.indices)
            return BufferStore(s.buffer, self.expr(s.value), indices)
        if isinstance(s, LetStmt):
            return LetStmt(s.var, self.expr(s.value), self.stmt(s.body))
        if isinstance(s, IfThenElse):
            other = None if s.else_case is None else self.stmt(s.else_case)
            return IfThenElse(self.expr(s.condition), self.stmt(s.then_case), other)
        if isinstance(s, Allocate):
            self.buffer(s.buffer)
            extents = s.buffer.shape
            if not all(isinstance(e, IntImm) and e.value >= 0 for e in extents):
                raise _refuse(self.name, f"scratch buffer {s.buffer.name!r} has a symbolic size")
            size = math.prod(int(e) for e in extents) * max(1, s.buffer.dtype.bits // 8)
            if size > MAX_SCRATCH_BYTES:
                raise _refuse(self.name, f"scratch buffer {s.buffer.name!r} of {size} bytes")
            return Allocate(s.buffer, self.stmt(s.body))
        if isinstance(s, Evaluate):
            return Evaluate(self.expr(s.value))
        raise _refuse(self.name, f"unexpected statement {type(s).__name__}")


def harden(funcs: Sequence[tuple[str, PrimFunc]]) -> list[tuple[str, PrimFunc]]:
    """The kernels with every buffer access checked and every loop serial (see above).

    Raises
    ------
    ExecutableFormatError
        A kernel uses strided or offset buffers or an unbounded scratch allocation.
    """
    out = []
    for name, func in funcs:
        guard = _Guard(name)
        for buffer in func.buffer_map.values():
            guard.buffer(buffer)
        try:
            body = guard.stmt(func.body)
        except RecursionError:
            raise _refuse(name, "nested too deeply") from None
        except ExecutableFormatError:
            raise
        except Exception as err:  # a constructor refusing what the checks built: ill-typed TIR
            raise _refuse(name, f"{type(err).__name__}: {err}") from None
        out.append((name, func.with_body(body)))
    return out
