"""The plugin loader: entry points, selection, blocking, essentials, attribution, errors."""

from __future__ import annotations

import types

import pytest

import relaxvm
from relaxvm import hookimpl
from relaxvm.errors import FunctionNotFoundError, PluginError, RegistryError
from relaxvm.registry import functions as registry
from relaxvm.registry import loader as plugins
from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins


def make_plugin(**functions):
    """A plugin object registering ``functions`` (name -> callable)."""

    class Plugin:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            for name, func in functions.items():
                registry.register(name, func)

    return Plugin()


def builtins_only():
    return [ep for ep in installed_entry_points() if ep.name == "builtins"]


def test_builtins_entry_point_is_installed():
    names = {ep.name: ep.value for ep in installed_entry_points()}
    assert names["builtins"] == "relaxvm_builtins.plugin"


def test_import_registers_nothing_until_first_lookup():
    with isolated_plugins(load=False):
        assert plugins._loaded is False
        assert registry._functions == {}
        relaxvm.get_global_func("device_api.cpu")
        assert plugins._loaded is True


def test_loading_is_idempotent():
    with isolated_plugins(builtins_only()):
        before = dict(registry._functions)
        plugins.ensure_loaded()
        plugins.ensure_loaded()
        assert registry._functions == before


def test_fake_plugin_registrations_are_attributed():
    fake = FakeEntryPoint("thirdparty", make_plugin(**{"tp.double": lambda x: 2 * x}))
    with isolated_plugins([*builtins_only(), fake]):
        assert relaxvm.get_global_func("tp.double")(21) == 42
        assert registry.function_source("tp.double") == "plugin 'thirdparty'"
        report = {p.name: p for p in plugins.plugin_report()}
        assert report["thirdparty"].status == "loaded"
        assert report["thirdparty"].registered == ["tp.double"]


def test_duplicate_between_plugins_names_both():
    first = FakeEntryPoint("first", make_plugin(**{"dup.f": lambda: 1}))
    second = FakeEntryPoint("second", make_plugin(**{"dup.f": lambda: 2}))
    with isolated_plugins(load=False):
        with pytest.raises(
            RegistryError, match=r"'dup.f'.*plugin '(first|second)'.*plugin '(first|second)'"
        ):
            plugins.ensure_loaded([*builtins_only(), first, second])
        # The failed load was rolled back: a retry reports the same error, not a cascade.
        with pytest.raises(RegistryError, match="already registered"):
            plugins.ensure_loaded([*builtins_only(), first, second])


def test_override_true_replaces():
    class Overrider:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            registry.register("device_api.cpu", lambda: None, override=True)

    with isolated_plugins([*builtins_only(), FakeEntryPoint("over", Overrider())]):
        assert registry.function_source("device_api.cpu") == "plugin 'over'"


def test_disable_blocks_a_plugin():
    fake = FakeEntryPoint("blockme", make_plugin(**{"blocked.f": lambda: 1}))
    with isolated_plugins([*builtins_only(), fake], env={"RELAXVM_DISABLE_PLUGINS": "blockme"}):
        assert relaxvm.get_global_func("blocked.f", allow_missing=True) is None
        with pytest.raises(FunctionNotFoundError, match="blocked plugins not searched: blockme"):
            relaxvm.get_global_func("blocked.f")
        status = {p.name: p.status for p in plugins.plugin_report()}
        assert status["blockme"] == "blocked"


def test_select_only_some_plugins():
    fake = FakeEntryPoint("other", make_plugin(**{"other.f": lambda: 1}))
    with isolated_plugins([*builtins_only(), fake], env={"RELAXVM_PLUGINS": "builtins"}):
        assert relaxvm.get_global_func("other.f", allow_missing=True) is None
        status = {p.name: p.status for p in plugins.plugin_report()}
        assert status == {"builtins": "loaded", "other": "skipped"}


def test_select_unknown_plugin_is_an_error():
    with (
        isolated_plugins(load=False, env={"RELAXVM_PLUGINS": "builtins,nosuch"}),
        pytest.raises(PluginError, match=r"RELAXVM_PLUGINS names \['nosuch'\]"),
    ):
        plugins.ensure_loaded(builtins_only())


def test_essential_plugin_missing():
    with (
        isolated_plugins(load=False),
        pytest.raises(
            PluginError,
            match="essential relaxvm plugin 'builtins'.*not installed.*install the project",
        ),
    ):
        plugins.ensure_loaded([])


def test_essential_plugin_blocked():
    with (
        isolated_plugins(load=False, env={"RELAXVM_DISABLE_PLUGINS": "builtins"}),
        pytest.raises(
            PluginError,
            match="essential relaxvm plugin 'builtins'.*blocked by RELAXVM_DISABLE_PLUGINS",
        ),
    ):
        plugins.ensure_loaded(builtins_only())


def test_essential_plugin_left_out_by_selection():
    fake = FakeEntryPoint("other", make_plugin())
    with (
        isolated_plugins(load=False, env={"RELAXVM_PLUGINS": "other"}),
        pytest.raises(PluginError, match="left out by RELAXVM_PLUGINS"),
    ):
        plugins.ensure_loaded([*builtins_only(), fake])


def test_plugin_import_failure_names_plugin():
    broken = FakeEntryPoint("broken", error=ImportError("no module named nothere"), value="bad.mod")
    with (
        isolated_plugins(load=False),
        pytest.raises(
            PluginError, match=r"plugin 'broken' \(bad.mod from \?\) failed to import: ImportError"
        ),
    ):
        plugins.ensure_loaded([*builtins_only(), broken])


def test_plugin_with_unknown_hook_fails_validation():
    module = types.SimpleNamespace()

    @hookimpl
    def relaxvm_no_such_hook():
        pass

    module.relaxvm_no_such_hook = relaxvm_no_such_hook
    with (
        isolated_plugins(load=False),
        pytest.raises(PluginError, match="plugin 'typo' is invalid"),
    ):
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("typo", module)])


def test_plugin_registering_non_callable():
    class Bad:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            registry.register("bad.value", 42)

    with (
        isolated_plugins(load=False),
        pytest.raises(
            PluginError, match="plugin 'bad' registered 'bad.value' with a non-callable int"
        ),
    ):
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("bad", Bad())])


def test_plugin_hook_raising_is_wrapped():
    class Raises:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            raise KeyError("oops")

    with (
        isolated_plugins(load=False),
        pytest.raises(
            PluginError, match="plugin 'raises' failed in relaxvm_register_builtins: KeyError"
        ),
    ):
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("raises", Raises())])


def test_register_plugin_at_runtime():
    with isolated_plugins(builtins_only()):
        plugins.register_plugin(make_plugin(**{"late.f": lambda: "late"}), "late")
        assert relaxvm.get_global_func("late.f")() == "late"
        assert registry.function_source("late.f") == "plugin 'late'"
        with pytest.raises(PluginError, match="already loaded"):
            plugins.register_plugin(make_plugin(), "late")


def test_lookup_from_inside_a_plugin_hook_does_not_recurse():
    seen = []

    class Curious:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            seen.append(relaxvm.get_global_func("curious.none", allow_missing=True))
            registry.register("curious.f", lambda: 1)

    with isolated_plugins([*builtins_only(), FakeEntryPoint("curious", Curious())]):
        assert seen == [None]
        assert relaxvm.get_global_func("curious.f")() == 1


def test_lookup_from_another_thread_waits_for_the_load():
    import threading
    import time

    started = threading.Event()

    class Slow:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            started.set()
            time.sleep(0.2)
            registry.register("slow.f", lambda: "slow")

    results = []
    with isolated_plugins(load=False):
        loader = threading.Thread(
            target=plugins.ensure_loaded, args=([*builtins_only(), FakeEntryPoint("slow", Slow())],)
        )
        loader.start()
        started.wait(5)

        def lookup():
            results.append(relaxvm.get_global_func("slow.f", allow_missing=True))

        other = threading.Thread(target=lookup)
        other.start()
        other.join(5)
        loader.join(5)
        assert results and results[0] is not None and results[0]() == "slow"
        assert {p.name: p.status for p in plugins.plugin_report()} == {
            "builtins": "loaded",
            "slow": "loaded",
        }
