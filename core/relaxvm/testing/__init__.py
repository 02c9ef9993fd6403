"""Helpers for testing relaxvm and its plugins.

``isolated_plugins`` runs a block against a fresh plugin loader and registry (with fake entry
points if given) and restores the real ones afterwards, so tests can load, block and break
plugins without affecting each other.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..registry import extensions
from ..registry import functions as registry
from ..registry import loader as plugins
from ..runtime.device import _forget_device_apis
from .targets import (
    TEST_DOUBLES,
    interpreter_target,
    missing_device_reason,
    real_target_kinds,
    registered_target,
)

__all__ = [
    "TEST_DOUBLES",
    "FakeEntryPoint",
    "installed_entry_points",
    "interpreter_target",
    "isolated_plugins",
    "missing_device_reason",
    "real_target_kinds",
    "registered_target",
]


@dataclass
class FakeEntryPoint:
    """An entry point whose ``load()`` returns ``plugin`` (or raises ``error``)."""

    name: str
    plugin: Any = None
    value: str = "fake.module"
    error: BaseException | None = None

    def load(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.plugin


def installed_entry_points() -> list[Any]:
    """The installed ``relaxvm`` entry points (ours and any third party's)."""
    return plugins._installed_entry_points()


@contextlib.contextmanager
def isolated_plugins(
    entry_points: Sequence[Any] | None = None,
    env: dict[str, str | None] | None = None,
    load: bool = True,
) -> Iterator[None]:
    """Run the block with a fresh loader and registry.

    Parameters
    ----------
    entry_points : sequence, optional
        Entry points to load instead of the installed ones. They stand in for the installed
        ones for the whole block: a load retried after a failure, or started by a lookup or by
        ``relaxvm plugins`` inside the block, sees them too.
    env : dict, optional
        Environment variables to set (``None`` removes one) for the block.
    load : bool
        Load the plugins on entry (otherwise the first lookup inside the block does, with the
        installed entry points, or call ``plugins.ensure_loaded(entry_points)`` yourself).
    """
    saved_state = (plugins._loaded, plugins._loading, plugins._manager, list(plugins._report))
    saved_override = plugins._entry_points_override
    saved_registry = dict(registry._functions), dict(registry._sources)
    saved_extensions = extensions._snapshot()
    saved_env = {key: os.environ.get(key) for key in (env or {})}
    try:
        for key, value in (env or {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        plugins._reset_for_tests()
        _forget_device_apis()
        if entry_points is not None:
            plugins._entry_points_override = list(entry_points)
        if load:
            plugins.ensure_loaded()
        yield
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        plugins._entry_points_override = saved_override
        plugins._loaded, plugins._loading, plugins._manager = saved_state[:3]
        plugins._report[:] = saved_state[3]
        registry._functions.clear()
        registry._functions.update(saved_registry[0])
        registry._sources.clear()
        registry._sources.update(saved_registry[1])
        extensions._restore(saved_extensions)
        _forget_device_apis()
