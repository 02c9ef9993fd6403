"""The table the ``@builtin`` decorator fills; the plugin hook registers its contents.

Decorating records a name; nothing reaches the global registry until relaxvm loads the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: ``(global name, function)`` in declaration order.
BUILTINS: list[tuple[str, Callable[..., Any]]] = []


def builtin(name: str) -> Callable[[F], F]:
    """Declare the decorated function as the global function ``name``."""

    def decorate(func: F) -> F:
        BUILTINS.append((name, func))
        return func

    return decorate
