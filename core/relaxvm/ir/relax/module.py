"""IRModule: the unit the compiler transforms, a set of functions keyed by :class:`GlobalVar`.

Functions refer to each other through GlobalVars, and every GlobalVar of a module has a unique
name, so ``mod["main"]`` and ``mod.get_global_var("main")`` work by name as in TVM.

The values are Relax :class:`Function` objects today. TIR ``PrimFunc`` (a later layer) will be
stored the same way: the module only needs a function object with a ``struct_info`` attribute
(its callable signature, used to annotate the GlobalVar) and an ``attrs`` mapping.
"""

from __future__ import annotations

import difflib
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from ...errors import VMTypeError, VMValueError
from ..global_info import GlobalInfo, checked_global_infos, checked_info_list
from ._base import update_struct_info
from .block import Function
from .expr import GlobalVar
from .struct_info import StructInfo

__all__ = ["IRModule"]


class IRModule:
    """A mapping from :class:`GlobalVar` to function.

    Parameters
    ----------
    functions : mapping of GlobalVar or str to function, optional
        The initial functions; a str key makes a new GlobalVar of that name.
    attrs : mapping, optional
        Module attributes (e.g. ``{"external_mods": [...]}``).
    global_infos : mapping of str to list of GlobalInfo, optional
        Module-level information, as TVM's: ``{"vdevice": [VDevice("llvm"), VDevice("cuda",
        0)]}`` lists the virtual devices that ``R.Tensor(..., "cuda:0")`` refers to.

    Examples
    --------
    >>> mod = IRModule({"main": main_func})
    >>> mod["main"] is main_func
    True
    >>> for gvar, func in mod:  # (GlobalVar, function) pairs, as in TVM
    ...     print(gvar.name_hint)
    main
    """

    def __init__(
        self,
        functions: Mapping[GlobalVar | str, Any] | None = None,
        attrs: Mapping[str, Any] | None = None,
        global_infos: Mapping[str, Any] | None = None,
    ) -> None:
        self._functions: dict[GlobalVar, Any] = {}
        self._by_name: dict[str, GlobalVar] = {}
        self._attrs: dict[str, Any] = _checked_attrs(attrs)
        self._global_infos = checked_global_infos(global_infos, "IRModule")
        for key, func in (functions or {}).items():
            self[key] = func

    @staticmethod
    def from_expr(expr: Any, functions: Mapping[GlobalVar | str, Any] | None = None) -> IRModule:
        """A module holding ``expr``, as TVM's ``IRModule.from_expr``.

        Parameters
        ----------
        expr : relax Function, tir PrimFunc or relax expression
            A function is added under its ``global_symbol`` (or ``"main"``); any other
            expression becomes the body of a ``"main"`` function whose parameters are the
            expression's free variables (in first-use order).
        functions : mapping, optional
            Other functions to add first (GlobalVar or name -> function).

        Returns
        -------
        IRModule
            The new module.

        Raises
        ------
        VMTypeError
            ``expr`` is not a Relax expression or function.
        """
        from ..tir.function import PrimFunc
        from ._base import RelaxExpr

        mod = IRModule(functions)
        if isinstance(expr, (Function, PrimFunc)):
            name = expr.attrs.get("global_symbol") or "main"
            mod[str(name)] = expr
            return mod
        if not isinstance(expr, RelaxExpr):
            raise VMTypeError(
                f"IRModule.from_expr: expected a relax expression or function, got "
                f"{type(expr).__name__}"
            )
        from .block_builder import BlockBuilder

        builder = BlockBuilder(mod)
        with builder.function("main", _free_vars(expr)):
            builder.emit_func_output(expr)
        return builder.get()

    # ---- looking up ----------------------------------------------------------------------
    @property
    def functions(self) -> Mapping[GlobalVar, Any]:
        """A read-only view of the ``GlobalVar -> function`` mapping."""
        return types.MappingProxyType(self._functions)

    @property
    def attrs(self) -> Mapping[str, Any]:
        """A read-only view of the module attributes."""
        return types.MappingProxyType(self._attrs)

    @property
    def global_infos(self) -> Mapping[str, tuple[GlobalInfo, ...]]:
        """A read-only view of the global infos: name -> tuple of :class:`GlobalInfo`
        (``mod.global_infos["vdevice"]`` are the module's virtual devices)."""
        return types.MappingProxyType(self._global_infos)

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar called ``name``.

        Raises
        ------
        VMValueError
            If the module has no such function; the message lists the ones it has.
        """
        if not isinstance(name, str):
            raise VMTypeError(f"IRModule.get_global_var: name must be a str, got {name!r}")
        found = self._by_name.get(name)
        if found is None:
            raise VMValueError(self._missing_message(name))
        return found

    def get_global_vars(self) -> list[GlobalVar]:
        """The module's GlobalVars, sorted by name."""
        return [self._by_name[name] for name in sorted(self._by_name)]

    def _missing_message(self, name: str) -> str:
        available = sorted(self._by_name)
        message = (
            f"IRModule has no function named '{name}'; available functions: "
            f"{', '.join(available) if available else '(none)'}"
        )
        close = difflib.get_close_matches(name, available, n=1)
        if close:
            message += f" (did you mean '{close[0]}'?)"
        return message

    def _resolve(self, key: GlobalVar | str, where: str) -> GlobalVar:
        if isinstance(key, str):
            return self.get_global_var(key)
        if isinstance(key, GlobalVar):
            if key not in self._functions:
                same_name = self._by_name.get(key.name_hint)
                if same_name is not None:
                    raise VMValueError(
                        f"IRModule.{where}: this GlobalVar '{key.name_hint}' is not the one the "
                        "module uses for that name (a different GlobalVar object); look it up "
                        "with mod.get_global_var(name)"
                    )
                raise VMValueError(self._missing_message(key.name_hint))
            return key
        raise VMTypeError(f"IRModule.{where}: expected a GlobalVar or str, got {key!r}")

    def __getitem__(self, key: GlobalVar | str) -> Any:
        return self._functions[self._resolve(key, "__getitem__")]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return key in self._by_name
        return key in self._functions

    def __iter__(self) -> Iterator[tuple[GlobalVar, Any]]:
        """Iterate over ``(GlobalVar, function)`` pairs, as TVM does."""
        return iter(list(self._functions.items()))

    def __len__(self) -> int:
        return len(self._functions)

    def items(self) -> list[tuple[GlobalVar, Any]]:
        """The ``(GlobalVar, function)`` pairs."""
        return list(self._functions.items())

    # ---- changing --------------------------------------------------------------------------
    def __setitem__(self, key: GlobalVar | str, func: Any) -> None:
        """Add or replace a function; a str key reuses the GlobalVar of that name if any."""
        _check_function(func, key)
        if isinstance(key, str):
            gvar = self._by_name.get(key) or GlobalVar(key)
        elif isinstance(key, GlobalVar):
            gvar = key
            existing = self._by_name.get(gvar.name_hint)
            if existing is not None and existing is not gvar:
                raise VMValueError(
                    f"IRModule: a different GlobalVar named '{gvar.name_hint}' is already in "
                    "the module; GlobalVar names must be unique (use update_func with "
                    "mod.get_global_var(name) to replace the function)"
                )
        else:
            raise VMTypeError(f"IRModule: keys must be GlobalVar or str, got {key!r}")
        self._add(gvar, func)

    def _add(self, gvar: GlobalVar, func: Any) -> None:
        _annotate(gvar, func)
        self._functions[gvar] = func
        self._by_name[gvar.name_hint] = gvar

    def add(self, key: GlobalVar | str, func: Any) -> GlobalVar:
        """Add a function under a new name and return its GlobalVar.

        Raises
        ------
        VMValueError
            If the name is taken (use :meth:`update_func` to replace).
        """
        name = key if isinstance(key, str) else getattr(key, "name_hint", None)
        if name in self._by_name:
            raise VMValueError(
                f"IRModule.add: a function named '{name}' already exists; use update_func to "
                "replace it"
            )
        self[key] = func
        return self._by_name[name]  # type: ignore[index]

    def update_func(self, gvar: GlobalVar | str, func: Any) -> None:
        """Replace the function of an existing GlobalVar (TVM's ``update_func``)."""
        _check_function(func, gvar)
        resolved = self._resolve(gvar, "update_func")
        _annotate(resolved, func)
        self._functions[resolved] = func

    def remove(self, gvar: GlobalVar | str) -> None:
        """Remove a function."""
        resolved = self._resolve(gvar, "remove")
        del self._functions[resolved]
        del self._by_name[resolved.name_hint]

    def __delitem__(self, gvar: GlobalVar | str) -> None:
        self.remove(gvar)

    def update(self, other: IRModule) -> None:
        """Add or replace every function of ``other`` (by GlobalVar name)."""
        for gvar, func in other:
            self[gvar.name_hint if gvar.name_hint in self._by_name else gvar] = func

    def update_global_info(self, name: str, infos: Any) -> None:
        """Set the global infos called ``name`` (TVM's ``update_global_info``), in place.

        Parameters
        ----------
        name : str
            The entry, e.g. ``"vdevice"``.
        infos : list of GlobalInfo
            Its infos, replacing any it had; under ``"vdevice"`` each must be a
            :class:`~relaxvm.ir.relax.vdevice.VDevice`.

        Raises
        ------
        VMTypeError
            ``name`` is not a str, or ``infos`` not a list of the right kind of info.
        """
        checked = checked_info_list(name, infos, "IRModule.update_global_info")
        if not name:
            raise VMValueError("IRModule.update_global_info: the name must not be empty")
        self._global_infos[name] = checked

    def get_attr(self, key: str, default: Any = None) -> Any:
        """The module attribute ``key``, or ``default``."""
        return self._attrs.get(key, default)

    def with_attr(self, key: str, value: Any) -> IRModule:
        """A copy of the module (sharing its functions) with one attribute set."""
        copied = self.copy()
        copied._attrs[_checked_key(key)] = _attr_value(value)
        return copied

    def without_attr(self, key: str) -> IRModule:
        """A copy of the module without attribute ``key``."""
        copied = self.copy()
        copied._attrs.pop(key, None)
        return copied

    def copy(self) -> IRModule:
        """A shallow copy: same GlobalVars and function objects, separate mapping."""
        copied = IRModule(attrs=self._attrs)
        copied._global_infos = dict(self._global_infos)  # tuples: nothing shared can change
        copied._functions = dict(self._functions)
        copied._by_name = dict(self._by_name)
        return copied

    # ---- printing --------------------------------------------------------------------------
    def script(self, **options: Any) -> str:
        """TVMScript text of the whole module (``relaxvm.script.from_source`` reads it back).

        ``options`` are TVM's printer options (see :mod:`relaxvm.ir.relax.text_options`):
        ``show_meta``, ``verbose_expr``, ``indent_spaces``, ``print_line_numbers``."""
        from .text import module_to_str
        from .text_options import apply_layout, script_options

        opts = script_options("IRModule", **options)
        return apply_layout(module_to_str(self), opts)

    def show(
        self,
        style: str | None = None,
        black_format: bool | None = None,
        *,
        show_meta: bool = False,
        print_line_numbers: bool = False,
        file: TextIO | None = None,
    ) -> None:
        """Print the module as TVMScript (TVM's ``IRModule.show``).

        Parameters
        ----------
        style : {None, "plain", "ansi", "light", "dark"}
            Syntax colouring through pygments: ``"ansi"`` uses the terminal's 16 colours,
            ``"light"`` and ``"dark"`` 256-colour themes for light and dark backgrounds,
            ``"plain"`` none. ``None`` colours (``"ansi"``) only when printing to a terminal.
            Without pygments installed the text is printed plain, with a warning when a style
            was asked for.
        black_format : bool, optional
            Reformat with `black` first (it must be installed; a warning says when it is not).
            The printer's own layout is already black-like, so this is rarely needed.
        show_meta : bool
            Accepted for TVM compatibility: relaxvm's text format has no metadata section
            (constants are printed inline), so there is nothing more to show.
        print_line_numbers : bool
            Prefix each line with its number, as TVM does.
        file : text stream, optional
            Where to print; ``sys.stdout`` by default.

        Raises
        ------
        VMValueError
            ``style`` is not one of the names above.
        """
        from ._show import render

        out = sys.stdout if file is None else file
        del show_meta  # no metadata section: see above
        print(render(self.script(), style, black_format, print_line_numbers, out), file=out)

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"IRModule({', '.join(self._by_name)})"


def _annotate(gvar: GlobalVar, func: Any) -> None:
    """Give ``gvar`` the signature of ``func``, so calls through it can be checked.

    The signature of a module function is a fact about the module's binding of that name, so
    the module may refresh it when the function is replaced (the one place a node's struct info
    changes after it is set).
    """
    func_info = getattr(func, "struct_info", None)
    if not isinstance(func_info, StructInfo):
        return
    if gvar.struct_info is None:
        update_struct_info(gvar, func_info)
    elif gvar.struct_info != func_info:
        object.__setattr__(gvar, "struct_info", func_info)


def _checked_key(key: Any) -> str:
    if not isinstance(key, str):
        raise VMTypeError(f"IRModule: attribute names must be str, got {key!r}")
    return key


def _checked_attrs(attrs: Mapping[str, Any] | None) -> dict[str, Any]:
    if attrs is None:
        return {}
    if not isinstance(attrs, Mapping):
        raise VMTypeError(f"IRModule: attrs must be a mapping, got {type(attrs).__name__}")
    return {_checked_key(key): _attr_value(value) for key, value in attrs.items()}


def _attr_value(value: Any) -> Any:
    """An attribute value in one spelling: TVM stores a Python int attribute as an ``int32``
    IntImm, so ``with_attr("n", IntImm("int32", 10))`` and ``I.module_attrs({"n": 10})`` are
    the same attribute; relaxvm keeps the Python int for both."""
    from ..expr import IntImm

    if isinstance(value, IntImm) and str(value.dtype) == "int32":
        return int(value.value)
    return value


def _check_function(func: Any, key: Any) -> None:
    name = key if isinstance(key, str) else getattr(key, "name_hint", key)
    if isinstance(func, Function):
        return
    if not isinstance(getattr(func, "struct_info", None), StructInfo):
        raise VMTypeError(
            f"IRModule: the value for '{name}' must be a relax Function (or a function object "
            f"with a struct_info, such as a PrimFunc), got {type(func).__name__}"
        )


def _free_vars(expr: Any) -> list[Any]:
    """Relax variables used in ``expr`` but not defined in it, in first-use order."""
    from .expr_functor import ExprVisitor

    class _Collector(ExprVisitor):
        def __init__(self) -> None:
            self.defined: set[Any] = set()
            self.used: dict[Any, None] = {}

        def visit_var_def(self, var: Any) -> None:
            self.defined.add(var)

        def visit_var_(self, var: Any) -> None:
            self.used.setdefault(var)

    collector = _Collector()
    collector.visit_expr(expr)
    return [var for var in collector.used if var not in collector.defined]
