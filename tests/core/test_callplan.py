"""The call-site specialisation protocol and the call plans both exec modes follow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import relaxvm
from relaxvm import ExecBuilder, VirtualMachine
from relaxvm.errors import PluginError
from relaxvm.registry.specialization import (
    REGISTER,
    CallSite,
    Specialization,
    get_specializer,
    set_specializer,
    specializer,
)
from relaxvm.testing import isolated_plugins
from relaxvm.vm.compiled import generate_source
from relaxvm.vm.executable.executable import Executable

MODES = ["bytecode", "compiled"]


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    with isolated_plugins():
        yield


def three(a: Any, b: Any, c: Any) -> tuple[Any, Any, Any]:
    return (a, b, c)


def test_call_site_helpers() -> None:
    site = CallSite("my.three", three, (REGISTER, 7, REGISTER))
    assert site.register_positions == (0, 2) and len(site) == 3
    assert site.is_register(0) and not site.is_register(1)
    assert site.fixed(1) == 7 and not site.all_fixed() and site.all_fixed(1) is False
    with pytest.raises(PluginError, match="argument 0 comes from a register"):
        site.fixed(0)
    assert site.generic()("a", "c") == ("a", 7, "c")
    assert CallSite("f", three, (1, 2, 3)).generic()() == (1, 2, 3)
    assert CallSite("f", three, (REGISTER, 2, 3)).generic()(1) == (1, 2, 3)
    assert CallSite("f", three, (REGISTER, REGISTER, 3)).generic()(1, 2) == (1, 2, 3)
    assert repr(REGISTER) == "REGISTER"


def test_specialization_validation() -> None:
    with pytest.raises(PluginError, match="neither a register index"):
        Specialization.call(three, inline="{nope}({0})")
    with pytest.raises(PluginError, match="bare name"):
        Specialization.call(three, inline="{0!r}")
    with pytest.raises(PluginError, match="malformed"):
        Specialization.call(three, inline="{0")
    with pytest.raises(PluginError, match="callable"):
        Specialization.call(42)  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="position >= 0"):
        Specialization.forward(-1)
    spec = Specialization.call(three, inline="{f}({0}) or {call}", f=three)
    assert spec.kind == "call" and spec.bound == {"f": three}


def test_specializer_attachment() -> None:
    def f(x: Any) -> Any:
        return x

    @specializer(f)
    def spec(site: CallSite) -> None:
        return None

    assert get_specializer(f) is spec
    set_specializer(f, None)
    assert get_specializer(f) is None
    with pytest.raises(PluginError, match="cannot attach"):
        set_specializer(len, spec)
    with pytest.raises(PluginError, match="callable"):
        set_specializer(f, "spec")  # type: ignore[arg-type]


def _program(mode: str, callee: str, extra: list[Any]) -> Executable:
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call(callee, args=[ib.r(0), *extra], dst=ib.r(1))
        ib.emit_call(callee, args=[ib.r(1), *extra], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    ex = ib.get()
    return Executable(
        ex.func_table, ex.constants, ex.instr_offset, ex.instr_data, ex.memory_scopes, mode
    )


def _register(name: str, func: Any, spec: Any) -> list[CallSite]:
    sites: list[CallSite] = []

    def record(site: CallSite) -> Any:
        sites.append(site)
        return spec(site)

    set_specializer(func, record)
    relaxvm.register_func(name, func)
    return sites


@pytest.mark.parametrize("mode", MODES)
def test_each_site_is_specialised_once(mode: str) -> None:
    sites = _register("test.add", lambda x, k: x + k, lambda site: None)
    vm = VirtualMachine(_program(mode, "test.add", [5]), relaxvm.cpu())
    assert vm["main"](1) == 11
    assert [site.args for site in sites] == [(REGISTER, 5), (REGISTER, 5)]
    assert all(site.name == "test.add" for site in sites)


@pytest.mark.parametrize("mode", MODES)
def test_forward_of_a_fixed_argument_is_a_constant(mode: str) -> None:
    _register("test.second", lambda x, k: k, lambda site: Specialization.forward(1))
    vm = VirtualMachine(_program(mode, "test.second", [9]), relaxvm.cpu())
    assert vm["main"](1) == 9


@pytest.mark.parametrize("mode", MODES)
def test_constant_call_and_forward_results(mode: str) -> None:
    _register("test.const", lambda x: "slow", lambda site: Specialization.constant("fast"))
    assert VirtualMachine(_program(mode, "test.const", []), relaxvm.cpu())["main"](1) == "fast"
    _register("test.fwd", lambda x: "slow", lambda site: Specialization.forward(0))
    assert VirtualMachine(_program(mode, "test.fwd", []), relaxvm.cpu())["main"](4) == 4

    def spec(site: CallSite) -> Specialization:
        k = site.fixed(1)
        return Specialization.call(lambda x: x * k)

    _register("test.mul", lambda x, k: "slow", spec)
    assert VirtualMachine(_program(mode, "test.mul", [3]), relaxvm.cpu())["main"](2) == 18


def test_compiled_mode_writes_the_inline_expression() -> None:
    def spec(site: CallSite) -> Specialization:
        return Specialization.call(lambda x: "bytecode", inline="{tag} + str({0})", tag="inline:")

    _register("test.tag", lambda x: "slow", spec)
    vm = VirtualMachine(_program("compiled", "test.tag", []), relaxvm.cpu())
    source = generate_source(vm)[0]
    assert "+ str(r0)" in source and "inline:" not in source  # the value is bound, not text
    assert vm["main"](1) == "inline:inline:1"
    assert VirtualMachine(_program("bytecode", "test.tag", []), relaxvm.cpu())["main"](1) == (
        "bytecode"
    )


@pytest.mark.parametrize("mode", MODES)
def test_inline_naming_a_missing_register_is_an_error(mode: str) -> None:
    _register("test.bad", lambda x: x, lambda site: Specialization.call(len, inline="{1}"))
    with pytest.raises(PluginError, match=r"test\.bad.*\{1\}.*it has 1"):
        VirtualMachine(_program(mode, "test.bad", []), relaxvm.cpu())
