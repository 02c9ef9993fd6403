"""Module-level global information (TVM's ``tvm.ir.GlobalInfo``): :class:`DummyGlobalInfo`.

TVM attaches lists of these to an IRModule (``mod.global_infos``, a mapping from a name to a
list of infos); relaxvm keeps virtual devices there under ``"vdevice"``
(:class:`~relaxvm.ir.relax.vdevice.VDevice` is a ``GlobalInfo``) and has no other kind.
``DummyGlobalInfo`` is the field-less placeholder TVM's tests use: every instance equals every
other one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import VMTypeError, VMValueError

__all__ = [
    "DummyGlobalInfo",
    "GlobalInfo",
    "checked_global_infos",
    "checked_info_list",
    "global_infos_script",
]


class GlobalInfo:
    """Base class of global information attached to a module."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        # Fields are compared by subclasses that have them; a field-less info equals its kind.
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def script(self) -> str:
        """The script text that builds this info (``I.dummy_global_info()``...)."""
        return repr(self)


class DummyGlobalInfo(GlobalInfo):
    """A global info with no content (TVM's ``tvm.ir.DummyGlobalInfo``), for tests."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "I.dummy_global_info()"


def checked_info_list(name: Any, infos: Any, where: str) -> tuple[GlobalInfo, ...]:
    """The infos of one entry of ``global_infos`` as a tuple, after checking them.

    Parameters
    ----------
    name : str
        The entry's name (``"vdevice"``...).
    infos : sequence of GlobalInfo
        Its list of infos; under ``"vdevice"`` each must be a
        :class:`~relaxvm.ir.relax.vdevice.VDevice` (the script's ``"cuda:0"`` references index
        that list).
    where : str
        The caller, for messages (``"IRModule.update_global_info"``).

    Returns
    -------
    tuple of GlobalInfo

    Raises
    ------
    VMTypeError
        ``name`` is not a str, ``infos`` not a list or tuple, or an item of the wrong kind.
    """
    from .relax.vdevice import VDevice

    if not isinstance(name, str):
        raise VMTypeError(f"{where}: a global info name must be a str, got {name!r}")
    if not isinstance(infos, (list, tuple)):
        raise VMTypeError(
            f"{where}: the value of '{name}' must be a list of GlobalInfo, got "
            f"{type(infos).__name__}"
        )
    want = VDevice if name == "vdevice" else GlobalInfo
    for index, info in enumerate(infos):
        if not isinstance(info, want):
            raise VMTypeError(
                f"{where}: {name}[{index}] must be a {want.__name__}, got {type(info).__name__}"
                + (
                    " (build one with VDevice(target, vdevice_id, memory_scope))"
                    if want is VDevice
                    else ""
                )
            )
    return tuple(infos)


def checked_global_infos(infos: Any, where: str) -> dict[str, tuple[GlobalInfo, ...]]:
    """``infos`` (a mapping from name to list of GlobalInfo, or None) as a checked dict.

    Raises
    ------
    VMTypeError
        Not a mapping, or an entry fails :func:`checked_info_list`.
    VMValueError
        An empty name.
    """
    if infos is None:
        return {}
    if not isinstance(infos, Mapping):
        raise VMTypeError(
            f"{where}: global_infos must be a mapping from name to a list of GlobalInfo, got "
            f"{type(infos).__name__}"
        )
    checked: dict[str, tuple[GlobalInfo, ...]] = {}
    for name, items in infos.items():
        checked[name] = checked_info_list(name, items, where)
        if not name:
            raise VMValueError(f"{where}: a global info name must not be empty")
    return checked


def global_infos_script(infos: Mapping[str, Sequence[GlobalInfo]]) -> str:
    """``{"vdevice": [I.vdevice(...), ...]}``: the argument of ``I.module_global_infos`` that
    the printer writes for a module's ``global_infos`` (names in sorted order)."""
    from .printer import quote

    entries = (
        f"{quote(name)}: [{', '.join(info.script() for info in infos[name])}]"
        for name in sorted(infos)
    )
    return "{" + ", ".join(entries) + "}"
