"""TIR: loop-level kernels (``PrimFunc``), buffers, statements, tensor expressions, and a
reference interpreter.

Builds on the scalar expressions of :mod:`relaxvm.ir` (``Var``, ``IntImm``, ``Cast``,
``Select``, ...), which are re-exported here so kernels can be written against one namespace,
as with TVM's ``tvm.tir``.
"""

from __future__ import annotations

# From the defining modules, not from the parent package: relaxvm.ir imports this package.
from ..expr import (
    Add,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Select,
    SizeVar,
    Sub,
    Var,
)
from ..op import const, floordiv, floormod, truncdiv, truncmod
from ..op import max_expr as max
from ..op import min_expr as min
from ..structural import assert_structural_equal, structural_equal, structural_hash
from . import te
from .analysis import undefined_vars
from .buffer import Buffer, BufferLoad, decl_buffer
from .function import PrimFunc
from .interpreter import run_prim_func
from .intrin import (
    INTRINSICS,
    Call,
    ceil,
    erf,
    exp,
    exp2,
    fabs,
    floor,
    if_then_else,
    log,
    log2,
    pow,
    round,
    rsqrt,
    sigmoid,
    sqrt,
    tanh,
)
from .schedule import Schedule
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from .stmt_functor import StmtMutator, StmtVisitor, post_order_visit, substitute

__all__ = [
    "INTRINSICS",
    "Add",
    "Allocate",
    "Buffer",
    "BufferLoad",
    "BufferStore",
    "Call",
    "Cast",
    "Evaluate",
    "FloatImm",
    "FloorDiv",
    "FloorMod",
    "For",
    "ForKind",
    "IfThenElse",
    "IntImm",
    "LetStmt",
    "Max",
    "Min",
    "Mul",
    "PrimExpr",
    "PrimFunc",
    "Schedule",
    "Select",
    "SeqStmt",
    "SizeVar",
    "Stmt",
    "StmtMutator",
    "StmtVisitor",
    "Sub",
    "Var",
    "assert_structural_equal",
    "ceil",
    "const",
    "decl_buffer",
    "erf",
    "exp",
    "exp2",
    "fabs",
    "floor",
    "floordiv",
    "floormod",
    "if_then_else",
    "log",
    "log2",
    "max",
    "min",
    "post_order_visit",
    "pow",
    "round",
    "rsqrt",
    "run_prim_func",
    "seq",
    "sigmoid",
    "sqrt",
    "structural_equal",
    "structural_hash",
    "substitute",
    "tanh",
    "te",
    "truncdiv",
    "truncmod",
    "undefined_vars",
]
