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
``relaxvm.script.ir_module`` is ``I.ir_module`` and ``relaxvm.script.parser`` holds the same
namespaces (TVM's ``tvm.script.ir_module`` and ``tvm.script.parser``).
"""

from __future__ import annotations

from . import ir, relax, tir
from ._entry import from_source
from ._source import ScriptError
from .ir import ir_module

# isort: split
# TVM's ``tvm.script.parser`` (the same namespaces), imported last: it re-exports the above.
from . import parser

__all__ = ["ScriptError", "from_source", "ir", "ir_module", "parser", "relax", "tir"]
