"""Order-independent resolution of plugin registrations.

The loader runs every selected plugin's registration hooks first; the registrars only collect
:class:`~relaxvm.registry.registrars.Registration` records. This module then decides, name by
name (a function name, an op name with its target, a target kind), which record wins:

1. **At most one plain registration.** Two plugins registering a name without
   ``override=True`` (or one plugin registering it twice) is a conflict naming both.
2. **At most one plugin overriding it.** Two plugins passing ``override=True`` for one name is a
   conflict naming both: which of them should win is a decision for the person installing them,
   never an accident of entry-point names. A plugin overriding its own name again simply
   replaces its earlier override.
3. **An override wins.** If one plugin overrides the name, its registration is used whether or
   not someone registered it plainly; an override of a name nobody registers plainly is
   accepted as the registration.

Nothing here depends on the order the plugins load in. The winners are then applied against
what the tables already hold (entries from ``register_func`` or from an earlier
``register_plugin``): a plain winner may not take an existing name, an override replaces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import extensions
from . import functions as registry
from .registrars import Registration

__all__ = [
    "Conflict",
    "collision_message",
    "current_source",
    "find_collisions",
    "resolve",
    "store",
]


@dataclass(frozen=True)
class Conflict:
    """Plugins that claim one name in a way the rules above refuse.

    Attributes
    ----------
    what : str
        The contested thing (``"global function 'x'"``...).
    plugins : tuple of str
        The plugins involved, in load order (one name when a plugin registered it twice).
    overriding : bool
        True when they all passed ``override=True``; False for plain duplicates.
    """

    what: str
    plugins: tuple[str, ...]
    overriding: bool

    def message(self) -> str:
        """The error text, naming every plugin involved."""
        if len(self.plugins) == 1:
            return f"relaxvm plugin {self.plugins[0]!r} registers {self.what} twice"
        names = " and ".join(repr(name) for name in self.plugins)
        if self.overriding:
            return (
                f"relaxvm plugins {names} both override {self.what}; at most one plugin may "
                "override a name (the load order does not pick a winner)"
            )
        return (
            f"relaxvm plugins {names} both register {self.what}; the one meant to replace the "
            "other's must pass override=True"
        )


def resolve(
    registrations: Iterable[Registration],
) -> tuple[list[Registration], list[Conflict]]:
    """Pick the winning registration of every name.

    Parameters
    ----------
    registrations : iterable of Registration
        Everything the plugins of one load asked for, in load order.

    Returns
    -------
    winners : list of Registration
        One per name, in the order the names were first registered.
    conflicts : list of Conflict
        Names for which no winner can be chosen; those names have no winner.
    """
    by_key: dict[tuple[str, str, str | None], list[Registration]] = {}
    for registration in registrations:
        by_key.setdefault(registration.key, []).append(registration)
    winners: list[Registration] = []
    conflicts: list[Conflict] = []
    for claims in by_key.values():
        plain = [claim for claim in claims if not claim.override]
        # A plugin's own later override replaces its earlier one: its order is its own.
        overrides = {claim.plugin: claim for claim in claims if claim.override}
        if len(plain) > 1:
            involved = tuple(dict.fromkeys(claim.plugin for claim in plain))
            conflicts.append(Conflict(claims[0].what, involved, overriding=False))
        elif len(overrides) > 1:
            conflicts.append(Conflict(claims[0].what, tuple(overrides), overriding=True))
        elif overrides:
            winners.append(next(iter(overrides.values())))
        else:
            winners.append(plain[0])
    return winners, conflicts


def current_source(registration: Registration) -> str | None:
    """Who holds ``registration``'s name in the tables now (``None``: nobody)."""
    if registration.kind == "function":
        return registry._sources.get(registration.name)
    if registration.kind == "legalization":
        found = extensions._legalizations.get((registration.name, registration.target))
        return found[1] if found else None
    kind = extensions._target_kinds.get(registration.name)
    return kind[1] if kind else None


def find_collisions(winners: Sequence[Registration]) -> list[tuple[Registration, str]]:
    """The plain winners whose name the tables already hold, with the holder."""
    collisions = []
    for registration in winners:
        holder = current_source(registration)
        if holder is not None and not registration.override:
            collisions.append((registration, holder))
    return collisions


def collision_message(registration: Registration, holder: str) -> str:
    """The error for a plain registration of a name ``holder`` already has."""
    return (
        f"{registration.what} is already registered by {holder}; {registration.source} tried "
        "to register it again (pass override=True to replace it)"
    )


def store(winners: Iterable[Registration]) -> None:
    """Put the winners into the tables, attributed to their plugins (checks are done)."""
    for registration in winners:
        if registration.kind == "function":
            registry._functions[registration.name] = registration.value
            registry._sources[registration.name] = registration.source
        elif registration.kind == "legalization":
            key = (registration.name, registration.target)
            extensions._legalizations[key] = (registration.value, registration.source)
        else:
            extensions._target_kinds[registration.name] = (registration.value, registration.source)
