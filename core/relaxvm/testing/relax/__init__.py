"""TVM's ``tvm.relax.testing``, also importable as ``relaxvm.relax.testing``.

Only :mod:`.vm` is here: the packed functions (``test.vm.*``, registered when this package is
imported) and ``check_saved_func`` that TVM's VM tests call. TVM's other helpers (``nn``,
``transform``...) are not provided.
"""

from __future__ import annotations

from . import vm
from .vm import check_saved_func

__all__ = ["check_saved_func", "vm"]
