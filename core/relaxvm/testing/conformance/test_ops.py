"""The per-target op conformance matrix: every op of the case table (:mod:`.cases`), compiled
and run through the VM on the target under test, against numpy.

Each test item is one (op variant, dtype, shape kind, exec mode) on one target, so a failure
names all four. Cases of one family, dtype and shape kind are compiled together, once per target
(one Relax function per case), and the executable is shared by both exec modes: ``exec_mode``
only decides how the VM runs the bytecode, never what the kernels are. When a group does not
compile, its cases are compiled one by one so the failure lands on the op that causes it: a
case the target cannot build fails (it is never skipped).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

import relaxvm

from ...errors import VMError, VMTypeError, VMValueError
from .cases import OpCase, all_cases, build_module, make_inputs

CASES = all_cases()
BY_ID = {case.id: case for case in CASES}


class MatrixBuild:
    """Compiled executables and VMs of the matrix for one target, built on first use."""

    def __init__(self, target: str, device: relaxvm.Device) -> None:
        self.target = target
        self.device = device
        self._groups: dict[tuple[str, str, str], list[OpCase]] = defaultdict(list)
        for case in CASES:
            self._groups[case.group].append(case)
        self._group_ex: dict[tuple[str, str, str], relaxvm.Executable | None] = {}
        self._case_ex: dict[str, relaxvm.Executable | BaseException] = {}
        self._vms: dict[tuple[int, str], relaxvm.VirtualMachine] = {}

    def executable(self, case: OpCase) -> relaxvm.Executable:
        """The executable holding ``case.func_name`` (raises the case's own compile error)."""
        if case.group not in self._group_ex:
            try:
                self._group_ex[case.group] = self._compile(self._groups[case.group])
            except Exception:
                self._group_ex[case.group] = None  # fall back to one module per case
        group_ex = self._group_ex[case.group]
        if group_ex is not None:
            return group_ex
        if case.id not in self._case_ex:
            try:
                self._case_ex[case.id] = self._compile([case])
            except Exception as err:
                self._case_ex[case.id] = err
        found = self._case_ex[case.id]
        if isinstance(found, BaseException):
            raise found
        return found

    def vm(self, case: OpCase, exec_mode: str) -> relaxvm.VirtualMachine:
        """A VM (shared by the cases of one executable) running in ``exec_mode``."""
        ex = self.executable(case)
        key = (id(ex), exec_mode)
        if key not in self._vms:
            self._vms[key] = relaxvm.VirtualMachine(with_exec_mode(ex, exec_mode), self.device)
        return self._vms[key]

    def _compile(self, cases: list[OpCase]) -> relaxvm.Executable:
        return relaxvm.compile(build_module(cases), self.target, exec_mode="bytecode")


def with_exec_mode(ex: relaxvm.Executable, exec_mode: str) -> relaxvm.Executable:
    """``ex`` for another exec mode, sharing its bytecode and kernels (the mode is only read
    when a VM loads the executable)."""
    if ex.exec_mode == exec_mode:
        return ex
    other = copy.copy(ex)
    other.exec_mode = exec_mode
    return other


_BUILDS = pytest.StashKey[dict[tuple[str, str], MatrixBuild]]()


def matrix_build(session: pytest.Session, target: str, device: relaxvm.Device) -> MatrixBuild:
    """The session's one :class:`MatrixBuild` for ``target`` on ``device``: the modules that
    run the matrix's cases (this one and :mod:`.test_edges`) share its executables, so each
    group compiles once per session (per session: a target kind of the same name may be
    registered differently in another)."""
    builds = session.stash.setdefault(_BUILDS, {})
    key = (target, str(device))
    if key not in builds:
        builds[key] = MatrixBuild(target, device)
    return builds[key]


@pytest.fixture(scope="module")
def matrix(
    request: pytest.FixtureRequest, target: str, target_device: relaxvm.Device
) -> MatrixBuild:
    """The matrix's executables for the target under test, compiled on first use."""
    return matrix_build(request.session, target, target_device)


def _expected_dtype(want: np.ndarray) -> np.dtype:
    # References may compute in float64 for accuracy; every op here returns at most 32-bit floats.
    return np.dtype("float32") if want.dtype == np.float64 else want.dtype


def assert_matches(case: OpCase, got: Any, want: Any, where: str) -> None:
    """``got`` (VM output) equals ``want`` (numpy): shape and dtype exactly, values within the
    case's tolerance for floats and exactly otherwise."""
    if isinstance(want, tuple):
        assert len(got) == len(want), f"{where}: {len(got)} outputs, expected {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_matches(case, g, w, f"{where} output {i}")
        return
    want = np.asarray(want)
    got = got.numpy()
    assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == _expected_dtype(want), f"{where}: dtype {got.dtype}, want {want.dtype}"
    if got.dtype.kind == "f":
        rtol, atol = case.template.tol
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=where)


def _params() -> list[Any]:
    return [pytest.param(case.id, id=case.id) for case in CASES]


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
@pytest.mark.parametrize("case_id", _params())
def test_op(
    matrix: MatrixBuild,
    case_id: str,
    exec_mode: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    case = BY_ID[case_id]
    vm = matrix.vm(case, exec_mode)
    for n in case.ns:  # symbolic cases: several extents through one compiled function
        inputs = make_inputs(case, n)
        got = vm[case.func_name](*inputs)
        want = case.template.ref(*inputs)
        assert_matches(case, got, want, f"{case.id} ({matrix.target}, {exec_mode}, n={n})")
    if case.op == "relax.print":
        assert "matrix print" in capfd.readouterr().out


# --- Error behaviour through the VM ------------------------------------------------------------

ERROR_CASES = ["add-float32-symbolic", "matmul-float32-static", "sum[axis1]-int32-symbolic"]


def _counting_vm(matrix: MatrixBuild, case: OpCase, exec_mode: str) -> tuple[Any, list[str]]:
    """A fresh VM whose instrument records every kernel call (VM builtins such as shape checks
    and allocations are not kernels)."""
    ex = with_exec_mode(matrix.executable(case), exec_mode)
    vm = relaxvm.VirtualMachine(ex, matrix.device)
    calls: list[str] = []

    def instrument(func: Any, symbol: str, before_run: bool, ret: Any, *args: Any) -> None:
        if before_run and not symbol.startswith("vm.builtin."):
            calls.append(symbol)

    vm.set_instrument(instrument)
    return vm, calls


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
@pytest.mark.parametrize("case_id", ERROR_CASES)
def test_bad_inputs_raise_before_any_kernel_and_vm_stays_usable(
    matrix: MatrixBuild, case_id: str, exec_mode: str
) -> None:
    case = BY_ID[case_id]
    vm, calls = _counting_vm(matrix, case, exec_mode)
    fn = vm[case.func_name]
    good = make_inputs(case, case.ns[0])
    first = case.template.params(case.ns[0], case.dtype)[0][0]  # the first parameter's name

    wrong_shape = [np.concatenate([good[0], good[0]], axis=-1), *good[1:]]
    with pytest.raises(VMError, match=rf"param={first}\b.*shape\[\d\]"):
        fn(*wrong_shape)
    other = "float64" if case.dtype != "float64" else "float32"
    wrong_type = [good[0].astype(other), *good[1:]]
    with pytest.raises(VMValueError, match=rf"param={first}\b.*dtype {case.dtype} but get {other}"):
        fn(*wrong_type)
    with pytest.raises(VMValueError, match=rf"param={first}\b.*ndim {good[0].ndim} but get"):
        fn(good[0][None], *good[1:])
    with pytest.raises(VMTypeError, match=rf"param={first}\b.*expect a Tensor but get"):
        fn(good[0].tolist(), *good[1:])
    assert calls == [], "a kernel ran on bad input"

    assert_matches(case, fn(*good), case.template.ref(*good), f"{case.id} after errors")
    assert calls, "the instrument saw no kernel: the check above would be vacuous"


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
def test_failed_assert_op_raises_and_vm_stays_usable(matrix: MatrixBuild, exec_mode: str) -> None:
    case = BY_ID["assert_op-bool-symbolic"]
    vm = matrix.vm(case, exec_mode)
    x = make_inputs(case, 2)[0]
    with pytest.raises(Exception, match="matrix assert"):
        vm[case.func_name](x, np.array(False))
    np.testing.assert_array_equal(vm[case.func_name](x, np.array(True)).numpy(), x)


def test_symbolic_extent_must_agree_across_parameters(matrix: MatrixBuild) -> None:
    # where(c: (n, 1), a: (4,), b: (n, 4)): n is bound by c, and b must then agree with it.
    case = BY_ID["where-float32-symbolic"]
    vm, calls = _counting_vm(matrix, case, "bytecode")
    c, a, b = make_inputs(case, 2)
    with pytest.raises(VMError, match=r"param=b\b.*previous populated value"):
        vm[case.func_name](c, a, np.concatenate([b, b]))
    assert calls == []
    assert_matches(case, vm[case.func_name](c, a, b), np.where(c, a, b), "where after error")


def test_public_compiled_mode_agrees_with_the_shared_executable(matrix: MatrixBuild) -> None:
    # The matrix compiles once and flips exec_mode on a copy; compiling a group directly with
    # exec_mode="compiled" through the public API must give the same answers.
    group = [c for c in CASES if c.group == ("reduce", "float32", "symbolic")]
    ex = relaxvm.compile(build_module(group), matrix.target, exec_mode="compiled")
    direct = relaxvm.VirtualMachine(ex, matrix.device)
    shared = matrix.vm(group[0], "compiled")
    assert with_exec_mode(matrix.executable(group[0]), "compiled").exec_mode == "compiled"
    for case in group:
        inputs = make_inputs(case, 5)
        want = case.template.ref(*inputs)
        assert_matches(case, direct[case.func_name](*inputs), want, f"{case.id} direct")
        assert_matches(case, shared[case.func_name](*inputs), want, f"{case.id} shared")
