"""Session-wide test settings: keep the LLVM compile cache out of the real home directory."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE_DIR: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Point ``RELAXVM_CACHE_DIR`` at a private temporary directory for the whole session
    (subprocesses inherit it), and keep progress lines off."""
    global _CACHE_DIR
    _CACHE_DIR = tempfile.mkdtemp(prefix="relaxvm-test-cache-")
    os.environ["RELAXVM_CACHE_DIR"] = _CACHE_DIR
    os.environ.setdefault("RELAXVM_PROGRESS", "0")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Delete the session's cache directory."""
    if _CACHE_DIR is not None:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)
