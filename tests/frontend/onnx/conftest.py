"""Settings for the ONNX importer tests: the backend node-test suite's selection and its
end-of-run summary.

``RELAXVM_ONNX_BACKEND`` chooses how much of the ONNX backend node-test suite
(test_onnx_backend.py) runs: ``sample`` (default: every 32nd case plus a fixed list of
important ones, on every real target), ``all`` (every case; marked ``slow``) or ``off``.
"""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the backend suite's pass / unsupported / fail counts per target."""
    try:
        from relaxvm.testing import onnx_backend
    except ImportError:  # onnx-free environments never ran the suite
        return
    results = onnx_backend.session_results()
    if not results:
        return
    terminalreporter.write_sep("-", "ONNX backend node tests")
    for target, target_results in sorted(results.items()):
        counts = onnx_backend.status_counts(target_results)
        terminalreporter.write_line(
            f"target {target}: {len(target_results)} cases: "
            + ", ".join(f"{status} {count}" for status, count in counts.items())
        )
