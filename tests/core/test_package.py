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


def test_relax_namespace_is_tvm_relax():
    # ``from relaxvm import relax`` stands in for ``from tvm import relax``: the IR plus the
    # compiler's build and the runtime's VirtualMachine, without the IR importing either.
    from relaxvm import relax
    from relaxvm.backend.build import build
    from relaxvm.ir import relax as ir_relax

    assert relax.build is build
    assert relax.VirtualMachine is relaxvm.VirtualMachine
    assert relax.Executable is relaxvm.Executable
    assert relax.BlockBuilder is ir_relax.BlockBuilder
    assert relax.op.add is ir_relax.op.add
    missing = [name for name in ir_relax.__all__ if not hasattr(relax, name)]
    assert missing == []
