"""Structural equality and hashing of expressions, with optional mapping of free variables.

``structural_equal(a, b)`` is what ``a == b`` computes: same node types, types and constants,
with each variable equal only to itself. With ``map_free_vars=True`` two expressions are also
equal when they are the same up to a consistent one-to-one renaming of their variables, which is
how two functions written separately (each with its own ``n``) are compared.
``structural_hash`` is consistent with both: equal expressions hash equally under the same flag.
"""

from __future__ import annotations

from .expr import ExprLike, FloatImm, IntImm, PrimExpr, Var
from .expr_functor import post_order_visit
from .op import convert

__all__ = ["structural_equal", "structural_hash"]


def structural_equal(lhs: ExprLike, rhs: ExprLike, map_free_vars: bool = False) -> bool:
    """Whether two expressions have the same structure.

    Parameters
    ----------
    lhs, rhs : PrimExpr or number
        The expressions (Python numbers are wrapped as constants first).
    map_free_vars : bool
        If False, a variable only equals itself. If True, variables of ``lhs`` may stand for
        variables of ``rhs`` of the same kind and type, as long as the pairing is one-to-one
        and used consistently throughout.

    Returns
    -------
    bool
    """
    a, b = convert(lhs), convert(rhs)
    if not map_free_vars:
        return a == b
    forward: dict[Var, Var] = {}
    backward: dict[Var, Var] = {}
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y) or x.dtype != y.dtype:
            return False
        if isinstance(x, Var) and isinstance(y, Var):
            # A Var is hashed by identity, so these dicts pair variable objects.
            if forward.setdefault(x, y) is not y or backward.setdefault(y, x) is not x:
                return False
        elif isinstance(x, (IntImm, FloatImm)):
            if x != y:
                return False
        else:
            # Reversed so that variables are paired in left-to-right order of appearance.
            pending.extend(reversed(list(zip(x.operands, y.operands, strict=True))))
    return True


def structural_hash(expr: ExprLike, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` under the same ``map_free_vars``.

    With ``map_free_vars=False`` this is ``hash(expr)``. With ``True`` each variable is hashed
    by its kind, type and order of first appearance instead of its identity.
    """
    root = convert(expr)
    if not map_free_vars:
        return hash(root)
    var_index: dict[Var, int] = {}
    hashes: dict[int, int] = {}

    def visit(node: PrimExpr) -> None:
        # Children come first (left to right), so variables are numbered in order of appearance.
        if isinstance(node, Var):
            index = var_index.setdefault(node, len(var_index))
            hashes[id(node)] = hash((type(node).__name__, node.dtype, "var", index))
        elif isinstance(node, (IntImm, FloatImm)):
            hashes[id(node)] = hash(node)
        else:
            children = (hashes[id(op)] for op in node.operands)
            hashes[id(node)] = hash((type(node).__name__, node.dtype, *children))

    post_order_visit(root, visit)
    return hashes[id(root)]
