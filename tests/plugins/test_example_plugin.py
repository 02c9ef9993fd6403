"""The third-party example plugin (docs/examples/relaxvm-example-plugin), called from bytecode.

These tests prove the plugin path end to end: an installed distribution declares an entry
point, relaxvm loads it lazily, attributes its registrations to it, and the VM resolves its
functions by name like any builtin. The last test runs the plugin's own tests directory, whose
conftest runs relaxvm's conformance suite on the plugin's target kind with one line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import VMTypeError, VMValueError
from relaxvm.registry import extensions
from relaxvm.registry import functions as registry
from relaxvm.registry import loader as plugins
from relaxvm.testing import isolated_plugins
from relaxvm.testing.conformance.cases import all_cases

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "docs" / "examples" / "relaxvm-example-plugin"

_INSTALLED = any(ep.name == "example" for ep in metadata.entry_points(group="relaxvm"))

pytestmark = pytest.mark.skipif(
    not _INSTALLED, reason="install docs/examples/relaxvm-example-plugin (CI does)"
)


@pytest.fixture(autouse=True)
def _installed_plugins() -> Iterator[None]:
    # A fresh load of the installed plugins, as a user's process would see them, whatever
    # earlier tests did to the loader and registry.
    with isolated_plugins():
        yield


def _scale_then_add_vm() -> relaxvm.VirtualMachine:
    """main(a, b, out, factor) = scale(vector_add(a, b, out) -> out, factor), returning both."""
    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=4, param_names=["a", "b", "out", "factor"]):
        ib.emit_call("example.vector_add", args=[ib.r(0), ib.r(1), ib.r(2)])
        ib.emit_call("example.scale", args=[ib.r(2), ib.r(3)], dst=ib.r(4))
        ib.emit_ret(ib.r(4))
    return relaxvm.VirtualMachine(ib.get(), relaxvm.cpu())


def _scale_const_vm(factor: float) -> relaxvm.VirtualMachine:
    """main(x) = example.scale(x, <factor as an immediate or constant-pool entry>)."""
    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("example.scale", args=[ib.r(0), factor], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    return relaxvm.VirtualMachine(ib.get(), relaxvm.cpu())


def test_functions_are_attributed_to_the_example_plugin() -> None:
    assert registry.function_source("example.scale") == "plugin 'example'"
    assert registry.function_source("example.vector_add") == "plugin 'example'"
    (info,) = [p for p in plugins.plugin_report() if p.name == "example"]
    assert info.status == "loaded"
    assert info.value == "relaxvm_example_plugin.plugin"
    assert sorted(info.registered) == [
        "example.scale",
        "example.vector_add",
        "target example_strict",
    ]
    assert extensions.list_target_kinds()["example_strict"] == "plugin 'example'"


def test_vector_add_then_scale_through_the_vm_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(7).astype("float32")
    b = rng.standard_normal(7).astype("float32")
    out = relaxvm.empty((7,), "float32")
    vm = _scale_then_add_vm()
    result = vm["main"](relaxvm.tensor(a), relaxvm.tensor(b), out, 1.5)
    # Destination-passing: vector_add wrote into the caller's buffer.
    np.testing.assert_allclose(out.numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(result.numpy(), (a + b) * np.float32(1.5), rtol=1e-6)
    assert result.dtype == "float32"
    assert result.shape == (7,)


@pytest.mark.parametrize(
    ("dtype", "factor"),
    [("float32", 2.5), ("float64", -0.75), ("int32", 3), ("int64", -2), ("int32", 4.0)],
)
def test_scale_constant_factor_matches_numpy(dtype: str, factor: float) -> None:
    x = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    result = _scale_const_vm(factor)["main"](relaxvm.tensor(x))
    expected = (x * (int(factor) if dtype.startswith("int") else factor)).astype(dtype)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result.numpy(), expected)


def test_vector_add_may_write_in_place() -> None:
    a = relaxvm.tensor(np.array([1, 2, 3], "int64"))
    b = relaxvm.tensor(np.array([10, 20, 30], "int64"))
    relaxvm.get_global_func("example.vector_add")(a, b, a)
    np.testing.assert_array_equal(a.numpy(), [11, 22, 33])


def test_scale_errors() -> None:
    scale = relaxvm.get_global_func("example.scale")
    x = relaxvm.tensor(np.ones(3, "int32"))
    with pytest.raises(
        VMTypeError, match=r"example\.scale: parameter 'tensor' must be a Tensor, got a list"
    ):
        scale([1, 2, 3], 2)
    with pytest.raises(VMTypeError, match=r"parameter 'factor' must be an int or float, got a str"):
        scale(x, "2")
    with pytest.raises(
        VMTypeError, match=r"parameter 'factor' must be an int or float, got a bool"
    ):
        scale(x, True)
    with pytest.raises(VMValueError, match=r"factor 2\.5 is not integral .* integer dtype int32"):
        scale(x, 2.5)
    with pytest.raises(VMTypeError, match=r"dtype bool; only integer and floating-point"):
        scale(relaxvm.tensor(np.array([True])), 2)


def test_vector_add_errors_name_parameter_and_dimension() -> None:
    add = relaxvm.get_global_func("example.vector_add")
    f32 = relaxvm.tensor(np.zeros(3, "float32"))
    with pytest.raises(
        VMTypeError, match=r"vector_add: parameter 'b' must be a Tensor, got a float"
    ):
        add(f32, 1.0, f32)
    with pytest.raises(VMValueError, match=r"parameter 'a' must be 1-D, got shape \[1, 3\]"):
        add(relaxvm.tensor(np.zeros((1, 3), "float32")), f32, f32)
    with pytest.raises(VMValueError, match=r"dimension 0 of parameter 'out' is 4, expected 3"):
        add(f32, f32, relaxvm.tensor(np.zeros(4, "float32")))
    with pytest.raises(VMValueError, match=r"parameter 'b' has dtype float64, expected float32"):
        add(f32, relaxvm.tensor(np.zeros(3, "float64")), f32)


def test_error_inside_the_vm_unwinds_and_leaves_it_usable() -> None:
    vm = _scale_then_add_vm()
    a = relaxvm.tensor(np.ones(3, "float32"))
    short = relaxvm.tensor(np.ones(2, "float32"))
    with pytest.raises(VMValueError, match=r"dimension 0 of parameter 'b' is 2, expected 3"):
        vm["main"](a, short, relaxvm.empty((3,), "float32"), 2.0)
    result = vm["main"](a, a, relaxvm.empty((3,), "float32"), 2.0)
    np.testing.assert_array_equal(result.numpy(), [4.0, 4.0, 4.0])


def test_the_plugin_tests_run_the_conformance_suite_on_its_target() -> None:
    # A subset keeps this fast: every matmul case of the op matrix (both exec modes), the seed
    # example, and the plugin's own target tests. The whole directory runs ~620 tests.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RELAXVM_PLUGIN", "PYTEST_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only what the plugin's conftest names
    subset = "matmul or seed_example or test_target"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-k", subset],
        cwd=EXAMPLE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    passed = set(re.findall(r"^PASSED (\S+)", proc.stdout, re.M))
    modes = ("bytecode", "compiled")
    matrix = {
        f"tests/conftest.py::test_ops::test_op[example_strict-{case.id}-{mode}]"
        for case in all_cases()
        if "matmul" in case.id
        for mode in modes
    }
    assert len(matrix) >= 24 and matrix <= passed, out
    assert {
        f"tests/conftest.py::test_e2e_basic::test_seed_example[example_strict-{mode}]"
        for mode in modes
    } <= passed, out
    assert any(node.startswith("tests/test_target.py::") for node in passed), out
    summary = out.strip().splitlines()[-1]
    assert re.fullmatch(rf"=* ?{len(passed)} passed, \d+ deselected in .*", summary), summary
