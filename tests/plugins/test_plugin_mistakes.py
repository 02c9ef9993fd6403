"""Plugin mistakes are loud: unknown op names in legalizations, raising legalizations and
builtins are reported with the op, the plugin (or user code) and the original error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

import relaxvm
from relaxvm import hookimpl
from relaxvm.errors import CompileError, PluginError, RegistryError
from relaxvm.ir import relax as rx
from relaxvm.registry import extensions, op_names, register_func
from relaxvm.registry.registrars import LegalizationRegistrar
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins
from relaxvm.transform import LegalizeOps
from relaxvm.vm.diagnostics import builtin_failure_message, callee_label


def _installed() -> list[Any]:
    return list(installed_entry_points())


def _exp_module() -> rx.IRModule:
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.exp(x)
            return y

    return Module


def _divide_by_zero(bb: Any, call: Any) -> Any:
    return 1 // 0


class _MisspeltPlugin:
    @hookimpl
    def relaxvm_register_legalizations(self, register: LegalizationRegistrar) -> None:
        register.register("relax.sofmax", lambda bb, call: call)


class _RaisingPlugin:
    @hookimpl
    def relaxvm_register_legalizations(self, register: LegalizationRegistrar) -> None:
        register.register("relax.exp", _divide_by_zero, override=True)


# ---- unknown op names ------------------------------------------------------------------------
def test_hook_registration_of_an_unknown_op_is_refused_naming_the_plugin() -> None:
    plugins = [*_installed(), FakeEntryPoint("typo", _MisspeltPlugin())]
    with isolated_plugins(plugins, load=False), pytest.raises(PluginError) as caught:
        extensions.list_legalizations()
    message = str(caught.value)
    assert "relaxvm plugin 'typo' registered a legalization for unknown op 'relax.sofmax'" in (
        message
    )
    assert "did you mean 'relax.nn.softmax'" in message
    assert "RELAXVM_DISABLE_PLUGINS=typo" in message


def test_registrar_refuses_an_unknown_op_with_a_target() -> None:
    registrar = LegalizationRegistrar("mine")
    with pytest.raises(PluginError, match=r"'mine' registered a legalization for target 'llvm'"):
        registrar.register("relax.ad", lambda bb, call: call, target="llvm")
    assert registrar.registrations == []
    registrar.register("relax.add", lambda bb, call: call, target="llvm")
    assert registrar.registered == ["legalize relax.add [llvm]"]


def test_an_op_the_plugin_registers_itself_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    from relaxvm.ir.relax.op import register_op
    from relaxvm.ir.relax.op import registry as op_table

    # The op table is process-wide: the op registered here is gone after the test.
    monkeypatch.setattr(op_table, "_REGISTRY", dict(op_table._REGISTRY))
    register_op("mistakes.my_op", num_inputs=1, infer=lambda call, ctx: None, override=True)
    registrar = LegalizationRegistrar("mine")
    registrar.register("mistakes.my_op", lambda bb, call: call)
    assert registrar.registered == ["legalize mistakes.my_op"]


def test_user_registration_of_an_unknown_op_is_refused_before_use() -> None:
    # With the op table loaded (the IR is imported here), the call itself refuses it.
    _exp_module()
    with isolated_plugins(), pytest.raises(op_names.UnknownOpError) as caught:
        extensions.register_legalization("relax.sofmax", lambda bb, call: call)
    assert isinstance(caught.value, RegistryError)
    message = str(caught.value)
    assert message.startswith(
        f"user code ({__name__}) registered a legalization for unknown op 'relax.sofmax'"
    )
    assert "did you mean 'relax.nn.softmax'" in message


def test_close_op_names_compare_the_last_component() -> None:
    known = ["relax.add", "relax.nn.softmax", "relax.nn.relu"]
    assert op_names.close_op_names("relax.sofmax", known)[0] == "relax.nn.softmax"
    assert op_names.close_op_names("relax.relu", known) == ["relax.nn.relu"]
    assert op_names.close_op_names("relax.zzz", known) == []


def test_loading_plugins_without_the_ir_defers_the_check_to_legalize_ops() -> None:
    # The VM loads plugins without importing the IR: the misspelt op is accepted there and
    # refused by LegalizeOps, naming the plugin, before any legalization runs.
    code = textwrap.dedent(
        """
        import sys
        from relaxvm import hookimpl
        from relaxvm.registry import extensions
        from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins

        class Typo:
            @hookimpl
            def relaxvm_register_legalizations(self, register):
                register.register("relax.sofmax", lambda bb, call: call)

        eps = [*installed_entry_points(), FakeEntryPoint("typo", Typo())]
        with isolated_plugins(eps):
            assert "relaxvm.ir.relax.op" not in sys.modules, "the IR was imported"
            assert ("relax.sofmax", None) in extensions.list_legalizations()
            from relaxvm.script import from_source
            from relaxvm.transform import LegalizeOps

            mod = from_source(
                "@I.ir_module\\n"
                "class M:\\n"
                "    @R.function\\n"
                "    def main(x: R.Tensor((4,), 'float32')):\\n"
                "        return R.exp(x)\\n"
            )
            try:
                LegalizeOps()(mod)
            except Exception as err:
                print(type(err).__name__, err)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.startswith(
        "UnknownOpError plugin 'typo' registered a legalization for unknown op 'relax.sofmax'; "
        "did you mean 'relax.nn.softmax'"
    ), out.stdout + out.stderr


# ---- raising legalizations -------------------------------------------------------------------
def test_a_raising_plugin_legalization_names_op_plugin_and_error() -> None:
    plugins = [*_installed(), FakeEntryPoint("raiser", _RaisingPlugin())]
    with isolated_plugins(plugins), pytest.raises(CompileError) as caught:
        relaxvm.compile(_exp_module(), target="llvm")
    assert str(caught.value) == (
        "relax.exp in function 'main', binding 'y': legalization failed: the legalization "
        "from plugin 'raiser' raised ZeroDivisionError: integer division or modulo by zero"
    )
    assert type(caught.value.__cause__) is ZeroDivisionError


def test_a_raising_user_legalization_names_user_code() -> None:
    with isolated_plugins():
        extensions.register_legalization("relax.exp", _divide_by_zero, override=True)
        with pytest.raises(CompileError) as caught:
            LegalizeOps()(_exp_module())
    assert str(caught.value).endswith(
        f"the legalization from user code ({__name__}) raised ZeroDivisionError: "
        "integer division or modulo by zero"
    )


def test_a_raising_custom_legalization_names_the_map() -> None:
    def broken(bb: Any, call: Any) -> Any:
        raise KeyError("axis")

    with pytest.raises(CompileError) as caught:
        LegalizeOps({"relax.exp": broken})(_exp_module())
    assert str(caught.value) == (
        "relax.exp in function 'main', binding 'y': legalization failed: the legalization "
        "from user code (LegalizeOps customize_legalize_map) raised KeyError: 'axis'"
    )
    assert type(caught.value.__cause__) is KeyError


# ---- raising builtins --------------------------------------------------------------------------
def test_builtin_failure_message_names_the_plugin() -> None:
    with isolated_plugins():
        label = callee_label("vm.builtin.shape_of")
        message = builtin_failure_message("vm.builtin.shape_of", TypeError("no shape"))
    assert label == "vm.builtin.shape_of (registered by plugin 'builtins')"
    assert message == (
        "vm.builtin.shape_of (registered by plugin 'builtins') cannot handle what the program "
        "passes it: TypeError: no shape"
    )


def test_callee_label_of_user_functions_and_kernels() -> None:
    with isolated_plugins():
        register_func("mistakes.user_fn", lambda: None)
        assert (
            callee_label("mistakes.user_fn")
            == f"mistakes.user_fn (registered by user code ({__name__}))"
        )
        assert callee_label("fused_kernel") == "fused_kernel"


def test_customize_legalize_map_with_an_unknown_op_is_refused() -> None:
    with pytest.raises(op_names.UnknownOpError) as caught:
        LegalizeOps({"relax.sofmax": lambda bb, call: call})
    assert str(caught.value).startswith(
        "LegalizeOps: customize_legalize_map has a legalization for unknown op 'relax.sofmax'; "
        "did you mean 'relax.nn.softmax'"
    )
