"""The user's key: created safely, refused when others could read it, overridable by env."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from relaxvm import security
from relaxvm.security import KeyFileError


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv(security.KEY_ENV, raising=False)
    return tmp_path


def test_key_is_created_once_with_mode_0600(config_home: Path) -> None:
    key = security.user_key()
    path = config_home / "relaxvm" / "key"
    assert path.read_bytes() == key and len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert security.user_key() == key


def test_tags_bind_data_purpose_and_key(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tag = security.sign(b"object code", purpose=b"llvm-export")
    assert len(tag) == security.TAG_SIZE
    assert security.verify(b"object code", tag, purpose=b"llvm-export")
    assert not security.verify(b"object codf", tag, purpose=b"llvm-export")
    assert not security.verify(b"object code", tag, purpose=b"llvm-cache")
    assert not security.verify(b"object code", tag[:-1], purpose=b"llvm-export")
    monkeypatch.setenv(security.KEY_ENV, "ab" * 32)
    assert not security.verify(b"object code", tag, purpose=b"llvm-export")


def test_key_readable_by_others_is_refused(config_home: Path) -> None:
    security.user_key()
    path = config_home / "relaxvm" / "key"
    path.chmod(0o644)
    security._cached = None
    with pytest.raises(KeyFileError, match=r"mode 644 lets other users read or write it"):
        security.user_key()


def test_symlinked_key_is_refused(config_home: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"k" * 32)
    target.chmod(0o600)
    (config_home / "relaxvm").mkdir()
    (config_home / "relaxvm" / "key").symlink_to(target)
    security._cached = None
    with pytest.raises(KeyFileError, match="not a regular file"):
        security.user_key()


@pytest.mark.parametrize(
    ("value", "message"),
    [("xyz", "must be hexadecimal digits"), ("ab" * 8, "is 8 bytes; a key needs at least 16")],
)
def test_bad_env_key(config_home: Path, monkeypatch: pytest.MonkeyPatch, value, message) -> None:
    monkeypatch.setenv(security.KEY_ENV, value)
    with pytest.raises(KeyFileError, match=message):
        security.user_key()


def test_env_key_is_used(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(security.KEY_ENV, "0f" * 16)
    assert security.user_key() == bytes([15] * 16)
    assert not (config_home / "relaxvm" / "key").exists()
