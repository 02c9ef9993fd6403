"""Parallel loops under interference: another process on a core, launches from two threads.

No timing is asserted (benchmarks/bench_cpu.py measures that); these tests check that every
launch completes with each iteration run exactly once, whether the helpers get a core or not,
and that the adaptive check sees a busy core.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from relaxvm.ir import Var
from relaxvm.ir.tir import Buffer, BufferStore, For, ForKind, PrimFunc
from relaxvm.runtime import tensor

relaxvm_llvm = pytest.importorskip("relaxvm_llvm")
from relaxvm_llvm import parallel  # noqa: E402

_BUSY = (
    "import os, sys\n"
    "cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else []\n"
    "if len(cpus) > 1:\n"
    "    os.sched_setaffinity(0, {cpus[-1]})\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    pass\n"
)


@pytest.fixture(scope="module")
def step() -> Any:
    """``out[i] = out[i] * 2 + i`` over a parallel loop: a chunk run twice or skipped shows."""
    n = Var("n", "int64")
    out = Buffer("out", (n,), "int64")
    i = Var("i", "int64")
    body = For(i, 0, n, ForKind.PARALLEL, BufferStore(out, out[i] * 2 + i, [i]))
    func = PrimFunc([out], body, attrs={"global_symbol": "step"})
    return relaxvm_llvm.build({"step": func})["step"]


@pytest.fixture
def busy_process() -> Iterator[subprocess.Popen[str]]:
    """A process spinning on the last CPU for the duration of the test."""
    proc = subprocess.Popen([sys.executable, "-c", _BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)


def _check_launches(step: Any, extent: int, launches: int) -> None:
    expected_step = np.arange(extent, dtype="int64")
    for _ in range(launches // 10):
        out = tensor(np.zeros(extent, "int64"))
        expected = np.zeros(extent, "int64")
        for _ in range(10):
            step(out)
            expected = expected * 2 + expected_step
        np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("adaptive", [True, False], ids=["adaptive", "always-wake"])
@pytest.mark.parametrize("backend", ["native", "python"])
def test_launches_complete_while_another_process_holds_a_core(
    step: Any, busy_process: Any, backend: str, adaptive: bool
) -> None:
    if backend == "native" and parallel._native is None:
        pytest.skip("no native pool on this platform")
    before = parallel.get_parallel_backend()
    with parallel.always_parallel(threads=2):
        parallel.set_parallel_adaptive(adaptive)
        parallel.set_parallel_backend(backend)
        try:
            for extent in (1, 2, 9, 1000, 100_003):
                _check_launches(step, extent, launches=40 if extent > 1000 else 200)
        finally:
            parallel.set_parallel_backend(before)


def test_launches_from_two_threads_with_a_busy_core(step: Any, busy_process: Any) -> None:
    """Two Python threads launching at once (one runs serially) while a third process spins."""
    errors: list[BaseException] = []

    def work() -> None:
        try:
            _check_launches(step, 4099, launches=300)
        except BaseException as err:
            errors.append(err)

    with parallel.always_parallel(threads=2):
        parallel.set_parallel_adaptive(True)
        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a parallel launch hung"
    assert errors == []


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="needs Linux /proc/loadavg")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("backend", ["native", "python"])
def test_idle_cpus_counts_the_busy_process(busy_process: Any, backend: str) -> None:
    if backend == "native" and parallel._native is None:
        pytest.skip("no native pool on this platform")
    before = parallel.get_parallel_backend()
    parallel.set_parallel_backend(backend)
    try:
        # The spinning process is always runnable: at most cpu_count - 2 CPUs are idle.
        readings = [parallel.idle_cpus() for _ in range(20)]
    finally:
        parallel.set_parallel_backend(before)
    cpus = os.cpu_count() or 1
    assert all(0 <= idle <= cpus - 2 for idle in readings), readings


def test_adaptive_launches_under_load_count_their_stalls(step: Any, busy_process: Any) -> None:
    """With the idle check on, launches next to a spinning process stay correct; any launch
    that waited on a descheduled helper is counted (and starts a serial back-off)."""
    if parallel._native is None:
        pytest.skip("no native pool on this platform")
    before = parallel.parallel_stalls()
    with parallel.always_parallel(threads=2):
        parallel.set_parallel_adaptive(True)
        _check_launches(step, 100_003, launches=100)
    after = parallel.parallel_stalls()
    assert isinstance(after, int) and after >= before >= 0


def test_pool_stats_count_what_launches_did(step: Any) -> None:
    if parallel._native is None:
        pytest.skip("no native pool on this platform")
    before = parallel.pool_stats()
    with parallel.always_parallel(threads=2):
        _check_launches(step, 1000, launches=10)
        _check_launches(step, 1, launches=10)  # one iteration: no helper to give
    after = parallel.pool_stats()
    grew = {name: after[name] - before[name] for name in after}
    assert grew["launches"] >= 20
    assert grew["parallel"] >= 10 and grew["serial_small"] >= 10
    assert grew["chunks"] >= 10 * 2 * 4  # four chunks per participant of each parallel launch
    assert 0 <= grew["helper_chunks"] <= grew["chunks"]
    assert set(after) == {
        "launches",
        "parallel",
        "serial_pool_busy",
        "serial_no_idle_cpu",
        "serial_backoff",
        "serial_small",
        "stalls",
        "chunks",
        "helper_chunks",
    }


def test_pool_code_allocates_its_stack_slots_once() -> None:
    """Every alloca of the pool sits in an entry block: one inside a worker's wait loop grows
    the worker's stack on every pass until it overflows (a segfault after enough launches)."""
    from relaxvm_llvm.native_pool import PoolSymbols, _Builder

    gen = _Builder(PoolSymbols("flag", "launch", "threads", "adaptive", "cpus"), futex=202)
    gen.build_run_chunks()
    gen.build_idle_cpus()
    gen.build_worker()
    gen.build_launch()
    gen.build_helpers()
    misplaced = []
    function, block = "", ""
    for line in str(gen.module).splitlines():
        if line.startswith("define"):
            function, block = line, "entry"
        elif line and not line.startswith(" ") and line.endswith(":"):
            block = line[:-1].strip('"')
        elif " alloca " in line and block != "entry":
            misplaced.append((function, block, line.strip()))
    assert misplaced == []


def test_many_launches_keep_every_worker_alive(step: Any) -> None:
    if parallel._native is None:
        pytest.skip("no native pool on this platform")
    with parallel.always_parallel(threads=2):
        _check_launches(step, 64, launches=20_000)


def test_adaptive_setting_is_validated() -> None:
    with pytest.raises(TypeError, match=r"set_parallel_adaptive: enabled must be a bool, got 1"):
        parallel.set_parallel_adaptive(1)  # type: ignore[arg-type]
    assert isinstance(parallel.get_parallel_adaptive(), bool)


def test_always_parallel_restores_the_settings() -> None:
    saved = (
        parallel.get_num_threads(),
        parallel.get_parallel_cutoff(),
        parallel.get_parallel_adaptive(),
    )
    with parallel.always_parallel(threads=3):
        assert parallel.get_num_threads() >= 3
        assert parallel.get_parallel_cutoff() == 0
        assert parallel.get_parallel_adaptive() is False
    assert (
        parallel.get_num_threads(),
        parallel.get_parallel_cutoff(),
        parallel.get_parallel_adaptive(),
    ) == saved


@pytest.mark.parametrize(("value", "expected"), [("0", "False"), ("1", "True"), ("", "True")])
def test_adaptive_from_the_environment(value: str, expected: str) -> None:
    env = dict(os.environ, RELAXVM_PARALLEL_ADAPTIVE=value)
    code = "from relaxvm_llvm import parallel; print(parallel.get_parallel_adaptive())"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected
