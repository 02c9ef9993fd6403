"""The compile cache serves only entries this user wrote for exactly what is asked, and heals.

Issue 12: an entry placed under the right key used to be served (wrong results, or native code
from whoever could write the directory), symlinks were followed, owners not checked, and a
well-formed entry for other kernels made every later compile fail.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir.relax import IRModule
from relaxvm.ir.tir import PrimFunc, te
from relaxvm_llvm import cache
from relaxvm_llvm.cache import CacheTrustWarning
from relaxvm_llvm.target import build, target_info

_OTHER_KEY = "ab" * 32  # "someone else's" signing key (RELAXVM_KEY)


def _scale(factor: float, name: str = "scale", rows: int = 4) -> PrimFunc:
    a = te.placeholder((rows, 8), "float32", name="A")
    b = te.compute((rows, 8), lambda i, j: a[i, j] * factor, name="B")
    # Loops, not blocks: the cache is keyed on the lowered kernel, which the tests recompute.
    return te.create_loop_func([a, b], name=name)


def _check_scale(module: Any, factor: float, name: str = "scale") -> None:
    a = np.arange(32, dtype="float32").reshape(4, 8)
    out = np.zeros_like(a)
    module[name](a, out)
    np.testing.assert_allclose(out, a * np.float32(factor))


def _key(factor: float, name: str = "scale") -> str:
    return cache.cache_key([(name, _scale(factor, name))], target_info(None))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh private cache directory, the cache on, counters at zero."""
    monkeypatch.setenv("RELAXVM_CACHE_DIR", str(tmp_path / "base"))
    monkeypatch.delenv("RELAXVM_CACHE", raising=False)
    monkeypatch.delenv("RELAXVM_CACHE_MAX_MB", raising=False)
    cache.reset_stats()
    return tmp_path / "base" / "llvm"


def _store(directory: Path) -> cache.CompileCache:
    return cache.CompileCache(directory, 1 << 30)


def _plant(directory: Path, key: str, kernels: Callable[[], Any]) -> None:
    """Write an entry for the kernels ``kernels()`` builds (with the current key) as ``key``
    into ``directory``, leaving the cache itself untouched."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RELAXVM_CACHE", "0")
        module = kernels()
    assert _store(directory).put(key, module.compiled)
    cache.reset_stats()


def test_new_directory_and_entries_are_private(cache_dir: Path) -> None:
    build(_scale(2.0))
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    (entry,) = cache_dir.glob("*.rvmc")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_foreign_entry_is_not_served_and_is_replaced(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "Someone else" (another key) writes an entry for other code under the right key: its
    # object code multiplies by 9, the request asks for 3.
    monkeypatch.setenv("RELAXVM_KEY", _OTHER_KEY)
    _plant(cache_dir, _key(3.0), lambda: build(_scale(9.0)))
    monkeypatch.delenv("RELAXVM_KEY")
    _check_scale(build(_scale(3.0)), 3.0)
    assert cache.stats()["hits"] == 0 and cache.stats()["errors"] == 1
    assert cache.stats()["stores"] == 1  # replaced by this user's entry
    _check_scale(build(_scale(3.0)), 3.0)
    assert cache.stats()["hits"] == 1


def test_entry_of_another_key_is_stale_after_a_key_change(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAXVM_KEY", _OTHER_KEY)
    build(_scale(4.0))
    monkeypatch.delenv("RELAXVM_KEY")  # the user's own key from now on
    _check_scale(build(_scale(4.0)), 4.0)
    assert cache.stats()["hits"] == 0 and cache.stats()["errors"] == 1
    _check_scale(build(_scale(4.0)), 4.0)
    assert cache.stats()["hits"] == 1


@pytest.mark.parametrize(
    "other",
    [
        lambda: build(_scale(5.0, "other")),  # other kernel names
        lambda: build(_scale(5.0, rows=2)),  # same name, another signature
    ],
    ids=["names", "signatures"],
)
def test_tagged_entry_for_other_kernels_is_replaced(
    cache_dir: Path, other: Callable[[], Any]
) -> None:
    # Correctly tagged with this user's key, but for other kernels than the key's.
    _plant(cache_dir, _key(5.0), other)
    _check_scale(build(_scale(5.0)), 5.0)
    assert cache.stats()["hits"] == 0 and cache.stats()["errors"] == 1
    assert cache.stats()["stores"] == 1
    _check_scale(build(_scale(5.0)), 5.0)
    assert cache.stats()["hits"] == 1


def _relax_module(square: bool) -> IRModule:
    from relaxvm.script import relax as R

    if square:

        @R.function
        def main(x: R.Tensor((4, 8), "float32")):  # type: ignore[no-untyped-def]
            with R.dataflow():
                y = R.multiply(x, x)
                R.output(y)
            return y

    else:

        @R.function
        def main(x: R.Tensor((4, 8), "float32")):  # type: ignore[no-untyped-def]
            with R.dataflow():
                y = R.nn.relu(R.add(x, x))
                R.output(y)
            return y

    return IRModule({"main": main})


def test_relax_compile_heals_an_entry_for_other_kernels(cache_dir: Path) -> None:
    relaxvm.compile(_relax_module(square=False), target="llvm")
    (wanted,) = cache_dir.glob("*.rvmc")
    relaxvm.compile(_relax_module(square=True), target="llvm")
    (found,) = set(cache_dir.glob("*.rvmc")) - {wanted}
    store = _store(cache_dir)
    stranger = store.get(found.stem)
    assert stranger is not None
    assert store.put(wanted.stem, stranger)  # well-formed, tagged, for other kernels
    cache.reset_stats()
    x = np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)
    for _ in range(2):  # the first compile heals the entry, the second is served from it
        ex = relaxvm.compile(_relax_module(square=False), target="llvm")
        vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
        np.testing.assert_allclose(vm["main"](relaxvm.tensor(x)).numpy(), np.maximum(x + x, 0))
    assert cache.stats()["errors"] == 1 and cache.stats()["hits"] == 1


def test_symlinked_entry_is_refused_and_replaced(cache_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _plant(elsewhere, _key(6.0), lambda: build(_scale(6.0)))  # valid content
    target = elsewhere / f"{_key(6.0)}.rvmc"
    cache_dir.mkdir(parents=True, mode=0o700)
    link = cache_dir / target.name
    link.symlink_to(target)
    with pytest.warns(CacheTrustWarning, match="symlink"):
        _check_scale(build(_scale(6.0)), 6.0)
    assert cache.stats()["hits"] == 0 and cache.stats()["refused"] == 1
    assert not link.is_symlink() and link.is_file()  # replaced by a regular file
    assert target.exists()  # the link's target is left alone


def test_symlinked_cache_directory_is_refused(cache_dir: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    _plant(real, _key(7.0), lambda: build(_scale(7.0)))
    before = sorted(p.name for p in real.iterdir())
    cache_dir.parent.mkdir(parents=True)
    cache_dir.symlink_to(real, target_is_directory=True)
    for _ in range(2):
        with pytest.warns(CacheTrustWarning, match="symlink.*private directory"):
            _check_scale(build(_scale(7.0)), 7.0)
    # Never read or written through the link; this process cached privately instead, so the
    # second build was a hit there.
    assert cache.stats()["hits"] == 1 and cache.stats()["stores"] == 1
    assert sorted(p.name for p in real.iterdir()) == before
    private = cache.private_directory(cache_dir)
    assert private.is_dir() and stat.S_IMODE(private.parent.stat().st_mode) == 0o700
    assert len(list(private.glob("*.rvmc"))) == 1


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777, 0o1777])
def test_group_or_world_writable_directory_is_refused(cache_dir: Path, mode: int) -> None:
    _plant(cache_dir, _key(8.0), lambda: build(_scale(8.0)))
    cache_dir.chmod(mode)
    with pytest.warns(CacheTrustWarning, match="writable by group or others"):
        _check_scale(build(_scale(8.0)), 8.0)
    with pytest.warns(CacheTrustWarning, match=f"chmod 700 {cache_dir}"):
        _check_scale(build(_scale(8.5)), 8.5)
    assert cache.stats()["hits"] == 0 and cache.stats()["stores"] == 2  # both private
    assert cache.stats()["refused"] == 2  # once per build: the lookup moves it to private
    assert {p.name for p in cache_dir.iterdir()} == {f"{_key(8.0)}.rvmc"}  # nothing written
    cache.reset_stats()
    with pytest.warns(CacheTrustWarning):
        build(_scale(8.5))
    assert cache.stats()["hits"] == 1  # from the private directory
    cache_dir.chmod(0o700)  # fixed as the warning says: used again
    build(_scale(8.0))
    assert cache.stats()["hits"] == 2


def _foreign_owner(patch: pytest.MonkeyPatch, path: Path, directory: bool) -> None:
    """Make ``path`` owned by another user: for real as root, else through the owner check."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chown(path, 4242, 4242)
        return
    real = cache._owner_problem

    def problem(info: os.stat_result) -> str | None:
        if stat.S_ISDIR(info.st_mode) == directory and info.st_ino == path.stat().st_ino:
            return "is owned by uid 4242, not by this user"
        return real(info)

    patch.setattr(cache, "_owner_problem", problem)


def test_entry_owned_by_another_user_is_refused_and_replaced(cache_dir: Path) -> None:
    _plant(cache_dir, _key(9.0), lambda: build(_scale(9.0)))
    entry = cache_dir / f"{_key(9.0)}.rvmc"
    with pytest.MonkeyPatch.context() as patch:
        _foreign_owner(patch, entry, directory=False)
        with pytest.warns(CacheTrustWarning, match="owned by uid 4242"):
            _check_scale(build(_scale(9.0)), 9.0)
    assert cache.stats()["hits"] == 0 and cache.stats()["stores"] == 1
    assert entry.stat().st_uid == os.getuid()
    cache.reset_stats()
    build(_scale(9.0))
    assert cache.stats()["hits"] == 1


def test_directory_owned_by_another_user_is_refused(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plant(cache_dir, _key(10.0), lambda: build(_scale(10.0)))
    _foreign_owner(monkeypatch, cache_dir, directory=True)
    with pytest.warns(CacheTrustWarning, match="owned by uid 4242"):
        _check_scale(build(_scale(10.0)), 10.0)
    assert cache.stats()["hits"] == 0 and cache.stats()["stores"] == 1  # privately
    assert cache.private_directory(cache_dir).is_dir()


def test_unusable_key_compiles_without_the_cache(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAXVM_KEY", "not hex")
    with pytest.warns(CacheTrustWarning, match="cannot sign entries"):
        _check_scale(build(_scale(11.0)), 11.0)
    assert cache.stats()["stores"] == 0


def test_cache_trust_warning_is_a_runtime_warning() -> None:
    assert issubclass(CacheTrustWarning, RuntimeWarning)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_in_an_entrys_place_neither_hangs_nor_fails(cache_dir: Path) -> None:
    cache_dir.mkdir(parents=True, mode=0o700)
    fifo = cache_dir / f"{_key(12.0)}.rvmc"
    os.mkfifo(fifo, 0o600)
    with pytest.warns(CacheTrustWarning, match="not a regular file"):
        _check_scale(build(_scale(12.0)), 12.0)
    assert fifo.is_file() and cache.stats()["stores"] == 1
