"""Tables that plugins fill besides the function registry: op legalizations and target kinds.

Both are filled through hooks (``relaxvm_register_legalizations``,
``relaxvm_register_targets``) by :mod:`relaxvm.registry.loader`, or at run time by the ``register_*``
functions here (notebooks, tests). Like the function registry, every entry remembers who
registered it so that a duplicate names both sources, and lookups load plugins lazily.

This module imports nothing heavy: the VM may load plugins without importing the IR.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import RegistryError

__all__ = [
    "TargetKind",
    "get_legalization",
    "get_target_kind",
    "list_legalizations",
    "list_target_kinds",
    "register_legalization",
    "register_target_kind",
]

#: ``(op_name, target_kind or None) -> (func, source)``.
_legalizations: dict[tuple[str, str | None], tuple[Callable[..., Any], str]] = {}
#: ``kind name -> (TargetKind, source)``.
_target_kinds: dict[str, tuple[TargetKind, str]] = {}


@dataclass(frozen=True)
class TargetKind:
    """What a target plugin provides for one target kind (TVM's ``TargetKind`` plus codegen).

    Attributes
    ----------
    name : str
        The kind, as written in ``Target("llvm")``: ``"llvm"``, ``"cuda"``...
    device : str
        The runtime device kind its kernels run on (``"cpu"``, ``"cuda"``); a
        ``device_api.<device>`` must be registered for executables to run.
    build : callable
        ``build(mod, target) -> relaxvm.runtime.Module``: compile every ``tir.PrimFunc`` of the
        IRModule ``mod`` (already scheduled by ``passes``) into a module whose functions are
        the kernels, callable by their ``global_symbol`` in destination-passing style with
        :class:`relaxvm.Tensor` and ``int`` arguments.
    default_attrs : callable, optional
        ``default_attrs() -> dict`` of attributes a ``Target`` of this kind has unless given
        (for ``llvm``: the host ``mcpu`` and ``mattr``).
    relax_passes : callable, optional
        ``relax_passes(target) -> list of passes`` inserted into the default relax pipeline
        after legalization and fusion (e.g. default schedules for the kind).
    serialize : callable, optional
        ``serialize(module) -> bytes``: the kernels of a module made by ``build`` as bytes that
        ``export_library`` stores; ``None`` means executables for this kind cannot be exported.
    load : callable, optional
        ``load(data, target) -> relaxvm.runtime.Module``: the inverse of ``serialize``; it must
        refuse (with :class:`relaxvm.errors.ExecutableFormatError`) data made for another CPU
        or format version, and must never execute code it has not validated.
    export_shared : callable, optional
        ``export_shared(path, payload, modules)``: write a native shared library at ``path``
        linking the kernels of ``modules`` (made by ``build``) and embedding ``payload``, the
        executable's bytes, for ``export_library("x.so")``; ``None``: not supported.
    doc : str
        One line for ``relaxvm plugins``.
    """

    name: str
    device: str
    build: Callable[..., Any]
    default_attrs: Callable[[], Mapping[str, Any]] | None = None
    relax_passes: Callable[..., list[Any]] | None = None
    serialize: Callable[..., bytes] | None = None
    load: Callable[..., Any] | None = None
    doc: str = ""
    options: Mapping[str, str] = field(default_factory=dict)
    export_shared: Callable[..., None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise RegistryError(f"TargetKind: name must be an identifier, got {self.name!r}")
        if not isinstance(self.device, str) or not self.device:
            raise RegistryError(f"TargetKind {self.name!r}: device must be a non-empty string")
        if not callable(self.build):
            raise RegistryError(f"TargetKind {self.name!r}: build must be callable")


def _ensure_plugins() -> None:
    from . import loader as plugins

    plugins.ensure_loaded()


def register_legalization(
    op_name: str,
    func: Callable[..., Any],
    *,
    target: str | None = None,
    override: bool = False,
    source: str | None = None,
) -> None:
    """Register ``func(bb, call) -> Expr`` as the legalization of ``op_name``.

    Parameters
    ----------
    op_name : str
        The Relax op, e.g. ``"relax.add"``.
    func : callable
        ``func(bb, call)``; see :func:`relaxvm.registry.hookspecs.relaxvm_register_legalizations`.
    target : str, optional
        A target kind this legalization is specific to; generic when omitted.
    override : bool
        Replace an existing registration instead of raising.
    source : str, optional
        Who registers it (set by the plugin loader; ``user:<module>`` otherwise).

    Raises
    ------
    RegistryError
        Invalid name or function, or a duplicate without ``override`` (naming both sources).
    """
    _check_legalization(op_name, func, target, "register_legalization: ")
    source = source or f"user:{getattr(func, '__module__', '?')}"
    # A misspelt op is refused here when the op table is loaded (else when LegalizeOps runs:
    # loading plugins for the VM must not import the IR).
    from . import op_names

    known = op_names.loaded_op_names()
    if known is not None and op_name not in known:
        raise op_names.UnknownOpError(
            f"{op_names.describe_source(source)} registered a legalization for "
            f"{op_names.unknown_op_message(str(op_name), known)}"
        )
    key = (op_name, target)
    if key in _legalizations and not override:
        where = f" for target {target!r}" if target else ""
        raise RegistryError(
            f"register_legalization: {op_name!r}{where} is already legalized by "
            f"{_legalizations[key][1]}; {source} tried to register it again "
            "(pass override=True to replace it)"
        )
    _legalizations[key] = (func, source)


def _check_legalization(op_name: object, func: object, target: object, prefix: str) -> None:
    """Validate one legalization's arguments (shared with the plugin registrar)."""
    if not isinstance(op_name, str) or not op_name:
        raise RegistryError(f"{prefix}op name must be a string, got {op_name!r}")
    if target is not None and (not isinstance(target, str) or not target):
        raise RegistryError(f"{prefix}target must be a kind name, got {target!r}")
    if not callable(func):
        raise RegistryError(
            f"{prefix}the legalization of {op_name!r} must be callable, got {type(func).__name__}"
        )


def get_legalization(op_name: str, target: str | None = None) -> Callable[..., Any] | None:
    """The legalization of ``op_name`` for target kind ``target`` (else the generic one).

    Returns ``None`` when the op has none; the caller (``LegalizeOps``) owns the error message
    because it knows the function and binding.
    """
    _ensure_plugins()
    if target is not None and (op_name, target) in _legalizations:
        return _legalizations[(op_name, target)][0]
    found = _legalizations.get((op_name, None))
    return found[0] if found else None


def list_legalizations() -> dict[tuple[str, str | None], str]:
    """Every registered legalization: ``(op_name, target or None) -> source``."""
    _ensure_plugins()
    return {key: source for key, (_, source) in sorted(_legalizations.items(), key=str)}


def register_target_kind(
    kind: TargetKind, *, override: bool = False, source: str | None = None
) -> None:
    """Register a :class:`TargetKind` (the ``relaxvm_register_targets`` hook's job).

    Raises
    ------
    RegistryError
        ``kind`` is not a TargetKind, or its name is taken and ``override`` is false.
    """
    if not isinstance(kind, TargetKind):
        raise RegistryError(
            f"register_target_kind: expected a relaxvm.target.TargetKind, got {type(kind).__name__}"
        )
    source = source or f"user:{getattr(kind.build, '__module__', '?')}"
    if kind.name in _target_kinds and not override:
        raise RegistryError(
            f"register_target_kind: target kind {kind.name!r} is already registered by "
            f"{_target_kinds[kind.name][1]}; {source} tried to register it again "
            "(pass override=True to replace it)"
        )
    _target_kinds[kind.name] = (kind, source)


def get_target_kind(name: str) -> TargetKind:
    """The registered target kind ``name``.

    Raises
    ------
    RegistryError
        No plugin registered it; the message lists the kinds that exist.
    """
    _ensure_plugins()
    found = _target_kinds.get(name)
    if found is None:
        known = sorted(_target_kinds)
        close = difflib.get_close_matches(str(name), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise RegistryError(
            f"unknown target kind {name!r}: the registered kinds are {known or 'none'} "
            f"(targets come from installed relaxvm plugins){hint}"
        )
    return found[0]


def list_target_kinds() -> dict[str, str]:
    """Every registered target kind: ``name -> source``."""
    _ensure_plugins()
    return {name: source for name, (_, source) in sorted(_target_kinds.items())}


def _snapshot() -> tuple[dict[Any, Any], dict[Any, Any]]:
    return dict(_legalizations), dict(_target_kinds)


def _restore(saved: tuple[dict[Any, Any], dict[Any, Any]]) -> None:
    _legalizations.clear()
    _legalizations.update(saved[0])
    _target_kinds.clear()
    _target_kinds.update(saved[1])
