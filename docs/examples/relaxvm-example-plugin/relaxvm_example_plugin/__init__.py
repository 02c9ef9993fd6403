"""An example third-party relaxvm plugin.

Importing this package registers nothing: relaxvm imports :mod:`relaxvm_example_plugin.plugin`
through the ``example`` entry point and calls its ``relaxvm_register_builtins`` hook.
"""

from __future__ import annotations

from .kernels import scale, vector_add

__all__ = ["scale", "vector_add"]
