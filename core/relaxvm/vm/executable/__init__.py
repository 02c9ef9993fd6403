"""The executable: what the compiler produces and the VM runs.

* :mod:`~relaxvm.vm.executable.executable`: :class:`Executable` (function table, constants,
  instructions, imports) and its public methods;
* :mod:`~relaxvm.vm.executable.format` and :mod:`~relaxvm.vm.executable.codec`: the
  bounds-checked binary file format and its field and constant-pool codecs;
* :mod:`~relaxvm.vm.executable.text`: the text and Python views (``as_text``, ``as_python``,
  ``stats``);
* :mod:`~relaxvm.vm.executable.elf_payload`: the executable carried inside an ELF shared
  library by ``export_library("x.so")``.
"""

from __future__ import annotations

from .executable import Executable, VMFuncInfo, VMFuncKind

__all__ = ["Executable", "VMFuncInfo", "VMFuncKind"]
