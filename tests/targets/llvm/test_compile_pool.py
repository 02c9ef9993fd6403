"""Large builds: kernels compiled one module each, in this process and in worker processes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.tir import PrimFunc, te
from relaxvm_llvm import compile_pool, serialize, target
from relaxvm_llvm.codegen import compile_prim_funcs
from relaxvm_llvm.errors import LLVMBuildError


def _funcs(count: int = 6) -> list[tuple[str, PrimFunc]]:
    """``count`` different kernels: out = a * k + k."""
    return [(f"affine{k}", _affine(k)) for k in range(count)]


def _affine(k: int) -> PrimFunc:
    a = te.placeholder((37,), "float32", name="A")
    b = te.compute((37,), lambda i: a[i] * float(k) + float(k), name="B")
    # Loops: compile_prim_funcs is the code generator, which takes lowered kernels.
    return te.create_loop_func([a, b], name=f"affine{k}")


def _check(module: Any, count: int) -> None:
    a = np.linspace(-3, 3, 37, dtype="float32")
    for k in range(count):
        out = np.zeros(37, "float32")
        module[f"affine{k}"](a, out)
        np.testing.assert_allclose(out, a * k + k, rtol=1e-6, err_msg=f"affine{k}")


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """One worker process, whatever the machine (restores the pool's state after)."""
    monkeypatch.setenv(compile_pool.WORKERS_ENV, "1")
    monkeypatch.setattr(compile_pool, "_disabled", False)
    yield
    compile_pool.shutdown()


def test_a_large_build_gives_one_object_per_kernel(workers: None) -> None:
    funcs = _funcs()
    progress: list[tuple[str, int]] = []
    compiled = compile_prim_funcs(funcs, target.target_info(None), lambda *a: progress.append(a))
    assert len(compiled.objects) == len(funcs)
    assert [s.name for s in compiled.signatures] == [name for name, _ in funcs]
    assert progress and progress[-1] == ("kernel", len(funcs))
    assert compiled.llvm_ir.count("define ") >= len(funcs)
    _check(target.LLVMModule(compiled, funcs), len(funcs))


def test_the_worker_process_and_this_one_share_the_work(workers: None) -> None:
    started: list[int] = []
    original = compile_pool._Worker.compile

    def counting(self: Any, header: bytes, text: bytes) -> Any:
        started.append(1)
        return original(self, header, text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compile_pool._Worker, "compile", counting)
        # This process's share is slowed down, so the worker surely starts before it is done.
        patch.setattr(compile_pool, "compile_ir", _slow_compile_ir)
        compiled = compile_prim_funcs(_funcs(6), target.target_info(None))
    assert len(compiled.objects) == 6
    assert started, "no kernel went to the worker process"


def test_small_builds_stay_one_module(workers: None) -> None:
    compiled = compile_prim_funcs(_funcs(compile_pool.MIN_KERNELS - 1), target.target_info(None))
    assert len(compiled.objects) == 1


def test_split_builds_serialize_and_load(workers: None) -> None:
    funcs = _funcs()
    module = target.LLVMModule(compile_prim_funcs(funcs, target.target_info(None)), funcs)
    data = target.serialize(module)
    assert serialize.read(data).compiled.objects == module.compiled.objects
    _check(target.load(data), len(funcs))


def test_object_sizes_must_add_up(workers: None) -> None:
    import hashlib
    import json
    import struct

    funcs = _funcs()
    data = target.serialize(
        target.LLVMModule(compile_prim_funcs(funcs, target.target_info(None)), funcs)
    )
    _, version, size = struct.unpack_from("<8sII", data)
    assert version == serialize.FORMAT_VERSION
    header = json.loads(data[16 : 16 + size])
    rest = data[16 + size :]
    for sizes, message in (
        ([*header["object_sizes"][:-1], header["object_sizes"][-1] + 1], "add up to"),
        ([header["object_size"]], "object_sizes must be a list"),
        ([*header["object_sizes"][:-1], -1], "add up to|positive"),
    ):
        raw = json.dumps({**header, "object_sizes": sizes}).encode()
        bad = struct.pack("<8sII", serialize.MAGIC, version, len(raw)) + raw + rest
        with pytest.raises(ExecutableFormatError, match=message):
            serialize.read(bad)
    # A single-object (version 2) header carries no object_sizes.
    raw = json.dumps({**header, "format_version": 2}).encode()
    old = struct.pack("<8sII", serialize.MAGIC, 2, len(raw)) + raw + rest
    with pytest.raises(ExecutableFormatError, match="object_sizes in a version 2 header"):
        serialize.read(old)
    objects = serialize.read(data).compiled.objects
    assert [len(o) for o in objects] == header["object_sizes"]
    assert hashlib.sha256(b"".join(objects)).hexdigest() == header["object_sha256"]


def test_a_worker_that_cannot_start_leaves_the_work_here(
    workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_pool.shutdown()
    monkeypatch.setattr(compile_pool, "worker_command", lambda: [sys.executable, "-c", "pass"])
    funcs = _funcs()
    with pytest.warns(RuntimeWarning, match="compile worker process failed"):
        compiled = compile_prim_funcs(funcs, target.target_info(None))
    assert len(compiled.objects) == len(funcs)
    _check(target.LLVMModule(compiled, funcs), len(funcs))
    assert compile_pool._disabled
    monkeypatch.delenv(compile_pool.WORKERS_ENV)
    assert compile_pool.worker_count() == 0


def test_a_worker_dying_mid_kernel_names_the_kernel(
    workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_pool.shutdown()
    # Says it is ready, then dies on the first request, as LLVM aborting would.
    script = (
        "import os, sys; sys.stdout.buffer.write(b'RVMW'); sys.stdout.flush(); "
        "sys.stdin.buffer.read(8); sys.stderr.write('LLVM ERROR: boom'); os._exit(3)"
    )
    monkeypatch.setattr(compile_pool, "worker_command", lambda: [sys.executable, "-c", script])
    monkeypatch.setattr(compile_pool, "compile_ir", _slow_compile_ir)
    with pytest.raises(LLVMBuildError, match=r"worker died compiling kernel 'affine\d'.*boom"):
        compile_prim_funcs(_funcs(), target.target_info(None))


def _slow_compile_ir(text: str, tm: Any) -> tuple[bytes, str]:
    # Keeps this process's thread busy so that the worker gets a kernel.
    import time

    from relaxvm_llvm.compile_worker import compile_ir

    time.sleep(0.2)
    return compile_ir(text, tm)


@pytest.mark.parametrize("local", ["fast", "slow"])
def test_llvm_rejecting_a_kernel_names_it(
    workers: None, monkeypatch: pytest.MonkeyPatch, local: str
) -> None:
    info = target.target_info(None)
    texts = [("good", "define i32 @f() {\n  ret i32 0\n}\n"), ("broken", "define i32 @g( {")]
    if local == "slow":  # the worker process likely gets the broken kernel
        monkeypatch.setattr(compile_pool, "compile_ir", _slow_compile_ir)
        texts = texts[:1] * 3 + texts[1:]
    with pytest.raises(LLVMBuildError, match="LLVM rejected the IR of kernel 'broken'"):
        compile_pool.compile_kernels(iter(texts), len(texts), info, 1, lambda done: None)


def test_worker_count_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_pool, "_disabled", False)
    monkeypatch.setenv(compile_pool.WORKERS_ENV, "0")
    assert compile_pool.worker_count() == 0
    monkeypatch.setenv(compile_pool.WORKERS_ENV, "3")
    assert compile_pool.worker_count() == 3
    monkeypatch.setenv(compile_pool.WORKERS_ENV, "many")
    with pytest.warns(RuntimeWarning, match="not an integer"):
        assert compile_pool.worker_count() <= compile_pool.MAX_WORKERS


def test_a_worker_failing_unexpectedly_is_dropped_and_its_kernel_compiled_here(
    workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    compile_pool.shutdown()
    closed: list[int] = []

    def broken(self: Any, header: bytes, text: bytes) -> Any:
        raise OSError("pipe trouble")

    original_close = compile_pool._Worker.close

    def close(self: Any) -> None:
        closed.append(1)
        original_close(self)

    monkeypatch.setattr(compile_pool._Worker, "compile", broken)
    monkeypatch.setattr(compile_pool._Worker, "close", close)
    monkeypatch.setattr(compile_pool, "compile_ir", _slow_compile_ir)
    funcs = _funcs()
    compiled = compile_prim_funcs(funcs, target.target_info(None))
    _check(target.LLVMModule(compiled, funcs), len(funcs))
    assert closed, "the failing worker was not closed"
    assert not compile_pool._idle, "a worker left mid-message went back to the pool"


def test_an_unexpected_error_here_names_the_kernel(
    workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str, tm: Any) -> Any:
        raise ValueError("not LLVM's fault")

    monkeypatch.setattr(compile_pool, "compile_ir", broken)
    monkeypatch.setenv(compile_pool.WORKERS_ENV, "0")
    texts = [("only", "define i32 @f() {\n  ret i32 0\n}\n")]
    with pytest.raises(LLVMBuildError, match="compiling kernel 'only' failed: ValueError"):
        compile_pool.compile_kernels(iter(texts), 1, target.target_info(None), 0, lambda d: None)
