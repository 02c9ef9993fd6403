"""Fixtures for the backend tests: the interpreter target, exec modes and test functions."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import relaxvm
from relaxvm.testing import interpreter_target, registered_target

EXEC_MODES = ("bytecode", "compiled")


@pytest.fixture(params=EXEC_MODES)
def exec_mode(request: pytest.FixtureRequest) -> str:
    """Both ways of running an executable."""
    return str(request.param)


@pytest.fixture
def interp() -> Iterator[str]:
    """The test-only ``interp`` target kind (kernels run on the TIR interpreter)."""
    with registered_target(interpreter_target()):
        yield "interp"


def _packed_functions() -> dict[str, object]:
    def add(a: relaxvm.Tensor, b: relaxvm.Tensor) -> relaxvm.Tensor:
        return relaxvm.tensor(a.numpy() + b.numpy())

    def add_dps(a: relaxvm.Tensor, b: relaxvm.Tensor, out: relaxvm.Tensor) -> None:
        np.add(a.host_array(), b.host_array(), out=out.host_array())

    def double(a: relaxvm.Tensor) -> relaxvm.Tensor:
        return relaxvm.tensor(a.numpy() * 2)

    return {
        "test.backend.add": add,
        "test.backend.add_dps": add_dps,
        "test.backend.double": double,
        "test.backend.echo": lambda *args: args,
    }


@pytest.fixture(autouse=True, scope="session")
def _registered_functions() -> Iterator[None]:
    for name, func in _packed_functions().items():
        relaxvm.register_func(name, func, override=True)
    yield
    for name in _packed_functions():
        relaxvm.remove_global_func(name)
