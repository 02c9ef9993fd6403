"""Legalization and target-kind hooks: registration through plugins, attribution, errors."""

from __future__ import annotations

import hypothesis
import pytest

from relaxvm import hookimpl
from relaxvm.errors import PluginConflictError, PluginError, RegistryError
from relaxvm.registry import extensions
from relaxvm.registry import loader as plugins
from relaxvm.registry.extensions import TargetKind
from relaxvm.target import Target, TargetError
from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins


def _builtins():
    return [ep for ep in installed_entry_points() if ep.name == "builtins"]


def _legalize_add(bb, call):
    return call


def _build(mod, target):
    return None


class _Plugin:
    @hookimpl
    def relaxvm_register_legalizations(self, register):
        register.register("relax.add", _legalize_add)
        register.register("relax.add", _legalize_add, target="toy")

    @hookimpl
    def relaxvm_register_targets(self, register):
        register.register(
            TargetKind(
                "toy", "cpu", _build, default_attrs=lambda: {"mcpu": "generic", "lanes": "4"}
            )
        )


def test_plugin_registrations_are_found_and_attributed():
    with isolated_plugins([*_builtins(), FakeEntryPoint("toyplugin", _Plugin())]):
        assert extensions.get_legalization("relax.add") is _legalize_add
        assert extensions.get_legalization("relax.add", "toy") is _legalize_add
        assert extensions.get_legalization("relax.add", "other") is _legalize_add
        assert extensions.get_legalization("relax.nothing") is None
        assert extensions.list_legalizations()[("relax.add", "toy")] == "plugin 'toyplugin'"
        assert extensions.list_target_kinds()["toy"] == "plugin 'toyplugin'"
        report = {info.name: info for info in plugins.plugin_report()}
        assert "target toy" in report["toyplugin"].registered
        assert "legalize relax.add [toy]" in report["toyplugin"].registered


def test_target_specific_legalization_wins():
    def generic(bb, call):
        return call

    def special(bb, call):
        return call

    with isolated_plugins(_builtins()):
        extensions.register_legalization("relax.exp", generic)
        extensions.register_legalization("relax.exp", special, target="llvm")
        assert extensions.get_legalization("relax.exp", "llvm") is special
        assert extensions.get_legalization("relax.exp", "cuda") is generic
        assert extensions.get_legalization("relax.exp") is generic


def test_duplicate_legalization_names_both_sources():
    with isolated_plugins([*_builtins(), FakeEntryPoint("toyplugin", _Plugin())]):
        with pytest.raises(RegistryError, match=r"already legalized by plugin 'toyplugin'"):
            extensions.register_legalization("relax.add", _legalize_add)
        extensions.register_legalization("relax.add", _legalize_add, override=True)


def test_duplicate_target_kind_names_both_plugins():
    class Second:
        @hookimpl
        def relaxvm_register_targets(self, register):
            register.register(TargetKind("toy", "cpu", _build))

    entry_points = [
        *_builtins(),
        FakeEntryPoint("toyplugin", _Plugin()),
        FakeEntryPoint("zsecond", Second()),
    ]
    with isolated_plugins(load=False):
        with pytest.raises(PluginConflictError) as caught:
            plugins.ensure_loaded(entry_points)
        assert isinstance(caught.value, PluginError)  # the load failed
        assert str(caught.value) == (
            "relaxvm plugins 'toyplugin' and 'zsecond' both register target kind 'toy'; the "
            "one meant to replace the other's must pass override=True; to skip one of them, "
            "set RELAXVM_DISABLE_PLUGINS=toyplugin or RELAXVM_DISABLE_PLUGINS=zsecond"
        )
        # The failed load rolled the tables back: nothing half-registered remains.
        assert "toy" not in extensions._target_kinds


def test_hook_that_raises_is_named():
    class Broken:
        @hookimpl
        def relaxvm_register_legalizations(self, register):
            raise KeyError("boom")

    broken = [*_builtins(), FakeEntryPoint("broken", Broken())]
    message = r"'broken' failed in relaxvm_register_legalizations"
    with isolated_plugins(load=False), pytest.raises(PluginError, match=message):
        plugins.ensure_loaded(broken)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("", _legalize_add), "op name must be a string"),
        (("relax.add", 3), "must be callable"),
    ],
)
def test_bad_legalization_registration(args, message):
    with pytest.raises(RegistryError, match=message):
        extensions.register_legalization(*args)


def test_bad_target_kind():
    with pytest.raises(RegistryError, match="name must be an identifier"):
        TargetKind("not a name", "cpu", _build)
    with pytest.raises(RegistryError, match="build must be callable"):
        TargetKind("ok", "cpu", None)  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="expected a relaxvm.target.TargetKind"):
        extensions.register_target_kind("llvm")  # type: ignore[arg-type]


def test_target_from_string_dict_and_target():
    with isolated_plugins([*_builtins(), FakeEntryPoint("toyplugin", _Plugin())]):
        target = Target("toy -mcpu=skylake -mattr=+avx2,+fma -fast")
        assert target.kind_name == "toy"
        assert target.device == "cpu"
        assert target.attrs == {
            "mcpu": "skylake",
            "lanes": "4",
            "mattr": "+avx2,+fma",
            "fast": True,
        }
        assert (
            Target({"kind": "toy", "mcpu": "skylake", "mattr": "+avx2,+fma", "fast": True})
            == target
        )
        assert Target(target) == target
        assert Target(str(target)) == target
        assert Target("toy", host="toy").host == Target("toy")
        assert "toy" in repr(target)


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("", TargetError, "empty target string"),
        ("toy mcpu=x", TargetError, "expected attributes as -key=value"),
        ({"mcpu": "x"}, TargetError, "needs a 'kind' string"),
        (42, TargetError, "expected a string, dict or Target"),
        ("toi", RegistryError, "unknown target kind 'toi'.*did you mean 'toy'"),
    ],
)
def test_target_errors(spec, error, message):
    toy = [*_builtins(), FakeEntryPoint("toyplugin", _Plugin())]
    with isolated_plugins(toy), pytest.raises(error, match=message):
        Target(spec)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    hypothesis.strategies.text(
        alphabet=hypothesis.strategies.sampled_from(list("ab-=+,. \t'\"\\#x9")), max_size=24
    )
)
def test_target_strings_split_like_shlex(text: str) -> None:
    # Plain target strings skip shlex (it costs about 0.3 ms a load); the words must be the
    # ones shlex gives, and quoting still works.
    import shlex

    from relaxvm.target import _parse_string

    try:
        words = shlex.split(text)
    except ValueError:
        with pytest.raises(TargetError, match="cannot parse"):
            _parse_string(text)
        return
    if not words or any(not w.startswith("-") or w == "-" for w in words[1:]):
        with pytest.raises(TargetError):
            _parse_string(text)
        return
    kind, attrs = _parse_string(text)
    assert kind == words[0]
    assert list(attrs) == [w.lstrip("-").partition("=")[0] for w in words[1:]]
