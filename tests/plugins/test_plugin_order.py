"""Plugin load order never decides what gets registered.

Two fake plugins whose names sort before ("aaa") and after ("zzz") the real ones each override
the same legalization (``relax.add``) and the same builtin (``vm.builtin.check_tensor_info``).
Loaded with the real builtins, ops and llvm plugins, either one alone wins wherever it sorts;
both together are an error naming both, whatever order the entry points are listed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import hookimpl
from relaxvm.errors import PluginConflictError, PluginError
from relaxvm.registry import extensions
from relaxvm.registry import functions as registry
from relaxvm.registry import loader as plugins
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins
from relaxvm_builtins.checks import check_tensor_info
from relaxvm_ops import OpPattern, call_te

#: The offset each plugin's ``relax.add`` kernel adds, so the output tells who legalized it.
OFFSETS = {"aaa": 100.0, "zzz": 200.0}


@I.ir_module
class AddModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
        return R.add(x, y)


def real_plugins() -> list[Any]:
    """Our own plugins only: a third-party plugin installed alongside must not matter here."""
    return [ep for ep in installed_entry_points() if ep.name in ("builtins", "ops", "llvm")]


class Overrider:
    """Overrides ``relax.add``'s legalization and ``vm.builtin.check_tensor_info``, and logs
    each use with its own name."""

    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        self.name = name
        self.log = log

    def legalize_add(self, bb: Any, call: Any) -> Any:
        self.log.append(("legalize", self.name))
        offset = OFFSETS[self.name]

        def kernel(a: Any, b: Any) -> Any:
            from relaxvm.ir.tir import te

            return te.compute(a.shape, lambda *i: a[i] + b[i] + offset, name=f"{self.name}_add")

        return call_te(
            bb, kernel, call.args[0], call.args[1],
            primfunc_name_hint=f"{self.name}_add", op_pattern=OpPattern.ELEMWISE,
        )  # fmt: skip

    def check(self, *args: Any) -> Any:
        self.log.append(("builtin", self.name))
        return check_tensor_info(*args)

    @hookimpl
    def relaxvm_register_builtins(self, registry: Any) -> None:
        registry.register("vm.builtin.check_tensor_info", self.check, override=True)

    @hookimpl
    def relaxvm_register_legalizations(self, register: Any) -> None:
        register.register("relax.add", self.legalize_add, override=True)


def compile_and_run(exec_mode: str) -> np.ndarray:
    ex = relaxvm.compile(AddModule, target="llvm", exec_mode=exec_mode)
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    x = np.arange(12, dtype="float32").reshape(3, 4)
    return vm["main"](relaxvm.tensor(x), relaxvm.tensor(2 * x)).numpy()


@pytest.mark.parametrize("exec_mode", ["bytecode", "compiled"])
@pytest.mark.parametrize("name", ["aaa", "zzz"])
def test_one_override_wins_wherever_it_sorts(name: str, exec_mode: str) -> None:
    log: list[tuple[str, str]] = []
    with isolated_plugins([*real_plugins(), FakeEntryPoint(name, Overrider(name, log))]):
        assert registry.function_source("vm.builtin.check_tensor_info") == f"plugin {name!r}"
        assert extensions.list_legalizations()[("relax.add", None)] == f"plugin {name!r}"
        # The plain registrations it replaced are still counted for their own plugins.
        report = {info.name: info for info in plugins.plugin_report()}
        assert {n: i.status for n, i in report.items()} == {
            "builtins": "loaded", "llvm": "loaded", "ops": "loaded", name: "loaded"
        }  # fmt: skip
        assert "vm.builtin.check_tensor_info" in report["builtins"].registered
        assert "legalize relax.add" in report["ops"].registered
        assert report[name].registered == ["vm.builtin.check_tensor_info", "legalize relax.add"]
        got = compile_and_run(exec_mode)
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(got, 3 * x + OFFSETS[name])
    assert ("legalize", name) in log
    assert ("builtin", name) in log
    assert {who for _, who in log} == {name}


@pytest.mark.parametrize("reverse", [False, True], ids=["listed-in-order", "listed-reversed"])
def test_two_overrides_of_one_name_are_an_error_naming_both(reverse: bool) -> None:
    log: list[tuple[str, str]] = []
    entry_points = [
        *real_plugins(),
        FakeEntryPoint("aaa", Overrider("aaa", log)),
        FakeEntryPoint("zzz", Overrider("zzz", log)),
    ]
    if reverse:
        entry_points.reverse()
    with isolated_plugins(entry_points, load=False):
        with pytest.raises(PluginConflictError) as caught:
            relaxvm.compile(AddModule, target="llvm")
        assert str(caught.value) == (
            "relaxvm plugins 'aaa' and 'zzz' both override global function "
            "'vm.builtin.check_tensor_info'; at most one plugin may override a name (the load "
            "order does not pick a winner); to skip one of them, set "
            "RELAXVM_DISABLE_PLUGINS=aaa or RELAXVM_DISABLE_PLUGINS=zzz"
        )
        assert isinstance(caught.value, PluginError)
        report = {info.name: info for info in plugins.plugin_report()}
        assert {n: i.status for n, i in report.items()} == {
            "builtins": "ok", "llvm": "ok", "ops": "ok", "aaa": "failed", "zzz": "failed"
        }  # fmt: skip
        assert report["aaa"].error == report["zzz"].error
        # All or nothing: nothing of the failed load stayed registered.
        assert registry._functions == {} and extensions._legalizations == {}
        assert log == []  # nothing was legalized or run with a half-loaded registry


def test_skipping_one_of_two_overriders_as_the_error_says() -> None:
    log: list[tuple[str, str]] = []
    entry_points = [
        *real_plugins(),
        FakeEntryPoint("aaa", Overrider("aaa", log)),
        FakeEntryPoint("zzz", Overrider("zzz", log)),
    ]
    with isolated_plugins(entry_points, env={"RELAXVM_DISABLE_PLUGINS": "zzz"}):
        got = compile_and_run("bytecode")
        status = {info.name: info.status for info in plugins.plugin_report()}
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(got, 3 * x + OFFSETS["aaa"])
    assert status["zzz"] == "blocked" and status["aaa"] == "loaded"


@pytest.mark.parametrize("name", ["aaa", "zzz"])
def test_plain_duplicate_of_a_builtin_plugin_name_blames_the_other_plugin(name: str) -> None:
    class Plain:
        @hookimpl
        def relaxvm_register_legalizations(self, register: Any) -> None:
            register.register("relax.add", lambda bb, call: call)

    with isolated_plugins(load=False), pytest.raises(PluginConflictError) as caught:
        plugins.ensure_loaded([*real_plugins(), FakeEntryPoint(name, Plain())])
    first, second = sorted([name, "ops"])
    assert str(caught.value) == (
        f"relaxvm plugins {first!r} and {second!r} both register the legalization of "
        "'relax.add'; the one meant to replace the other's must pass override=True; to skip "
        f"one of them, set RELAXVM_DISABLE_PLUGINS={first} or RELAXVM_DISABLE_PLUGINS={second}"
    )


def test_plain_duplicate_with_the_essential_plugin_suggests_skipping_only_the_other() -> None:
    class Plain:
        @hookimpl
        def relaxvm_register_builtins(self, registry: Any) -> None:
            registry.register("vm.builtin.copy", lambda x: x)

    with isolated_plugins(load=False, env={"RELAXVM_DISABLE_PLUGINS": None}):
        with pytest.raises(PluginConflictError) as caught:
            plugins.ensure_loaded([*real_plugins(), FakeEntryPoint("aaa", Plain())])
        status = {info.name: info.status for info in plugins.plugin_report()}
    assert str(caught.value) == (
        "relaxvm plugins 'builtins' and 'aaa' both register global function 'vm.builtin.copy'; "
        "the one meant to replace the other's must pass override=True; to skip 'aaa', set "
        "RELAXVM_DISABLE_PLUGINS=aaa"
    )
    # The essential plugin is not the one at fault: only the other is marked failed.
    assert status["builtins"] == "ok" and status["aaa"] == "failed"


def test_override_of_a_name_nobody_registers_is_the_registration() -> None:
    def legalize(bb: Any, call: Any) -> Any:
        return call

    class Lonely:
        @hookimpl
        def relaxvm_register_builtins(self, registry: Any) -> None:
            registry.register("aaa.only", lambda: "only", override=True)

        @hookimpl
        def relaxvm_register_legalizations(self, register: Any) -> None:
            register.register("relax.add", legalize, target="aaa_target", override=True)

    with isolated_plugins([*real_plugins(), FakeEntryPoint("aaa", Lonely())]):
        assert relaxvm.get_global_func("aaa.only")() == "only"
        assert registry.function_source("aaa.only") == "plugin 'aaa'"
        assert extensions.get_legalization("relax.add", "aaa_target") is legalize
        assert extensions.list_legalizations()[("relax.add", "aaa_target")] == "plugin 'aaa'"


def test_a_plugin_may_override_its_own_name() -> None:
    class Twice:
        @hookimpl
        def relaxvm_register_builtins(self, registry: Any) -> None:
            registry.register("twice.f", lambda: 1)
            registry.register("twice.f", lambda: 2, override=True)
            registry.register("twice.f", lambda: 3, override=True)

    with isolated_plugins([*real_plugins(), FakeEntryPoint("aaa", Twice())]):
        assert relaxvm.get_global_func("twice.f")() == 3
        (info,) = [i for i in plugins.plugin_report() if i.name == "aaa"]
        assert info.registered == ["twice.f"]


def test_a_plugin_registering_a_name_twice_is_an_error() -> None:
    class Twice:
        @hookimpl
        def relaxvm_register_builtins(self, registry: Any) -> None:
            registry.register("twice.f", lambda: 1)
            registry.register("twice.f", lambda: 2)

    with isolated_plugins(load=False), pytest.raises(PluginConflictError) as caught:
        plugins.ensure_loaded([*real_plugins(), FakeEntryPoint("aaa", Twice())])
    assert str(caught.value) == (
        "relaxvm plugin 'aaa' registers global function 'twice.f' twice; to skip 'aaa', set "
        "RELAXVM_DISABLE_PLUGINS=aaa"
    )


def test_user_override_after_loading_still_replaces_a_plugin_override() -> None:
    log: list[tuple[str, str]] = []

    def mine(*args: Any) -> Any:
        log.append(("builtin", "user"))
        return check_tensor_info(*args)

    with isolated_plugins([*real_plugins(), FakeEntryPoint("aaa", Overrider("aaa", log))]):
        relaxvm.register_func("vm.builtin.check_tensor_info", mine, override=True)
        assert registry.function_source("vm.builtin.check_tensor_info") == (
            f"user code ({__name__})"
        )
        compile_and_run("bytecode")
    assert ("builtin", "user") in log and ("builtin", "aaa") not in log
