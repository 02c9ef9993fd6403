"""Small helpers shared by the shipped test modules (importable without pytest)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ...registry import functions as registry
from ...vm import VirtualMachine

__all__ = ["MakeVM", "registered_funcs"]

#: The type of the ``make_vm`` fixture: ``make_vm(mod_or_source, **build_kwargs) -> VM``.
MakeVM = Callable[..., VirtualMachine]


@contextlib.contextmanager
def registered_funcs(**funcs: Callable[..., Any]) -> Iterator[None]:
    """Register ``relaxvm.conformance.<name>`` for each keyword for the block, then remove it.

    The suite runs inside the user's test session: what it registers must not outlive the test.
    """
    names = [f"relaxvm.conformance.{name}" for name in funcs]
    try:
        for name, func in zip(names, funcs.values(), strict=True):
            registry.register_func(name, func, override=True)
        yield
    finally:
        for name in names:
            if name in registry.list_global_func_names():
                registry.remove_global_func(name)
