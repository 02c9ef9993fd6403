"""The ``I`` namespace of the script format: ``from relaxvm.script import ir as I``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..errors import VMTypeError
from ..ir.global_info import DummyGlobalInfo
from ..ir.relax.vdevice import VDevice

__all__ = ["dummy_global_info", "ir_module", "module_attrs", "module_global_infos", "vdevice"]

# The virtual devices of the module being parsed: R.Tensor(..., "cuda:0") looks them up.
_MODULE_VDEVICES: ContextVar[tuple[VDevice, ...]] = ContextVar("module_vdevices", default=())


def ir_module(cls: Any = None, *, check_well_formed: bool = True) -> Any:
    """``@I.ir_module``: parse a class of ``@R.function`` and ``@T.prim_func`` methods into a
    :class:`~relaxvm.ir.relax.IRModule` (functions by method name).

    Inside the class, ``cls.f`` (or the class name, or just ``f``) names function ``f`` of the
    module, so functions can call each other and themselves.

    Parameters
    ----------
    cls : class
        The decorated class (``@I.ir_module``); omitted in the ``@I.ir_module(...)`` spelling.
    check_well_formed : bool
        Run :func:`relaxvm.ir.relax.well_formed` on the parsed module (TVM's default), so that
        an ill-formed module is a ``ScriptError`` at the class; ``False`` skips the check (and
        the per-function checks of ``@T.prim_func``), as in TVM, for tests that build
        deliberately ill-formed IR.
    """
    from ._entry import ir_module as _parse

    if cls is None:
        return lambda c: _parse(c, depth=1, check_well_formed=check_well_formed)
    return _parse(cls, depth=1, check_well_formed=check_well_formed)


def _in_class_body(depth: int) -> bool:
    caller = sys._getframe(depth + 1)
    # A class body's namespace gets __module__ and __qualname__ before the body runs.
    return "__qualname__" in caller.f_locals and "__module__" in caller.f_locals


def module_attrs(attrs: dict[str, Any]) -> None:
    """``I.module_attrs({"key": value})``: a statement of an ``@I.ir_module`` class body that
    sets the module's attributes.

    Python runs the class body before ``@I.ir_module`` parses its source, so the call does
    nothing there (the parser reads the statement); called anywhere else it is an error.

    Raises
    ------
    RuntimeError
        Called outside a class body.
    """
    if _in_class_body(1):
        return
    raise RuntimeError("I.module_attrs may only appear as a statement of an @I.ir_module class")


def module_global_infos(global_infos: dict[str, list[Any]]) -> None:
    """``I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("cuda", 0)]})``: a
    statement of an ``@I.ir_module`` class body that sets the module's global infos
    (``mod.global_infos``).

    The ``"vdevice"`` list names the virtual devices that tensor annotations of the module
    refer to: ``R.Tensor((n,), "float32", "cuda:1")`` is the second listed device whose
    target kind is ``cuda``. As :func:`module_attrs`, the call does nothing when Python runs
    the class body (the parser reads the statement).

    Raises
    ------
    RuntimeError
        Called outside a class body.
    """
    if _in_class_body(1):
        return
    raise RuntimeError(
        "I.module_global_infos may only appear as a statement of an @I.ir_module class"
    )


def vdevice(target: Any = None, vdevice_id: int = 0, memory_scope: str = "global") -> VDevice:
    """``I.vdevice("cuda", 0, "global")``: a virtual device for ``I.module_global_infos``.

    Parameters
    ----------
    target : str or mapping or Target, optional
        The target: ``"llvm"``, ``"cuda -arch=sm_80"``, or TVM's printed config mapping
        ``{"kind": "cuda", "arch": "sm_80"}``.
    vdevice_id : int
        The device number.
    memory_scope : str
        The memory scope.

    Returns
    -------
    VDevice

    Raises
    ------
    VMTypeError, VMValueError
        As :class:`~relaxvm.ir.relax.vdevice.VDevice`: an unknown target kind, a negative
        ``vdevice_id`` or an empty memory scope.
    """
    if isinstance(vdevice_id, bool) or not isinstance(vdevice_id, int):
        raise VMTypeError(f"I.vdevice: vdevice_id must be an int, got {vdevice_id!r}")
    if not isinstance(memory_scope, str):
        raise VMTypeError(f"I.vdevice: memory_scope must be a str, got {memory_scope!r}")
    return VDevice(target, vdevice_id, memory_scope)


def dummy_global_info() -> DummyGlobalInfo:
    """``I.dummy_global_info()``: TVM's content-free global info, for tests."""
    return DummyGlobalInfo()


def _current_vdevices() -> tuple[VDevice, ...]:
    """The virtual devices of the ``@I.ir_module`` being parsed (empty outside one)."""
    return _MODULE_VDEVICES.get()


@contextmanager
def _vdevice_scope(vdevices: tuple[VDevice, ...]) -> Iterator[None]:
    """Make ``vdevices`` the ones ``_current_vdevices`` returns, while parsing a module."""
    token = _MODULE_VDEVICES.set(tuple(vdevices))
    try:
        yield
    finally:
        _MODULE_VDEVICES.reset(token)
