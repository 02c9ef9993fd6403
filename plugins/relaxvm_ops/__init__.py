"""relaxvm's op legalizations: each high-level Relax op lowered to a TE/TIR kernel.

The plugin (:mod:`relaxvm_ops.plugin`) registers one generic legalization per op through the
``relaxvm_register_legalizations`` hook. The helpers for writing more (for instance a
target-specific override) are re-exported here:

- :func:`call_te`: ``R.call_tir`` of a TE kernel, not yet bound, with the PrimFunc tagged
  with its :class:`OpPattern` and a readable name;
- :func:`call_tir_loops`: the same for a kernel written as TIR statements;
- :class:`LegalizationError`: raised for calls that cannot be lowered.

The names load lazily: loading the plugin for the VM must not import the IR.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LegalizationError", "OpPattern", "call_te", "call_tir_loops"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import _kernel

        return getattr(_kernel, name)
    raise AttributeError(f"module 'relaxvm_ops' has no attribute {name!r}")
