"""The relaxvm IR. This first layer holds symbolic scalar expressions (TIR's ``PrimExpr``)
and their arithmetic analysis; Relax IR, StructInfo, IRModule and TIR statements build on it.
:func:`structural_equal`, :func:`assert_structural_equal` and :func:`structural_hash` accept
every IR node (TVM's ``tvm.ir`` functions); the scalar dtype predicates are in :mod:`.dtype`.
:class:`IRModule` is here too (TVM's ``tvm.ir.IRModule``, also ``relaxvm.IRModule``).

The names match TVM's so that a later ``relaxvm.tir`` can re-export them as ``tir.Var``,
``tir.IntImm``, ``tir.min`` (:func:`min_expr`), ``tir.floordiv`` and so on.
"""

from __future__ import annotations

from . import arith, dtype, relax
from .arith import Analyzer, ConstIntBound
from .dtype import dtype_int_range, fits_dtype, is_bool_dtype, is_float_dtype, is_int_dtype
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOpExpr,
    Cast,
    CmpExpr,
    Div,
    ExprLike,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    SizeVar,
    Sub,
    Var,
)
from .expr_functor import evaluate, free_vars, post_order_visit, substitute
from .global_info import DummyGlobalInfo, GlobalInfo
from .op import (
    cast,
    const,
    convert,
    floordiv,
    floormod,
    logical_and,
    logical_not,
    logical_or,
    max_expr,
    min_expr,
    select,
    truncdiv,
    truncmod,
)
from .printer import expr_to_str
from .relax.expr import Op
from .relax.module import IRModule
from .relax.vdevice import VDevice
from .structural import (
    StructuralEqualError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
)

# isort: split
# Last, mirroring the layers: TIR builds on the expressions above (it imports them from their
# own modules, never from this package, so there is no import cycle).
from . import tir
from .json_io import load_json, save_json

__all__ = [
    "EQ",
    "GE",
    "GT",
    "LE",
    "LT",
    "NE",
    "Add",
    "Analyzer",
    "And",
    "BinaryOpExpr",
    "Cast",
    "CmpExpr",
    "ConstIntBound",
    "Div",
    "DummyGlobalInfo",
    "ExprLike",
    "FloatImm",
    "FloorDiv",
    "FloorMod",
    "GlobalInfo",
    "IRModule",
    "IntImm",
    "Max",
    "Min",
    "Mod",
    "Mul",
    "Not",
    "Op",
    "Or",
    "PrimExpr",
    "Range",
    "Select",
    "SizeVar",
    "StructuralEqualError",
    "Sub",
    "VDevice",
    "Var",
    "arith",
    "assert_structural_equal",
    "cast",
    "const",
    "convert",
    "dtype",
    "dtype_int_range",
    "evaluate",
    "expr_to_str",
    "fits_dtype",
    "floordiv",
    "floormod",
    "free_vars",
    "is_bool_dtype",
    "is_float_dtype",
    "is_int_dtype",
    "load_json",
    "logical_and",
    "logical_not",
    "logical_or",
    "max_expr",
    "min_expr",
    "post_order_visit",
    "relax",
    "save_json",
    "select",
    "structural_equal",
    "structural_hash",
    "substitute",
    "tir",
    "truncdiv",
    "truncmod",
]
