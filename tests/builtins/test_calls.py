"""vm.builtin.make_closure / invoke_closure / call_tir_dyn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import Shape, VMClosure
from relaxvm.errors import VMTypeError

Lookup = Callable[[str], Callable[..., Any]]


def recording_closure(name: str = "lifted") -> tuple[VMClosure, list[tuple[Any, ...]]]:
    calls: list[tuple[Any, ...]] = []

    def impl(ctx: Any, *args: Any) -> str:
        calls.append((ctx, *args))
        return f"ran {name}"

    return VMClosure(name, impl), calls


def test_make_closure_appends_captured_values_after_call_args(ctx: Any, builtin: Lookup) -> None:
    closure, calls = recording_closure()
    bound = builtin("make_closure")(closure, "c1", "c2")
    assert isinstance(bound, VMClosure) and bound.func_name == "lifted"
    assert builtin("invoke_closure")(ctx, bound, "a1", "a2") == "ran lifted"
    assert calls == [(ctx, "a1", "a2", "c1", "c2")]


def test_make_closure_binds_again_after_earlier_captures(ctx: Any, builtin: Lookup) -> None:
    closure, calls = recording_closure()
    make_closure = builtin("make_closure")
    twice = make_closure(make_closure(closure, "inner"), "outer")
    builtin("invoke_closure")(ctx, twice, "arg")
    # The later binding sits between the call's args and the earlier binding, as in TVM.
    assert calls == [(ctx, "arg", "outer", "inner")]


def test_make_closure_without_captures(ctx: Any, builtin: Lookup) -> None:
    closure, calls = recording_closure()
    builtin("invoke_closure")(ctx, builtin("make_closure")(closure), 1)
    assert calls == [(ctx, 1)]


def test_make_closure_rejects_plain_functions(builtin: Lookup) -> None:
    with pytest.raises(
        VMTypeError, match=r"make_closure: expect a VMClosure but get Function \(function\)"
    ):
        builtin("make_closure")(lambda x: x, 1)


def test_invoke_closure_passes_ctx_only_to_closures(ctx: Any, builtin: Lookup) -> None:
    closure, calls = recording_closure("f")
    invoke = builtin("invoke_closure")
    assert invoke(ctx, closure) == "ran f"
    assert calls == [(ctx,)]
    seen: list[tuple[Any, ...]] = []
    assert invoke(ctx, lambda *args: seen.append(args) or len(args), 1, 2, 3) == 3
    assert seen == [(1, 2, 3)]


def test_invoke_closure_rejects_non_callables(ctx: Any, builtin: Lookup) -> None:
    with pytest.raises(
        VMTypeError, match=r"invoke_closure: expect a VMClosure or a Function but get Shape"
    ):
        builtin("invoke_closure")(ctx, Shape([1]), 1)


def test_call_tir_dyn_appends_the_shape_values_after_the_tensors(builtin: Lookup) -> None:
    x = relaxvm.tensor(np.arange(4, dtype="float32"))
    out = relaxvm.tensor(np.zeros(4, "float32"))
    received: list[tuple[Any, ...]] = []

    def kernel(*args: Any) -> None:
        received.append(args)
        a, b, n, m = args
        b.host_array()[:] = a.host_array() * n + m

    assert builtin("call_tir_dyn")(kernel, x, out, Shape([3, 1])) is None
    assert len(received) == 1
    assert received[0][0] is x and received[0][1] is out
    assert received[0][2:] == (3, 1)
    np.testing.assert_array_equal(out.numpy(), np.arange(4) * 3 + 1)


def test_call_tir_dyn_with_an_empty_shape_returns_the_result(builtin: Lookup) -> None:
    assert builtin("call_tir_dyn")(lambda *a: a, "t", Shape([])) == ("t",)


def test_call_tir_dyn_errors(builtin: Lookup) -> None:
    call_tir_dyn = builtin("call_tir_dyn")
    with pytest.raises(
        VMTypeError,
        match=r"call_tir_dyn: the last argument must be a Shape of extra int arguments, got Tuple",
    ):
        call_tir_dyn(print, "t", (1, 2))
    with pytest.raises(VMTypeError, match=r"got nothing"):
        call_tir_dyn(print)
    with pytest.raises(VMTypeError, match=r"call_tir_dyn: expect a Function but get int"):
        call_tir_dyn(3, Shape([1]))
