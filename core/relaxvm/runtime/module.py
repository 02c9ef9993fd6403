"""Runtime modules: a named bag of functions with imports (TVM's ``runtime.Module``).

The executable is a module; compiled kernel libraries are modules imported by it, and the VM
resolves a callee by name in those imports before the global registry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..errors import FunctionNotFoundError

__all__ = ["Module", "load_module"]


class Module:
    """A runtime module.

    Parameters
    ----------
    functions : mapping of str to callable, optional
        The module's own functions.
    name : str
        A label used in messages.
    """

    type_key = "module"

    def __init__(
        self, functions: Mapping[str, Callable[..., Any]] | None = None, name: str = ""
    ) -> None:
        self._functions: dict[str, Callable[..., Any]] = dict(functions or {})
        self.name = name or self.type_key
        self._imports: list[Module] = []

    @property
    def imports(self) -> list[Module]:
        """Modules imported by this one (a copy of the list)."""
        return list(self._imports)

    def import_module(self, other: Module) -> None:
        """Add ``other`` to this module's imports (searched by ``query_imports`` lookups)."""
        if not isinstance(other, Module):
            raise TypeError(f"import_module: expected a Module, got {type(other).__name__}")
        self._imports.append(other)

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        return self._functions.get(name)

    def get_function(self, name: str, query_imports: bool = False) -> Callable[..., Any] | None:
        """The function ``name``: this module first, then (optionally) its imports depth-first.

        Returns ``None`` when absent."""
        func = self._own_function(name)
        if func is None and query_imports:
            for imported in self._walk_imports():
                func = imported._own_function(name)
                if func is not None:
                    break
        return func

    def _walk_imports(self) -> Iterator[Module]:
        seen: set[int] = {id(self)}
        stack = list(reversed(self._imports))
        while stack:
            module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield module
            stack.extend(reversed(module._imports))

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        """Whether :meth:`get_function` would find ``name``."""
        return self.get_function(name, query_imports) is not None

    def list_functions(self) -> list[str]:
        """Names of this module's own functions."""
        return sorted(self._functions)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        func = self.get_function(name, query_imports=True)
        if func is None:
            raise FunctionNotFoundError(
                f"module {self.name!r} has no function {name!r} (own functions: "
                f"{', '.join(self.list_functions()) or 'none'})"
            )
        return func

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.implements_function(name, query_imports=True)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {len(self._functions)} functions>"


def load_module(path: str | os.PathLike[str], *, trust: bool = False) -> Any:
    """TVM's ``tvm.runtime.load_module``: :func:`relaxvm.load_module` under its TVM name.

    Parameters
    ----------
    path : str or PathLike
        A file written by ``Executable.export_library`` (``.rvm`` or ``.so``).
    trust : bool
        Run the file's object code even if it is not signed with your key.

    Returns
    -------
    Executable

    Raises
    ------
    ExecutableFormatError
        The file is missing, corrupt or of another format.
    """
    # Imported here: the package imports this module while it initializes.
    from .. import load_module as load

    return load(path, trust=trust)
