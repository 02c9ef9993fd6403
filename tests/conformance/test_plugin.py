"""The conformance plugin as a third-party target package sees it, in nested pytest sessions.

Each test writes a tests directory with a ``conftest.py`` (the one line, plus a target of its
own when needed) and runs pytest on it in this process, on a fresh plugin registry that is
restored afterwards. ``-k`` keeps each run to a handful of items.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relaxvm.testing import isolated_plugins, missing_device_reason, real_target_kinds
from relaxvm.testing.conformance.cases import all_cases

pytest_plugins = ["pytester"]

ONE_LINE = 'pytest_plugins = ["relaxvm.testing.conformance"]\n'
# Two e2e items and two matrix items per target (each in both exec modes).
SUBSET = "seed_example or (test_op and add-float32-static)"

# A target kind registered by the user's conftest, as a target plugin's hook would.
REGISTER = """
from relaxvm.errors import CompileError
from relaxvm.registry import TargetKind, get_target_kind, register_target_kind

def _no_codegen(mod, target):
    raise CompileError("mytarget: no code generator yet")

def _delegate(mod, target):
    return get_target_kind("llvm").build(mod, target)

register_target_kind(TargetKind(name="{name}", device="{device}", build={build}), override=True)
"""


@pytest.fixture(scope="module", autouse=True)
def _imported_before_inline_runs() -> None:
    # pytester drops the modules an inline run imported when the run ends; llvmlite imported
    # twice mixes two copies of its ctypes classes. So compile and run the subset's model on
    # each target here first: every lazily imported module then belongs to this process.
    import importlib

    import numpy as np

    import relaxvm
    from relaxvm.script import from_source
    from relaxvm.testing.conformance import SUITE_MODULES

    for name in SUITE_MODULES:
        importlib.import_module(f"relaxvm.testing.conformance.{name}")
    from relaxvm.testing import interpreter_target, registered_target

    mod = from_source(
        "from relaxvm.script import ir as I, relax as R\n"
        "@I.ir_module\n"
        "class M:\n"
        "    @R.function\n"
        '    def main(x: R.Tensor((2,), "float32")):\n'
        "        return R.add(x, x)\n"
    )
    with registered_target(interpreter_target()):
        for target in ("llvm", "interp"):
            for exec_mode in ("bytecode", "compiled"):
                ex = relaxvm.compile(mod, target, exec_mode=exec_mode)
                relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"](np.ones(2, "float32"))


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The nested sessions register target kinds: keep them out of the rest of the run. They
    # load no installed pytest plugins (hypothesis...): each would be imported again per run.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    with isolated_plugins():
        yield


def _conftest(pytester: pytest.Pytester, *lines: str) -> None:
    pytester.makeconftest(ONE_LINE + "".join(lines))
    pytester.makepyfile(test_own="def test_own_tests_still_run():\n    pass\n")


def test_one_line_runs_the_suite_on_every_registered_target(pytester: pytest.Pytester) -> None:
    _conftest(pytester)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "conftest.py::test_ops::test_op[[]llvm-add-float32-static-bytecode[]]",
            "conftest.py::test_e2e_basic::test_seed_example[[]llvm-compiled[]]",
            "test_own.py::test_own_tests_still_run",
        ]
    )
    kinds = real_target_kinds()  # llvm, and any installed third party's (the example's)
    items = [line for line in result.outlines if "::test_ops::test_op[" in line]
    assert len(items) == 2 * len(all_cases()) * len(kinds) > 500  # every case, both modes
    assert {line.split("[")[1].split("-")[0] for line in items} == set(kinds)
    result = pytester.runpytest("-q", "-k", SUBSET + " or test_own_tests_still_run")
    # A target whose device is absent here (cuda without a GPU) skips its cases with a reason.
    runnable = [k for k in kinds if missing_device_reason(k) is None]
    result.assert_outcomes(passed=4 * len(runnable) + 1, skipped=4 * (len(kinds) - len(runnable)))


def test_a_target_that_cannot_build_fails_rather_than_skips(pytester: pytest.Pytester) -> None:
    _conftest(
        pytester,
        REGISTER.format(name="mytarget", device="cpu", build="_no_codegen"),
        'relaxvm_conformance_targets = ["mytarget"]\n',
    )
    result = pytester.runpytest("-q", "-k", SUBSET)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*CompileError: mytarget: no code generator yet*"])


def test_a_delegating_target_passes(pytester: pytest.Pytester) -> None:
    _conftest(
        pytester,
        REGISTER.format(name="mytarget", device="cpu", build="_delegate"),
        'relaxvm_conformance_targets = ["mytarget"]\n',
    )
    pytester.runpytest("-q", "-k", SUBSET).assert_outcomes(passed=4)


def test_a_target_without_its_device_is_skipped_with_the_reason(
    pytester: pytest.Pytester,
) -> None:
    _conftest(
        pytester,
        REGISTER.format(name="mygpu", device="cuda", build="_no_codegen"),
        'relaxvm_conformance_targets = ["mygpu"]\n',
    )
    import relaxvm

    try:
        has_cuda = relaxvm.cuda(0).exist
    except relaxvm.errors.DeviceError:
        has_cuda = False
    if has_cuda:
        pytest.skip("this machine has a CUDA device: the kind would be built, not skipped")
    result = pytester.runpytest("-q", "-rs", "-k", SUBSET)
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(["*target 'mygpu' needs a 'cuda' device, and there is none*"])
    # CUDA kinds carry the gpu mark, so `-m "not gpu"` leaves them out entirely.
    pytester.runpytest("-q", "-m", "not gpu", "-k", SUBSET).assert_outcomes()


def test_an_unknown_target_errors(pytester: pytest.Pytester) -> None:
    _conftest(pytester)
    result = pytester.runpytest("-q", "--relaxvm-target", "nosuchkind", "-k", "seed_example")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*unknown target kind 'nosuchkind'*"])


def test_selection_precedence(pytester: pytest.Pytester) -> None:
    # The command line beats the conftest variable, which beats the ini option.
    _conftest(pytester, 'relaxvm_conformance_targets = ["interp"]\n')
    pytester.makeini("[pytest]\nrelaxvm_conformance_targets = nosuchkind\n")
    result = pytester.runpytest("--collect-only", "-q", "-k", "seed_example")
    result.stdout.fnmatch_lines(["*test_seed_example[[]interp-bytecode[]]"])
    result = pytester.runpytest(
        "--collect-only", "-q", "-k", "seed_example", "--relaxvm-target=llvm,interp"
    )
    result.stdout.fnmatch_lines(["*[[]llvm-bytecode[]]", "*[[]interp-bytecode[]]"])
    pytester.makeconftest(ONE_LINE)
    result = pytester.runpytest("--collect-only", "-q", "-k", "seed_example")
    result.stdout.fnmatch_lines(["*[[]nosuchkind-bytecode[]]"])


def test_the_interp_test_double_runs_and_is_unregistered_afterwards(
    pytester: pytest.Pytester,
) -> None:
    _conftest(pytester)
    pytester.makepyfile(
        test_after="""
from relaxvm.registry import list_target_kinds

def test_zz_interp_is_gone():
    assert "interp" not in list_target_kinds()
"""
    )
    result = pytester.runpytest("-q", "--relaxvm-target=interp", "-k", SUBSET + " or zz")
    result.assert_outcomes(passed=5)


def test_suite_is_collected_only_where_asked(pytester: pytest.Pytester) -> None:
    # A conftest without the line (or the variable) collects nothing of the suite, and
    # `target` outside it is a clear error rather than an unparametrized fixture.
    pytester.makeconftest("")
    pytester.makepyfile(test_mine="def test_mine(target):\n    pass\n")
    result = pytester.runpytest("-q", "-p", "relaxvm.testing.conformance")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*parametrized only below a conftest.py that enables*"])
