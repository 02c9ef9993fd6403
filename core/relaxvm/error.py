"""TVM's ``tvm.error`` names, mapped onto the relaxvm exception hierarchy (:mod:`relaxvm.errors`).

Code written against TVM catches ``tvm.TVMError``, ``tvm.error.DiagnosticError`` and
``tvm.error.InternalError``; here they are the relaxvm classes raised in the same situations:

==================  ==========================================================================
TVM                 relaxvm
==================  ==========================================================================
``TVMError``        :class:`~relaxvm.errors.RelaxVMError`, the base of every error relaxvm
                    raises on purpose (also ``relaxvm.TVMError``)
``DiagnosticError`` :class:`~relaxvm.script.ScriptError`, what the script parser raises
``InternalError``   :class:`~relaxvm.errors.RelaxVMError` as well: TVM raises it for failed
                    internal checks, which in relaxvm are ordinary, named errors (an
                    :class:`~relaxvm.ir.relax.op.OpError` from a shape it cannot infer, say)
``OpNotImplemented`` :class:`~relaxvm.errors.OpNotImplemented`, from the importers
==================  ==========================================================================

These are aliases, not new classes, so ``except relaxvm.errors.RelaxVMError`` and
``except relaxvm.error.TVMError`` catch the very same errors. relaxvm's errors also derive from
the built-in exception TVM raises for the case (``ValueError``, ``TypeError``...).

This module imports the script parser (for ``DiagnosticError``); ``import relaxvm`` does not
load it until ``relaxvm.error`` is first used.
"""

from __future__ import annotations

from .errors import OpNotImplemented, RelaxVMError
from .script._source import ScriptError

__all__ = ["DiagnosticError", "InternalError", "OpNotImplemented", "TVMError"]

#: TVM's ``tvm.TVMError``: the base class of every error relaxvm raises on purpose.
TVMError = RelaxVMError

#: TVM's ``tvm.error.DiagnosticError``: an error the script parser reports at a source position.
DiagnosticError = ScriptError

#: TVM's ``tvm.error.InternalError``; relaxvm reports failed checks as named errors, all of them
#: :class:`RelaxVMError`, so this catches them all.
InternalError = RelaxVMError
