"""Every hook a relaxvm plugin can implement.

A plugin is a module (or object) named by an entry point in the ``relaxvm`` group::

    [project.entry-points.relaxvm]
    myplugin = "my_package.plugin"

whose functions carry :data:`hookimpl`. Registration hooks receive a *registrar* object and
return nothing; relaxvm validates each registration and attributes it to the plugin, so errors
(a duplicate name, a non-callable) name the plugin at fault. Hooks are called once per process,
lazily, the first time relaxvm needs a registered name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .plugins import FunctionRegistrar

__all__ = ["hookimpl", "hookspec"]

PROJECT_NAME = "relaxvm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
#: Decorator for plugin hook implementations: ``@relaxvm.hookimpl``.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def relaxvm_register_builtins(registry: FunctionRegistrar) -> None:
    """Register global functions: VM builtins, runtime helpers and device APIs.

    Parameters
    ----------
    registry : relaxvm.plugins.FunctionRegistrar
        Call ``registry.register(name, func, override=False)`` once per function. Names follow
        TVM: ``vm.builtin.<name>`` for VM builtins, ``device_api.<kind>`` for a zero-argument
        factory returning a :class:`relaxvm.runtime.DeviceAPI` (this is how device kinds such
        as ``cpu`` and ``cuda`` become known), anything dotted for your own functions.

    Notes
    -----
    A name registered twice is an error naming both plugins unless the second registration
    passes ``override=True``. Functions registered here are found by the VM at construction
    time, after the executable's own imports (compiled kernels) and before nothing else.
    """
