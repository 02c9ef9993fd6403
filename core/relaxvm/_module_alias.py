"""Import-system aliases: ``import relaxvm.tir`` gives the very module ``relaxvm.ir.tir``.

TVM code imports ``tvm.tir`` (and ``from tvm.tir.function import PrimFunc``) as packages; in
relaxvm those live inside the IR package. An attribute alias (``relaxvm.tir``) is not enough for
an ``import`` statement, and letting the path finder load ``relaxvm/ir/tir/function.py`` a second
time under another name would make two ``PrimFunc`` classes. :func:`install` adds a meta-path
finder that answers an alias with the real module, imported under its own name.

This module imports nothing from relaxvm, so ``import relaxvm`` stays light: the real module is
imported only when the alias is.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

__all__ = ["install"]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set ``__spec__`` to the alias's spec (it always does, even
        # for a module it did not create); put the real one back so the module keeps one
        # identity (``importlib.reload``, pickling by name).
        module.__spec__ = self.spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``<alias>`` and ``<alias>.<sub>...`` as ``<real>`` and ``<real>.<sub>...``."""

    def __init__(self, aliases: Mapping[str, str]) -> None:
        self.aliases = dict(aliases)

    def real_name(self, fullname: str) -> str | None:
        """The real module's name for ``fullname``; the longest alias that covers it wins.

        An alias ending in ``.`` covers the submodules of a real module without the module
        itself (``"relaxvm.relax."``: ``relaxvm.relax`` is a module of its own).
        """
        best: tuple[str, str] | None = None
        for alias, real in self.aliases.items():
            if alias.endswith("."):
                covers = fullname.startswith(alias) and len(fullname) > len(alias)
            else:
                covers = fullname == alias or fullname.startswith(alias + ".")
            if covers and (best is None or len(alias) > len(best[0])):
                best = (alias, real)
        if best is None:
            return None
        alias, real = best
        return real + fullname[len(alias) :]

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        real = self.real_name(fullname)
        if real is None:
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as err:
            if err.name is not None and real.startswith(err.name):
                return None  # no such module: the import system says so in its own words
            raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


def install(aliases: Mapping[str, str]) -> None:
    """Make each ``alias`` importable as the module ``real`` (``{alias: real}``), submodules too
    (an alias that ends in ``.`` maps only the submodules: ``{"a.": "b."}``).

    Idempotent per alias. The finder goes first on ``sys.meta_path`` so that the path finder
    never loads a second copy of a real submodule under the alias.
    """
    for finder in sys.meta_path:
        if isinstance(finder, _AliasFinder):
            finder.aliases.update(aliases)
            return
    sys.meta_path.insert(0, _AliasFinder(aliases))
