"""Relax IR: graph-level expressions, StructInfo, IRModule, structural equality, checks.

This layer builds on the symbolic scalar expressions of :mod:`relaxvm.ir` (shape extents are
``PrimExpr`` s, symbolic dimensions are ``relaxvm.ir.Var`` s). Names follow TVM's ``relax``
package: ``Var``, ``DataflowVar``, ``Call``, ``SeqExpr``, ``Function``, ``TensorStructInfo``...
Operators with StructInfo inference live in :mod:`.op`; :class:`BlockBuilder` builds
normalized (A-normal form) functions from them.
"""

from __future__ import annotations

from ._base import RelaxExpr, RelaxNode, Span, update_struct_info
from .block import (
    Binding,
    BindingBlock,
    DataflowBlock,
    Function,
    MatchCast,
    SeqExpr,
    VarBinding,
)
from .expr import (
    Call,
    Constant,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    If,
    Op,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    const,
)
from .module import IRModule
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .structural import (
    StructuralEqualError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
)
from .subtype import BaseCheckResult, is_base_of, struct_info_base_check
from .well_formed import WellFormedError, is_well_formed, well_formed

# isort: split
# Last: the op builders and their inference import the nodes above. Ops are core IR (like
# TVM's relax.op), so registering them on import is not a plugin side effect.
from . import analysis as analysis
from . import op
from .block_builder import BlockBuilder, BlockBuilderError
from .vdevice import VDevice

#: TVM's name for the base class of Relax expressions.
Expr = RelaxExpr


__all__ = [
    "BaseCheckResult",
    "Binding",
    "BindingBlock",
    "BlockBuilder",
    "BlockBuilderError",
    "Call",
    "Constant",
    "DataTypeImm",
    "DataflowBlock",
    "DataflowVar",
    "Expr",
    "ExternFunc",
    "FuncStructInfo",
    "Function",
    "GlobalVar",
    "IRModule",
    "If",
    "MatchCast",
    "ObjectStructInfo",
    "Op",
    "PrimStructInfo",
    "PrimValue",
    "RelaxExpr",
    "RelaxNode",
    "SeqExpr",
    "ShapeExpr",
    "ShapeStructInfo",
    "Span",
    "StringImm",
    "StructInfo",
    "StructuralEqualError",
    "TensorStructInfo",
    "Tuple",
    "TupleGetItem",
    "TupleStructInfo",
    "VDevice",
    "Var",
    "VarBinding",
    "WellFormedError",
    "analysis",
    "assert_structural_equal",
    "const",
    "is_base_of",
    "is_well_formed",
    "op",
    "struct_info_base_check",
    "structural_equal",
    "structural_hash",
    "update_struct_info",
    "well_formed",
]
