"""Pieces every Relax node shares: source spans, immutability and the expression base class.

This module imports nothing from the rest of the Relax package, so :mod:`.struct_info` and
:mod:`.expr` can both build on it without importing each other at load time.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import VMTypeError

if TYPE_CHECKING:
    from .struct_info import StructInfo

__all__ = [
    "RelaxExpr",
    "RelaxNode",
    "Span",
    "check_expr",
    "check_name",
    "frozen_attrs",
    "update_struct_info",
]


class Span:
    """A source location, used to point error messages at the script text.

    Parameters
    ----------
    source_name : str
        The file name (or ``"<string>"`` for source given as text).
    line, column : int
        One-based line and column where the construct starts.
    end_line, end_column : int, optional
        Where it ends; default to the start.
    """

    __slots__ = ("column", "end_column", "end_line", "line", "source_name")

    def __init__(
        self,
        source_name: str,
        line: int,
        column: int,
        end_line: int | None = None,
        end_column: int | None = None,
    ) -> None:
        self.source_name = source_name
        self.line = line
        self.column = column
        self.end_line = line if end_line is None else end_line
        self.end_column = column if end_column is None else end_column

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Span):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (self.source_name, self.line, self.column, self.end_line, self.end_column)

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"

    def __repr__(self) -> str:
        return f"Span({self.source_name!r}, {self.line}, {self.column})"


class RelaxNode:
    """Base of Relax IR nodes: fields are fixed once the constructor has run.

    Nodes are shared between functions and passes, so changing one in place would silently
    change every place that holds it; passes build new nodes instead. Equality and hashing are
    by identity, as in TVM; use :func:`relaxvm.ir.relax.structural_equal` to compare structure.
    """

    __slots__ = ()

    def _init_field(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"{type(self).__name__} is immutable; build a new node (field {name!r})"
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __copy__(self) -> RelaxNode:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> RelaxNode:
        # Immutable, and a copied Var would be a different variable: copies are the original.
        return self

    def __str__(self) -> str:
        from .text import node_to_str

        return node_to_str(self)

    # Assigned, not defined, so that subclasses keep their own narrower ``script`` signatures
    # (``Function.script(name)``, ``StructInfo.script()``) while other nodes take TVM's options.
    script: Any = None

    def __repr__(self) -> str:
        return str(self)


class RelaxExpr(RelaxNode):
    """Base of every Relax expression.

    As in TVM, ``x + y``, ``x - y``, ``x * y``, ``x / y``, ``x // y``, ``x ** y`` and ``-x`` on
    Relax expressions build the op calls (``R.add(x, y)`` ...). A Python number on either side
    raises :class:`~relaxvm.errors.VMTypeError` naming the call to write instead, e.g.
    ``R.multiply(x, R.const(2, "float32"))`` with the dtype of ``x``.

    Attributes
    ----------
    struct_info : StructInfo or None
        What is statically known about the value. Leaves derive it on construction; calls get
        it from the normalizer (``BlockBuilder``), so it may be None until then.
    span : Span or None
        Where the expression was written, for error messages.
    """

    __slots__ = ("span", "struct_info")
    struct_info: StructInfo | None
    span: Span | None

    def _init_expr(self, struct_info: StructInfo | None, span: Span | None) -> None:
        from .struct_info import StructInfo

        if struct_info is not None and not isinstance(struct_info, StructInfo):
            raise VMTypeError(
                f"{type(self).__name__}: struct_info must be a StructInfo, got "
                f"{type(struct_info).__name__}"
            )
        if span is not None and not isinstance(span, Span):
            raise VMTypeError(
                f"{type(self).__name__}: span must be a Span, got {type(span).__name__}"
            )
        self._init_field("struct_info", struct_info)
        self._init_field("span", span)

    # ---- Python operators (TVM's ExprWithOp) ------------------------------------------------
    # ``x + y`` builds ``R.add(x, y)``; a Python number raises a VMTypeError giving the call
    # to write with R.const (see _operators). Imported late: _operators needs the op package.
    def __add__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("add", self, other)

    def __radd__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("add", other, self)

    def __sub__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("subtract", self, other)

    def __rsub__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("subtract", other, self)

    def __mul__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("multiply", self, other)

    def __rmul__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("multiply", other, self)

    def __truediv__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("divide", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("divide", other, self)

    def __floordiv__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("floor_divide", self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("floor_divide", other, self)

    def __pow__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("power", self, other)

    def __rpow__(self, other: Any) -> Any:
        from ._operators import binary

        return binary("power", other, self)

    def __neg__(self) -> Any:
        from ._operators import unary

        return unary("negative", self)


def _node_script(self: RelaxNode, **options: Any) -> str:
    """The script text of this node (TVM's ``Object.script``).

    Parameters
    ----------
    **options
        TVM's printer options: ``show_meta``, ``verbose_expr`` (print the definitions of
        the expression's free variables first), ``indent_spaces``,
        ``print_line_numbers``; the rest only at TVM's defaults
        (see :mod:`relaxvm.ir.relax.text_options`).
    """
    from .struct_info import StructInfo
    from .text_options import apply_layout, script_options
    from .text_verbose import verbose_definitions, verbose_script

    opts = script_options(type(self).__name__, **options)
    if not opts.verbose_expr:
        # Statements print as statements (an If as Python if/else), as TVM; the rest as
        # one expression.
        text = verbose_script(self, declare=False) if _is_statement(self) else str(self)
    elif isinstance(self, StructInfo):
        text = "\n".join([*verbose_definitions(self), str(self)])
    else:
        text = verbose_script(self)
    return apply_layout(text, opts)


def _is_statement(node: RelaxNode) -> bool:
    from .block import Binding, BindingBlock, SeqExpr
    from .expr import If

    return isinstance(node, (Binding, BindingBlock, SeqExpr, If))


RelaxNode.script = _node_script


def update_struct_info(expr: RelaxExpr, struct_info: StructInfo) -> None:
    """Attach derived struct info to an expression that has none yet (the normalizer's job).

    Raises
    ------
    VMTypeError
        If ``struct_info`` is not a StructInfo.
    AttributeError
        If ``expr`` already has struct info: replacing it would change the meaning of every
        place that already relies on it.
    """
    from .struct_info import StructInfo

    if not isinstance(struct_info, StructInfo):
        raise VMTypeError(
            f"update_struct_info: expected a StructInfo, got {type(struct_info).__name__}"
        )
    if expr.struct_info is not None:
        raise AttributeError(
            f"update_struct_info: {type(expr).__name__} already has struct info "
            f"{expr.struct_info}; build a new expression instead"
        )
    object.__setattr__(expr, "struct_info", struct_info)


# ---- argument checks shared by the node constructors ---------------------------------------
def check_name(where: str, name: Any) -> str:
    """``name`` if it is a non-empty str, else a VMTypeError naming ``where``."""
    if not isinstance(name, str) or not name:
        raise VMTypeError(f"{where}: name must be a non-empty str, got {name!r}")
    return name


def check_expr(where: str, value: Any) -> RelaxExpr:
    """``value`` if it is a Relax expression, else a VMTypeError naming ``where``."""
    if not isinstance(value, RelaxExpr):
        raise VMTypeError(f"{where}: expected a Relax expression, got {type(value).__name__}")
    return value


def frozen_attrs(where: str, attrs: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A read-only copy of an attribute dict (so nodes stay immutable)."""
    if attrs is None:
        return None
    if not isinstance(attrs, Mapping):
        raise VMTypeError(f"{where}: attrs must be a mapping, got {type(attrs).__name__}")
    for key in attrs:
        if not isinstance(key, str):
            raise VMTypeError(f"{where}: attribute names must be str, got {key!r}")
    return types.MappingProxyType(dict(attrs))
