"""The global PackedFunc registry: one name space for builtins, kernels and device APIs.

Every callable the VM reaches by name lives here, filled by plugins through the
``relaxvm_register_builtins`` hook or by users with :func:`register_func`. Names follow TVM:
``vm.builtin.*``, ``device_api.<kind>``, ``target.build.<kind>``. Each entry remembers where it
came from (a plugin name, or ``user:<module>``) so that a duplicate names both sources.

Lookups load the plugins lazily on first use: importing :mod:`relaxvm` registers nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from ..errors import FunctionNotFoundError, RegistryError

__all__ = [
    "function_source",
    "get_global_func",
    "list_global_func_names",
    "register_func",
    "remove_global_func",
]

F = TypeVar("F", bound=Callable[..., Any])

_functions: dict[str, Callable[..., Any]] = {}
_sources: dict[str, str] = {}


def _ensure_plugins() -> None:
    from . import loader as plugins

    plugins.ensure_loaded()


def _check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name or name != name.strip():
        raise RegistryError(f"{where}: function name must be a non-empty string, got {name!r}")
    return name


def _add(name: str, func: Callable[..., Any], source: str, override: bool) -> None:
    """Insert one entry; the single place where duplicates are decided."""
    if not callable(func):
        raise RegistryError(
            f"register_func: {name!r} from {source} must be callable, got {type(func).__name__}"
        )
    if name in _functions and not override:
        raise RegistryError(
            f"register_func: global function {name!r} is already registered by "
            f"{_sources[name]}; {source} tried to register it again "
            "(pass override=True to replace it)"
        )
    _functions[name] = func
    _sources[name] = source


@overload
def register_func(func_name: F, f: None = None, *, override: bool = False) -> F: ...
@overload
def register_func(func_name: str, f: F, *, override: bool = False) -> F: ...
@overload
def register_func(
    func_name: str, f: None = None, *, override: bool = False
) -> Callable[[F], F]: ...


def register_func(
    func_name: str | Callable[..., Any],
    f: Callable[..., Any] | None = None,
    *,
    override: bool = False,
) -> Any:
    """Register a global function, as a call or as a decorator.

    Parameters
    ----------
    func_name : str or callable
        The global name. Used bare as ``@register_func``, the function's ``__name__`` is taken.
    f : callable, optional
        The function; without it a decorator is returned.
    override : bool
        Replace an existing entry instead of raising.

    Returns
    -------
    callable
        ``f`` itself, or a decorator that registers and returns its argument.

    Raises
    ------
    RegistryError
        The name is taken (the message names both sources) or the value is not callable.

    Examples
    --------
    >>> @register_func("my.add_one")
    ... def add_one(x):
    ...     return x + 1
    """
    if callable(func_name) and f is None:
        fn = func_name
        register_func(fn.__name__, fn, override=override)
        return fn
    name = _check_name(func_name, "register_func")
    # Load plugins first, so that a user registration that collides with a plugin's name is
    # reported now, at the user's call, rather than later inside an unrelated lookup.
    _ensure_plugins()

    def decorate(fn: F) -> F:
        module = getattr(fn, "__module__", None) or "?"
        _add(name, fn, f"user code ({module})", override)
        return fn

    if f is None:
        return decorate
    return decorate(f)


@overload
def get_global_func(name: str, allow_missing: Literal[False] = False) -> Callable[..., Any]: ...
@overload
def get_global_func(name: str, allow_missing: bool) -> Callable[..., Any] | None: ...


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """Look up a global function by name.

    Parameters
    ----------
    name : str
        The registered name, e.g. ``"vm.builtin.match_shape"``.
    allow_missing : bool
        Return ``None`` instead of raising when the name is unknown.

    Raises
    ------
    FunctionNotFoundError
        The name is unknown; the message says where the lookup went and suggests close names.
    """
    func = _functions.get(name)
    if func is not None:
        return func
    _ensure_plugins()
    func = _functions.get(name)
    if func is not None or allow_missing:
        return func
    raise FunctionNotFoundError(_not_found_message(name))


def _not_found_message(name: str) -> str:
    from . import loader as plugins

    loaded = ", ".join(p.name for p in plugins.plugin_report() if p.status == "loaded") or "none"
    message = (
        f"Cannot find global function {name!r}: looked in the global registry "
        f"({len(_functions)} functions; plugins loaded: {loaded})"
    )
    close = difflib.get_close_matches(name, list(_functions), n=3, cutoff=0.75)
    if close:
        message += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    blocked = [p.name for p in plugins.plugin_report() if p.status == "blocked"]
    if blocked:
        message += f" (blocked plugins not searched: {', '.join(blocked)})"
    return message


def list_global_func_names() -> list[str]:
    """All registered names, sorted."""
    _ensure_plugins()
    return sorted(_functions)


def remove_global_func(name: str) -> None:
    """Remove a registered function.

    Raises
    ------
    FunctionNotFoundError
        No function of that name is registered.
    """
    _ensure_plugins()
    if name not in _functions:
        raise FunctionNotFoundError(_not_found_message(name))
    del _functions[name]
    del _sources[name]


def function_source(name: str) -> str:
    """Who registered ``name``: ``"plugin <entry-point name>"`` or ``"user code (<module>)"``."""
    get_global_func(name)
    return _sources[name]
