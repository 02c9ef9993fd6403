"""The script format: Relax and TIR written as Python, in TVMScript's spelling.

>>> from relaxvm.script import ir as I, relax as R, tir as T
>>> @I.ir_module
... class MyModule:
...     @R.function
...     def main(x: R.Tensor((3, 4), "float32")):
...         return R.add(x, x)

Decorated definitions are parsed from their source file (Python never runs their bodies);
:func:`from_source` parses text, which also works in a REPL or notebook. Every problem is a
:class:`ScriptError` naming the file, line and column. See ``docs/script.md``.
"""

from __future__ import annotations

from . import ir, relax, tir
from ._entry import from_source
from ._source import ScriptError

__all__ = ["ScriptError", "from_source", "ir", "relax", "tir"]
