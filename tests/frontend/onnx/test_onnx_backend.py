"""The ONNX backend node tests (shipped with onnx) through relaxvm's importer, on every real
target: import -> compile -> run, compared with the expected outputs at each case's tolerances.

A case whose operator (or attribute, or element type) relaxvm does not support is skipped with
the importer's reason; a wrong answer or a crash fails. ``RELAXVM_ONNX_BACKEND=all`` runs every
case (slow), the default a deterministic sample, ``off`` none (see conftest.py). The counts are
printed at the end of the run. ``python -m relaxvm.testing.onnx_backend`` gives the same results
per operator.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from relaxvm.testing import real_target_kinds
from relaxvm.testing.onnx import require_onnx

onnx = require_onnx()

from relaxvm.testing import onnx_backend  # noqa: E402
from relaxvm.testing.onnx_backend import FAIL, PASS, UNSUPPORTED, CaseInfo  # noqa: E402

INDEX = Path(__file__).with_name("onnx_node_cases.json")
MODE = os.environ.get("RELAXVM_ONNX_BACKEND", "sample").strip().lower()
#: The sample: every STRIDE-th case of the index, plus these.
STRIDE = 32
IMPORTANT = [
    "test_add_bcast",
    "test_batchnorm_example",
    "test_concat_2d_axis_0",
    "test_conv_with_strides_padding",
    "test_einsum_batch_matmul",
    "test_gemm_default_no_bias",
    "test_if",
    "test_layer_normalization_2d_axis0",
    "test_loop11",
    "test_matmul_2d",
    "test_globalaveragepool",
    "test_range_float_type_positive_delta_expanded",
    "test_reduce_sum_default_axes_keepdims_example",
    "test_relu",
    "test_reshape_negative_dim",
    "test_resize_upsample_scales_linear",
    "test_shape",
    "test_softmax_axis_1_expanded",
    "test_transpose_default",
    "test_unsqueeze_axis_0",
]
#: Cases known to give wrong answers for a documented reason: name -> reason. A listed case
#: that passes fails the run, so the list cannot go stale.
XFAIL: dict[str, str] = {}


def _index() -> list[CaseInfo]:
    infos = onnx_backend.read_index(str(INDEX))
    if infos is None:  # written for another onnx version: generate it (about ten seconds)
        infos = onnx_backend.build_index()
    return infos


def _selected() -> list[Any]:
    if MODE == "off":
        return []
    infos = _index()
    if MODE != "all":
        important = set(IMPORTANT)
        infos = [i for n, i in enumerate(infos) if n % STRIDE == 0 or i.name in important]
    marks = [pytest.mark.slow] if MODE == "all" else []
    return [
        pytest.param(target, info, id=f"{target}-{info.name}", marks=marks)
        for target in real_target_kinds()
        for info in infos
    ]


def _short(reason: str) -> str:
    lines = [line.strip() for line in reason.splitlines()]
    return " ".join(line for line in lines if line and not line.startswith("(docs"))[:300]


@pytest.mark.parametrize(("target", "info"), _selected())
def test_node_case(target: str, info: CaseInfo) -> None:
    from relaxvm.testing.targets import missing_device_reason

    reason = missing_device_reason(target)
    if reason:
        pytest.skip(reason)
    result = onnx_backend.run_case(info, target)
    onnx_backend.record(target, result)
    if info.name in XFAIL:
        if result.status == PASS:
            pytest.fail(f"{info.name} is listed as known-bad ({XFAIL[info.name]}) but passes")
        pytest.xfail(XFAIL[info.name])
    if result.status == UNSUPPORTED:
        pytest.skip(_short(result.reason))
    if result.status != PASS:
        kind = "wrong result" if result.status == FAIL else "error"
        pytest.fail(f"{info.name} ({info.op_type}) on {target}: {kind}: {result.reason}")


def test_index_is_current() -> None:
    """The committed case index matches the installed onnx (regenerate it with
    ``python -m relaxvm.testing.onnx_backend --write-index tests/frontend/onnx/onnx_node_cases.json``)."""
    infos = onnx_backend.read_index(str(INDEX))
    if infos is None:
        pytest.skip(f"the case index was written for another onnx version than {onnx.__version__}")
    assert len(infos) > 1000
    assert len({i.name for i in infos}) == len(infos)
    assert CaseInfo("test_relu", "relu", "Relu") in infos
    assert next(i for i in infos if i.name == "test_softmax_axis_1_expanded").op_type == "Softmax"
    assert set(IMPORTANT) <= {i.name for i in infos}


def test_compare_reports_mismatches() -> None:
    import numpy as np

    onnx_backend.compare([np.ones(2, "float32")], [np.ones(2, "float32")], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="got float64\\[2\\], expected float32\\[2\\]"):
        onnx_backend.compare([np.ones(2)], [np.ones(2, "float32")], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="1 outputs, expected 2"):
        onnx_backend.compare([np.ones(2)], [np.ones(2), np.ones(2)], 1e-3, 1e-7)
    with pytest.raises(AssertionError, match="output 0"):
        onnx_backend.compare([np.zeros(2, "float32")], [np.ones(2, "float32")], 1e-3, 1e-7)


def test_report_totals() -> None:
    results = [
        onnx_backend.CaseResult(CaseInfo("test_a", "a", "Relu"), PASS),
        onnx_backend.CaseResult(CaseInfo("test_b", "b", "Relu"), FAIL, "bad"),
        onnx_backend.CaseResult(CaseInfo("test_c", "c", "Zzz"), UNSUPPORTED, "no"),
    ]
    text = onnx_backend.report(results, supported=["Relu"])
    assert "all cases:          1/3 pass (33.3%)" in text
    assert "supported operators: 1/2 pass (50.0%)" in text
    assert onnx_backend.tally(results)["Relu"][FAIL] == 1


def test_docs_coverage_table_lists_the_registered_operators() -> None:
    """docs/onnx.md's table names exactly the registered converters (regenerate it with
    ``python -m relaxvm.testing.onnx_backend --update-doc docs/onnx.md``)."""
    from relaxvm.frontend.onnx._registry import registered_ops

    doc = Path(__file__).resolve().parents[3] / "docs" / "onnx.md"
    table = onnx_backend.doc_section(doc.read_text(encoding="utf-8"), "coverage-table")
    listed = onnx_backend.table_operators(table)
    registered = [op if not domain else f"{domain}:{op}" for domain, op in registered_ops()]
    assert len(listed) == len(set(listed)), "an operator is listed twice"
    missing, extra = sorted(set(registered) - set(listed)), sorted(set(listed) - set(registered))
    assert not missing and not extra, f"not in the doc: {missing}; not registered: {extra}"
