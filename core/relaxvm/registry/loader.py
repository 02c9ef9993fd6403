"""The one plugin loader.

Plugins are found through installed entry points in the ``relaxvm`` group (our own builtins,
ops and targets are declared there exactly like a third party's). Loading is lazy (the first
registry lookup triggers it, never ``import relaxvm``), idempotent and thread-safe.

Environment variables
---------------------
``RELAXVM_PLUGINS``
    Comma-separated entry-point names: load only these (essential plugins must be listed).
``RELAXVM_DISABLE_PLUGINS``
    Comma-separated entry-point names never to load.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Protocol

import pluggy

from ..errors import PluginError, RegistryError
from . import extensions, hookspecs
from . import functions as registry

__all__ = [
    "ENTRY_POINT_GROUP",
    "ESSENTIAL_PLUGINS",
    "FunctionRegistrar",
    "LegalizationRegistrar",
    "PluginInfo",
    "TargetRegistrar",
    "ensure_loaded",
    "get_plugin_manager",
    "plugin_report",
    "register_plugin",
]

ENTRY_POINT_GROUP = "relaxvm"
#: Entry-point names without which relaxvm cannot run a program, and the module each names.
ESSENTIAL_PLUGINS: dict[str, str] = {"builtins": "relaxvm_builtins.plugin"}


class EntryPointLike(Protocol):
    """What the loader needs of an entry point (``importlib.metadata.EntryPoint`` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str: ...

    def load(self) -> Any: ...


@dataclass
class PluginInfo:
    """What happened to one plugin: ``status`` is ``loaded``, ``blocked``, ``skipped``, or
    ``loading`` while (or if) its load did not complete."""

    name: str
    value: str
    distribution: str
    status: str
    registered: list[str] = field(default_factory=list)


class FunctionRegistrar:
    """The object handed to ``relaxvm_register_builtins``: registrations made through it are
    validated and attributed to one plugin."""

    def __init__(self, plugin_name: str) -> None:
        self.plugin_name = plugin_name
        self.registered: list[str] = []

    def register(self, name: str, func: Callable[..., Any], *, override: bool = False) -> None:
        """Register ``func`` under the global ``name`` on behalf of this plugin.

        Raises
        ------
        PluginError
            The name is not a non-empty string or ``func`` is not callable.
        RegistryError
            The name is already registered (the message names both plugins).
        """
        if not isinstance(name, str) or not name:
            raise PluginError(
                f"plugin {self.plugin_name!r} registered a function under an invalid name {name!r}"
            )
        if not callable(func):
            raise PluginError(
                f"plugin {self.plugin_name!r} registered {name!r} with a non-callable "
                f"{type(func).__name__}"
            )
        registry._add(name, func, f"plugin {self.plugin_name!r}", override)
        self.registered.append(name)


class LegalizationRegistrar:
    """The object handed to ``relaxvm_register_legalizations``; see that hook."""

    def __init__(self, plugin_name: str) -> None:
        self.plugin_name = plugin_name
        self.registered: list[str] = []

    def register(
        self,
        op_name: str,
        func: Callable[..., Any],
        *,
        target: str | None = None,
        override: bool = False,
    ) -> None:
        """Register ``func(bb, call)`` as the legalization of ``op_name`` (for ``target``).

        Raises
        ------
        RegistryError
            Invalid arguments, or a duplicate without ``override`` (naming both plugins).
        """
        extensions.register_legalization(
            op_name, func, target=target, override=override, source=f"plugin {self.plugin_name!r}"
        )
        self.registered.append(f"legalize {op_name}" + (f" [{target}]" if target else ""))


class TargetRegistrar:
    """The object handed to ``relaxvm_register_targets``; see that hook."""

    def __init__(self, plugin_name: str) -> None:
        self.plugin_name = plugin_name
        self.registered: list[str] = []

    def register(self, kind: extensions.TargetKind, *, override: bool = False) -> None:
        """Register a :class:`relaxvm.target.TargetKind`.

        Raises
        ------
        RegistryError
            Not a TargetKind, or its name is taken and ``override`` is false.
        """
        extensions.register_target_kind(
            kind, override=override, source=f"plugin {self.plugin_name!r}"
        )
        self.registered.append(f"target {kind.name}")


_lock = threading.RLock()
_loaded = False
# Set while a load is in progress; a lookup made by a plugin's own hook (same thread) must see
# the partial registry instead of deadlocking, while other threads wait on the lock.
_loading = False
_loading_thread: int | None = None
_manager: pluggy.PluginManager | None = None
_report: list[PluginInfo] = []


def _env_names(variable: str) -> set[str] | None:
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def _installed_entry_points() -> list[EntryPointLike]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _distribution_name(entry_point: EntryPointLike) -> str:
    dist = getattr(entry_point, "dist", None)
    return getattr(dist, "name", None) or "?"


def get_plugin_manager() -> pluggy.PluginManager:
    """The pluggy manager holding every loaded plugin (loads them if needed)."""
    ensure_loaded()
    assert _manager is not None  # set by ensure_loaded; an internal invariant, not user input
    return _manager


def plugin_report() -> list[PluginInfo]:
    """One :class:`PluginInfo` per entry point seen, in load order."""
    return list(_report)


def ensure_loaded(entry_points: Sequence[EntryPointLike] | None = None) -> None:
    """Load every selected plugin and run its registration hooks, once.

    Parameters
    ----------
    entry_points : sequence, optional
        Use these instead of the installed ``relaxvm`` entry points (for tests).

    Raises
    ------
    PluginError
        A plugin failed to import or validate, ``RELAXVM_PLUGINS`` names an unknown plugin, or
        an essential plugin is missing or blocked.
    """
    global _loaded, _loading, _loading_thread, _manager
    if _loaded or (_loading and _loading_thread == threading.get_ident()):
        return
    with _lock:
        if _loaded or _loading:  # holding the RLock while _loading means: our own thread
            return
        _loading = True
        _loading_thread = threading.get_ident()
        saved = dict(registry._functions), dict(registry._sources)
        saved_extensions = extensions._snapshot()
        try:
            found = list(entry_points) if entry_points is not None else _installed_entry_points()
            _manager = _load(found)
            _loaded = True
        except BaseException:
            # Roll back partial registrations so that a retry reports the real error again
            # instead of a cascade of duplicates.
            registry._functions.clear()
            registry._functions.update(saved[0])
            registry._sources.clear()
            registry._sources.update(saved[1])
            extensions._restore(saved_extensions)
            raise
        finally:
            _loading = False
            _loading_thread = None


def _load(found: Sequence[EntryPointLike]) -> pluggy.PluginManager:
    # A deterministic order: essential plugins first, then by name, whatever order the
    # installed metadata lists them in.
    found = sorted(found, key=lambda ep: (ep.name not in ESSENTIAL_PLUGINS, ep.name))
    selected = _env_names("RELAXVM_PLUGINS")
    disabled = _env_names("RELAXVM_DISABLE_PLUGINS") or set()
    names = {ep.name for ep in found}
    if selected is not None and selected - names:
        raise PluginError(
            f"RELAXVM_PLUGINS names {sorted(selected - names)} but the installed relaxvm "
            f"plugins are {sorted(names)}"
        )
    _check_essentials(names, selected, disabled)

    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    _report.clear()
    for entry_point in found:
        info = PluginInfo(
            entry_point.name, entry_point.value, _distribution_name(entry_point), "loading"
        )
        _report.append(info)
        if entry_point.name in disabled:
            info.status = "blocked"
            continue
        if selected is not None and entry_point.name not in selected:
            info.status = "skipped"
            continue
        if manager.has_plugin(entry_point.name):
            raise PluginError(
                f"two installed relaxvm plugins use the entry-point name {entry_point.name!r} "
                f"({info.value} from {info.distribution} and "
                f"{manager.get_plugin(entry_point.name)!r})"
            )
        try:
            plugin = entry_point.load()
        except Exception as err:
            raise PluginError(
                f"relaxvm plugin {entry_point.name!r} ({entry_point.value} from "
                f"{info.distribution}) failed to import: {type(err).__name__}: {err}"
            ) from err
        _register_with_manager(manager, plugin, entry_point.name)
    _run_registration_hooks(manager)
    for info in _report:
        if info.status == "loading":
            info.status = "loaded"
    return manager


def _check_essentials(names: set[str], selected: set[str] | None, disabled: set[str]) -> None:
    for name, module in ESSENTIAL_PLUGINS.items():
        if name not in names:
            raise PluginError(
                f"the essential relaxvm plugin {name!r} ({module}) is not installed. Entry "
                "points come from installed metadata: install the project (pip install -e .) "
                "rather than putting its source folders on sys.path"
            )
        if name in disabled:
            raise PluginError(
                f"the essential relaxvm plugin {name!r} ({module}) is blocked by "
                "RELAXVM_DISABLE_PLUGINS; relaxvm cannot run programs without it"
            )
        if selected is not None and name not in selected:
            raise PluginError(
                f"the essential relaxvm plugin {name!r} ({module}) is left out by "
                f"RELAXVM_PLUGINS={os.environ.get('RELAXVM_PLUGINS')!r}; add it to the list"
            )


def _register_with_manager(manager: pluggy.PluginManager, plugin: Any, name: str) -> None:
    try:
        manager.register(plugin, name=name)
        manager.check_pending()
    except (pluggy.PluginValidationError, ValueError) as err:
        raise PluginError(f"relaxvm plugin {name!r} is invalid: {err}") from err


_REGISTRATION_HOOKS: tuple[tuple[str, type[Any]], ...] = (
    ("relaxvm_register_builtins", FunctionRegistrar),
    ("relaxvm_register_legalizations", LegalizationRegistrar),
    ("relaxvm_register_targets", TargetRegistrar),
)


def _run_registration_hooks(manager: pluggy.PluginManager, only: Iterable[Any] = ()) -> None:
    # Each implementation is called on its own so that every registration is attributed to
    # the plugin that made it; pluggy's combined call would hide who registered what. They run
    # in load order (ours first), so a later plugin can override=True an earlier name.
    wanted = set(map(id, only))
    for hook_name, registrar_type in _REGISTRATION_HOOKS:
        for impl in getattr(manager.hook, hook_name).get_hookimpls():
            if wanted and id(impl.plugin) not in wanted:
                continue
            registrar = registrar_type(impl.plugin_name)
            try:
                impl.function(**{arg: registrar for arg in impl.argnames})
            except (PluginError, RegistryError):
                raise
            except Exception as err:
                raise PluginError(
                    f"relaxvm plugin {impl.plugin_name!r} failed in {hook_name}: "
                    f"{type(err).__name__}: {err}"
                ) from err
            for info in _report:
                if info.name == impl.plugin_name:
                    info.registered.extend(registrar.registered)


def register_plugin(plugin: Any, name: str) -> None:
    """Add a plugin object at run time (a notebook, a test) and run its registration hooks.

    Raises
    ------
    PluginError
        A plugin of that name is already loaded, or the object's hooks do not validate.
    """
    manager = get_plugin_manager()
    with _lock:
        if manager.has_plugin(name):
            raise PluginError(f"a relaxvm plugin named {name!r} is already loaded")
        _report.append(PluginInfo(name, repr(plugin), "runtime", "loaded"))
        _register_with_manager(manager, plugin, name)
        _run_registration_hooks(manager, only=[plugin])


def _reset_for_tests() -> None:
    """Forget every plugin and registration (used by :mod:`relaxvm.testing`)."""
    global _loaded, _loading, _manager
    with _lock:
        _loaded = False
        _loading = False
        _manager = None
        _report.clear()
        registry._functions.clear()
        registry._sources.clear()
        extensions._restore(({}, {}))
