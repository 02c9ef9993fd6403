"""Walking expressions: visiting, free variables, substitution and evaluation.

Expressions may share subtrees (a DAG), so every walk here remembers the nodes it has already
handled, by identity, and does each one once.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import VMTypeError, VMValueError
from ._scalar import Scalar, cast_scalar, fits_dtype, is_bool_dtype, is_float_dtype, is_int_dtype
from .expr import (
    Add,
    And,
    BinaryOpExpr,
    Cast,
    ExprLike,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
)
from .op import const, convert

__all__ = ["evaluate", "free_vars", "post_order_visit", "substitute"]

#: What :func:`substitute` accepts: a mapping from variables, or a function of a variable.
VarMap = Mapping[Var, ExprLike] | Callable[[Var], ExprLike | None]


def post_order_visit(expr: PrimExpr, visit: Callable[[PrimExpr], Any]) -> None:
    """Call ``visit(node)`` on every distinct node of ``expr``, children before parents."""
    seen: set[int] = set()
    # Explicit stack: (node, children_done). Deep left-leaning sums must not hit Python's
    # recursion limit.
    stack: list[tuple[PrimExpr, bool]] = [(expr, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            visit(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.operands))


def free_vars(expr: ExprLike) -> list[Var]:
    """The variables in ``expr``, each once, in order of first appearance (left to right)."""
    found: dict[Var, None] = {}
    seen: set[int] = set()
    stack = [convert(expr)]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Var):
            found.setdefault(node)
        stack.extend(reversed(node.operands))
    return list(found)


def _replacement(var: Var, value: ExprLike) -> PrimExpr:
    if isinstance(value, PrimExpr):
        expr = value
    elif isinstance(value, (int, float)):
        expr = const(value, var.dtype)
    else:
        raise VMTypeError(
            f"substitute: the value for variable '{var.name}' must be a PrimExpr or a number, "
            f"got {type(value).__name__}"
        )
    if expr.dtype != var.dtype:
        raise VMTypeError(
            f"substitute: variable '{var.name}' has type {var.dtype} but its replacement "
            f"`{expr}` has type {expr.dtype}; cast the replacement first"
        )
    return expr


def substitute(expr: ExprLike, vmap: VarMap) -> PrimExpr:
    """Replace variables in ``expr``; the result is rebuilt without any simplification.

    Parameters
    ----------
    expr : PrimExpr or number
        The expression.
    vmap : mapping or callable
        ``{var: replacement}``, or a function returning the replacement for a variable (or
        None to keep it). Replacements are expressions or Python numbers and must have the
        variable's type.

    Returns
    -------
    PrimExpr
        ``expr`` itself when nothing was replaced.
    """
    root = convert(expr)
    if callable(vmap) and not isinstance(vmap, Mapping):
        lookup = vmap
    else:
        for key in vmap:
            if not isinstance(key, Var):
                raise VMTypeError(f"substitute: keys must be Vars, got {key!r}")
        lookup = vmap.get
    done: dict[int, PrimExpr] = {}
    # Iterative post-order (deep sums must not hit the recursion limit); each node's operands
    # are read once, and a node none of whose operands changed is kept as it is.
    stack: list[tuple[PrimExpr, tuple[PrimExpr, ...] | None]] = [(root, None)]
    while stack:
        node, operands = stack.pop()
        if operands is None:
            if id(node) in done:
                continue
            if isinstance(node, Var):
                value = lookup(node)
                done[id(node)] = node if value is None else _replacement(node, value)
                continue
            operands = node.operands
            if not operands:
                done[id(node)] = node
                continue
            stack.append((node, operands))
            stack.extend((op, None) for op in reversed(operands) if id(op) not in done)
            continue
        new = tuple(done[id(op)] for op in operands)
        changed = False
        for a, b in zip(new, operands, strict=True):
            if a is not b:
                changed = True
                break
        done[id(node)] = node.with_operands(*new) if changed else node
    return done[id(root)]


def _input_value(var: Var, value: Any) -> Scalar:
    """Check and normalise the value given for ``var`` in :func:`evaluate`."""
    if isinstance(value, (IntImm, FloatImm)):
        value = value.value
    elif isinstance(value, PrimExpr):
        raise VMTypeError(
            f"evaluate: the value of variable '{var.name}' is the symbolic expression `{value}`; "
            "use substitute() for symbolic replacement"
        )
    dtype = var.dtype
    if is_float_dtype(dtype):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise VMTypeError(
                f"evaluate: variable '{var.name}' ({dtype}) needs a number, got {value!r}"
            ) from None
    if not (is_int_dtype(dtype) or is_bool_dtype(dtype)):
        raise VMTypeError(f"evaluate: variable '{var.name}' has non-numeric type {dtype}")
    try:
        number = operator.index(value)
    except TypeError:
        raise VMTypeError(
            f"evaluate: variable '{var.name}' ({dtype}) needs an int, got {value!r}"
        ) from None
    if not fits_dtype(number, dtype):
        raise VMValueError(f"evaluate: value {number} of variable '{var.name}' overflows {dtype}")
    return bool(number) if is_bool_dtype(dtype) else int(number)


def evaluate(expr: ExprLike, bindings: Mapping[Var, Any] | None = None) -> Scalar:
    """Compute the value of ``expr`` with the variables set to the given numbers.

    Integer arithmetic is exact (Python ints, no overflow); ``//`` and ``%`` are floor
    division and modulo; ``Cast`` to a narrower integer wraps. ``Select``, ``and`` and ``or``
    evaluate only the operand they need.

    Parameters
    ----------
    expr : PrimExpr or number
        The expression.
    bindings : mapping of Var to number, optional
        A value for every free variable of ``expr``.

    Returns
    -------
    int, float or bool
        By the expression's type: ``bool`` for comparisons and logic, ``float`` for float types.

    Raises
    ------
    VMValueError
        When a variable has no value, or a division or modulo by zero happens (the message
        names the sub-expression).
    """
    values: dict[Var, Scalar] = {}
    for var, value in (bindings or {}).items():
        if not isinstance(var, Var):
            raise VMTypeError(f"evaluate: binding keys must be Vars, got {var!r}")
        values[var] = _input_value(var, value)
    memo: dict[int, Scalar] = {}
    return _eval(convert(expr), values, memo)


def _eval(node: PrimExpr, values: dict[Var, Scalar], memo: dict[int, Scalar]) -> Scalar:
    cached = memo.get(id(node))
    if cached is not None:
        return cached
    result = _eval_node(node, values, memo)
    memo[id(node)] = result
    return result


def _eval_node(node: PrimExpr, values: dict[Var, Scalar], memo: dict[int, Scalar]) -> Scalar:
    if isinstance(node, Var):
        if node not in values:
            raise VMValueError(
                f"evaluate: variable '{node.name}' ({node.dtype}) has no value; pass it in "
                f"the bindings, e.g. evaluate(expr, {{{node.name}: 3}})"
            )
        return values[node]
    if isinstance(node, IntImm):
        return bool(node.value) if is_bool_dtype(node.dtype) else node.value
    if isinstance(node, FloatImm):
        return node.value
    if isinstance(node, And):
        return bool(_eval(node.a, values, memo)) and bool(_eval(node.b, values, memo))
    if isinstance(node, Or):
        return bool(_eval(node.a, values, memo)) or bool(_eval(node.b, values, memo))
    if isinstance(node, Not):
        return not _eval(node.a, values, memo)
    if isinstance(node, Select):
        chosen = node.true_value if _eval(node.condition, values, memo) else node.false_value
        return _eval(chosen, values, memo)
    if isinstance(node, Cast):
        return cast_scalar(_eval(node.value, values, memo), node.dtype)
    if isinstance(node, (Add, Sub)) and is_int_dtype(node.dtype):
        # Long sums are left-deep chains: walk the spine in a loop instead of recursing.
        spine: list[PrimExpr] = []
        while isinstance(node, (Add, Sub)) and id(node) not in memo:
            spine.append(node)
            node = node.a
        total = _eval(node, values, memo)
        for link in reversed(spine):
            right = _eval(link.b, values, memo)  # type: ignore[attr-defined]
            total = total + right if isinstance(link, Add) else total - right
            memo[id(link)] = total
        return total
    if isinstance(node, BinaryOpExpr):
        a = _eval(node.a, values, memo)
        b = _eval(node.b, values, memo)
        try:
            result = node._scalar_fn(a, b)
        except ZeroDivisionError:
            raise VMValueError(
                f"evaluate: division by zero in `{node}` (the divisor `{node.b}` is 0)"
            ) from None
        if is_float_dtype(node.dtype):
            return float(result)
        if is_bool_dtype(node.dtype):
            return bool(result)
        return int(result)
    # Nodes defined outside this layer (TIR intrinsic calls, BufferLoad) evaluate themselves,
    # given a function that evaluates a child; they may skip children (if_then_else).
    custom = getattr(node, "_evaluate", None)
    if custom is not None:
        return custom(lambda child: _eval(child, values, memo))  # type: ignore[no-any-return]
    raise VMTypeError(f"evaluate: cannot evaluate a {type(node).__name__} node")
