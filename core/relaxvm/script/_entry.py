"""Entry points of the parser: the decorators and :func:`from_source`.

The decorators read the source of the decorated class or function (``inspect``) and parse it
with the names of the scope it was written in; ``from_source`` parses text directly, which is
what works in a REPL or notebook, where Python keeps no source to read.
"""

from __future__ import annotations

import ast
import sys
from types import FrameType
from typing import Any

from ..errors import RelaxVMError
from ..ir import relax as rx
from ..ir.global_info import checked_global_infos
from ..ir.relax.struct_info import FuncStructInfo
from . import ir as I
from . import relax as R
from . import tir as T
from ._eval import Evaluator
from ._relax_parser import ModuleRef, RelaxParser
from ._source import ScriptError, Source
from ._tir_parser import TIRParser, is_call_of

__all__ = ["decorate", "from_source", "ir_module"]

_RELAX_OPTIONS = ("private", "pure", "check_well_formed")
_TIR_OPTIONS = ("private", "check_well_formed")
_MODULE_OPTIONS = ("check_well_formed",)


def _frame_env(frame: FrameType | None) -> dict[str, Any]:
    if frame is None:
        return {}
    return {**frame.f_globals, **frame.f_locals}


def _in_class_body(frame: FrameType | None) -> bool:
    return (
        frame is not None
        and frame.f_code.co_name != "<module>"
        and "__module__" in frame.f_locals
        and "__qualname__" in frame.f_locals
    )


def _reraise(err: ScriptError) -> ScriptError:
    # The parser's own frames say nothing to a script author: drop them.
    return err.with_traceback(None)


def decorate(obj: Any, kind: str, options: dict[str, Any], depth: int) -> Any:
    """``@R.function`` / ``@T.prim_func`` on a Python function."""
    frame = sys._getframe(depth + 1)
    if _in_class_body(frame):
        # Part of an @I.ir_module class, which parses the whole class itself.
        obj.__relaxvm_script__ = (kind, options)
        return obj
    error: ScriptError
    try:
        source = Source.from_object(obj, frame)
        tree = source.parse()
        node = tree.body[0] if tree.body else None
        if not isinstance(node, ast.FunctionDef):
            raise source.error(node, f"expected a function definition for @{kind}")
        return _parse_function(source, node, _frame_env(frame), kind, options, standalone=True)
    except ScriptError as err:
        error = err
    raise _reraise(error)


def ir_module(cls: Any, depth: int = 1, check_well_formed: bool = True) -> rx.IRModule:
    """``@I.ir_module`` on a class."""
    frame = sys._getframe(depth + 1)
    error: ScriptError
    try:
        source = Source.from_object(cls, frame)
        tree = source.parse()
        node = tree.body[0] if tree.body else None
        if not isinstance(node, ast.ClassDef):
            raise source.error(node, "@I.ir_module expects a class definition")
        return _parse_module(source, node, _frame_env(frame), check_well_formed)
    except ScriptError as err:
        error = err
    raise _reraise(error)


def _decorator(
    evaluator: Evaluator, node: ast.expr, allowed: dict[Any, str]
) -> tuple[str, dict[str, Any]] | None:
    """Which script decorator ``node`` is (``R.function(private=True)`` ...), with its
    keyword options; None when it is not one of ``allowed``."""
    func_node = node.func if isinstance(node, ast.Call) else node
    try:
        func = evaluator.eval(func_node)
    except ScriptError:
        return None
    kind = next((k for target, k in allowed.items() if target is func), None)
    if kind is None:
        return None
    options: dict[str, Any] = {}
    if isinstance(node, ast.Call):
        if node.args:
            raise evaluator.error(node, f"{ast.unparse(func_node)} takes only keyword options")
        names = {"relax": _RELAX_OPTIONS, "tir": _TIR_OPTIONS, "module": _MODULE_OPTIONS}[kind]
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg not in names:
                raise evaluator.error(
                    keyword,
                    f"unknown option '{keyword.arg}' of {ast.unparse(func_node)}; expected "
                    f"{', '.join(names) or 'none'}",
                )
            options[keyword.arg] = evaluator.eval(keyword.value)
    return kind, options


_FUNCTION_DECORATORS = {R.function: "relax", T.prim_func: "tir"}


def _function_kind(
    evaluator: Evaluator, node: ast.FunctionDef
) -> tuple[str, dict[str, Any]] | None:
    found = [_decorator(evaluator, dec, _FUNCTION_DECORATORS) for dec in node.decorator_list]
    kinds = [item for item in found if item is not None]
    if len(kinds) > 1:
        raise evaluator.error(node, f"function '{node.name}' has more than one script decorator")
    return kinds[0] if kinds else None


def _parse_function(
    source: Source,
    node: ast.FunctionDef,
    env: dict[str, Any],
    kind: str,
    options: dict[str, Any],
    standalone: bool,
) -> Any:
    if kind == "tir":
        return TIRParser(source, env).parse_function(
            node, bool(options.get("private", False)), bool(options.get("check_well_formed", True))
        )
    func = RelaxParser(source, env).parse_function(
        node, bool(options.get("private", False)), bool(options.get("pure", True))
    )
    if standalone and options.get("check_well_formed", True):
        try:
            rx.well_formed(func)
        except rx.WellFormedError as err:
            raise source.error(node, str(err)) from None
    return func


def _parse_module(
    source: Source, node: ast.ClassDef, env: dict[str, Any], check_well_formed: bool = True
) -> rx.IRModule:
    evaluator = Evaluator(source, env)
    funcs: list[tuple[ast.FunctionDef, str, dict[str, Any]]] = []
    externs: list[tuple[ast.Assign, rx.ExternFunc]] = []
    attrs: dict[str, Any] = {}
    global_infos: dict[str, Any] = {}
    for stmt in node.body:
        extern = _extern_global(evaluator, stmt)
        if extern is not None:
            externs.append((stmt, extern))  # type: ignore[arg-type]
            continue
        if is_call_of(evaluator, stmt, I.module_attrs):
            call = stmt.value  # type: ignore[attr-defined]
            value = evaluator.eval(call.args[0]) if len(call.args) == 1 else None
            if not isinstance(value, dict) or call.keywords:
                raise source.error(call, "I.module_attrs expects one dict of attributes")
            attrs.update(value)
            continue
        if is_call_of(evaluator, stmt, I.module_global_infos):
            global_infos.update(_global_infos(evaluator, stmt.value))  # type: ignore[attr-defined]
            continue
        if isinstance(stmt, ast.FunctionDef):
            found = _function_kind(evaluator, stmt)
            if found is None:
                raise source.error(
                    stmt,
                    f"method '{stmt.name}' of an @I.ir_module class needs @R.function or "
                    "@T.prim_func",
                )
            funcs.append((stmt, *found))
        elif isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            continue
        else:
            raise source.error(
                stmt,
                "an @I.ir_module class may only contain @R.function and @T.prim_func "
                "definitions, I.module_attrs, I.module_global_infos and `name = "
                'R.ExternFunc("symbol")` globals',
            )
    gvars: dict[str, rx.GlobalVar] = {}
    named: list[tuple[ast.stmt, str]] = [(s, s.targets[0].id) for s, _ in externs]  # type: ignore[attr-defined]
    for stmt, name in [*named, *((s, s.name) for s, _, _ in funcs)]:
        if name in gvars:
            raise source.error(stmt, f"the module already has a function named '{name}'")
        gvars[name] = rx.GlobalVar(name)
    for (_, name), (_, extern) in zip(named, externs, strict=True):
        # Functions may call it as cls.name: the GlobalVar carries the extern's signature.
        rx.update_struct_info(gvars[name], extern.struct_info)  # type: ignore[arg-type]
    module = ModuleRef(node.name, gvars)
    prim_funcs = frozenset(stmt.name for stmt, kind, _ in funcs if kind == "tir")
    # Tensor annotations ("cuda:0") refer to the module's vdevices, in signatures and bodies.
    with I._vdevice_scope(global_infos.get("vdevice", ())):
        # Signatures first, so functions can call functions defined below them, and themselves.
        for stmt, kind, options in funcs:
            gvar = gvars[stmt.name]
            if kind == "tir":
                sig = FuncStructInfo.opaque_func(purity=True)
            else:
                parser = RelaxParser(source, env, module, prim_funcs)
                sig = parser.signature(stmt, bool(options.get("pure", True)))
            rx.update_struct_info(gvar, sig)
        mod = rx.IRModule(attrs=attrs, global_infos=global_infos)
        for (_, name), (_, extern) in zip(named, externs, strict=True):
            mod[gvars[name]] = extern
        for stmt, kind, options in funcs:
            func: Any
            if kind == "tir":
                func = TIRParser(source, env).parse_function(
                    stmt,
                    bool(options.get("private", False)),
                    check_well_formed and bool(options.get("check_well_formed", True)),
                )
            else:
                parser = RelaxParser(source, env, module, prim_funcs)
                func = parser.parse_function(
                    stmt, bool(options.get("private", False)), bool(options.get("pure", True))
                )
            mod[gvars[stmt.name]] = func
    for gvar, prim_func in module.te_functions():
        if gvar.name_hint in gvars:
            raise source.error(
                node,
                f"R.emit_te made a PrimFunc named '{gvar.name_hint}', but the module already has "
                "a function of that name; pass primfunc_name_hint= to name it otherwise",
            )
        mod[gvar] = prim_func
    if not check_well_formed:
        return mod
    try:
        rx.well_formed(mod)
    except rx.WellFormedError as err:
        raise source.error(node, str(err)) from None
    return mod


def _global_infos(evaluator: Evaluator, call: ast.Call) -> dict[str, Any]:
    """The checked mapping of an ``I.module_global_infos({...})`` statement."""
    value = evaluator.eval(call.args[0]) if len(call.args) == 1 else None
    if not isinstance(value, dict) or call.keywords:
        raise evaluator.error(
            call,
            "I.module_global_infos expects one dict of name -> list of global infos, e.g. "
            '{"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]}',
        )
    try:
        return checked_global_infos(value, "I.module_global_infos")
    except RelaxVMError as err:
        raise evaluator.error(call, str(err)) from None


def _extern_global(evaluator: Evaluator, stmt: ast.stmt) -> rx.ExternFunc | None:
    """The extern function of a class-level ``name = R.ExternFunc("symbol", ...)`` statement
    (TVM's printed form of an ExternFunc global), or None for any other statement."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Call)
    ):
        return None
    try:
        if evaluator.eval(stmt.value.func) is not R.ExternFunc:
            return None
    except ScriptError:
        return None
    value = evaluator.eval(stmt.value)
    return value if isinstance(value, rx.ExternFunc) else None


def from_source(
    text: str,
    name: str | None = None,
    source_name: str = "<string>",
    env: dict[str, Any] | None = None,
) -> Any:
    """Parse script text and return what it defines.

    Parameters
    ----------
    text : str
        Python source with ``@I.ir_module`` classes and/or ``@R.function`` / ``@T.prim_func``
        functions at top level. Top-level imports and simple assignments (``N = 4``) run first,
        in order; ``I``, ``R`` and ``T`` are predefined.
    name : str, optional
        The class or function to return; by default the last one defined.
    source_name : str
        The file name shown in error messages.
    env : dict, optional
        Extra names visible to the script.

    Returns
    -------
    IRModule, Function or PrimFunc

    Raises
    ------
    ScriptError
        For any error in the script, with its line, column and a caret.
    """
    error: ScriptError
    try:
        return _from_source(text, name, source_name, env)
    except ScriptError as err:
        error = err
    raise _reraise(error)


def _from_source(text: str, name: str | None, source_name: str, env: dict[str, Any] | None) -> Any:
    if not isinstance(text, str):
        raise ScriptError(f"from_source: text must be a str, got {type(text).__name__}")
    source = Source(text, source_name)
    tree = source.parse()
    scope: dict[str, Any] = {"I": I, "R": R, "T": T}
    scope.update(env or {})
    evaluator = Evaluator(source, scope)
    results: list[tuple[str, Any]] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign)):
            _run_statement(source, stmt, scope)
        elif isinstance(stmt, ast.ClassDef):
            decorators = [
                _decorator(evaluator, d, {I.ir_module: "module"}) for d in stmt.decorator_list
            ]
            found_module = next((d for d in decorators if d is not None), None)
            if found_module is None:
                raise source.error(stmt, f"class '{stmt.name}' needs @I.ir_module")
            check = bool(found_module[1].get("check_well_formed", True))
            results.append((stmt.name, _parse_module(source, stmt, scope, check)))
        elif isinstance(stmt, ast.FunctionDef):
            found = _function_kind(evaluator, stmt)
            if found is None:
                raise source.error(
                    stmt, f"function '{stmt.name}' needs @R.function or @T.prim_func"
                )
            kind, options = found
            results.append((stmt.name, _parse_function(source, stmt, scope, kind, options, True)))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        else:
            raise source.error(
                stmt,
                "expected imports, assignments, @I.ir_module classes, or @R.function / "
                "@T.prim_func definitions at the top level of a script",
            )
    if not results:
        raise ScriptError(
            f"{source_name}: no @I.ir_module class, @R.function or @T.prim_func definition found"
        )
    if name is None:
        return results[-1][1]
    for found_name, value in reversed(results):
        if found_name == name:
            return value
    raise ScriptError(
        f"{source_name}: no definition named '{name}'; the script defines "
        f"{', '.join(n for n, _ in results)}"
    )


def _run_statement(source: Source, stmt: ast.stmt, scope: dict[str, Any]) -> None:
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
        # `n = T.int64()` at top level declares a symbolic variable named after the target.
        evaluator = Evaluator(source, scope)
        target = stmt.targets[0]
        if len(stmt.targets) == 1 and isinstance(target, ast.Name) and not stmt.value.args:
            try:
                func = evaluator.eval(stmt.value.func)
            except ScriptError:
                func = None
            if isinstance(func, T.DType):
                from ..ir import Var

                scope[target.id] = Var(target.id, func.dtype)
                return
    try:
        exec(compile(ast.Module([stmt], []), source.source_name, "exec"), scope)
    except Exception as err:
        raise source.error(stmt, f"{type(err).__name__}: {err}") from None
