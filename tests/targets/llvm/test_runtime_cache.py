"""The object code of the native thread pool is cached between processes, tagged and checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relaxvm_llvm import jit
from relaxvm_llvm.runtime_cache import cached_object

_IR = "define i64 @relaxvm_test_seven() {\n  ret i64 7\n}\n"


def _compile() -> bytes:
    import llvmlite.binding as llvm

    jit._ensure_initialized()
    module = llvm.parse_assembly(_IR)
    machine = llvm.Target.from_triple(jit.process_triple()).create_target_machine(reloc="pic")
    return bytes(machine.emit_object(module))


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RELAXVM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RELAXVM_CACHE", raising=False)
    return tmp_path


def test_a_second_request_is_served_from_the_cache(cache_dir: Path) -> None:
    calls: list[int] = []

    def counted() -> bytes:
        calls.append(1)
        return _compile()

    first = cached_object("test-seven", _IR, jit.process_triple(), counted)
    second = cached_object("test-seven", _IR, jit.process_triple(), counted)
    assert first == second and len(calls) == 1
    # Another source or triple is another entry.
    cached_object("test-seven", _IR + "; v2", jit.process_triple(), counted)
    assert len(calls) == 2
    assert list((cache_dir / "llvm-runtime").iterdir())


def test_a_tampered_entry_is_compiled_again(cache_dir: Path) -> None:
    good = cached_object("test-seven", _IR, jit.process_triple(), _compile)
    (entry,) = (cache_dir / "llvm-runtime").glob("test-seven-*")
    data = bytearray(entry.read_bytes())
    data[10] ^= 0xFF  # object code edited, tag left as it was
    entry.write_bytes(bytes(data))
    calls: list[int] = []

    def counted() -> bytes:
        calls.append(1)
        return _compile()

    assert cached_object("test-seven", _IR, jit.process_triple(), counted) == good
    assert calls == [1]
    assert entry.read_bytes() != bytes(data)  # replaced by the fresh, tagged compile


def test_caching_off_compiles_every_time(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAXVM_CACHE", "0")
    calls: list[int] = []

    def counted() -> bytes:
        calls.append(1)
        return _compile()

    cached_object("test-seven", _IR, jit.process_triple(), counted)
    cached_object("test-seven", _IR, jit.process_triple(), counted)
    assert len(calls) == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the native pool is Linux-only")
def test_the_native_pool_from_the_cache_runs_parallel_loops(cache_dir: Path) -> None:
    script = (
        "import numpy as np, relaxvm_llvm\n"
        "from relaxvm_llvm import parallel\n"
        "from relaxvm.ir.tir import Schedule, te\n"
        "a = te.placeholder((4096,), 'float32', name='A')\n"
        "b = te.compute((4096,), lambda i: a[i] + 1.0, name='B')\n"
        "s = Schedule(te.create_prim_func([a, b], name='inc'))\n"
        "s.parallel(s.get_loops()[0])\n"
        "m = relaxvm_llvm.build({'inc': s.func})\n"
        "x = np.arange(4096, dtype='float32'); y = np.zeros_like(x)\n"
        "with parallel.always_parallel():\n"
        "    m['inc'](x, y)\n"
        "assert (y == x + 1).all()\n"
        "assert parallel._native is not None\n"
        "print(parallel.pool_stats()['parallel'])\n"
    )
    env = {**os.environ, "RELAXVM_CACHE_DIR": str(cache_dir)}
    for _ in range(2):  # the first compiles the pool and stores it, the second loads it
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert int(done.stdout.split()[-1]) >= 1
    assert list((cache_dir / "llvm-runtime").glob("native-pool-*"))


def test_without_a_key_nothing_is_cached_unsigned(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaxvm import security

    def no_key(*args: object, **kwargs: object) -> bytes:
        raise security.KeyFileError("no key file")

    monkeypatch.setattr(security, "sign", no_key)
    calls: list[int] = []

    def counted() -> bytes:
        calls.append(1)
        return _compile()

    first = cached_object("test-seven", _IR, jit.process_triple(), counted)
    assert first == cached_object("test-seven", _IR, jit.process_triple(), counted)
    assert len(calls) == 2  # compiled each time
    assert not list((cache_dir / "llvm-runtime").glob("test-seven-*"))
