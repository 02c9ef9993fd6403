"""CUDA files nobody vouched for: their PTX is ignored and the kernels are compiled again from
the stored TIR, every buffer access checked (relaxvm_cuda.untrusted); a trusted file's PTX is
used as is."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import security
from relaxvm.errors import ExecutableFormatError
from relaxvm.ir import Var
from relaxvm.ir.tir import (
    BufferLoad,
    BufferStore,
    For,
    ForKind,
    PrimFunc,
    post_order_visit,
)
from relaxvm.ir.tir.intrin import CheckIndex
from relaxvm_cuda.codegen import compile_ptx
from relaxvm_cuda.module import CUDAModule, kernels_checking_indices
from relaxvm_cuda.program import PTXProgram
from relaxvm_cuda.schedule import schedule_prim_func
from relaxvm_cuda.target import load, serialize
from relaxvm_cuda.untrusted import harden_gpu
from relaxvm_llvm.schedule import workloads

TAMPERED = "// tampered: every add is a sub\n"


def _kernels() -> dict[str, PrimFunc]:
    n = Var("n", "int64")
    return {
        "add": schedule_prim_func(workloads.add((n, 8))),
        "softmax": schedule_prim_func(workloads.softmax(n, 33)),
    }


def _tampered_file() -> tuple[bytes, dict[str, PrimFunc]]:
    """A file whose PTX computes something else than its TIR (a sub for each add)."""
    tir = _kernels()
    program = compile_ptx(list(tir.items()), "sm_80")
    ptx = TAMPERED + program.ptx.replace("add.rn.f32", "sub.rn.f32")
    bad = PTXProgram(ptx, program.arch, program.kernels)
    return serialize(CUDAModule(bad, tir)), tir


@pytest.fixture
def someone_elses_file(monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict[str, PrimFunc]]:
    data, tir = _tampered_file()  # signed with this user's key...
    monkeypatch.setenv("RELAXVM_KEY", "cd" * 32)  # ...then read by someone else
    monkeypatch.setattr(security, "_cached", None)
    return data, tir


def _checked(func: PrimFunc) -> tuple[int, int, list[str]]:
    accesses, checked, axes = 0, 0, []

    def visit(node: Any) -> None:
        nonlocal accesses, checked
        if isinstance(node, (BufferLoad, BufferStore)):
            accesses += 1
            checked += all(isinstance(i, CheckIndex) for i in node.indices)
        if isinstance(node, For) and node.kind == ForKind.THREAD_BINDING:
            axes.append(str(node.thread_binding))

    post_order_visit(func.body, visit)
    return accesses, checked, axes


def test_an_untrusted_file_gets_ptx_compiled_from_its_tir(
    someone_elses_file: tuple[bytes, dict[str, PrimFunc]],
) -> None:
    data, tir = someone_elses_file
    module = load(data)
    assert module.rebuilt
    assert TAMPERED not in module.program.ptx
    assert module.program == compile_ptx(harden_gpu(list(tir.items())), "sm_80")
    assert set(kernels_checking_indices(module.program.ptx)) == {
        k.symbol for k in module.program.kernels
    }
    trusted = load(data, trust=True)
    assert not trusted.rebuilt and trusted.program.ptx.startswith(TAMPERED)
    with security.trusting_object_code():
        assert load(data).program.ptx.startswith(TAMPERED)


def test_the_users_own_file_keeps_its_ptx() -> None:
    data, _ = _tampered_file()
    module = load(data)
    assert not module.rebuilt and module.program.ptx.startswith(TAMPERED)


def test_rebuilt_kernels_compute_the_right_result_on_the_simulator(
    someone_elses_file: tuple[bytes, dict[str, PrimFunc]], cuda_simulator: Any
) -> None:
    module = load(someone_elses_file[0])
    assert module.tir is not None  # the simulator runs the checked TIR the PTX came from
    accesses, checked, _ = _checked(module.tir["add"])
    assert accesses == checked > 0
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((5, 8)).astype("float32") for _ in range(2))
    dev = relaxvm.cuda()
    out = relaxvm.tensor(np.zeros((5, 8), "float32"), dev)
    module["add"](relaxvm.tensor(a, dev), relaxvm.tensor(b, dev), out)
    np.testing.assert_array_equal(out.numpy(), a + b)
    x = rng.standard_normal((3, 33)).astype("float32")
    y = relaxvm.tensor(np.zeros((3, 33), "float32"), dev)
    module["softmax"](relaxvm.tensor(x, dev), y)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_hardening_checks_every_access_and_keeps_the_launch() -> None:
    for name, func in _kernels().items():
        ((_, hard),) = harden_gpu([(name, func)])
        accesses, checked, axes = _checked(hard)
        assert accesses == checked > 0, name
        assert axes == _checked(func)[2] and "threadIdx.x" in axes, name


def test_tir_that_does_not_match_the_header_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    n = Var("n", "int64")
    program = compile_ptx([("add", schedule_prim_func(workloads.add((n, 8))))], "sm_80")
    other = {"add": schedule_prim_func(workloads.add((n, 8, 2)))}  # another signature
    data = serialize(CUDAModule(program, other))
    assert not load(data).rebuilt  # the user's own file: used as is
    monkeypatch.setenv("RELAXVM_KEY", "cd" * 32)
    monkeypatch.setattr(security, "_cached", None)
    with pytest.raises(ExecutableFormatError, match=r"kernel 'add' compiled from the file's TIR"):
        load(data)


def test_an_untrusted_file_without_tir_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    program = compile_ptx([("add", schedule_prim_func(workloads.add((4, 8))))], "sm_80")
    data = serialize(CUDAModule(program, None, tir_missing="made without its TIR"))
    monkeypatch.setenv("RELAXVM_KEY", "cd" * 32)
    monkeypatch.setattr(security, "_cached", None)
    with pytest.raises(ExecutableFormatError, match=r"no TIR .*made without its TIR.*trust=True"):
        load(data)
    assert load(data, trust=True).program == program


def test_strided_buffers_are_refused_by_the_hardening() -> None:
    from relaxvm.ir.tir import Buffer

    a = Buffer("A", (4, 4), "float32", strides=(8, 1))
    out = Buffer("B", (4, 4), "float32")
    i, j = Var("i", "int64"), Var("j", "int64")
    body = For(i, 0, 4, ForKind.SERIAL, For(j, 0, 4, ForKind.SERIAL,
               BufferStore(out, a[i, j], [i, j])))  # fmt: skip
    with pytest.raises(ExecutableFormatError, match=r"kernel 'copy'.*'A' has explicit strides"):
        harden_gpu([("copy", PrimFunc([a, out], body))])
