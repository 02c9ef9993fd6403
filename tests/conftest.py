"""Session-wide test settings: keep the LLVM compile cache and the user's signing key out of
the real home directory; print the ONNX backend node-test suite's summary at the end.

``RELAXVM_ONNX_BACKEND`` chooses how much of that suite (tests/frontend/onnx/
test_onnx_backend.py) runs: ``sample`` (default: every 32nd case plus a fixed list of
important ones, on every real target), ``all`` (every case; marked ``slow``) or ``off``.

Under pytest-xdist (``-n``) tests run in worker processes: they share the controller's
compile cache directory (entries are written atomically), each has its own config directory
(the signing key), and each sends its ONNX counts back through ``workeroutput`` for the
controller's summary.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from typing import Any

import pytest

_CACHE_DIR: str | None = None
_ONNX_COUNTS_KEY = "relaxvm_onnx_backend_counts"
#: Target -> status -> count, sent back by finished xdist workers (empty without xdist).
_worker_onnx_counts: dict[str, Counter[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    """Point ``RELAXVM_CACHE_DIR`` at a private temporary directory for the whole session
    (subprocesses inherit it), and keep progress lines off."""
    global _CACHE_DIR
    if hasattr(config, "workerinput"):  # an xdist worker: the controller made the cache
        config_home = tempfile.mkdtemp(prefix="relaxvm-test-config-")
        _CACHE_DIR = config_home  # removed at the worker's exit; the shared cache is not
    else:
        _CACHE_DIR = tempfile.mkdtemp(prefix="relaxvm-test-cache-")
        os.environ["RELAXVM_CACHE_DIR"] = _CACHE_DIR
        config_home = os.path.join(_CACHE_DIR, "config")
    # relaxvm.security creates the key file under $XDG_CONFIG_HOME/relaxvm on first use
    # (one per process: workers never race on creating it).
    os.environ["XDG_CONFIG_HOME"] = config_home
    os.environ.pop("RELAXVM_KEY", None)
    os.environ.setdefault("RELAXVM_PROGRESS", "0")
    # The whole-module cache would serve a repeated compile whole, so tests of the kernel
    # cache and tests that patch compiler internals would not see the compile they set up;
    # tests/backend/test_module_cache.py turns it on where it is under test.
    os.environ.setdefault("RELAXVM_MODULE_CACHE", "0")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Delete the session's cache directory."""
    if _CACHE_DIR is not None:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def _onnx_counts() -> dict[str, dict[str, int]]:
    """Target -> status -> count of the ONNX backend cases this process ran."""
    try:
        from relaxvm.testing import onnx_backend
    except ImportError:  # onnx-free environments never ran the suite
        return {}
    return {
        target: onnx_backend.status_counts(results)
        for target, results in onnx_backend.session_results().items()
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    """(xdist worker) Send this worker's ONNX backend counts to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_ONNX_COUNTS_KEY] = _onnx_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """(xdist controller) Add up the ONNX backend counts a finished worker sent."""
    for target, counts in getattr(node, "workeroutput", {}).get(_ONNX_COUNTS_KEY, {}).items():
        _worker_onnx_counts.setdefault(target, Counter()).update(counts)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the ONNX backend suite's pass / unsupported / fail / error counts per target."""
    totals = {target: Counter(counts) for target, counts in _worker_onnx_counts.items()}
    for target, counts in _onnx_counts().items():
        totals.setdefault(target, Counter()).update(counts)
    if not totals:
        return
    terminalreporter.write_sep("-", "ONNX backend node tests")
    for target, counts in sorted(totals.items()):
        terminalreporter.write_line(
            f"target {target}: {sum(counts.values())} cases: "
            + ", ".join(f"{status} {counts[status]}" for status in counts)
        )
