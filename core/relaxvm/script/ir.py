"""The ``I`` namespace of the script format: ``from relaxvm.script import ir as I``."""

from __future__ import annotations

from typing import Any

__all__ = ["ir_module", "module_attrs"]


def ir_module(cls: Any) -> Any:
    """``@I.ir_module``: parse a class of ``@R.function`` and ``@T.prim_func`` methods into a
    :class:`~relaxvm.ir.relax.IRModule` (functions by method name).

    Inside the class, ``cls.f`` (or the class name, or just ``f``) names function ``f`` of the
    module, so functions can call each other and themselves.
    """
    from ._entry import ir_module as _parse

    return _parse(cls, depth=1)


def module_attrs(attrs: dict[str, Any]) -> None:
    """``I.module_attrs({"key": value})``: a statement of an ``@I.ir_module`` class body that
    sets the module's attributes."""
    raise RuntimeError("I.module_attrs may only appear as a statement of an @I.ir_module class")
