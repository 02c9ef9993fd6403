"""The runtime half: bytecode, the builder, the executable, and the virtual machine.

Data flows through the modules in this order:

* :mod:`~relaxvm.vm.bytecode`: the four opcodes and the argument word encoding;
* :mod:`~relaxvm.vm.builder`: :class:`ExecBuilder`, which writes bytecode into an executable;
* :mod:`relaxvm.vm.executable`: the :class:`Executable`, its file format and its views;
* :mod:`~relaxvm.vm.callplan`: the per-instruction call plan built from the registry, where
  builtins offer call-site specialisations;
* :mod:`~relaxvm.vm.frames` and :mod:`~relaxvm.vm.compiled`: the two exec modes' forms of a
  VM function (a dispatch-loop frame template, or generated straight-line Python);
* :mod:`~relaxvm.vm.interpreter`: the :class:`VirtualMachine` itself, with
  :mod:`~relaxvm.vm.inputs` (argument conversion, ``time_evaluator``),
  :mod:`~relaxvm.vm.instrument` (``set_instrument``'s call wrapper),
  :mod:`~relaxvm.vm.profiler` and :mod:`~relaxvm.vm.profile_report` (``vm.profile``) and
  :mod:`~relaxvm.vm.module` (``vm.module``, TVM's module view of a VM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .builder import ExecBuilder, SpecialReg
from .bytecode import Arg, ArgKind, Instruction, Opcode
from .closure import VMClosure
from .executable import Executable, VMFuncInfo, VMFuncKind
from .frames import VMInstrumentReturnKind
from .interpreter import BenchmarkResult, VirtualMachine

if TYPE_CHECKING:
    from .module import VMModule
    from .profile_report import ProfileReport, ProfileRow

#: Names loaded on first use (the profiler is not needed to run a model).
_LAZY = {"ProfileReport": ".profile_report", "ProfileRow": ".profile_report", "VMModule": ".module"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Arg",
    "ArgKind",
    "BenchmarkResult",
    "ExecBuilder",
    "Executable",
    "Instruction",
    "Opcode",
    "ProfileReport",
    "ProfileRow",
    "SpecialReg",
    "VMClosure",
    "VMFuncInfo",
    "VMFuncKind",
    "VMInstrumentReturnKind",
    "VMModule",
    "VirtualMachine",
]
