"""Overriding a builtin is honoured everywhere: both exec modes, executables built before and
after the override, executables saved and reloaded; a removed builtin is never replaced by a
hidden copy; specialisers that decline or raise.

Each program calls its builtin in exactly the form that builtin specialises (the form the
compiler emits), so that a VM keeping a private fast path would skip the override and fail
the call count.
"""

from __future__ import annotations

import re
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import DataType, ExecBuilder, Shape, VirtualMachine
from relaxvm.errors import FunctionNotFoundError, PluginError, VMError
from relaxvm.registry.specialization import Specialization, get_specializer, set_specializer
from relaxvm.testing import isolated_plugins
from relaxvm.vm.closure import VMClosure
from relaxvm.vm.executable.executable import Executable
from relaxvm_builtins import MakeShapeCode, MatchShapeCode

MODES = ["bytecode", "compiled"]
F32 = DataType("float32")
I64 = DataType("int64")
CTX = "ErrorContext(fn=main, loc=param[0]) "


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    with isolated_plugins():
        yield


def in_mode(ex: Executable, mode: str) -> Executable:
    return Executable(
        ex.func_table, ex.constants, ex.instr_offset, ex.instr_data, ex.memory_scopes, mode
    )


def program(body: Callable[[ExecBuilder], None], mode: str) -> Executable:
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        body(ib)
    return in_mode(ib.get(), mode)


def reloaded(ex: Executable, path: Path) -> Executable:
    ex.export_library(path)
    return relaxvm.load_module(path)


def count_override(name: str) -> list[tuple[Any, ...]]:
    """Replace ``name`` by a wrapper of the original that records its calls (no specialiser)."""
    original = relaxvm.get_global_func(name)
    calls: list[tuple[Any, ...]] = []

    def counted(*args: Any) -> Any:
        calls.append(args)
        return original(*args)

    relaxvm.register_func(name, counted, override=True)
    return calls


# -- one program per specialised builtin ----------------------------------------------------
def _null_value(ib: ExecBuilder) -> None:
    ib.emit_call("vm.builtin.null_value", args=[], dst=ib.r(1))
    ib.emit_ret(ib.r(1))


def _copy(ib: ExecBuilder) -> None:
    ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))
    ib.emit_ret(ib.r(1))


def _alloc(ib: ExecBuilder) -> None:
    """The planner's form: alloc_storage(%vm, Shape([16]), 0, dtype, scope), alloc_tensor
    with a fixed shape, then alloc_tensor with a shape from a register (make_shape)."""
    args = [ib.vm_state(), Shape([16]), 0, F32, "global"]
    ib.emit_call("vm.builtin.alloc_storage", args=args, dst=ib.r(1))
    ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(1), 0, Shape([4]), F32], dst=ib.r(2))
    shape_args = [ib.void_arg(), 2, MakeShapeCode.USE_IMM, 2, MakeShapeCode.USE_IMM, 2]
    ib.emit_call("vm.builtin.make_shape", args=shape_args, dst=ib.r(3))
    ib.emit_call("vm.builtin.alloc_tensor", args=[ib.r(1), 0, ib.r(3), F32], dst=ib.r(4))
    ib.emit_call("vm.builtin.make_tuple", args=[ib.r(2), ib.r(4)], dst=ib.r(5))
    ib.emit_ret(ib.r(5))


def _check_alloc(result: Any, x: Any) -> None:
    fixed, shaped = result
    assert (fixed.shape, fixed.dtype) == (Shape([4]), F32)
    assert (shaped.shape, shaped.dtype) == (Shape([2, 2]), F32)


def _match_shape(ib: ExecBuilder) -> None:
    """A fixed-dimension match (no heap) and one that binds n into the heap, which
    make_shape then loads."""
    ib.emit_call("vm.builtin.alloc_shape_heap", args=[ib.vm_state(), 1], dst=ib.r(1))
    imm = MatchShapeCode.ASSERT_EQUAL_TO_IMM
    args = [ib.r(0), ib.void_arg(), 2, imm, 3, imm, 4, CTX]
    ib.emit_call("vm.builtin.match_shape", args=args, dst=ib.r(2))
    store = MatchShapeCode.STORE_TO_HEAP
    args = [ib.r(0), ib.r(1), 2, store, 0, imm, 4, CTX]
    ib.emit_call("vm.builtin.match_shape", args=args, dst=ib.r(3))
    load = MakeShapeCode.LOAD_SHAPE
    args = [ib.r(1), 2, load, 0, MakeShapeCode.USE_IMM, 7]
    ib.emit_call("vm.builtin.make_shape", args=args, dst=ib.r(4))
    ib.emit_ret(ib.r(4))


def _checked(name: str, *fixed: Any) -> Callable[[ExecBuilder], None]:
    def body(ib: ExecBuilder) -> None:
        ib.emit_call(f"vm.builtin.{name}", args=[ib.r(0), *fixed], dst=ib.r(1))
        ib.emit_ret(ib.r(0))

    return body


def _tensor(shape: tuple[int, ...] = (3, 4)) -> relaxvm.Tensor:
    return relaxvm.tensor(np.arange(np.prod(shape), dtype="float32").reshape(shape))


def _same(result: Any, x: Any) -> None:
    assert result is x


def _is_none(result: Any, x: Any) -> None:
    assert result is None


def _shape_3_7(result: Any, x: Any) -> None:
    assert result == Shape([3, 7]) and type(result) is Shape


def _function(*args: Any) -> None:
    return None


# name -> (builtins whose override is counted, program body, input, result check)
CASES: dict[str, tuple[tuple[str, ...], Callable[[ExecBuilder], None], Callable[[], Any], Any]] = {
    "null_value": (("null_value",), _null_value, _tensor, _is_none),
    "copy": (("copy",), _copy, _tensor, _same),
    "alloc_storage": (("alloc_storage",), _alloc, _tensor, _check_alloc),
    "alloc_tensor": (("alloc_tensor",), _alloc, _tensor, _check_alloc),
    "make_shape_imm": (("make_shape",), _alloc, _tensor, _check_alloc),
    "match_shape": (("match_shape",), _match_shape, _tensor, _shape_3_7),
    "make_shape_load": (("make_shape",), _match_shape, _tensor, _shape_3_7),
    "alloc_shape_heap": (("alloc_shape_heap",), _match_shape, _tensor, _shape_3_7),
    "check_tensor_info": (
        ("check_tensor_info",),
        _checked("check_tensor_info", 2, F32, CTX),
        _tensor,
        _same,
    ),
    "check_tensor_info_any_dtype": (
        ("check_tensor_info",),
        _checked("check_tensor_info", 2, CTX),
        _tensor,
        _same,
    ),
    "check_shape_info": (
        ("check_shape_info",),
        _checked("check_shape_info", 2, CTX),
        lambda: Shape([3, 4]),
        _same,
    ),
    "check_tuple_info": (
        ("check_tuple_info",),
        _checked("check_tuple_info", 2, CTX),
        lambda: (1, 2),
        _same,
    ),
    "check_prim_value_info": (
        ("check_prim_value_info",),
        _checked("check_prim_value_info", I64, CTX),
        lambda: 5,
        _same,
    ),
    "check_func_info": (
        ("check_func_info",),
        _checked("check_func_info", CTX),
        lambda: _function,
        _same,
    ),
}


def test_every_specialised_builtin_has_an_override_case() -> None:
    specialised = {
        name.removeprefix("vm.builtin.")
        for name in relaxvm.list_global_func_names()
        if name.startswith("vm.builtin.") and get_specializer(relaxvm.get_global_func(name))
    }
    covered = {name for names, *_ in CASES.values() for name in names}
    assert specialised <= covered, f"no override test for {sorted(specialised - covered)}"
    assert {"null_value", "copy", "alloc_tensor", "match_shape", "check_tensor_info"} <= specialised


@pytest.mark.parametrize("saved", [False, True], ids=["in-memory", "saved"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_override_is_called(case: str, mode: str, saved: bool, tmp_path: Path) -> None:
    names, body, make_input, check = CASES[case]
    built_before = program(body, mode)
    if saved:
        built_before = reloaded(built_before, tmp_path / "before.rvm")
    counters = {name: count_override(f"vm.builtin.{name}") for name in names}
    built_after = program(body, mode)
    if saved:
        built_after = reloaded(built_after, tmp_path / "after.rvm")
    for ex in (built_before, built_after):
        assert ex.exec_mode == mode
        vm = VirtualMachine(ex, relaxvm.cpu())
        for counter in counters.values():
            counter.clear()
        for _ in range(2):
            x = make_input()
            check(vm["main"](x), x)
        for name, counter in counters.items():
            assert counter, f"the override of vm.builtin.{name} was not called ({mode})"
            assert len(counter) % 2 == 0  # the same calls on both runs


@pytest.mark.parametrize("mode", MODES)
def test_overridden_checks_still_raise(mode: str) -> None:
    """The override delegates to the original, whose errors come through unchanged."""
    calls = count_override("vm.builtin.match_shape")
    tensor_calls = count_override("vm.builtin.check_tensor_info")
    vm = VirtualMachine(program(_match_shape, mode), relaxvm.cpu())
    with pytest.raises(VMError, match=r"shape\[1\] mismatch to specified constant"):
        vm["main"](_tensor((3, 5)))
    assert calls
    vm = VirtualMachine(program(_checked("check_tensor_info", 2, F32, CTX), mode), relaxvm.cpu())
    with pytest.raises(ValueError, match="expect Tensor with ndim 2 but get 1"):
        vm["main"](_tensor((4,)))
    assert tensor_calls


@pytest.mark.parametrize("mode", MODES)
def test_override_with_its_own_specializer(mode: str, tmp_path: Path) -> None:
    generic_calls: list[Any] = []
    fast_calls: list[Any] = []
    sites: list[Any] = []

    def my_copy(value: Any) -> Any:
        generic_calls.append(value)
        return value

    def fast(value: Any) -> Any:
        fast_calls.append(value)
        return ("fast", value)

    def my_copy_site(site: Any) -> Specialization | None:
        sites.append(site)
        assert site.func is my_copy and site.name == "vm.builtin.copy"
        return Specialization.call(fast, inline="{fast}({0})", fast=fast)

    set_specializer(my_copy, my_copy_site)
    ex = reloaded(program(_copy, mode), tmp_path / "copy.rvm")
    relaxvm.register_func("vm.builtin.copy", my_copy, override=True)
    vm = VirtualMachine(ex, relaxvm.cpu())
    assert len(sites) == 1 and sites[0].register_positions == (0,)
    assert vm["main"](5) == ("fast", 5)
    assert fast_calls == [5] and generic_calls == []


@pytest.mark.parametrize("mode", MODES)
def test_a_declining_specializer_leaves_the_generic_call(mode: str) -> None:
    calls: list[Any] = []
    asked: list[Any] = []

    def my_copy(value: Any) -> Any:
        calls.append(value)
        return value

    set_specializer(my_copy, lambda site: asked.append(site))  # returns None: declines
    relaxvm.register_func("vm.builtin.copy", my_copy, override=True)
    vm = VirtualMachine(program(_copy, mode), relaxvm.cpu())
    assert asked and vm["main"](3) == 3 and calls == [3]


@pytest.mark.parametrize("mode", MODES)
def test_a_raising_specializer_is_a_clear_error(mode: str) -> None:
    def my_copy(value: Any) -> Any:
        return value

    def broken(site: Any) -> Specialization:
        raise KeyError("no such thing")

    set_specializer(my_copy, broken)
    relaxvm.register_func("vm.builtin.copy", my_copy, override=True)
    with pytest.raises(PluginError, match=r"specialiser of vm\.builtin\.copy.*KeyError.*no such"):
        VirtualMachine(program(_copy, mode), relaxvm.cpu())


@pytest.mark.parametrize("mode", MODES)
def test_a_specializer_returning_junk_is_a_clear_error(mode: str) -> None:
    def my_copy(value: Any) -> Any:
        return value

    set_specializer(my_copy, lambda site: "fast please")
    relaxvm.register_func("vm.builtin.copy", my_copy, override=True)
    with pytest.raises(PluginError, match=r"vm\.builtin\.copy.*returned str"):
        VirtualMachine(program(_copy, mode), relaxvm.cpu())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "name", ["null_value", "copy", "alloc_tensor", "match_shape", "check_tensor_info"]
)
def test_a_removed_builtin_is_not_found(name: str, mode: str, tmp_path: Path) -> None:
    body = {
        "null_value": _null_value,
        "copy": _copy,
        "alloc_tensor": _alloc,
        "match_shape": _match_shape,
        "check_tensor_info": _checked("check_tensor_info", 2, F32, CTX),
    }[name]
    ex = program(body, mode)
    saved = reloaded(ex, tmp_path / "p.rvm")
    relaxvm.remove_global_func(f"vm.builtin.{name}")
    for executable in (ex, saved, program(body, mode)):
        with pytest.raises(FunctionNotFoundError, match=f"vm.builtin.{name}"):
            VirtualMachine(executable, relaxvm.cpu())


@pytest.mark.parametrize("mode", MODES)
def test_an_instrument_sees_specialised_calls(mode: str) -> None:
    seen: list[str] = []

    def instrument(func: Any, name: str, before: bool, result: Any, *args: Any) -> None:
        if before:
            seen.append(name)

    vm = VirtualMachine(program(_alloc, mode), relaxvm.cpu())
    vm.set_instrument(instrument)
    _check_alloc(vm["main"](_tensor()), None)
    assert seen.count("vm.builtin.alloc_tensor") == 2
    assert "vm.builtin.alloc_storage" in seen and "vm.builtin.make_shape" in seen
    vm.set_instrument(None)
    seen.clear()
    _check_alloc(vm["main"](_tensor()), None)
    assert seen == []


@pytest.mark.parametrize("mode", MODES)
def test_override_in_compiled_programs(mode: str, tmp_path: Path) -> None:
    """The compiler's own output (relaxvm.compile), saved and reloaded, calls overrides."""
    from relaxvm.script import ir as I
    from relaxvm.script import relax as R

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((3, 4), "float32")) -> R.Tensor((3, 4), "float32"):
            y = R.add(x, x)
            z = R.multiply(y, x)
            return z

    ex = reloaded(relaxvm.compile(Module, target="llvm", exec_mode=mode), tmp_path / "m.rvm")
    names = ("check_tensor_info", "match_shape", "alloc_storage", "alloc_tensor", "null_value")
    counters = {name: count_override(f"vm.builtin.{name}") for name in names}
    vm = VirtualMachine(ex, relaxvm.cpu())
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_allclose(vm["main"](relaxvm.tensor(x)).numpy(), (x + x) * x)
    called = {name for name, counter in counters.items() if counter}
    # Every builtin the program calls went through its override.
    calls_in_program = {
        info.name.removeprefix("vm.builtin.") for info in ex.func_table if info.name in
        {f"vm.builtin.{n}" for n in names}
    }  # fmt: skip
    assert calls_in_program and called == calls_in_program
    with pytest.raises(ValueError, match="expect Tensor with ndim 2 but get 1"):
        vm["main"](relaxvm.tensor(np.ones(4, "float32")))


def test_docs_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runnable example of docs/builtins.md (overriding a builtin with a fast path)."""
    page = Path(__file__).resolve().parents[2] / "docs" / "builtins.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert blocks
    for index, code in enumerate(blocks):
        path = tmp_path / f"builtins_md_{index}.py"
        path.write_text(code, encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        runpy.run_path(str(path), run_name="__docs__")


def test_closure_values_are_fixed_arguments() -> None:
    """Function values reach a specialiser as values (here a VMClosure), not registers."""
    seen: list[Any] = []

    def my_check(value: Any, err_ctx: Any = None) -> None:
        return None

    set_specializer(my_check, lambda site: seen.append(site.args))
    relaxvm.register_func("vm.builtin.check_func_info", my_check, override=True)
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("vm.builtin.check_func_info", args=[ib.f("helper")], dst=ib.r(1))
        ib.emit_ret(ib.r(0))
    with ib.function("helper", num_inputs=1):
        ib.emit_ret(ib.r(0))
    VirtualMachine(ib.get(), relaxvm.cpu())
    assert len(seen) == 1 and type(seen[0][0]) is VMClosure
