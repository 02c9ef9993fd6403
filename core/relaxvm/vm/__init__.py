"""The runtime half: bytecode, the builder, the executable, and the virtual machine.

Data flows through the modules in this order:

* :mod:`~relaxvm.vm.bytecode`: the four opcodes and the argument word encoding;
* :mod:`~relaxvm.vm.builder`: :class:`ExecBuilder`, which writes bytecode into an executable;
* :mod:`relaxvm.vm.executable`: the :class:`Executable`, its file format and its views;
* :mod:`~relaxvm.vm.callplan`: the per-instruction call plan built from the registry, where
  builtins offer call-site specialisations;
* :mod:`~relaxvm.vm.frames` and :mod:`~relaxvm.vm.compiled`: the two exec modes' forms of a
  VM function (a dispatch-loop frame template, or generated straight-line Python);
* :mod:`~relaxvm.vm.interpreter`: the :class:`VirtualMachine` itself.
"""

from __future__ import annotations

from .builder import ExecBuilder, SpecialReg
from .bytecode import Arg, ArgKind, Instruction, Opcode
from .closure import VMClosure
from .executable import Executable, VMFuncInfo, VMFuncKind
from .frames import VMInstrumentReturnKind
from .interpreter import BenchmarkResult, VirtualMachine

__all__ = [
    "Arg",
    "ArgKind",
    "BenchmarkResult",
    "ExecBuilder",
    "Executable",
    "Instruction",
    "Opcode",
    "SpecialReg",
    "VMClosure",
    "VMFuncInfo",
    "VMFuncKind",
    "VMInstrumentReturnKind",
    "VirtualMachine",
]
