"""Structural equality and hashing of every IR node, with optional mapping of free variables.

One comparison serves the whole IR (TVM's ``tvm.ir.structural_equal``): symbolic expressions
(``PrimExpr``), TIR buffers, statements and ``PrimFunc`` s, Relax expressions, bindings,
blocks, functions and struct info, whole ``IRModule`` s, and the lists, tuples, dicts and
plain values found in attributes.

How variables correspond
    Variables (TIR ``Var``, Relax ``Var`` / ``DataflowVar``) and TIR ``Buffer`` s are not
    compared by name. Where one is *defined* (a Relax function parameter or binding target, a
    TIR loop or let variable, a ``PrimFunc`` parameter and its buffer, an ``Allocate`` d
    buffer), it is paired with the variable at the same place on the other side, and every
    later use must follow that pairing. A symbolic variable is defined where it first appears
    in a definition position: a Relax parameter's or binding variable's annotation, a
    ``match_cast`` pattern, the shape of a ``PrimFunc`` parameter buffer. A buffer is
    defined where it first appears, wherever that is (as in TVM, which compares buffers by
    content and treats their data pointer and shape as definitions): two ``PrimFunc`` bodies
    that read their own parameter buffers compare equal without the functions around them.
    The one exception is a bare ``PrimExpr`` compared with ``map_free_vars=False``: that is
    the expression's own ``==``, where variables and buffers are equal only to themselves
    (TVM's ``ExprDeepEqual``), so that ``A[i]`` never equals ``B[i]`` for the analyzer.
    Any other variable is *free*: equal only to itself, unless ``map_free_vars=True``, which
    pairs free variables one-to-one on first appearance as well. So two functions written
    separately compare equal, while ``n + 1`` and ``m + 1`` only compare equal with
    ``map_free_vars=True``.
Everything else
    Node types, data types and constants must match; global functions and operators compare
    by name; a Relax expression's derived struct info is not compared (a variable's
    annotation is); source spans and variable names are ignored.

:func:`structural_hash` is consistent with :func:`structural_equal` under the same
``map_free_vars``: both read the same pre-order token stream of each side (see
:mod:`relaxvm.ir._structural_fields`, which says for each node kind what the stream holds), so
equal nodes cannot hash differently. :func:`assert_structural_equal` reports where the two
sides first differ as a path such as ``<root>.functions["main"].body.blocks[0].bindings[1]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from ..errors import VMValueError
from .expr_base import PrimExpr

__all__ = [
    "StructuralEqualError",
    "assert_structural_equal",
    "structural_equal",
    "structural_hash",
]

# Roles of a position: a use, a definition (always pairs anew: a loop variable reused by two
# sibling loops is defined twice), a definition unless already defined (a symbolic variable
# in an annotation), and the internal "bind now" step that follows a definition's annotation.
# ISOLATED walks a use in a fresh scope of variables: the functions of a module are closed,
# so a symbolic `n` that two of them share (as emit_te makes) is defined anew in each.
USE, DEF, DEF_FIRST, ISOLATED, _BIND, _EXIT = 0, 1, 2, 3, 4, 5
#: A reflector's ``is_var`` for nodes that a use defines when nothing defined them before (a
#: TIR buffer: TVM compares buffers by content, with the data pointer and shape as
#: definitions, so a buffer first met in a body pairs with the buffer at the same place).
DEFINED_BY_FIRST_USE = 2

#: One step of the walk: the token compared or hashed, the path to it, and the value there.
_Item = tuple[tuple[Any, ...], Any, Any]
#: A path, as a linked list of labels: ``None`` for the root, else ``(parent, label)``.
_Path = tuple[Any, str | int] | None


class StructuralEqualError(VMValueError):
    """Two pieces of IR are not structurally equal (raised by :func:`assert_structural_equal`).

    A ``ValueError``, as TVM raises.

    Attributes
    ----------
    path : str
        Where the left-hand side differs, e.g. ``<root>.body.blocks[0].bindings[1].value``.
    rhs_path : str
        The same place on the right-hand side (differs from ``path`` only in labels that
        name things, such as buffer names).
    lhs, rhs
        The values at that place.
    reason : str
        What differs there (node types, a field, a length, a variable pairing).
    """

    def __init__(self, path: str, rhs_path: str, lhs: Any, rhs: Any, reason: str) -> None:
        where = path if rhs_path == path else f"{path} (right: {rhs_path})"
        super().__init__(
            f"structural_equal: the two sides differ at {where}: {reason}\n"
            f"  left:  {_describe(lhs)}\n"
            f"  right: {_describe(rhs)}"
        )
        self.path = path
        self.rhs_path = rhs_path
        self.lhs = lhs
        self.rhs = rhs
        self.reason = reason


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Whether two IR nodes have the same structure (TVM's ``tvm.ir.structural_equal``).

    Parameters
    ----------
    lhs, rhs
        Any IR: ``IRModule``, Relax functions, expressions, bindings, blocks and struct info,
        ``PrimFunc``, TIR statements, buffers, ``PrimExpr`` s (Python numbers are wrapped as
        constants when compared with an expression), or lists/dicts of them.
    map_free_vars : bool
        If False, a free variable only equals itself. If True, free variables of ``lhs`` may
        stand for free variables of ``rhs`` of the same kind and type, as long as the pairing
        is one-to-one and consistent. Defined variables are paired in either case.

    Returns
    -------
    bool

    Examples
    --------
    >>> from relaxvm.ir import Var, structural_equal
    >>> n, m = Var("n"), Var("m")
    >>> structural_equal(n + 1, m + 1), structural_equal(n + 1, m + 1, map_free_vars=True)
    (False, True)
    """
    lhs, rhs = _convert_roots(lhs, rhs)
    if not map_free_vars and isinstance(lhs, PrimExpr) and isinstance(rhs, PrimExpr):
        # The expressions' own ``==`` (free variables and buffers by identity, as TVM's
        # ExprDeepEqual); it is cached per node, which keeps the many small shape
        # comparisons of passes cheap, and the arithmetic analyzer relies on it never
        # equating loads from two different buffers.
        return lhs == rhs
    return _first_difference(lhs, rhs, map_free_vars) is None


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise unless ``lhs`` and ``rhs`` are structurally equal (see :func:`structural_equal`).

    Raises
    ------
    StructuralEqualError
        A ``ValueError`` whose message gives the path to the first difference, e.g.
        ``<root>.functions["main"].body.blocks[0].bindings[1].value.args[0]``, what differs
        there, and both values.
    """
    lhs, rhs = _convert_roots(lhs, rhs)
    found = _first_difference(lhs, rhs, map_free_vars)
    if found is not None:
        raise _mismatch_error(*found)


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` under the same ``map_free_vars``.

    Defined variables hash by the order of their definition, free ones by identity (or, with
    ``map_free_vars=True``, by order of first appearance). For a ``PrimExpr`` with
    ``map_free_vars=False`` this is ``hash(expr)``.
    """
    (root,) = _convert_roots(node)
    if not map_free_vars and isinstance(root, PrimExpr):
        return hash(root)
    return hash(tuple(token for token, _, _ in _walk(root, map_free_vars)))


# ---- the walk -----------------------------------------------------------------------------
def _convert_roots(*roots: Any) -> tuple[Any, ...]:
    """Wrap Python numbers as constants when every root is an expression or a number."""
    if all(isinstance(r, (PrimExpr, int, float)) for r in roots):
        from .op import convert

        return tuple(convert(r) for r in roots)
    return roots


def _first_difference(lhs: Any, rhs: Any, map_free_vars: bool) -> tuple[Any, Any] | None:
    # Each side's stream depends only on that side, so comparing them in lockstep is the
    # equality, and hashing one of them is the hash.
    left, right = _walk(lhs, map_free_vars), _walk(rhs, map_free_vars)
    for a, b in itertools.zip_longest(left, right):
        if a is None or b is None or a[0] != b[0]:
            return a, b
    return None


_fields_module: ModuleType | None = None
_SEQ, _MAP, _LEAF = "seq", "map", "leaf"
#: How to walk a value of each type seen so far: a sequence, a mapping, a leaf, or a node as
#: ``(reflect, field names, type name)``.
_how: dict[type, Any] = {}


def _classify(kind: type) -> Any:
    global _fields_module
    if _fields_module is None:
        # The node modules (Relax, TIR) import this module's functions, so the table that
        # imports them is loaded on first use rather than at import time.
        from . import _structural_fields

        _fields_module = _structural_fields
    table = _fields_module.REFLECTORS
    found = next((table[base] for base in kind.__mro__ if base in table), None)
    how: Any
    if found is not None:
        how = (found[0], found[1], kind.__name__)
    elif kind is list or kind is tuple:
        how = _SEQ
    else:
        how = _MAP if issubclass(kind, Mapping) else _LEAF
    _how[kind] = how
    return how


def _walk(root: Any, map_free_vars: bool) -> Iterator[_Item]:
    """Yield ``(token, path, value)`` for every node of ``root`` in pre-order.

    A token is a tuple of hashable keys: a node's type name, fields and number of children,
    a sequence's length, a mapping's keys, a leaf's type and value; for a variable,
    ``("def", type name, fields)`` where it is defined, ``("ref", number)`` where a defined one
    is used (the number counts definitions, so two sides in lockstep number alike), and
    ``("free", id)`` otherwise.
    """
    numbers: dict[int, int] = {}  # id(variable) -> the definition that last bound it
    outer: list[dict[int, int]] = []  # the scopes that ISOLATED positions set aside
    defined = 0
    stack: list[tuple[Any, int, _Path]] = [(root, USE, None)]
    pop, push = stack.pop, stack.append
    while stack:
        node, role, path = pop()
        if role >= ISOLATED:
            if role == _BIND:
                numbers[id(node)] = defined
                defined += 1
                continue
            if role == _EXIT:
                numbers = outer.pop()
                continue
            outer.append(numbers)
            numbers = {}
            push((None, _EXIT, path))
            role = USE
        kind = type(node)
        how = _how.get(kind) or _classify(kind)
        if how is _SEQ:
            yield ("seq", len(node)), path, node
            for index in range(len(node) - 1, -1, -1):
                push((node[index], role, (path, index)))
        elif how is _MAP:
            keys = _sorted_keys(node)
            yield ("map", *map(_key, keys)), path, node
            for key in reversed(keys):
                push((node[key], role, (path, _map_label(key))))
        elif how is _LEAF:
            yield ("leaf", _key(node)), path, node
        else:
            is_var, values, children = how[0](node)
            if is_var:
                number = numbers.get(id(node))
                if number is None and is_var == DEFINED_BY_FIRST_USE and role == USE:
                    role = DEF_FIRST
                if not (role == DEF or (number is None and (role == DEF_FIRST or map_free_vars))):
                    yield (("free", id(node)) if number is None else ("ref", number)), path, node
                    continue
                yield ("def", how[2], *values), path, node
                # Bound after its annotation (the children), which may define symbolic
                # variables first: in `x: R.Tensor((n,))` the `n` is numbered before `x`.
                push((node, _BIND, path))
            else:
                yield (how[2], *values, len(children)), path, node
            for label, child, child_role in reversed(children):
                push((child, role if child_role is None else child_role, (path, label)))


# ---- keys: hashable, type-strict stand-ins for leaf values --------------------------------
class _Opaque:
    """An unhashable leaf (a set, an object without ``__hash__``): equal by ``==``, hashed by
    type only, which keeps the hash consistent with that equality."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Opaque):
            return NotImplemented
        if type(self.value) is not type(other.value):  # the hash is by type
            return False
        try:
            return bool(self.value == other.value)
        except (TypeError, ValueError):  # e.g. numpy's element-wise ==
            return self.value is other.value

    def __hash__(self) -> int:
        return hash(type(self.value).__qualname__)


def _key(value: Any) -> Any:
    kind = type(value)
    if value is None or kind is str:
        return value
    if kind is float and value != value:
        # Every NaN object hashes differently, but a NaN constant is one structure.
        return ("float", "nan")
    if kind.__module__ == "numpy" and hasattr(value, "tobytes"):
        return (kind.__qualname__, str(value.dtype), tuple(value.shape), value.tobytes())
    try:
        hash(value)
    except TypeError:
        return _Opaque(value)
    # The type too: 1, 1.0 and True are equal in Python, but not as IR.
    return (kind.__qualname__, value)


def _sorted_keys(mapping: Mapping[Any, Any]) -> list[Any]:
    try:
        return sorted(mapping)
    except TypeError:
        return sorted(mapping, key=repr)


def _map_label(key: Any) -> str:
    return f'["{key}"]' if isinstance(key, str) else f"[{key!r}]"


# ---- reporting ----------------------------------------------------------------------------
def _path_text(path: _Path) -> str:
    labels: list[str] = []
    while path is not None:
        path, label = path
        labels.append(f"[{label}]" if isinstance(label, int) else label)
    return "<root>" + "".join(reversed(labels))


def _describe(value: Any) -> str:
    # IR nodes print as script (str); plain values and nodes without a printer by repr.
    use_str = type(value).__str__ is not object.__str__ and not isinstance(value, str)
    try:
        text = str(value) if use_str else repr(value)
    except Exception:  # a failing printer must not hide the mismatch being reported
        text = object.__repr__(value)
    lines = text.splitlines() or [""]
    first = lines[0] + (" ..." if len(lines) > 1 else "")
    return first if len(first) <= 200 else first[:197] + "..."


def _mismatch_error(left: _Item | None, right: _Item | None) -> StructuralEqualError:
    if left is None or right is None:
        # Streams describe their own extent, so one cannot end early while all tokens so
        # far matched; kept so that a bug here still reports rather than crashes.
        only = left if left is not None else right
        path = _path_text(only[1]) if only is not None else "<root>"
        values = (None if left is None else left[2], None if right is None else right[2])
        return StructuralEqualError(path, path, *values, "one side has more nodes")
    (a, a_path, a_value), (b, b_path, b_value) = left, right
    return StructuralEqualError(
        _path_text(a_path), _path_text(b_path), a_value, b_value, _reason(a, b, a_value)
    )


def _reason(a: tuple[Any, ...], b: tuple[Any, ...], node: Any) -> str:
    """What differs between two tokens (``node`` is the left-hand value they describe)."""
    head_a, head_b = a[0], b[0]
    if head_a == head_b == "seq":
        return f"different lengths ({a[1]} vs {b[1]})"
    if head_a == head_b == "map":
        return f"different keys ({_keys_text(a[1:])} vs {_keys_text(b[1:])})"
    if head_a == head_b == "free":
        return "different free variables (pass map_free_vars=True to pair them)"
    if head_a == head_b == "ref":
        return "variables bound by different definitions"
    kinds = {"def": "a definition", "ref": "a defined variable", "free": "a free variable"}
    if head_a in kinds or head_b in kinds:
        if head_a == head_b == "def" and a[1] == b[1]:
            return _field_reason(a[2:], b[2:], node)
        if head_a == head_b == "def":
            return f"different variable kinds ({a[1]} vs {b[1]})"
        return f"{kinds.get(head_a, 'a node')} against {kinds.get(head_b, 'a node')}"
    if head_a == head_b == "leaf":
        return f"different values ({_value_text(a[1])} vs {_value_text(b[1])})"
    if head_a != head_b:
        return f"different node types ({_kind_text(a)} vs {_kind_text(b)})"
    return _field_reason(a[1:], b[1:], node)


def _field_reason(a: tuple[Any, ...], b: tuple[Any, ...], node: Any) -> str:
    how = _how.get(type(node))
    names = how[1] if isinstance(how, tuple) else ()
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            name = names[index] if index < len(names) else "number of children"
            return f"different {name} ({_value_text(x)} vs {_value_text(y)})"
    return "different fields"


def _kind_text(token: tuple[Any, ...]) -> str:
    if token[0] == "leaf":
        key = token[1]
        return key[0] if isinstance(key, tuple) else type(key).__name__
    return {"seq": "sequence", "map": "mapping"}.get(token[0], str(token[0]))


def _value_text(key: Any) -> str:
    # Leaf keys are (type name, value); show the value.
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str):
        key = key[1]
    return repr(key) if isinstance(key, str) else str(key)


def _keys_text(keys: tuple[Any, ...]) -> str:
    return "[" + ", ".join(_value_text(k) for k in keys) + "]"
