"""The global function registry: register/lookup/remove, duplicates, suggestions."""

from __future__ import annotations

import pytest

import relaxvm
from relaxvm.errors import FunctionNotFoundError, RegistryError
from relaxvm.registry import functions as registry
from relaxvm.testing import isolated_plugins


@pytest.fixture
def clean_registry():
    with isolated_plugins():
        yield


def test_register_as_call_and_lookup(clean_registry):
    def triple(x):
        return 3 * x

    assert relaxvm.register_func("test.triple", triple) is triple
    assert relaxvm.get_global_func("test.triple")(2) == 6
    assert "test.triple" in relaxvm.list_global_func_names()
    assert registry.function_source("test.triple") == f"user code ({__name__})"


def test_register_as_decorator(clean_registry):
    @relaxvm.register_func("test.deco")
    def deco():
        return "ok"

    assert relaxvm.get_global_func("test.deco")() == "ok"


def test_register_bare_decorator_uses_function_name(clean_registry):
    @relaxvm.register_func
    def bare_named_function():
        return 1

    assert relaxvm.get_global_func("bare_named_function") is bare_named_function


def test_duplicate_names_both_sources(clean_registry):
    relaxvm.register_func("test.dup", lambda: 1)
    with pytest.raises(
        RegistryError, match=r"'test.dup' is already registered by user code.*override=True"
    ):
        relaxvm.register_func("test.dup", lambda: 2)
    with pytest.raises(
        RegistryError, match=r"'vm.builtin.copy' is already registered by plugin 'builtins'"
    ):
        relaxvm.register_func("vm.builtin.copy", lambda x: x)


def test_override_replaces(clean_registry):
    relaxvm.register_func("test.over", lambda: 1)
    relaxvm.register_func("test.over", lambda: 2, override=True)
    assert relaxvm.get_global_func("test.over")() == 2


def test_missing_lookup_suggests_close_names(clean_registry):
    with pytest.raises(
        FunctionNotFoundError,
        match=r"'vm.builtin.matchshape'.*global registry.*plugins loaded: .*builtins.*did you mean 'vm.builtin.match_shape'",
    ):
        relaxvm.get_global_func("vm.builtin.matchshape")
    assert relaxvm.get_global_func("vm.builtin.matchshape", allow_missing=True) is None


def test_not_found_is_a_value_error(clean_registry):
    with pytest.raises(ValueError):
        relaxvm.get_global_func("nothing.here")


def test_remove(clean_registry):
    relaxvm.register_func("test.gone", lambda: 1)
    relaxvm.remove_global_func("test.gone")
    assert relaxvm.get_global_func("test.gone", allow_missing=True) is None
    with pytest.raises(FunctionNotFoundError, match="test.gone"):
        relaxvm.remove_global_func("test.gone")


@pytest.mark.parametrize("name", ["", " padded ", 3, None])
def test_bad_names(clean_registry, name):
    with pytest.raises(RegistryError, match="non-empty string"):
        relaxvm.register_func(name, lambda: 1)


def test_non_callable(clean_registry):
    with pytest.raises(RegistryError, match="must be callable, got int"):
        relaxvm.register_func("test.nc", 5)
