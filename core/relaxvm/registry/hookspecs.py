"""Every hook a relaxvm plugin can implement.

A plugin is a module (or object) named by an entry point in the ``relaxvm`` group::

    [project.entry-points.relaxvm]
    myplugin = "my_package.plugin"

whose functions carry :data:`hookimpl`. Registration hooks receive a *registrar* object and
return nothing; relaxvm validates each registration and attributes it to the plugin, so errors
(a duplicate name, a non-callable) name the plugin at fault. Hooks are called once per process,
lazily, the first time relaxvm needs a registered name.

Registrations take effect after *every* selected plugin's hooks have run, and resolve the same
whatever the order plugins load in (:mod:`relaxvm.registry.resolution`): a name registered by
two plugins is an error naming both; ``override=True`` replaces a plain registration of the
name by any other plugin (or stands alone if there is none); two plugins overriding one name
is an error naming both. Consequently a hook cannot look up what another plugin registers in
the same load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .registrars import FunctionRegistrar, LegalizationRegistrar, TargetRegistrar

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
    registry : relaxvm.registry.FunctionRegistrar
        Call ``registry.register(name, func, override=False)`` once per function. Names follow
        TVM: ``vm.builtin.<name>`` for VM builtins, ``device_api.<kind>`` for a zero-argument
        factory returning a :class:`relaxvm.runtime.DeviceAPI` (this is how device kinds such
        as ``cpu`` and ``cuda`` become known), anything dotted for your own functions.

    Notes
    -----
    A name registered by two plugins is an error naming both unless one of them passes
    ``override=True``; see the module docstring for the full, order-independent rule.
    Functions registered here are found by the VM at construction time, after the
    executable's own imports (compiled kernels).
    """


@hookspec
def relaxvm_register_legalizations(register: LegalizationRegistrar) -> None:
    """Register how high-level Relax ops lower to kernels (TVM's ``FLegalize``).

    Parameters
    ----------
    register : relaxvm.registry.LegalizationRegistrar
        Call ``register.register(op_name, func, target=None, override=False)``. ``func`` is
        called as ``func(bb, call)`` with a :class:`relaxvm.relax.BlockBuilder` and the
        normalized :class:`relaxvm.relax.Call` of op ``op_name`` (``"relax.add"``...), and
        returns the replacement Relax expression, typically ``bb.emit_te(...)`` or a
        ``call_tir`` built with ``bb.emit_te``. ``target`` is a target kind name
        (``"llvm"``, ``"cuda"``): such a registration wins over the generic one when
        compiling for that kind.

    Notes
    -----
    ``LegalizeOps`` looks an op up for the current target kind first, then generically. An op
    with no legalization is a build-time error naming the function, the binding and the op.
    ``(op_name, target)`` pairs resolve between plugins like function names: pass
    ``override=True`` to replace another plugin's legalization, whatever the load order.
    """


@hookspec
def relaxvm_register_targets(register: TargetRegistrar) -> None:
    """Register code-generation targets (``llvm``, ``cuda``, your own).

    Parameters
    ----------
    register : relaxvm.registry.TargetRegistrar
        Call ``register.register(kind)`` with a :class:`relaxvm.registry.TargetKind`: its name,
        device kind, attribute defaults, ``build`` (PrimFuncs to a runtime module of kernels),
        optional extra passes for the relax pipeline, and the serializer/loader pair that
        ``export_library``/``load_module`` use.

    Notes
    -----
    A kind name registered by two plugins is an error naming both unless one of them passes
    ``override=True``. ``relaxvm.target.Target("llvm")`` and ``relaxvm.compile(...,
    target="llvm")`` look kinds up here.
    """
