"""One home for everything plugins fill, and the one loader that fills it.

* :mod:`~relaxvm.registry.functions`: the global PackedFunc registry (``vm.builtin.*``,
  ``device_api.<kind>``, ...);
* :mod:`~relaxvm.registry.specialization`: the call-site specialisation protocol a registered
  function may offer (its own fast path, used by both exec modes);
* :mod:`~relaxvm.registry.extensions`: op legalizations and target kinds;
* :mod:`~relaxvm.registry.hookspecs`: every hook a plugin can implement, documented;
* :mod:`~relaxvm.registry.loader`: the lazy, idempotent plugin loader, with
  :mod:`~relaxvm.registry.registrars` (the objects handed to the hooks, which collect),
  :mod:`~relaxvm.registry.resolution` (how plain and override registrations from several
  plugins resolve, whatever their order) and :mod:`~relaxvm.registry.failures` (the errors
  naming a broken plugin and how to skip it).

Dependencies run one way: ``functions``, ``extensions`` and ``specialization`` import nothing
of relaxvm beyond :mod:`relaxvm.errors`; ``loader`` imports them and fills them; they reach
the loader (to load plugins lazily on a lookup) only from inside functions.
"""

from __future__ import annotations

from .extensions import (
    TargetKind,
    get_legalization,
    get_target_kind,
    list_legalizations,
    list_target_kinds,
    register_legalization,
    register_target_kind,
)
from .functions import (
    function_source,
    get_global_func,
    list_global_func_names,
    register_func,
    remove_global_func,
)
from .hookspecs import hookimpl, hookspec
from .loader import (
    ENTRY_POINT_GROUP,
    ESSENTIAL_PLUGINS,
    FunctionRegistrar,
    LegalizationRegistrar,
    PluginInfo,
    Registration,
    TargetRegistrar,
    ensure_loaded,
    get_plugin_manager,
    plugin_report,
    register_plugin,
)
from .specialization import (
    REGISTER,
    CallSite,
    Specialization,
    Specializer,
    get_specializer,
    set_specializer,
    specializer,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ESSENTIAL_PLUGINS",
    "REGISTER",
    "CallSite",
    "FunctionRegistrar",
    "LegalizationRegistrar",
    "PluginInfo",
    "Registration",
    "Specialization",
    "Specializer",
    "TargetKind",
    "TargetRegistrar",
    "ensure_loaded",
    "function_source",
    "get_global_func",
    "get_legalization",
    "get_plugin_manager",
    "get_specializer",
    "get_target_kind",
    "hookimpl",
    "hookspec",
    "list_global_func_names",
    "list_legalizations",
    "list_target_kinds",
    "plugin_report",
    "register_func",
    "register_legalization",
    "register_plugin",
    "register_target_kind",
    "remove_global_func",
    "set_specializer",
    "specializer",
]
