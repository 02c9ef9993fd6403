"""The package's own tests of its target kind, beside the conformance suite the conftest runs."""

from __future__ import annotations

import numpy as np

import relaxvm
from relaxvm.registry import list_target_kinds
from relaxvm.target import Target
from relaxvm.testing.conformance.helpers import MakeVM


def test_the_kind_is_registered_by_this_plugin() -> None:
    assert list_target_kinds()["example_strict"] == "plugin 'example'"


def test_strict_math_is_the_default_and_can_be_overridden() -> None:
    assert Target("example_strict").attrs["fastmath"] == "strict"
    assert Target("example_strict -fastmath=fast").attrs["fastmath"] == "fast"


def test_own_tests_can_use_the_suite_fixtures(target: str, make_vm: MakeVM) -> None:
    # Tests here get `target` (parametrized with relaxvm_conformance_targets) and `make_vm`.
    assert target == "example_strict"
    vm = make_vm(
        "from relaxvm.script import ir as I, relax as R\n"
        "@I.ir_module\n"
        "class M:\n"
        "    @R.function\n"
        '    def main(x: R.Tensor((64,), "float32")):\n'
        "        return R.sum(x)\n"
    )
    x = np.random.default_rng(0).standard_normal(64).astype("float32")
    np.testing.assert_allclose(vm["main"](relaxvm.tensor(x)).numpy(), x.sum(), rtol=1e-5)
