"""The ``I`` namespace of the script format: ``from relaxvm.script import ir as I``."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["ir_module", "module_attrs"]


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
    caller = sys._getframe(1)
    # A class body's namespace gets __module__ and __qualname__ before the body runs.
    if "__qualname__" in caller.f_locals and "__module__" in caller.f_locals:
        return
    raise RuntimeError("I.module_attrs may only appear as a statement of an @I.ir_module class")
