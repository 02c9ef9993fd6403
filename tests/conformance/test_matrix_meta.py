"""The op matrix's case table itself (repo-specific: it must cover every op our plugins legalize).

The matrix runs from :mod:`relaxvm.testing.conformance`, collected by ``conftest.py`` here.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from relaxvm.ir.relax.op.registry import OpError
from relaxvm.testing import interpreter_target, real_target_kinds, registered_target
from relaxvm.testing.conformance.cases import OpCase, OpTemplate, all_cases, build_module, templates
from relaxvm.testing.conformance.cases_math import INTEGER_ONLY_OPS

CASES = all_cases()


def test_matrix_covers_every_legalized_op() -> None:
    from relaxvm_ops.catalog import LEGALIZED_OPS

    covered = {case.op for case in CASES}
    assert sorted(set(LEGALIZED_OPS) - covered) == []
    assert sorted(covered - set(LEGALIZED_OPS)) == []


def test_matrix_has_every_required_axis() -> None:
    # Every op runs static and symbolic in float32 (or bool for logical/assert ops), and at least
    # most ops in an integer dtype too.
    kinds: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for case in CASES:
        kinds[case.op].add((case.dtype, case.shape_kind))
    for name, seen in kinds.items():
        main = "bool" if ("bool", "static") in seen else "float32"
        if name in INTEGER_ONLY_OPS:
            main = "int32"  # floats and bools are refused by these ops
        assert {(main, "static"), (main, "symbolic")} <= seen, name
    with_int = [name for name, seen in kinds.items() if ("int32", "symbolic") in seen]
    assert len(with_int) >= 50


def test_case_ids_and_function_names_are_unique() -> None:
    assert len({case.id for case in CASES}) == len(CASES)
    assert len({case.func_name for case in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "template",
    [t for t in templates() if not {"int32", "bool"} & set(t.dtypes)],
    ids=lambda t: t.op.removeprefix("relax."),
)
def test_float_only_ops_really_reject_integers(template: OpTemplate) -> None:
    # The matrix runs an op in float32 only when the op itself refuses integer inputs.
    with pytest.raises(OpError, match=r"float dtype, got int32"):
        build_module([OpCase(template, "int32", symbolic=False)])


def test_real_targets_exclude_test_doubles() -> None:
    from relaxvm.testing import missing_device_reason

    with registered_target(interpreter_target()):
        names = real_target_kinds()
    assert "interp" not in names
    assert "llvm" in names
    assert missing_device_reason("llvm") is None
