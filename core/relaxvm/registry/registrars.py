"""The registrar objects handed to registration hooks, and the records they collect.

A registrar does not touch the registry: it validates each registration (so that a bad one is
reported at the plugin's own call, naming the plugin) and records it as a
:class:`Registration`. The loader applies the records only after every selected plugin's hooks
have run, which is what makes overrides independent of the order plugins load in (see
:mod:`relaxvm.registry.resolution`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import PluginError, RegistryError
from . import extensions, op_names

__all__ = [
    "REGISTRATION_HOOKS",
    "FunctionRegistrar",
    "LegalizationRegistrar",
    "Registration",
    "RegistrationKind",
    "TargetRegistrar",
]

#: What a registration fills: the function registry, the legalization table, the target kinds.
RegistrationKind = Literal["function", "legalization", "target"]


@dataclass(frozen=True)
class Registration:
    """One registration a plugin asked for.

    Attributes
    ----------
    kind : {"function", "legalization", "target"}
        Which table it goes to.
    name : str
        The function name, the op name (``"relax.add"``) or the target kind name.
    value : object
        The function, the legalization function or the :class:`TargetKind`.
    plugin : str
        The entry-point name of the plugin that asked for it.
    override : bool
        Whether it replaces another plugin's registration of the same name.
    target : str or None
        For a legalization, the target kind it is specific to (``None``: generic).
    """

    kind: RegistrationKind
    name: str
    value: Any
    plugin: str
    override: bool = False
    target: str | None = None

    @property
    def key(self) -> tuple[str, str, str | None]:
        """What two registrations must share to collide."""
        return (self.kind, self.name, self.target)

    @property
    def source(self) -> str:
        """How the registry attributes it: ``"plugin '<name>'"``."""
        return f"plugin {self.plugin!r}"

    @property
    def label(self) -> str:
        """Its line in :attr:`PluginInfo.registered`: ``vm.builtin.copy``,
        ``legalize relax.add [llvm]``, ``target llvm``."""
        if self.kind == "function":
            return self.name
        if self.kind == "legalization":
            return f"legalize {self.name}" + (f" [{self.target}]" if self.target else "")
        return f"target {self.name}"

    @property
    def what(self) -> str:
        """The registered thing in an error message: ``global function 'x'``..."""
        if self.kind == "function":
            return f"global function {self.name!r}"
        if self.kind == "legalization":
            where = f" for target {self.target!r}" if self.target else ""
            return f"the legalization of {self.name!r}{where}"
        return f"target kind {self.name!r}"


class _Registrar:
    """Common state: the plugin registrations are attributed to, and what it collected."""

    def __init__(self, plugin_name: str) -> None:
        self.plugin_name = plugin_name
        self.registrations: list[Registration] = []

    @property
    def registered(self) -> list[str]:
        """The labels of what was registered so far (see :attr:`Registration.label`)."""
        return [registration.label for registration in self.registrations]

    def _invalid(self, detail: str) -> PluginError:
        return PluginError(f"relaxvm plugin {self.plugin_name!r} {detail}")


class FunctionRegistrar(_Registrar):
    """The object handed to ``relaxvm_register_builtins``: registrations made through it are
    validated and attributed to one plugin."""

    def register(self, name: str, func: Callable[..., Any], *, override: bool = False) -> None:
        """Register ``func`` under the global ``name`` on behalf of this plugin.

        The registration takes effect when every plugin's hooks have run; see
        :mod:`relaxvm.registry.resolution` for how duplicates and overrides resolve.

        Raises
        ------
        PluginError
            The name is not a non-empty string without surrounding blanks, or ``func`` is not
            callable.
        """
        if not isinstance(name, str) or not name or name != name.strip():
            raise self._invalid(f"registered a function under an invalid name {name!r}")
        if not callable(func):
            raise self._invalid(f"registered {name!r} with a non-callable {type(func).__name__}")
        self.registrations.append(
            Registration("function", name, func, self.plugin_name, bool(override))
        )


class LegalizationRegistrar(_Registrar):
    """The object handed to ``relaxvm_register_legalizations``; see that hook."""

    def __init__(self, plugin_name: str) -> None:
        super().__init__(plugin_name)
        self._known_ops: Collection[str] | None = None

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
        PluginError
            The op name or target is not a non-empty string, ``func`` is not callable, or the
            op is not a registered Relax op (with the closest names). The op table is checked
            here when it is already imported; otherwise ``LegalizeOps`` checks it before the
            first legalization runs (:mod:`relaxvm.registry.op_names`), so that loading
            plugins never imports the IR.
        """
        try:
            extensions._check_legalization(op_name, func, target, "")
        except RegistryError as err:
            raise self._invalid(f"registered an invalid legalization: {err}") from None
        # One look at the op table per hook call (the ops plugin registers dozens); a miss
        # looks again, in case the plugin registered the op in between.
        known = self._known_ops
        if known is None or op_name not in known:
            known = self._known_ops = op_names.loaded_op_names()
        if known is not None and op_name not in known:
            where = f" for target {target!r}" if target else ""
            raise self._invalid(
                f"registered a legalization{where} for {op_names.unknown_op_message(op_name, known)}"
            )
        self.registrations.append(
            Registration(
                "legalization", op_name, func, self.plugin_name, bool(override), target=target
            )
        )


class TargetRegistrar(_Registrar):
    """The object handed to ``relaxvm_register_targets``; see that hook."""

    def register(self, kind: extensions.TargetKind, *, override: bool = False) -> None:
        """Register a :class:`relaxvm.registry.TargetKind`.

        Raises
        ------
        PluginError
            ``kind`` is not a TargetKind.
        """
        if not isinstance(kind, extensions.TargetKind):
            raise self._invalid(
                "registered a target that is not a relaxvm.registry.TargetKind: "
                f"{type(kind).__name__}"
            )
        self.registrations.append(
            Registration("target", kind.name, kind, self.plugin_name, bool(override))
        )


#: Every registration hook and the registrar type its implementations receive.
REGISTRATION_HOOKS: tuple[tuple[str, type[_Registrar]], ...] = (
    ("relaxvm_register_builtins", FunctionRegistrar),
    ("relaxvm_register_legalizations", LegalizationRegistrar),
    ("relaxvm_register_targets", TargetRegistrar),
)
