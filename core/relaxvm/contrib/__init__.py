"""TVM's ``tvm.contrib`` helpers that relaxvm provides (``docs/contrib.md``).

* :mod:`.utils`: ``tempdir()`` and :class:`~.utils.TempDirectory`, ``filelock``, ``which``;
* :mod:`.popen_pool`: :class:`~.popen_pool.PopenWorker` and
  :class:`~.popen_pool.PopenPoolExecutor`, functions run in fresh ``spawn`` processes;
* :mod:`.cc`: ``create_shared`` / ``create_staticlib`` as TVM names them, which raise: relaxvm
  exports executables as its own files and needs no C compiler;
* :mod:`.cblas`: ``matmul`` as a tensor-expression ``te.compute`` (no BLAS library is called).

Each submodule loads on first use, so ``from relaxvm.contrib import utils`` costs only that one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import cblas as cblas
    from . import cc as cc
    from . import popen_pool as popen_pool
    from . import utils as utils

_SUBMODULES = ("cblas", "cc", "popen_pool", "utils")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})


__all__ = ["cblas", "cc", "popen_pool", "utils"]
