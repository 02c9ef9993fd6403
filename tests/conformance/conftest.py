"""Fixtures for the end-to-end tests: targets, exec modes, compile-and-load helpers."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import relaxvm
from relaxvm.registry import extensions
from relaxvm.testing import interpreter_target, registered_target


def _working_targets() -> list[str]:
    """``interp`` always; the real kinds whose build works on a tiny kernel module."""
    names = ["interp"]
    try:
        kinds = extensions.list_target_kinds()
    except Exception:
        return names
    if "llvm" in kinds:
        try:
            from relaxvm.script import from_source

            mod = from_source(_PROBE)
            relaxvm.compile(mod, "llvm")
        except Exception:
            return names
        names.append("llvm")
    return names


_PROBE = """
from relaxvm.script import ir as I, relax as R
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        return R.add(x, x)
"""


@pytest.fixture(params=_working_targets())
def target(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every target kind that can build kernels here (``interp`` is test-only)."""
    name = str(request.param)
    if name == "interp":
        with registered_target(interpreter_target()):
            yield name
    else:
        yield name


@pytest.fixture(params=("bytecode", "compiled"))
def exec_mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_vm(target: str, exec_mode: str) -> Callable[..., relaxvm.VirtualMachine]:
    """``make_vm(mod_or_source, **build_kwargs)``: compile for the target and exec mode."""

    def make(mod: Any, **kwargs: Any) -> relaxvm.VirtualMachine:
        if isinstance(mod, str):
            from relaxvm.script import from_source

            mod = from_source(mod)
        ex = relaxvm.compile(mod, target, exec_mode=exec_mode, **kwargs)
        return relaxvm.VirtualMachine(ex, relaxvm.cpu())

    return make


# --- Real target kinds (the per-target op matrix) ---------------------------------------------

# The matrix's case table (``_op_matrix_cases``) lives next to this file.
sys.path.insert(0, str(Path(__file__).parent))

from _op_matrix_cases import missing_device_reason, real_target_kinds  # noqa: E402


@pytest.fixture(scope="module", params=real_target_kinds())
def real_target(request: pytest.FixtureRequest) -> str:
    """A registered real target kind; skipped when its device does not exist on this machine."""
    name = str(request.param)
    reason = missing_device_reason(name)
    if reason is not None:
        pytest.skip(reason)
    return name
