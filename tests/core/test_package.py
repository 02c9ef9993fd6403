"""The top-level package: lazy IR submodules, nothing loaded or registered on import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import relaxvm


def test_import_loads_neither_plugins_nor_the_ir():
    code = (
        "import sys, relaxvm\n"
        "from relaxvm.registry import loader as plugins\n"
        "assert 'relaxvm.ir' not in sys.modules, 'the IR was imported eagerly'\n"
        "assert not plugins._loaded, 'plugins were loaded on import'\n"
        "assert relaxvm.tir.Buffer is not None and 'relaxvm.ir' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_submodules():
    assert relaxvm.ir.Analyzer is not None
    assert relaxvm.tir.PrimFunc is relaxvm.ir.tir.PrimFunc
    assert relaxvm.te.compute is relaxvm.ir.tir.te.compute
    with pytest.raises(AttributeError, match="module 'relaxvm' has no attribute 'nothing'"):
        relaxvm.nothing  # noqa: B018
