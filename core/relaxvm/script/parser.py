"""TVM's ``tvm.script.parser`` spelling: ``from relaxvm.script.parser import ir as I, relax as R``.

The namespaces and entry points are those of :mod:`relaxvm.script` itself (the very modules
and functions); ``parse`` is :func:`relaxvm.script.from_source`.
"""

from __future__ import annotations

from . import ir, relax, tir
from ._entry import from_source
from .ir import ir_module

#: TVM's ``tvm.script.parser.parse``.
parse = from_source

__all__ = ["from_source", "ir", "ir_module", "parse", "relax", "tir"]
