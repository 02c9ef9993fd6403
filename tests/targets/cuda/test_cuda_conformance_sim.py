"""The op conformance matrix (:mod:`relaxvm.testing.conformance`) on target ``cuda``, run on the
simulated device: the GPU schedules, the PTX module's argument checks and launch extents, the
device memory and the VM's data flow, end to end against numpy, without a GPU.

The simulator runs kernels on the reference interpreter, thread by thread, so the whole matrix
(every dtype and shape kind of every op) would take minutes. This module samples it:

* one case of every op of the matrix (its first: a static shape), in ``bytecode`` mode;
* one symbolic-shape case of every family (several extents through one executable, with the
  shape functions on the host), in both exec modes.

Inputs are CPU tensors made from numpy arrays, so every call also moves its arguments to the
GPU (the VM does it). Cases that fail on the simulator are in :data:`KNOWN_FAILURES` with the
reason (run as strict xfails).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

import relaxvm
from relaxvm.testing.conformance.cases import OpCase, all_cases, build_module, make_inputs
from relaxvm.testing.conformance.test_ops import assert_matches, with_exec_mode
from relaxvm_cuda.simulator import CUDASimulator

pytest.importorskip("relaxvm_cuda.codegen")

CASES = all_cases()
#: case id -> why it fails on the simulator (each one is a bug to fix, listed, never hidden;
#: strict: once fixed, the case passes and must leave this list).
KNOWN_FAILURES: dict[str, str] = {}


def _sample() -> list[OpCase]:
    first: dict[str, OpCase] = {}
    symbolic: dict[str, OpCase] = {}
    for case in CASES:
        first.setdefault(case.op, case)
        if case.symbolic:
            symbolic.setdefault(case.template.family, case)
    chosen = list(first.values())
    chosen += [c for c in symbolic.values() if c not in chosen]
    return chosen + [c for c in CASES if c.id in KNOWN_FAILURES and c not in chosen]


SAMPLE = _sample()
BY_ID = {case.id: case for case in SAMPLE}
#: Families whose ops run as host builtins (data-dependent output shapes: unique, nonzero), not
#: kernels: their results are CPU tensors, as TVM's ``relax.run.*`` functions return.
HOST_FAMILIES = frozenset({"datadep"})


class _Builds:
    """The sample's executables, compiled per matrix group on first use (one module per case
    when a group does not compile, so a failure lands on its op)."""

    def __init__(self) -> None:
        self.groups: dict[Any, list[OpCase]] = defaultdict(list)
        for case in SAMPLE:
            self.groups[case.group].append(case)
        self.executables: dict[str, relaxvm.Executable | BaseException] = {}
        self.vms: dict[tuple[int, str], relaxvm.VirtualMachine] = {}

    def vm(self, case: OpCase, exec_mode: str) -> relaxvm.VirtualMachine:
        if case.id not in self.executables:
            group = self.groups[case.group]
            try:
                ex: relaxvm.Executable | BaseException = relaxvm.compile(
                    build_module(group), "cuda"
                )
                self.executables.update(dict.fromkeys((c.id for c in group), ex))
            except Exception:
                for other in group:
                    try:
                        self.executables[other.id] = relaxvm.compile(build_module([other]), "cuda")
                    except Exception as err:
                        self.executables[other.id] = err
        found = self.executables[case.id]
        if isinstance(found, BaseException):
            raise found
        key = (id(found), exec_mode)
        if key not in self.vms:
            self.vms[key] = relaxvm.VirtualMachine(with_exec_mode(found, exec_mode), relaxvm.cuda())
        return self.vms[key]


@pytest.fixture(scope="module")
def builds(cuda_simulator_module: CUDASimulator) -> Iterator[_Builds]:
    yield _Builds()


def _params(cases: list[OpCase]) -> list[Any]:
    params = []
    for case in cases:
        marks = []
        if case.id in KNOWN_FAILURES:
            marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[case.id], strict=True))
        params.append(pytest.param(case.id, id=case.id, marks=marks))
    return params


def _run(builds: _Builds, case_id: str, exec_mode: str, capfd: Any) -> None:
    case = BY_ID[case_id]
    vm = builds.vm(case, exec_mode)
    for n in case.ns:
        inputs = make_inputs(case, n)
        got = vm[case.func_name](*inputs)  # numpy in: the VM copies to the GPU
        want = case.template.ref(*inputs)
        assert_matches(case, got, want, f"{case.id} (cuda simulator, {exec_mode}, n={n})")
        if case.template.family not in HOST_FAMILIES:
            for out in got if isinstance(got, tuple) else (got,):
                assert out.device == relaxvm.cuda(0), f"{case.id}: result on {out.device}"
    if case.op == "relax.print":
        assert "matrix print" in capfd.readouterr().out


@pytest.mark.parametrize("case_id", _params(SAMPLE))
def test_op_on_simulated_cuda(builds: _Builds, case_id: str, capfd: Any) -> None:
    _run(builds, case_id, "bytecode", capfd)


@pytest.mark.parametrize("case_id", _params([c for c in SAMPLE if c.symbolic]))
def test_symbolic_op_on_simulated_cuda_compiled_mode(
    builds: _Builds, case_id: str, capfd: Any
) -> None:
    _run(builds, case_id, "compiled", capfd)


def test_the_sample_covers_every_op(capsys: pytest.CaptureFixture[str]) -> None:
    ops = {case.op for case in CASES}
    assert {case.op for case in SAMPLE} == ops
    families = {case.template.family for case in CASES if case.symbolic}
    assert {case.template.family for case in SAMPLE if case.symbolic} == families
    assert set(KNOWN_FAILURES) <= set(BY_ID)
    with capsys.disabled():
        print(
            f"\ncuda simulator conformance: {len(SAMPLE)} of {len(CASES)} matrix cases, "
            f"{len(ops)} ops, {len(KNOWN_FAILURES)} known failures"
        )
