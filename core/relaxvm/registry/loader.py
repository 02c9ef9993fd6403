"""The one plugin loader.

Plugins are found through installed entry points in the ``relaxvm`` group (our own builtins,
ops and targets are declared there exactly like a third party's). Loading is lazy (the first
registry lookup triggers it, never ``import relaxvm``), idempotent, thread-safe and all or
nothing.

A load runs in two phases so that the order plugins load in never decides what gets
registered: first every selected plugin is imported and its registration hooks run, with
registrars that only *collect* (:mod:`relaxvm.registry.registrars`); then the collected
registrations are resolved name by name and applied (:mod:`relaxvm.registry.resolution`).
Every plugin is tried even after one failed, so that the error (and ``relaxvm plugins``) can
name all the broken ones at once.

Environment variables
---------------------
``RELAXVM_PLUGINS``
    Comma-separated entry-point names: load only these (essential plugins must be listed).
``RELAXVM_DISABLE_PLUGINS``
    Comma-separated entry-point names never to load.

Both must name installed plugins; an unknown name is an error listing the installed ones.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Protocol

import pluggy

from ..errors import PluginConflictError, PluginError
from . import extensions, hookspecs, resolution
from . import functions as registry
from .failures import LoadFailure, load_error
from .registrars import (
    REGISTRATION_HOOKS,
    FunctionRegistrar,
    LegalizationRegistrar,
    Registration,
    TargetRegistrar,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ESSENTIAL_PLUGINS",
    "FunctionRegistrar",
    "LegalizationRegistrar",
    "PluginInfo",
    "Registration",
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
    """What happened to one plugin.

    Attributes
    ----------
    name, value, distribution : str
        The entry-point name, the module it names, and the distribution declaring it.
    status : str
        ``loaded``; ``failed`` (see ``error``); ``ok`` (this plugin imported and registered
        cleanly, but another failed, so nothing was loaded: loading is all or nothing);
        ``blocked`` (``RELAXVM_DISABLE_PLUGINS``); ``skipped`` (not in ``RELAXVM_PLUGINS``);
        ``loading`` while its load is in progress.
    registered : list of str
        What it registered, one label each (``vm.builtin.copy``, ``legalize relax.add
        [llvm]``, ``target llvm``), including names another plugin's override replaced.
    error : str or None
        Why it failed: the error message naming it.
    registrations : list of Registration
        The same as ``registered``, as records (kind, name, target, override).
    """

    name: str
    value: str
    distribution: str
    status: str
    registered: list[str] = field(default_factory=list)
    error: str | None = None
    registrations: list[Registration] = field(default_factory=list)


_lock = threading.RLock()
_loaded = False
# Set while a load is in progress; a lookup made by a plugin's own hook (same thread) must see
# the registry as it is (without this load's registrations, applied only once every hook has
# run) instead of deadlocking, while other threads wait on the lock.
_loading = False
_loading_thread: int | None = None
_manager: pluggy.PluginManager | None = None
_report: list[PluginInfo] = []


def _env_names(variable: str) -> list[str] | None:
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return None
    return list(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))


#: Entry points that stand in for the installed ones (set by relaxvm.testing.isolated_plugins).
_entry_points_override: list[EntryPointLike] | None = None


def _installed_entry_points() -> list[EntryPointLike]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _entry_points() -> list[EntryPointLike]:
    if _entry_points_override is not None:
        return list(_entry_points_override)
    return _installed_entry_points()


def _distribution_name(entry_point: EntryPointLike) -> str:
    dist = getattr(entry_point, "dist", None)
    return getattr(dist, "name", None) or "?"


def get_plugin_manager() -> pluggy.PluginManager:
    """The pluggy manager holding every loaded plugin (loads them if needed)."""
    ensure_loaded()
    assert _manager is not None  # set by ensure_loaded; an internal invariant, not user input
    return _manager


def plugin_report() -> list[PluginInfo]:
    """One :class:`PluginInfo` per entry point seen by the last load, in load order.

    After a failed load it still describes every plugin (``failed`` ones with their error), so
    ``relaxvm plugins`` can show what is broken.
    """
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
        A plugin failed to import, validate or run its hooks (the message names it and how to
        skip it), ``RELAXVM_PLUGINS`` / ``RELAXVM_DISABLE_PLUGINS`` names an unknown plugin, or
        an essential plugin is missing or blocked. Nothing stays registered.
    PluginConflictError
        Two plugins registered one name, or both overrode it (names both).
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
            found = list(entry_points) if entry_points is not None else _entry_points()
            _manager = _load(found)
            _loaded = True
        except BaseException:
            # Roll back partial registrations (a hook may call register_func directly) so that
            # a retry reports the real error again instead of a cascade of duplicates.
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
    _report.clear()
    # A deterministic order: essential plugins first, then by name, whatever order the
    # installed metadata lists them in. It orders the report and the names in messages; it
    # never decides which registration wins.
    found = sorted(found, key=lambda ep: (ep.name not in ESSENTIAL_PLUGINS, ep.name))
    names = [ep.name for ep in found]
    selected = _env_names("RELAXVM_PLUGINS")
    disabled = _env_names("RELAXVM_DISABLE_PLUGINS") or []
    _check_env_names("RELAXVM_DISABLE_PLUGINS", disabled, names)
    _check_env_names("RELAXVM_PLUGINS", selected or [], names)
    _check_essentials(set(names), selected, disabled)

    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    failures: list[LoadFailure] = []
    for entry_point in found:
        info = PluginInfo(
            entry_point.name, entry_point.value, _distribution_name(entry_point), "loading"
        )
        _report.append(info)
        if entry_point.name in disabled:
            info.status = "blocked"
        elif selected is not None and entry_point.name not in selected:
            info.status = "skipped"
        else:
            _import_plugin(manager, entry_point, info, failures)

    infos: dict[str, PluginInfo] = {}
    for info in _report:  # a duplicated entry-point name keeps its first, imported, plugin
        infos.setdefault(info.name, info)
    collected = _collect(manager, infos, failures)
    winners, conflicts = resolution.resolve(collected)
    for conflict in conflicts:
        _fail(infos, conflict.plugins, conflict.message(), failures, conflict=True)
    for registration, holder in resolution.find_collisions(winners):
        message = resolution.collision_message(registration, holder)
        _fail(infos, (registration.plugin,), message, failures, conflict=True)
    if failures:
        for info in _report:
            if info.status == "loading":
                info.status = "ok"
        # Report in load order, like the table of relaxvm plugins, not in discovery order.
        order = {info.name: index for index, info in enumerate(_report)}
        failures.sort(key=lambda failure: min(order[name] for name in failure.plugins))
        raise load_error(failures, ESSENTIAL_PLUGINS, _env_names("RELAXVM_DISABLE_PLUGINS") or [])
    resolution.store(winners)
    for info in _report:
        if info.status == "loading":
            info.status = "loaded"
    return manager


def _check_env_names(variable: str, given: Sequence[str], installed: Sequence[str]) -> None:
    unknown = [name for name in given if name not in installed]
    if not unknown:
        return
    close = difflib.get_close_matches(unknown[0], installed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise PluginError(
        f"{variable} names {unknown} but the installed relaxvm plugins are "
        f"{sorted(installed)}{hint}"
    )


def _check_essentials(names: set[str], selected: list[str] | None, disabled: list[str]) -> None:
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


def _import_plugin(
    manager: pluggy.PluginManager,
    entry_point: EntryPointLike,
    info: PluginInfo,
    failures: list[LoadFailure],
) -> None:
    """Import one plugin and register it with pluggy; on error record why and go on."""
    name = entry_point.name
    if manager.has_plugin(name):
        message = (
            f"two installed relaxvm plugins use the entry-point name {name!r} "
            f"({info.value} from {info.distribution} and {manager.get_plugin(name)!r})"
        )
        fix = "uninstall one of the two distributions (disabling the name would skip both)"
        _fail({name: info}, (name,), message, failures, fix=fix)
        return
    try:
        plugin = entry_point.load()
    except KeyboardInterrupt:
        raise
    except BaseException as err:
        # SystemExit (a plugin calling sys.exit at import) and other BaseExceptions would end
        # the process with no word of which plugin did it: report them like any failure.
        message = (
            f"relaxvm plugin {name!r} ({entry_point.value} from {info.distribution}) failed "
            f"to import: {type(err).__name__}: {err}"
        )
        _fail({name: info}, (name,), message, failures, cause=err)
        return
    try:
        _register_with_manager(manager, plugin, name)
    except PluginError as err:
        _fail({name: info}, (name,), str(err), failures, cause=err.__cause__)


def _register_with_manager(manager: pluggy.PluginManager, plugin: Any, name: str) -> None:
    try:
        manager.register(plugin, name=name)
        manager.check_pending()
    except (pluggy.PluginValidationError, ValueError) as err:
        # pluggy may have kept some of the plugin's hooks: drop it entirely.
        if manager.has_plugin(name):
            manager.unregister(name=name)
        raise PluginError(f"relaxvm plugin {name!r} is invalid: {err}") from err


def _collect(
    manager: pluggy.PluginManager,
    infos: dict[str, PluginInfo],
    failures: list[LoadFailure],
    only: Iterable[Any] = (),
) -> list[Registration]:
    """Run the registration hooks with collecting registrars; return what they asked for."""
    # Each implementation is called on its own so that every registration is attributed to
    # the plugin that made it; pluggy's combined call would hide who registered what.
    wanted = set(map(id, only))
    order = {name: index for index, name in enumerate(infos)}
    collected: list[Registration] = []
    for hook_name, registrar_type in REGISTRATION_HOOKS:
        impls = getattr(manager.hook, hook_name).get_hookimpls()
        for impl in sorted(impls, key=lambda impl: order.get(impl.plugin_name, len(order))):
            if wanted and id(impl.plugin) not in wanted:
                continue
            if infos[impl.plugin_name].status == "failed":
                continue
            registrar = registrar_type(impl.plugin_name)
            try:
                impl.function(**{arg: registrar for arg in impl.argnames})
            except KeyboardInterrupt:
                raise
            except BaseException as err:  # SystemExit in a hook too: see _import_plugin
                # Our registrars' PluginErrors already name the plugin and the bad call.
                message = (
                    str(err)
                    if isinstance(err, PluginError)
                    else f"relaxvm plugin {impl.plugin_name!r} failed in {hook_name}: "
                    f"{type(err).__name__}: {err}"
                )
                _fail(infos, (impl.plugin_name,), message, failures, cause=err)
                continue
            collected.extend(registrar.registrations)
    collected = [r for r in collected if infos[r.plugin].status != "failed"]
    for registration in collected:
        info = infos[registration.plugin]
        info.registrations.append(registration)
        if registration.label not in info.registered:
            info.registered.append(registration.label)
    return collected


def _fail(
    infos: dict[str, PluginInfo],
    plugins: tuple[str, ...],
    message: str,
    failures: list[LoadFailure],
    *,
    cause: BaseException | None = None,
    conflict: bool = False,
    fix: str | None = None,
) -> None:
    # In a conflict with an essential plugin only the other one is at fault; skipping it is
    # the fix, and the essential plugin's status stays what it is.
    at_fault = tuple(name for name in plugins if name not in ESSENTIAL_PLUGINS) or plugins
    for name in at_fault:
        info = infos[name]
        info.status = "failed"
        info.error = info.error or message
        info.registered.clear()
        info.registrations.clear()
    failures.append(LoadFailure(at_fault, message, cause, conflict, fix))


def register_plugin(plugin: Any, name: str) -> None:
    """Add a plugin object at run time (a notebook, a test) and run its registration hooks.

    Its registrations resolve among themselves as a load's do, and then against what is
    already registered: a plain registration of a taken name is refused, an override replaces.

    Raises
    ------
    PluginError
        A plugin of that name is already loaded, or the object's hooks do not validate, raise
        or register something invalid. Nothing of the plugin stays registered.
    PluginConflictError
        It registers a name that is taken without ``override=True``.
    """
    manager = get_plugin_manager()
    with _lock:
        if manager.has_plugin(name):
            raise PluginError(f"a relaxvm plugin named {name!r} is already loaded")
        info = PluginInfo(name, repr(plugin), "runtime", "loading")
        _register_with_manager(manager, plugin, name)
        try:
            failures: list[LoadFailure] = []
            collected = _collect(manager, {name: info}, failures, only=[plugin])
            if failures:
                raise PluginError(failures[0].message) from failures[0].cause
            winners, conflicts = resolution.resolve(collected)
            if conflicts:
                raise PluginConflictError(conflicts[0].message())
            for registration, holder in resolution.find_collisions(winners):
                raise PluginConflictError(resolution.collision_message(registration, holder))
            resolution.store(winners)
        except BaseException:
            manager.unregister(name=name)
            raise
        info.status = "loaded"
        _report.append(info)


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
