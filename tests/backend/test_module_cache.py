"""The whole-module compile cache (relaxvm.backend.module_cache)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relaxvm
from relaxvm.backend import module_cache
from relaxvm.backend.cache_store import CacheTrustWarning
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.target import Target
from relaxvm.transform.pass_infra import PassContext

F32 = "float32"


def mlp(weight: np.ndarray | None = None, name: str = "x") -> rx.IRModule:
    """relu(x @ W + 1) with W a constant, and a symbolic batch."""
    w = np.linspace(-1, 1, 32, dtype=F32).reshape(8, 4) if weight is None else weight
    n = relaxvm.ir.Var("n")
    x = rx.Var(name, rx.TensorStructInfo([n, 8], F32))
    bb = rx.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(op.matmul(x, rx.const(w)))
            z = bb.emit(op.nn.relu(op.add(y, rx.const(np.ones(4, F32)))))
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    return bb.get()


def run(ex: relaxvm.Executable, batch: int = 3) -> np.ndarray:
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.linspace(-2, 2, batch * 8, dtype=F32).reshape(batch, 8)
    return np.asarray(vm["main"](relaxvm.tensor(x)).numpy())


def key(mod: rx.IRModule, target: str = "llvm", exec_mode: str = "bytecode", **kw: object) -> str:
    found = module_cache.module_key(
        mod, Target(target), None, kw.get("pipeline", "default"), exec_mode
    )
    assert found is not None
    return found


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory, the module cache on, counters at zero."""
    monkeypatch.setenv("RELAXVM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(module_cache.ENV, "1")
    monkeypatch.delenv("RELAXVM_CACHE", raising=False)
    module_cache.reset_stats()
    return tmp_path / "cache" / "modules"


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.rvmm")) if directory.exists() else []


def test_miss_then_hit_gives_the_same_executable(cache_dir: Path, exec_mode: str) -> None:
    first = relaxvm.compile(mlp(), "llvm", exec_mode=exec_mode)
    assert module_cache.stats()["misses"] == 1 and module_cache.stats()["stores"] == 1
    assert len(entries(cache_dir)) == 1
    second = relaxvm.compile(mlp(), "llvm", exec_mode=exec_mode)
    assert module_cache.stats()["hits"] == 1
    assert second.exec_mode == exec_mode
    assert second.as_text() == first.as_text()
    np.testing.assert_array_equal(run(second), run(first))
    np.testing.assert_array_equal(run(second, batch=5), run(first, batch=5))


def test_hit_matches_an_uncached_compile_and_reports_the_same_errors(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, exec_mode: str
) -> None:
    relaxvm.compile(mlp(), "llvm", exec_mode=exec_mode)
    hit = relaxvm.compile(mlp(), "llvm", exec_mode=exec_mode)
    monkeypatch.setenv(module_cache.ENV, "0")
    fresh = relaxvm.compile(mlp(), "llvm", exec_mode=exec_mode)
    assert module_cache.stats()["hits"] == 1
    np.testing.assert_array_equal(run(hit), run(fresh))
    errors = []
    for ex in (hit, fresh):
        vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
        with pytest.raises(Exception) as info:
            vm["main"](relaxvm.tensor(np.ones((2, 7), F32)))
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


def test_key_is_stable_and_changes_with_every_input(cache_dir: Path) -> None:
    base = key(mlp())
    assert key(mlp()) == base  # built separately: same structure, same key
    other_weight = np.linspace(-1, 1, 32, dtype=F32).reshape(8, 4)
    other_weight[3, 2] += 1e-6
    changed = {
        "constants": key(mlp(other_weight)),
        "names": key(mlp(name="y")),
        "target": key(mlp(), target="llvm -fastmath=strict"),
        "exec_mode": key(mlp(), exec_mode="compiled"),
        "pipeline": key(mlp(), pipeline="zero"),
    }
    with PassContext(opt_level=3):
        changed["opt_level"] = key(mlp())
    with PassContext(config={"relax.FuseOps.max_depth": 2}):
        changed["config"] = key(mlp())
    assert base not in changed.values()
    assert len(set(changed.values())) == len(changed)


def test_key_is_the_same_in_another_process(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sources' fingerprint is left out: others may edit the tree meanwhile.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import test_module_cache as t; "
        "t.module_cache._environment = lambda: 'fixed'; print(t.key(t.mlp()))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    monkeypatch.setattr(module_cache, "_environment", lambda: "fixed")
    assert done.stdout.strip().splitlines()[-1] == key(mlp())


def test_corrupt_entry_is_recompiled(cache_dir: Path) -> None:
    expected = run(relaxvm.compile(mlp(), "llvm"))
    (entry,) = entries(cache_dir)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data[: len(data) - 7]))
    ex = relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["errors"] == 1 and module_cache.stats()["hits"] == 0
    np.testing.assert_array_equal(run(ex), expected)
    # Replaced by a good entry, which the next compile hits.
    relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["hits"] == 1


def test_entry_of_another_key_is_not_served(cache_dir: Path) -> None:
    relaxvm.compile(mlp(), "llvm")
    (entry,) = entries(cache_dir)
    other = cache_dir / f"{key(mlp(name='y'))}.rvmm"
    other.write_bytes(entry.read_bytes())
    other.chmod(0o600)
    ex = relaxvm.compile(mlp(name="y"), "llvm")
    assert module_cache.stats()["errors"] == 1 and module_cache.stats()["hits"] == 0
    assert ex.func_table[ex.func_map["main"]].param_names == ["y"]


@pytest.mark.parametrize("how", ["env", "all_caches", "pass_context"])
def test_can_be_disabled(cache_dir: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "env":
        monkeypatch.setenv(module_cache.ENV, "0")
    elif how == "all_caches":
        monkeypatch.setenv("RELAXVM_CACHE", "off")
    for _ in range(2):
        with PassContext(config={module_cache.CONFIG_KEY: how != "pass_context"}):
            run(relaxvm.compile(mlp(), "llvm"))
    assert entries(cache_dir) == []
    assert module_cache.stats() == {key: 0 for key in module_cache.stats()}


def test_unwritable_directory_still_compiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RELAXVM_CACHE_DIR", str(blocker))
    monkeypatch.setenv(module_cache.ENV, "1")
    module_cache.reset_stats()
    for _ in range(2):
        assert run(relaxvm.compile(mlp(), "llvm")).shape == (3, 4)
    assert module_cache.stats()["stores"] == 0 and module_cache.stats()["hits"] == 0


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_group_writable_directory_is_refused(cache_dir: Path) -> None:
    cache_dir.mkdir(parents=True)
    cache_dir.chmod(0o770)
    with pytest.warns(CacheTrustWarning, match="writable by group or others"):
        relaxvm.compile(mlp(), "llvm")
    assert entries(cache_dir) == []
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o770


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_group_writable_entry_is_dropped(cache_dir: Path) -> None:
    relaxvm.compile(mlp(), "llvm")
    (entry,) = entries(cache_dir)
    entry.chmod(0o666)
    with pytest.warns(CacheTrustWarning, match="entry"):
        relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["hits"] == 0
    (entry,) = entries(cache_dir)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_pass_object_pipeline_is_not_cached(cache_dir: Path) -> None:
    from relaxvm.transform import get_pipeline

    for _ in range(2):
        run(relaxvm.compile(mlp(), "llvm", relax_pipeline=get_pipeline("default")))
    assert module_cache.stats()["uncacheable"] == 2 and entries(cache_dir) == []


def test_concurrent_compiles_leave_one_valid_entry(cache_dir: Path) -> None:
    import threading

    results: list[np.ndarray] = []

    def work() -> None:
        results.append(run(relaxvm.compile(mlp(), "llvm")))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])
    assert len(entries(cache_dir)) == 1
    assert not list(cache_dir.glob(".*.tmp"))
    before = module_cache.stats()["hits"]
    relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["hits"] == before + 1


def test_a_hit_exports_and_reloads(cache_dir: Path, tmp_path: Path) -> None:
    expected = run(relaxvm.compile(mlp(), "llvm"))
    hit = relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["hits"] == 1
    path = tmp_path / "model.rvm"
    hit.export_library(path)
    loaded = relaxvm.load_module(path)
    assert not any(getattr(m, "rebuilt", False) for _, _, m in loaded.kernel_libs)
    np.testing.assert_array_equal(run(loaded), expected)


def test_entry_signed_under_another_key_is_recompiled(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAXVM_KEY", "ab" * 32)
    expected = run(relaxvm.compile(mlp(), "llvm"))
    monkeypatch.setenv("RELAXVM_KEY", "cd" * 32)  # another user's entry, in effect
    ex = relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["errors"] == 1 and module_cache.stats()["hits"] == 0
    assert not any(getattr(m, "rebuilt", False) for _, _, m in ex.kernel_libs)
    np.testing.assert_array_equal(run(ex), expected)
    relaxvm.compile(mlp(), "llvm")
    assert module_cache.stats()["hits"] == 1
