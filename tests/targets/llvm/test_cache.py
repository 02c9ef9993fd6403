"""The on-disk compile cache and the progress lines of the LLVM target."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.ir.relax import IRModule
from relaxvm.ir.tir import PrimFunc, te
from relaxvm_llvm import cache, jit
from relaxvm_llvm.target import build, target_info


def _scale(factor: float, name: str = "scale") -> PrimFunc:
    a = te.placeholder((4, 8), "float32", name="A")
    b = te.compute((4, 8), lambda i, j: a[i, j] * factor, name="B")
    # Loops, not blocks: the cache is keyed on the lowered kernel, which the tests recompute.
    return te.create_loop_func([a, b], name=name)


def _check_scale(module: Any, factor: float, name: str = "scale") -> None:
    a = np.arange(32, dtype="float32").reshape(4, 8)
    out = np.zeros_like(a)
    module[name](a, out)
    np.testing.assert_allclose(out, a * np.float32(factor))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory, the cache on, counters at zero."""
    monkeypatch.setenv("RELAXVM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RELAXVM_CACHE", raising=False)
    monkeypatch.delenv("RELAXVM_CACHE_MAX_MB", raising=False)
    cache.reset_stats()
    return tmp_path / "llvm"


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.rvmc")) if directory.exists() else []


def test_miss_then_hit(cache_dir: Path) -> None:
    first = build(_scale(3.0))
    assert cache.stats()["misses"] == 1 and cache.stats()["stores"] == 1
    assert len(_entries(cache_dir)) == 1
    second = build(_scale(3.0))
    assert cache.stats()["hits"] == 1
    _check_scale(first, 3.0)
    _check_scale(second, 3.0)
    # The optimized IR is cached too, so inspection works on a hit.
    assert "define" in second.get_source("ll")
    assert second.get_source("ll") == first.get_source("ll")


def test_key_depends_on_kernel_text_name_and_target(cache_dir: Path) -> None:
    info = target_info(None)
    base = cache.cache_key([("scale", _scale(3.0))], info)
    assert base == cache.cache_key([("scale", _scale(3.0))], info)
    assert base != cache.cache_key([("scale", _scale(4.0))], info)
    assert base != cache.cache_key([("other", _scale(3.0, "other"))], info)
    strict = jit.TargetInfo(info.cpu, info.features, ())
    assert base != cache.cache_key([("scale", _scale(3.0))], strict)
    build(_scale(4.0))
    _check_scale(build(_scale(4.0)), 4.0)
    _check_scale(build(_scale(5.0)), 5.0)  # a different kernel is not served the old code
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 2


def test_opt_out(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAXVM_CACHE", "0")
    assert cache.default_cache() is None
    build(_scale(6.0))
    _check_scale(build(_scale(6.0)), 6.0)
    assert set(cache.stats().values()) == {0}
    assert _entries(cache_dir) == []


def test_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAXVM_CACHE_DIR", raising=False)
    monkeypatch.delenv("RELAXVM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    store = cache.default_cache()
    assert store is not None and store.directory == tmp_path / "relaxvm" / "llvm"


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: b"",  # empty
        lambda data: b"garbage" * 10,  # foreign
        lambda data: data[:-40] + bytes(40),  # IR text damaged
        lambda data: data[:200] + bytes([data[200] ^ 0xFF]) + data[201:],  # header/object flip
    ],
)
def test_corrupt_entry_is_rebuilt(cache_dir: Path, damage: Any) -> None:
    build(_scale(7.0))
    (entry,) = _entries(cache_dir)
    entry.write_bytes(damage(entry.read_bytes()))
    module = build(_scale(7.0))  # never crashes
    _check_scale(module, 7.0)
    assert cache.stats()["errors"] == 1 and cache.stats()["hits"] == 0
    assert cache.stats()["stores"] == 2  # rewritten
    _check_scale(build(_scale(7.0)), 7.0)
    assert cache.stats()["hits"] == 1


def test_entry_of_another_key_is_refused(cache_dir: Path) -> None:
    build(_scale(1.5))
    (entry,) = _entries(cache_dir)
    info = target_info(None)
    other = cache.cache_key([("scale", _scale(2.5))], info)
    entry.rename(cache_dir / f"{other}.rvmc")  # right format, wrong key
    _check_scale(build(_scale(2.5)), 2.5)
    assert cache.stats()["errors"] == 1


def test_lru_eviction(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = cache.CompileCache(cache_dir, 1 << 30)
    info = target_info(None)
    build(_scale(1.0))
    (entry,) = _entries(cache_dir)
    size = entry.stat().st_size
    # Room for two entries of this size: the least recently used goes first.
    monkeypatch.setenv("RELAXVM_CACHE_MAX_MB", str(2.5 * size / (1 << 20)))
    build(_scale(2.0))
    key1 = cache.cache_key([("scale", _scale(1.0))], info)
    key2 = cache.cache_key([("scale", _scale(2.0))], info)
    import os
    import time

    past = time.time() - 100
    os.utime(store.path(key1), (past, past))
    os.utime(store.path(key2), (past + 10, past + 10))
    build(_scale(1.0))  # a hit refreshes key1
    assert cache.stats()["hits"] == 1
    build(_scale(3.0))  # over the bound: key2 is now the least recently used
    assert cache.stats()["evictions"] == 1
    assert store.path(key1).exists() and not store.path(key2).exists()
    assert len(_entries(cache_dir)) == 2


def test_bad_max_mb_warns_and_uses_default(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAXVM_CACHE_MAX_MB", "lots")
    with pytest.warns(RuntimeWarning, match="RELAXVM_CACHE_MAX_MB"):
        store = cache.default_cache()
    assert store is not None and store.max_bytes == cache.DEFAULT_MAX_MB << 20


def test_concurrent_writes_leave_one_valid_entry(cache_dir: Path) -> None:
    module = build(_scale(8.0))
    info = target_info(None)
    key = cache.cache_key([("scale", _scale(8.0))], info)
    store = cache.CompileCache(cache_dir, 1 << 30)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for _ in range(10):
                assert store.put(key, module.compiled)
                got = store.get(key)  # never a partial file
                assert got is not None and got.objects == module.compiled.objects
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _entries(cache_dir) == [store.path(key)]
    assert not list(cache_dir.glob("*.tmp"))  # no temporaries left behind
    assert cache.stats()["errors"] == 0


def test_unwritable_directory_does_not_fail_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RELAXVM_CACHE_DIR", str(blocker))
    monkeypatch.delenv("RELAXVM_CACHE", raising=False)
    cache.reset_stats()
    _check_scale(build(_scale(9.0)), 9.0)
    assert cache.stats()["errors"] == 1 and cache.stats()["stores"] == 0


def test_warm_relax_compile_uses_the_cache(cache_dir: Path) -> None:
    from relaxvm.script import relax as R

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):  # type: ignore
        with R.dataflow():
            z = R.nn.relu(R.add(x, y))
            R.output(z)
        return z

    mod = IRModule({"main": main})
    relaxvm.compile(mod, target="llvm")
    assert cache.stats()["misses"] == 1 and cache.stats()["hits"] == 0
    ex = relaxvm.compile(mod, target="llvm")
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)
    out = vm["main"](relaxvm.tensor(x), relaxvm.tensor(x)).numpy()
    np.testing.assert_allclose(out, np.maximum(x + x, 0))


def _many_kernels(count: int) -> IRModule:
    return IRModule({f"k{i}": _scale(float(i), f"k{i}") for i in range(count)})


def test_progress_under_env(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELAXVM_PROGRESS", "1")
    module = build(_many_kernels(8))
    err = capsys.readouterr().err
    assert "relaxvm: compiling 8 kernels for llvm" in err
    assert "8/8" in err and "done in" in err
    _check_scale(module, 5.0, "k5")
    build(_many_kernels(8))  # a cache hit compiles nothing: no progress
    assert capsys.readouterr().err == ""


def test_no_progress_by_default(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RELAXVM_PROGRESS", raising=False)  # stderr is not a TTY under pytest
    build(_many_kernels(8))
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("RELAXVM_PROGRESS", "1")
    build(_scale(10.0))  # few quick kernels: quiet even when enabled
    assert capsys.readouterr().err == ""


def test_progress_reports_failure(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from relaxvm_llvm import codegen
    from relaxvm_llvm.errors import LLVMBuildError

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise LLVMBuildError("llvm target: kernel 'k0' could not be compiled: boom")

    monkeypatch.setenv("RELAXVM_PROGRESS", "1")
    monkeypatch.setattr("relaxvm_llvm.target.compile_prim_funcs", broken)
    with pytest.raises(LLVMBuildError, match="boom"):
        build(_many_kernels(9))
    assert "failed in" in capsys.readouterr().err
    assert cache.stats()["stores"] == 0
    assert codegen.compile_prim_funcs is not broken


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_rewrites_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from relaxvm_llvm.progress import Progress

    monkeypatch.delenv("RELAXVM_PROGRESS", raising=False)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    report = Progress(3, "llvm (test)", min_kernels=2)
    for done in (1, 2, 3):
        report("kernel", done)
    report("optimize", 3)
    report.close()
    text = terminal.getvalue()
    assert text.startswith("\rrelaxvm: compiling 3 kernels for llvm (test) ... 0/3")
    assert "3/3 (optimizing)" in text and "3/3 done in " in text
    # Rewritten in place (carriage returns, erase to end of line); one newline at the end.
    assert text.endswith(" s\x1b[K\n") and "\n" not in text[:-1]
    # RELAXVM_PROGRESS=0 silences even a terminal.
    monkeypatch.setenv("RELAXVM_PROGRESS", "0")
    quiet = Progress(30, "llvm (test)")
    quiet("kernel", 1)
    quiet.close()
    assert terminal.getvalue() == text


def test_slow_build_shows_progress_after_a_delay(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from relaxvm_llvm.progress import Progress

    monkeypatch.setenv("RELAXVM_PROGRESS", "1")
    report = Progress(1, "llvm (test)", after_seconds=0.01)
    deadline = time.monotonic() + 5
    while not report.shown and time.monotonic() < deadline:
        time.sleep(0.01)
    report("kernel", 1)
    report.close()
    err = capsys.readouterr().err
    assert "compiling 1 kernels for llvm (test) ... 0/1" in err
    assert "1/1 done in" in err
