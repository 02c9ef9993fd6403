"""Module-level global information (TVM's ``tvm.ir.GlobalInfo``): :class:`DummyGlobalInfo`.

TVM attaches lists of these to an IRModule (``mod.global_infos``); relaxvm keeps virtual devices
there (:class:`~relaxvm.ir.relax.vdevice.VDevice`) and has no other kind. ``DummyGlobalInfo``
is the field-less placeholder TVM's tests use: every instance equals every other one.
"""

from __future__ import annotations

__all__ = ["DummyGlobalInfo", "GlobalInfo"]


class GlobalInfo:
    """Base class of global information attached to a module."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        # Fields are compared by subclasses that have them; a field-less info equals its kind.
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


class DummyGlobalInfo(GlobalInfo):
    """A global info with no content (TVM's ``tvm.ir.DummyGlobalInfo``), for tests."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "I.dummy_global_info()"
