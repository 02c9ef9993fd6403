"""Session-wide test settings: keep the LLVM compile cache and the user's signing key out of
the real home directory."""

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
    # relaxvm.security creates the key file under $XDG_CONFIG_HOME/relaxvm on first use.
    os.environ["XDG_CONFIG_HOME"] = os.path.join(_CACHE_DIR, "config")
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
