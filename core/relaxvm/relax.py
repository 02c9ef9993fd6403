"""TVM's ``tvm.relax`` namespace: ``from relaxvm import relax`` as ``from tvm import relax``.

The Relax IR itself lives in :mod:`relaxvm.ir.relax` (expressions, StructInfo, IRModule,
BlockBuilder, ``op``); this module adds what ``tvm.relax`` also offers from the other layers:
:func:`build` (the compiler), :class:`VirtualMachine` and :class:`Executable` (the runtime),
``transform`` (the Relax passes, :mod:`relaxvm.transform`, so ``relax.transform.LegalizeOps()``
works as in TVM), ``frontend`` (the importers, :mod:`relaxvm.frontend`) and
:func:`get_pipeline`. Keeping that here, not in the IR package, lets the IR stay below the
compiler and the runtime in the import graph.

Import statements work too, as in TVM: ``from relaxvm.relax.frontend.onnx import from_onnx``,
``import relaxvm.relax.transform``, ``from relaxvm.relax.op import nn``. ``relaxvm.relax.X``
is the very module ``relaxvm.X`` (for ``transform``, ``frontend``, ``backend``) or
``relaxvm.ir.relax.X`` (the IR's own submodules), never a second copy of it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .ir.relax import *  # noqa: F403 - the whole Relax IR, as tvm.relax has it
from .ir.relax import __all__ as _ir_names
from .ir.relax import op as op

# isort: split
from . import transform as transform
from .backend.build import build as build
from .transform.pipeline import get_pipeline as get_pipeline
from .vm import Executable as Executable
from .vm import VirtualMachine as VirtualMachine

if TYPE_CHECKING:
    from . import frontend as frontend

__all__ = sorted(
    {
        *_ir_names,
        "Executable",
        "VirtualMachine",
        "build",
        "frontend",
        "get_pipeline",
        "op",
        "transform",
    }
)

#: A package for the import system, so that ``import relaxvm.relax.<name>`` reaches
#: :class:`_AliasFinder` (the list stays empty: nothing is ever loaded from a directory).
__path__: list[str] = []

#: ``relaxvm.relax.<first>`` -> the real package, for names outside the IR package.
_OUTSIDE_IR = {
    "backend": "relaxvm.backend",
    "frontend": "relaxvm.frontend",
    "transform": "relaxvm.transform",
}


def _real_name(alias: str) -> str | None:
    prefix = f"{__name__}."
    if not alias.startswith(prefix):
        return None
    first, _, rest = alias[len(prefix) :].partition(".")
    base = _OUTSIDE_IR.get(first, f"relaxvm.ir.relax.{first}")
    return f"{base}.{rest}" if rest else base


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module: ModuleType) -> None:
        self.module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module  # the real module; its own name and spec stay as they are

    def exec_module(self, module: ModuleType) -> None:
        pass  # already executed under its real name


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``relaxvm.relax.<name>...`` as the real module (see the module docstring)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        real = _real_name(fullname)
        if real is None:
            return None
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as err:
            if err.name is not None and real.startswith(err.name):
                return None  # no such module: the import system says so in its own words
            raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


# First in line: the path finder would otherwise load a second copy of a real submodule under
# the alias (``relaxvm.relax.frontend.onnx`` from ``relaxvm.frontend``'s directory).
if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())


def __getattr__(name: str) -> Any:
    if name == "frontend":
        module = importlib.import_module("relaxvm.frontend")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'relaxvm.relax' has no attribute '{name}'", name=name)
