"""TVM's ``tvm.relax`` namespace: ``from relaxvm import relax`` as ``from tvm import relax``.

The Relax IR itself lives in :mod:`relaxvm.ir.relax` (expressions, StructInfo, IRModule,
BlockBuilder, ``op``); this module adds what ``tvm.relax`` also offers from the other layers:
:func:`build` (the compiler), :class:`VirtualMachine` and :class:`Executable` (the runtime),
``transform`` (the Relax passes, :mod:`relaxvm.transform`, so ``relax.transform.LegalizeOps()``
works as in TVM) and :func:`get_pipeline`.
Keeping that here, not in the IR package, lets the IR stay below the compiler and the runtime
in the import graph.
"""

from __future__ import annotations

from .ir.relax import *  # noqa: F403 - the whole Relax IR, as tvm.relax has it
from .ir.relax import __all__ as _ir_names
from .ir.relax import op as op

# isort: split
from . import transform as transform
from .backend.build import build as build
from .transform.pipeline import get_pipeline as get_pipeline
from .vm import Executable as Executable
from .vm import VirtualMachine as VirtualMachine

__all__ = sorted(
    {*_ir_names, "Executable", "VirtualMachine", "build", "get_pipeline", "op", "transform"}
)
