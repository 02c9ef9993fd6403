"""StaticPlanBlockMemory: storage reuse, escapes, dtype/size rules, symbolic upper bounds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from relaxvm.errors import CompileError
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.transform import StaticPlanBlockMemory

from ._lower_helpers import (
    Seq,
    assert_same,
    builtin_alloc,
    call,
    function,
    gv,
    kernel,
    mem_storage,
    mem_tensor,
    module,
    param,
    sym,
    tensor,
)

Builder = Callable[[rx.GlobalVar], rx.Function]


def _with_kernel(build: Builder) -> tuple[rx.IRModule, rx.GlobalVar]:
    mod = module(k=kernel())
    k = gv(mod, "k")
    mod["main"] = build(k)
    return mod, k


def _plan(mod: rx.IRModule) -> rx.Function:
    return StaticPlanBlockMemory()(mod)["main"]


def _ops(func: rx.Function) -> list[str]:
    names = []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, rx.Call) and isinstance(value.op, rx.Op):
                names.append(value.op.name.removeprefix("relax."))
    return names


def _bindings(func: rx.Function) -> list[rx.Binding]:
    return [b for block in func.body.blocks for b in block.bindings]


def _calls(func: rx.Function, name: str) -> list[rx.Call]:
    """The values of the bindings that call op ``relax.<name>``, in order."""
    return [
        b.value
        for b in _bindings(func)
        if isinstance(b.value, rx.Call)
        and isinstance(b.value.op, rx.Op)
        and b.value.op.name == "relax." + name
    ]


def _chain(k: rx.GlobalVar, dtypes: tuple[str, str, str] = ("float32",) * 3) -> rx.Function:
    """x -> a0 -> a1 -> a2 (returned), each a kernel writing a fresh allocation."""
    x = param("x", [8])
    s = Seq()
    prev: rx.Expr = x
    for dtype in dtypes:
        alloc = s.let("alloc", builtin_alloc([8], dtype))
        s.void(call(k, prev, alloc))
        prev = s.let("lv", alloc)
    return function([x], [s.block()], prev)


def test_chain_reuses_the_storage_of_dead_tensors() -> None:
    mod, k = _with_kernel(_chain)
    after = _plan(mod)
    x = param("x", [8])
    s = Seq()
    storage = s.let("storage", mem_storage(32))
    a0 = s.let("alloc", mem_tensor(storage, [8]))
    s.void(call(k, x, a0))
    lv0 = s.let("lv", a0)
    storage1 = s.let("storage", mem_storage(32))
    a1 = s.let("alloc", mem_tensor(storage1, [8]))
    s.void(call(k, lv0, a1))
    s.void(op.memory.kill_tensor(a0))
    lv1 = s.let("lv", a1)
    a2 = s.let("alloc", builtin_alloc([8]))  # returned: escapes, left unplanned
    s.void(call(k, lv1, a2))
    s.void(op.memory.kill_tensor(a1))
    lv2 = s.let("lv", a2)
    s.void(op.memory.kill_storage(storage))
    s.void(op.memory.kill_storage(storage1))
    assert_same(after, function([x], [s.block()], lv2))


def test_fourth_tensor_reuses_the_first_storage() -> None:
    def build4(k: rx.GlobalVar) -> rx.Function:
        x = param("x", [8])
        s = Seq()
        prev: rx.Expr = x
        for _ in range(4):
            alloc = s.let("alloc", builtin_alloc([8]))
            s.void(call(k, prev, alloc))
            prev = s.let("lv", alloc)
        return function([x], [s.block()], prev)

    mod, _ = _with_kernel(build4)
    after = _plan(mod)
    tensors = _calls(after, "memory.alloc_tensor")
    assert len(tensors) == 3
    assert tensors[2].args[0] is tensors[0].args[0]  # a2 lands in a0's storage
    assert tensors[1].args[0] is not tensors[0].args[0]
    assert _ops(after).count("memory.alloc_storage") == 2
    assert _ops(after).count("memory.kill_storage") == 2


def test_different_dtypes_do_not_share_storage() -> None:
    def build(k: rx.GlobalVar) -> rx.Function:
        x = param("x", [8])
        s = Seq()
        prev: rx.Expr = x
        for dtype in ("float32", "float32", "int32", "int32"):
            alloc = s.let("alloc", builtin_alloc([8], dtype))
            s.void(call(k, prev, alloc))
            prev = s.let("lv", alloc)
        return function([x], [s.block()], prev)

    mod, _ = _with_kernel(build)
    after = _plan(mod)
    storages = _calls(after, "memory.alloc_storage")
    # float32 a0, a1 each their own; int32 a2 cannot take a0's float32 storage.
    assert [str(s.args[3].value) for s in storages] == ["float32", "float32", "int32"]


def test_smaller_free_storage_grows_to_the_request() -> None:
    def build(k: rx.GlobalVar) -> rx.Function:
        x = param("x", [4])
        s = Seq()
        a0 = s.let("alloc", builtin_alloc([4]))
        s.void(call(k, x, a0))
        a1 = s.let("alloc", builtin_alloc([4]))
        s.void(call(k, a0, a1))
        a2 = s.let("alloc", builtin_alloc([8]))  # 32 bytes: a0's 16-byte storage grows
        s.void(call(k, a1, a2))
        a3 = s.let("alloc", builtin_alloc([8]))
        s.void(call(k, a2, a3))
        return function([x], [s.block()], a3)

    mod, _ = _with_kernel(build)
    after = _plan(mod)
    storages = _calls(after, "memory.alloc_storage")
    assert len(storages) == 2
    assert [int(v) for v in storages[0].args[0].values] == [32]
    assert [int(v) for v in storages[1].args[0].values] == [16]


def test_much_larger_free_storage_is_not_used_for_a_tiny_tensor() -> None:
    def build(k: rx.GlobalVar) -> rx.Function:
        x = param("x", [1024])
        s = Seq()
        a0 = s.let("alloc", builtin_alloc([1024]))
        s.void(call(k, x, a0))
        a1 = s.let("alloc", builtin_alloc([1024]))
        s.void(call(k, a0, a1))
        a2 = s.let("alloc", builtin_alloc([2]))  # 8 bytes vs a free 4096: beyond 16x
        s.void(call(k, a1, a2))
        a3 = s.let("alloc", builtin_alloc([2]))
        s.void(call(k, a2, a3))
        return function([x], [s.block()], a3)

    mod, _ = _with_kernel(build)
    after = _plan(mod)
    assert _ops(after).count("memory.alloc_storage") == 3


@pytest.mark.parametrize("escape", ["tuple_return", "relax_call", "if_use", "captured"])
def test_escaping_tensors_are_not_planned(escape: str) -> None:
    mod = module(k=kernel())
    k = gv(mod, "k")
    y = param("y", [4])
    mod["helper"] = function([y], [], y)
    helper = gv(mod, "helper")

    x = param("x", [4])
    flag = rx.Var("flag", rx.PrimStructInfo("bool"))
    s = Seq()
    a0 = s.let("alloc", builtin_alloc([4]))
    s.void(call(k, x, a0))
    if escape == "tuple_return":
        body: rx.Expr = s.let("t", rx.Tuple([x, a0]))
    elif escape == "relax_call":
        body = s.let("r", rx.Call(helper, [a0]), tensor([4]))
    elif escape == "captured":
        s.let("clo", op.make_closure(helper, [a0]))
        body = x
    else:
        branch = rx.If(flag, rx.SeqExpr([], a0), rx.SeqExpr([], x), tensor([4]))
        body = s.let("r", branch, tensor([4]))
    mod["main"] = function([x, flag], [s.block()], body)
    after = _plan(mod)
    assert "memory.alloc_storage" not in _ops(after)
    assert "builtin.alloc_tensor" in _ops(after)


def test_reshape_view_keeps_its_source_alive() -> None:
    def build(k: rx.GlobalVar) -> rx.Function:
        x = param("x", [2, 4])
        s = Seq()
        a0 = s.let("alloc", builtin_alloc([2, 4]))
        s.void(call(k, x, a0))
        view = s.let("v", op.reshape(a0, (8,)))
        a1 = s.let("alloc", builtin_alloc([8]))  # a0 is alive through `v`: no reuse
        s.void(call(k, view, a1))
        a2 = s.let("alloc", builtin_alloc([8]))  # returned: not planned
        s.void(call(k, a1, a2))
        return function([x], [s.block()], a2)

    mod, _ = _with_kernel(build)
    after = _plan(mod)
    bindings = _bindings(after)
    tensors = _calls(after, "memory.alloc_tensor")
    assert len(tensors) == 2  # a2 is returned, so only a0 and a1 are planned
    assert tensors[0].args[0] is not tensors[1].args[0]
    kills = [c.args[0] for c in _calls(after, "memory.kill_tensor")]
    assert kills[0] is bindings[1].var  # a0 is killed first, after `v` is used
    kill_index = next(
        i for i, b in enumerate(bindings) if b.value is _calls(after, "memory.kill_tensor")[0]
    )
    view_use = next(
        i
        for i, b in enumerate(bindings)
        if any(a is bindings[3].var for a in getattr(b.value, "args", ()))
    )
    assert kill_index > view_use


def test_symbolic_sizes_need_an_upper_bound() -> None:
    n = sym("n")

    def build(attrs: dict[str, object] | None) -> Builder:
        def make(k: rx.GlobalVar) -> rx.Function:
            x = param("x", [n])
            s = Seq()
            a0 = s.let("alloc", builtin_alloc([n]))
            s.void(call(k, x, a0))
            a1 = s.let("alloc", builtin_alloc([n]))
            s.void(call(k, a0, a1))
            a2 = s.let("alloc", builtin_alloc([n]))
            s.void(call(k, a1, a2))
            return function([x], [s.block()], a2, attrs=attrs)

        return make

    unbounded, _ = _with_kernel(build(None))
    assert "memory.alloc_storage" not in _ops(_plan(unbounded))

    bounded, k = _with_kernel(build({"tir_var_upper_bound": {"n": 100}}))
    after = _plan(bounded)
    x = param("x", [n])
    s = Seq()
    storage = s.let("storage", mem_storage(400))
    a0 = s.let("alloc", mem_tensor(storage, [n]))
    s.void(call(k, x, a0))
    storage1 = s.let("storage", mem_storage(400))
    a1 = s.let("alloc", mem_tensor(storage1, [n]))
    s.void(call(k, a0, a1))
    s.void(op.memory.kill_tensor(a0))
    a2 = s.let("alloc", builtin_alloc([n]))
    s.void(call(k, a1, a2))
    s.void(op.memory.kill_tensor(a1))
    s.void(op.memory.kill_storage(storage))
    s.void(op.memory.kill_storage(storage1))
    expected = function([x], [s.block()], a2, attrs={"tir_var_upper_bound": {"n": 100}})
    assert_same(after, expected)


def test_allocations_inside_branches_are_left_alone() -> None:
    mod = module(k=kernel())
    k = gv(mod, "k")
    x = param("x", [4])
    flag = rx.Var("flag", rx.PrimStructInfo("bool"))
    inner = Seq()
    a = inner.let("alloc", builtin_alloc([4]))
    inner.void(call(k, x, a))
    branch = rx.If(flag, rx.SeqExpr([inner.block()], a), rx.SeqExpr([], x), tensor([4]))
    s = Seq()
    r = s.let("r", branch, tensor([4]))
    mod["main"] = function([x, flag], [s.block()], r)
    after = _plan(mod)
    assert after is mod["main"]


def test_invalid_upper_bound_attribute_is_a_compile_error() -> None:
    def build(k: rx.GlobalVar) -> rx.Function:
        func = _chain(k)
        return func.with_attr("tir_var_upper_bound", {"n": "big"})

    mod, _ = _with_kernel(build)
    with pytest.raises(CompileError, match=r"StaticPlanBlockMemory: function 'main'.*'n': 'big'"):
        _plan(mod)
