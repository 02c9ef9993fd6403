"""LLVM types of TIR dtypes, and the :class:`Lane` values of vectorized code generation."""

from __future__ import annotations

import llvmlite.ir as ir

from relaxvm.ir import Div, FloorDiv, FloorMod, Mod, PrimExpr
from relaxvm.ir.tir import BufferLoad, Call
from relaxvm.runtime.dtype import DataType, DataTypeCode

from .errors import LLVMBuildError

__all__ = [
    "I1",
    "I8",
    "I32",
    "I64",
    "PTR",
    "Lane",
    "has_load",
    "llvm_type",
    "mem_type",
    "needs_branch",
]

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = I8.as_pointer()
_FLOATS = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}
_INT64 = DataType("int64")


def llvm_type(dtype: DataType) -> ir.Type:
    """The LLVM register type of a scalar TIR dtype (``bool`` is ``i1``)."""
    if dtype.lanes != 1:
        raise LLVMBuildError(f"llvm target: vector dtype {dtype} is not supported in TIR")
    code = dtype.code
    if code == DataTypeCode.FLOAT and dtype.bits in _FLOATS:
        return _FLOATS[dtype.bits]
    if code in (DataTypeCode.INT, DataTypeCode.UINT):
        return ir.IntType(dtype.bits)
    if code == DataTypeCode.BOOL:
        return I1
    if dtype.is_float8:
        # No 8-bit float in LLVM: the value is its bit pattern (see codegen_float8).
        return I8
    if code == DataTypeCode.HANDLE:
        return PTR
    raise LLVMBuildError(f"llvm target: dtype {dtype} is not supported")


def mem_type(dtype: DataType) -> ir.Type:
    """The LLVM type of a buffer element in memory (``bool`` is one byte, as in numpy)."""
    return I8 if dtype.code == DataTypeCode.BOOL else llvm_type(dtype)


def is_float(dtype: DataType) -> bool:
    return dtype.code == DataTypeCode.FLOAT


def is_signed(dtype: DataType) -> bool:
    return dtype.code == DataTypeCode.INT


def is_int(dtype: DataType) -> bool:
    return dtype.code in (DataTypeCode.INT, DataTypeCode.UINT)


def has_load(expr: PrimExpr) -> bool:
    """Whether evaluating ``expr`` reads memory or may trap (loads, integer division)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, BufferLoad):
            return True
        if isinstance(node, (Div, Mod, FloorDiv, FloorMod)) and not is_float(node.dtype):
            return True
        stack.extend(node.operands)
    return False


def _loads(expr: PrimExpr) -> set[PrimExpr]:
    found: set[PrimExpr] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, BufferLoad):
            found.add(node)
        stack.extend(node.operands)
    return found


def needs_branch(expr: Call) -> bool:
    """Whether ``if_then_else(c, a, b)`` must evaluate only the chosen branch.

    Not when the branches cannot trap, or when every load they make is also made by the
    condition (``if_then_else(x[i] < 0, 0, x[i])``): then a ``select`` is equivalent.
    """
    cond, then_value, else_value = expr.args
    if not (has_load(then_value) or has_load(else_value)):
        return False
    for branch in (then_value, else_value):
        stack = [branch]
        while stack:
            node = stack.pop()
            if isinstance(node, (Div, Mod, FloorDiv, FloorMod)) and not is_float(node.dtype):
                return True
            stack.extend(node.operands)
    return not (_loads(then_value) | _loads(else_value)) <= _loads(cond)


class Lane:
    """A value in (possibly) vectorized code: scalar, ramp or vector."""

    SCALAR = 0
    RAMP = 1
    VEC = 2
    __slots__ = ("kind", "stride", "value")

    def __init__(self, kind: int, value: ir.Value, stride: int = 0) -> None:
        self.kind = kind
        self.value = value
        self.stride = stride

    @classmethod
    def of(cls, value: ir.Value) -> Lane:
        kind = cls.VEC if isinstance(value.type, ir.VectorType) else cls.SCALAR
        return cls(kind, value)
