"""The plugin loader: entry points, selection, blocking, essentials, attribution, errors."""

from __future__ import annotations

import types

import pytest

import relaxvm
from relaxvm import hookimpl
from relaxvm.errors import FunctionNotFoundError, PluginConflictError, PluginError
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
    message = (
        "relaxvm plugins 'first' and 'second' both register global function 'dup.f'; the one "
        "meant to replace the other's must pass override=True; to skip one of them, set "
        "RELAXVM_DISABLE_PLUGINS=first or RELAXVM_DISABLE_PLUGINS=second"
    )
    with isolated_plugins(load=False):
        with pytest.raises(PluginConflictError) as caught:
            plugins.ensure_loaded([*builtins_only(), second, first])
        assert str(caught.value) == message
        # The failed load was rolled back: a retry reports the same error, not a cascade.
        with pytest.raises(PluginConflictError) as again:
            plugins.ensure_loaded([*builtins_only(), first, second])
        assert str(again.value) == message


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
        pytest.raises(PluginError) as caught,
    ):
        plugins.ensure_loaded(builtins_only())
    assert str(caught.value) == (
        "RELAXVM_PLUGINS names ['nosuch'] but the installed relaxvm plugins are ['builtins']"
    )


def test_disable_unknown_plugin_is_an_error_listing_the_installed_ones():
    fake = FakeEntryPoint("example", make_plugin())
    with isolated_plugins(load=False, env={"RELAXVM_DISABLE_PLUGINS": "exmaple,nosuch"}):
        with pytest.raises(PluginError) as caught:
            plugins.ensure_loaded([*builtins_only(), fake])
        # Nothing was tried, so there is nothing to report.
        assert plugins.plugin_report() == []
    assert str(caught.value) == (
        "RELAXVM_DISABLE_PLUGINS names ['exmaple', 'nosuch'] but the installed relaxvm plugins "
        "are ['builtins', 'example']; did you mean 'example'?"
    )


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


def test_plugin_import_failure_names_plugin_and_how_to_skip_it():
    broken = FakeEntryPoint("broken", error=ImportError("no module named nothere"), value="bad.mod")
    with isolated_plugins(load=False):
        with pytest.raises(PluginError) as caught:
            plugins.ensure_loaded([*builtins_only(), broken])
        report = {info.name: info for info in plugins.plugin_report()}
    assert type(caught.value) is PluginError
    assert str(caught.value) == (
        "relaxvm plugin 'broken' (bad.mod from ?) failed to import: ImportError: no module "
        "named nothere; to skip 'broken', set RELAXVM_DISABLE_PLUGINS=broken"
    )
    assert isinstance(caught.value.__cause__, ImportError)
    assert report["broken"].status == "failed"
    assert report["broken"].error == (
        "relaxvm plugin 'broken' (bad.mod from ?) failed to import: ImportError: no module "
        "named nothere"
    )
    assert report["builtins"].status == "ok"  # fine itself, but nothing loads without all
    assert report["builtins"].registered  # what it would register is known


def test_skip_hint_keeps_the_plugins_already_disabled():
    broken = FakeEntryPoint("broken", error=ImportError("gone"), value="bad.mod")
    other = FakeEntryPoint("other", make_plugin())
    with (
        isolated_plugins(load=False, env={"RELAXVM_DISABLE_PLUGINS": "other"}),
        pytest.raises(PluginError) as caught,
    ):
        plugins.ensure_loaded([*builtins_only(), broken, other])
    assert str(caught.value).endswith(
        "; to skip 'broken', set RELAXVM_DISABLE_PLUGINS=other,broken"
    )


def test_skipping_the_broken_plugin_as_told_loads_the_rest():
    broken = FakeEntryPoint("broken", error=ImportError("gone"), value="bad.mod")
    fine = FakeEntryPoint("fine", make_plugin(**{"fine.f": lambda: "fine"}))
    with isolated_plugins([*builtins_only(), broken, fine], load=False):
        with pytest.raises(PluginError, match="RELAXVM_DISABLE_PLUGINS=broken$"):
            relaxvm.get_global_func("fine.f")
        with pytest.raises(PluginError, match="RELAXVM_DISABLE_PLUGINS=broken$"):
            relaxvm.get_global_func("fine.f")  # a retry fails the same way
    with isolated_plugins(
        [*builtins_only(), broken, fine], env={"RELAXVM_DISABLE_PLUGINS": "broken"}
    ):
        assert relaxvm.get_global_func("fine.f")() == "fine"
        status = {info.name: info.status for info in plugins.plugin_report()}
    assert status == {"builtins": "loaded", "broken": "blocked", "fine": "loaded"}


def test_every_broken_plugin_is_reported_at_once():
    class Raises:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            raise KeyError("oops")

    entry_points = [
        *builtins_only(),
        FakeEntryPoint("zeta", Raises()),
        FakeEntryPoint("alpha", error=ImportError("gone"), value="alpha.mod"),
    ]
    with isolated_plugins(load=False):
        with pytest.raises(PluginError) as caught:
            plugins.ensure_loaded(entry_points)
        status = {info.name: info.status for info in plugins.plugin_report()}
    assert str(caught.value) == (
        "relaxvm plugin 'alpha' (alpha.mod from ?) failed to import: ImportError: gone; plugin "
        "'zeta' failed too (relaxvm plugins shows why); to skip 'alpha' and 'zeta', set "
        "RELAXVM_DISABLE_PLUGINS=alpha,zeta"
    )
    assert status == {"builtins": "ok", "alpha": "failed", "zeta": "failed"}


def test_essential_plugin_failing_cannot_be_skipped():
    broken = FakeEntryPoint("builtins", error=ImportError("gone"), value="relaxvm_builtins.plugin")
    with isolated_plugins(load=False), pytest.raises(PluginError) as caught:
        plugins.ensure_loaded([broken])
    assert str(caught.value) == (
        "relaxvm plugin 'builtins' (relaxvm_builtins.plugin from ?) failed to import: "
        "ImportError: gone; the essential plugin 'builtins' cannot be skipped: reinstall "
        "relaxvm (pip install -e .)"
    )


def test_plugin_with_unknown_hook_fails_validation():
    module = types.SimpleNamespace()

    @hookimpl
    def relaxvm_no_such_hook():
        pass

    module.relaxvm_no_such_hook = relaxvm_no_such_hook
    with isolated_plugins(load=False), pytest.raises(PluginError) as caught:
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("typo", module)])
    message = str(caught.value)
    assert message.startswith("relaxvm plugin 'typo' is invalid: ")
    assert "relaxvm_no_such_hook" in message
    assert message.endswith("; to skip 'typo', set RELAXVM_DISABLE_PLUGINS=typo")


def test_plugin_registering_non_callable():
    class Bad:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            registry.register("bad.value", 42)

    with isolated_plugins(load=False), pytest.raises(PluginError) as caught:
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("bad", Bad())])
    assert str(caught.value) == (
        "relaxvm plugin 'bad' registered 'bad.value' with a non-callable int; to skip 'bad', "
        "set RELAXVM_DISABLE_PLUGINS=bad"
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda r: r.register("", len),
            "relaxvm plugin 'bad' registered a function under an invalid name ''",
        ),
        (
            lambda r: r.register(" padded ", len),
            "relaxvm plugin 'bad' registered a function under an invalid name ' padded '",
        ),
    ],
)
def test_invalid_function_registrations(call, message):
    class Bad:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            call(registry)

    with isolated_plugins(load=False), pytest.raises(PluginError) as caught:
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("bad", Bad())])
    assert str(caught.value) == f"{message}; to skip 'bad', set RELAXVM_DISABLE_PLUGINS=bad"


def test_plugin_hook_raising_is_wrapped():
    class Raises:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            raise KeyError("oops")

    with isolated_plugins(load=False), pytest.raises(PluginError) as caught:
        plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("raises", Raises())])
    assert str(caught.value) == (
        "relaxvm plugin 'raises' failed in relaxvm_register_builtins: KeyError: 'oops'; to "
        "skip 'raises', set RELAXVM_DISABLE_PLUGINS=raises"
    )
    assert isinstance(caught.value.__cause__, KeyError)


def test_registrations_of_a_plugin_failing_in_a_later_hook_are_dropped():
    class Half:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            registry.register("half.f", lambda: 1)

        @hookimpl
        def relaxvm_register_targets(self, register):
            raise RuntimeError("no target today")

    with isolated_plugins(load=False):
        with pytest.raises(PluginError, match="'half' failed in relaxvm_register_targets"):
            plugins.ensure_loaded([*builtins_only(), FakeEntryPoint("half", Half())])
        (info,) = [i for i in plugins.plugin_report() if i.name == "half"]
        assert info.status == "failed" and info.registered == []
        assert registry._functions == {}


def test_register_plugin_at_runtime():
    with isolated_plugins(builtins_only()):
        plugins.register_plugin(make_plugin(**{"late.f": lambda: "late"}), "late")
        assert relaxvm.get_global_func("late.f")() == "late"
        assert registry.function_source("late.f") == "plugin 'late'"
        with pytest.raises(PluginError, match="already loaded"):
            plugins.register_plugin(make_plugin(), "late")


def test_register_plugin_at_runtime_resolves_against_what_is_registered():
    with isolated_plugins(builtins_only()):
        with pytest.raises(PluginConflictError) as caught:
            plugins.register_plugin(make_plugin(**{"vm.builtin.copy": lambda x: x}), "late")
        assert str(caught.value) == (
            "global function 'vm.builtin.copy' is already registered by plugin 'builtins'; "
            "plugin 'late' tried to register it again (pass override=True to replace it)"
        )
        # Nothing of the refused plugin stays: the name can be used again.
        assert registry.function_source("vm.builtin.copy") == "plugin 'builtins'"
        assert "late" not in {info.name for info in plugins.plugin_report()}

        class Over:
            @hookimpl
            def relaxvm_register_builtins(self, registry):
                registry.register("vm.builtin.copy", lambda x: x, override=True)

        plugins.register_plugin(Over(), "late")
        assert registry.function_source("vm.builtin.copy") == "plugin 'late'"


def test_register_plugin_that_raises_leaves_nothing():
    class Raises:
        @hookimpl
        def relaxvm_register_builtins(self, registry):
            registry.register("late.g", lambda: 1)
            raise KeyError("oops")

    with isolated_plugins(builtins_only()):
        with pytest.raises(PluginError) as caught:
            plugins.register_plugin(Raises(), "late")
        assert str(caught.value) == (
            "relaxvm plugin 'late' failed in relaxvm_register_builtins: KeyError: 'oops'"
        )
        assert relaxvm.get_global_func("late.g", allow_missing=True) is None
        plugins.register_plugin(make_plugin(**{"late.g": lambda: 2}), "late")
        assert relaxvm.get_global_func("late.g")() == 2


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


def test_two_distributions_with_one_entry_point_name():
    first = FakeEntryPoint("twin", make_plugin(**{"twin.f": lambda: 1}), value="one.plugin")
    second = FakeEntryPoint("twin", make_plugin(), value="two.plugin")
    with isolated_plugins(load=False):
        with pytest.raises(PluginError) as caught:
            plugins.ensure_loaded([*builtins_only(), first, second])
        status = [(info.name, info.value, info.status) for info in plugins.plugin_report()]
    message = str(caught.value)
    assert message.startswith(
        "two installed relaxvm plugins use the entry-point name 'twin' (two.plugin from ? and "
    )
    assert message.endswith(
        "; uninstall one of the two distributions (disabling the name would skip both)"
    )
    assert status == [
        ("builtins", "relaxvm_builtins.plugin", "ok"),
        ("twin", "one.plugin", "ok"),
        ("twin", "two.plugin", "failed"),
    ]
