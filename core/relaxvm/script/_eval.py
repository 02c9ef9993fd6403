"""Evaluation of Python expressions in scripts, shared by the Relax and TIR parsers.

Scripts are never executed by Python: the parsers walk the AST and evaluate each expression
here, looking names up in nested scopes (script variables) and then in the environment the
script was written in (``R``, ``T``, ``I``, constants). Calls of namespace functions (``R.add``,
``T.exp``) run the real builders; every exception they raise becomes a :class:`ScriptError`
pointing at the innermost expression that failed.
"""

from __future__ import annotations

import ast
import builtins
import contextvars
import difflib
import inspect
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import RelaxVMError
from ..ir import SizeVar
from ..ir import Var as SymVar
from ..ir.expr import PrimExpr
from ..ir.op import logical_and, logical_not, logical_or
from ._source import ScriptError, Source

__all__ = ["Evaluator", "active_parser", "symbolic_dim"]

_ACTIVE: contextvars.ContextVar[Evaluator | None] = contextvars.ContextVar(
    "relaxvm_script_parser", default=None
)

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: lambda a, b: a.equal(b) if isinstance(a, PrimExpr) else a == b,
    ast.NotEq: lambda a, b: a.not_equal(b) if isinstance(a, PrimExpr) else a != b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
# Builtins a script may use in expressions (loop ranges, constants); anything else is unknown.
_SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in ("range", "len", "int", "float", "bool", "str", "tuple", "list", "dict")
}
_SAFE_BUILTINS.update({"True": True, "False": False, "None": None})

#: Python constructs with a name for the "not supported" message.
CONSTRUCT_NAMES: dict[type, str] = {
    ast.While: "`while` loop",
    ast.Try: "`try` statement",
    ast.Lambda: "`lambda`",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Yield: "`yield`",
    ast.YieldFrom: "`yield from`",
    ast.Await: "`await`",
    ast.NamedExpr: "`:=` assignment expression",
    ast.Global: "`global` statement",
    ast.Nonlocal: "`nonlocal` statement",
    ast.Delete: "`del` statement",
    ast.Raise: "`raise` statement",
    ast.Assert: "`assert` statement",
    ast.Import: "`import` statement",
    ast.ImportFrom: "`import` statement",
    ast.ClassDef: "class definition",
    ast.Break: "`break`",
    ast.Continue: "`continue`",
    ast.IfExp: "conditional expression (`a if c else b`)",
    ast.Set: "set literal",
}


def construct_name(node: ast.AST) -> str:
    """A readable name of a Python construct for error messages."""
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return "`try` statement"
    return CONSTRUCT_NAMES.get(type(node), f"`{type(node).__name__}`")


def active_parser() -> Evaluator | None:
    """The parser evaluating a script right now (namespace functions ask it for names)."""
    return _ACTIVE.get()


def symbolic_dim(value: Any, where: str) -> Any:
    """A shape entry of ``R.Tensor``/``R.Shape``/``T.Buffer``: a string names a symbolic
    variable (``"n"``) or is an expression of them (``"n * 2"``); other values pass through."""
    if not isinstance(value, str):
        return value
    parser = active_parser()
    if parser is None:
        # Outside a parse (R.Tensor called from Python): each name is a fresh variable.
        tree = _parse_dim(value, where)
        names: dict[str, SymVar] = {}
        return _eval_dim(tree, lambda name: names.setdefault(name, SymVar(name)), where)
    return parser.dim_from_string(value, where)


def _parse_dim(text: str, where: str) -> ast.expr:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError(f"{where}: {text!r} is not a dimension name or expression") from None


def _eval_dim(tree: ast.expr, lookup: Callable[[str], Any], where: str) -> Any:
    if isinstance(tree, ast.Name):
        return lookup(tree.id)
    if isinstance(tree, ast.Constant) and isinstance(tree.value, int):
        return tree.value
    if isinstance(tree, ast.BinOp) and type(tree.op) in _BINOPS:
        left = _eval_dim(tree.left, lookup, where)
        right = _eval_dim(tree.right, lookup, where)
        return _BINOPS[type(tree.op)](left, right)
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.USub):
        return -_eval_dim(tree.operand, lookup, where)
    raise ValueError(
        f"{where}: a dimension string may hold names, integers and + - * // %, "
        f"got {ast.unparse(tree)!r}"
    )


class Evaluator:
    """Scopes and expression evaluation; the Relax and TIR parsers extend it.

    Parameters
    ----------
    source : Source
        The script text, for error positions.
    env : dict
        Names visible to the script from outside (the defining module's globals and the
        caller's locals, or what ``from_source`` set up).
    """

    #: How the parsed language is called in messages.
    language = "script"

    def __init__(self, source: Source, env: dict[str, Any]) -> None:
        self.source = source
        self.env = env
        self.scopes: list[dict[str, Any]] = [{}]
        #: Symbolic shape variables by name (``n`` of ``R.Tensor(("n", 4))``).
        self.sym_vars: dict[str, SymVar] = {}

    # ---- errors -----------------------------------------------------------------------------
    def error(self, node: ast.AST | None, message: str) -> ScriptError:
        return self.source.error(node, message)

    def unsupported(self, node: ast.AST, where: str) -> ScriptError:
        return self.error(node, f"{construct_name(node)} is not supported in {where}")

    # ---- scopes -----------------------------------------------------------------------------
    @contextmanager
    def scope(self) -> Iterator[dict[str, Any]]:
        self.scopes.append({})
        try:
            yield self.scopes[-1]
        finally:
            self.scopes.pop()

    @contextmanager
    def active(self) -> Iterator[None]:
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def define(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value

    def lookup_script(self, name: str) -> tuple[bool, Any]:
        for scope in reversed(self.scopes):
            if name in scope:
                return True, scope[name]
        if name in self.sym_vars:
            return True, self.sym_vars[name]
        return False, None

    def lookup(self, name: str, node: ast.AST) -> Any:
        found, value = self.lookup_script(name)
        if found:
            return value
        if name in self.env:
            return self.env[name]
        if name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        known = [n for scope in self.scopes for n in scope] + list(self.sym_vars)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise self.error(
            node,
            f"undefined name '{name}'{hint} (expected a variable defined earlier in the "
            f"{self.language}, a parameter, or a name from the enclosing Python module)",
        )

    def nonlocal_stmt(self, stmt: ast.Nonlocal) -> None:
        """``nonlocal x`` in a script function, as TVM's tests write it to capture a Python value
        of the enclosing function: a declaration with no effect (a plain read of ``x`` already
        finds that value), checked so that a misspelt name is an error here."""
        for name in stmt.names:
            if name not in self.env:
                raise self.error(
                    stmt,
                    f"nonlocal name '{name}' is not a variable of the enclosing Python scope",
                )

    def symbolic_var(self, name: str, dtype: str = "int64", size_var: bool = False) -> SymVar:
        """The symbolic variable called ``name``, made on first use (a ``SizeVar``, known to
        be non-negative, for ``n = T.int64(is_size_var=True)``)."""
        var = self.sym_vars.get(name)
        if var is None:
            var = (SizeVar if size_var else SymVar)(name, dtype)
            self.sym_vars[name] = var
        return var

    def dim_from_string(self, text: str, where: str) -> Any:
        def lookup(name: str) -> Any:
            found, value = self.lookup_script(name)
            if found and isinstance(value, PrimExpr):
                return value
            return self.symbolic_var(name)

        return _eval_dim(_parse_dim(text, where), lookup, where)

    # ---- expressions ------------------------------------------------------------------------
    def eval(self, node: ast.AST) -> Any:
        """The value of expression ``node``; failures become ScriptErrors at the innermost
        expression that failed."""
        try:
            return self._eval(node)
        except ScriptError:
            raise
        except Exception as err:
            raise self.wrap_error(node, err) from _cause(err)

    def wrap_error(self, node: ast.AST, err: Exception) -> ScriptError:
        """A ScriptError at ``node`` for an exception raised while handling it. Expected
        errors (bad arguments, inference) keep their message; anything else is reported as an
        internal error (and chained, see :func:`_cause`)."""
        if isinstance(err, _EXPECTED):
            return self.error(node, _describe(err))
        return self.error(node, f"internal error: {type(err).__name__}: {err}")

    def _eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, ast.Attribute):
            return self.eval_attribute(node)
        if isinstance(node, ast.Call):
            return self.eval_call(node)
        if isinstance(node, ast.Tuple):
            return tuple(self.eval_items(node.elts))
        if isinstance(node, ast.List):
            return list(self.eval_items(node.elts))
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise self.error(node, "`**` in a dict literal is not supported")
            return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.error(node, f"operator {type(node.op).__name__} is not supported")
            return self.binop(node, self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.UnaryOp):
            return self.unaryop(node, self.eval(node.operand))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            values = [self.eval(v) for v in node.values]
            if any(isinstance(v, PrimExpr) for v in values):
                combine = logical_and if isinstance(node.op, ast.And) else logical_or
                result = values[0]
                for value in values[1:]:
                    result = combine(result, value)
                return result
            if isinstance(node.op, ast.And):
                return all(values)
            return any(values)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, self.eval(node.value))
        if isinstance(node, ast.Slice):
            return slice(
                *(None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step))
            )
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        raise self.unsupported(node, f"{self.language} expressions")

    def fstring(self, node: ast.JoinedStr) -> str:
        """An f-string (``primfunc_name_hint=f"tir_{name}"``), formatted from the values its
        fields evaluate to, as Python would."""
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                value = self.eval(part.value)
                if part.conversion == ord("r"):
                    value = repr(value)
                elif part.conversion == ord("s"):
                    value = str(value)
                elif part.conversion == ord("a"):
                    value = ascii(value)
                spec = "" if part.format_spec is None else self.eval(part.format_spec)
                parts.append(format(value, spec))
            else:
                parts.append(str(self.eval(part)))
        return "".join(parts)

    def eval_lambda(self, node: ast.Lambda) -> Callable[..., Any]:
        """A ``lambda`` (``T.index_map(lambda i, j: (j, i))``): a function that evaluates the
        body with its parameters bound; only plain positional parameters are allowed."""
        arguments = node.args
        if (
            arguments.vararg
            or arguments.kwarg
            or arguments.kwonlyargs
            or arguments.defaults
            or arguments.posonlyargs
        ):
            raise self.error(node, "a `lambda` in a script takes plain positional parameters only")
        names = [a.arg for a in arguments.args]

        def function(*values: Any) -> Any:
            if len(values) != len(names):
                raise self.error(
                    node, f"the `lambda` takes {len(names)} arguments, got {len(values)}"
                )
            with self.scope():
                for name, value in zip(names, values, strict=True):
                    self.define(name, value)
                return self.eval(node.body)

        # IndexMap.from_func reads the parameter names from the signature.
        function.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        )
        return function

    def eval_items(self, nodes: list[ast.expr]) -> list[Any]:
        items: list[Any] = []
        for item in nodes:
            if isinstance(item, ast.Starred):
                items.extend(self.eval(item.value))
            else:
                items.append(self.eval(item))
        return items

    def eval_attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        try:
            return getattr(base, node.attr)
        except AttributeError as err:
            if getattr(base, "_explains_missing_attributes", False):
                raise self.error(node, str(err)) from None
        owner = ast.unparse(node.value)
        names = [n for n in dir(base) if not n.startswith("_")]
        close = difflib.get_close_matches(node.attr, names, n=3)
        hint = f"; did you mean {', '.join(f'{owner}.{c}' for c in close)}?" if close else ""
        kind = "op or function" if owner in ("R", "T", "I", "R.nn") else "attribute"
        raise self.error(node, f"unknown {kind} '{owner}.{node.attr}'{hint}")

    def eval_call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        # A `lambda` is allowed only as a call argument (``T.index_map(lambda i: ...)``).
        args: list[Any] = []
        for arg in node.args:
            if isinstance(arg, ast.Lambda):
                args.append(self.eval_lambda(arg))
            else:
                args.extend(self.eval_items([arg]))
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                kwargs.update(self.eval(keyword.value))
            elif isinstance(keyword.value, ast.Lambda):
                kwargs[keyword.arg] = self.eval_lambda(keyword.value)
            else:
                kwargs[keyword.arg] = self.eval(keyword.value)
        return self.apply(node, func, args, kwargs)

    def apply(self, node: ast.Call, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Call ``func``; a wrong argument list is reported with the expected signature."""
        if not callable(func):
            raise self.error(node.func, f"'{ast.unparse(node.func)}' is not callable")
        try:
            inspect.signature(func).bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(
                node,
                f"wrong arguments to {ast.unparse(node.func)}: {err}; expected "
                f"{ast.unparse(node.func)}{_signature_text(func)}",
            ) from None
        except ValueError:
            pass  # no signature available (a builtin): let the call report
        return func(*args, **kwargs)

    def binop(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        return _BINOPS[type(node.op)](left, right)

    def unaryop(self, node: ast.UnaryOp, operand: Any) -> Any:
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        if isinstance(node.op, ast.Not):
            return logical_not(operand) if isinstance(operand, PrimExpr) else not operand
        return ~operand

    def compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        result: Any = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node)
            value = _CMPOPS[type(op)](left, right)
            result = value if result is None else logical_and(result, value)
            left = right
        return result

    def subscript(self, node: ast.Subscript, value: Any) -> Any:
        return value[self.eval(node.slice)]


def _signature_text(func: Any) -> str:
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):
        return "(...)"


_EXPECTED = (RelaxVMError, ValueError, TypeError, AttributeError, IndexError, KeyError)


def _cause(err: Exception) -> Exception | None:
    """What a ScriptError is chained to: nothing for expected errors (the message says it
    all), the original exception for a bug, so its traceback stays available."""
    return None if isinstance(err, _EXPECTED) else err


def _describe(err: BaseException) -> str:
    text = str(err)
    if isinstance(err, KeyError) and err.args:
        text = str(err.args[0])
    return text or type(err).__name__
