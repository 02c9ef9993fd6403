"""LowerAllocTensor and KillAfterLastUse against hand-built expected IR."""

from __future__ import annotations

import pytest

from relaxvm.errors import CompileError
from relaxvm.ir import relax as rx
from relaxvm.ir.relax import op
from relaxvm.transform import KillAfterLastUse, LowerAllocTensor

from ._lower_helpers import (
    VOID,
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


# ---- LowerAllocTensor -------------------------------------------------------------------------
def test_lower_alloc_tensor_gives_each_allocation_its_own_storage() -> None:
    mod = module(k=kernel())
    k = gv(mod, "k")
    x = param("x", [2, 3])
    s = Seq()
    a = s.let("alloc", builtin_alloc([2, 3]))
    s.void(call(k, x, a))
    mod["main"] = function([x], [s.block()], a)
    after = LowerAllocTensor()(mod)["main"]

    x2 = param("x", [2, 3])
    e = Seq()
    storage = e.let("storage", mem_storage(24, "uint8"))
    a2 = e.let("alloc", mem_tensor(storage, [2, 3]))
    e.void(call(k, x2, a2))
    assert_same(after, function([x2], [e.block()], a2))


def test_lower_alloc_tensor_sizes_symbolic_shapes_with_an_expression() -> None:
    n = sym("n")
    x = param("x", [n, 4])
    s = Seq()
    a = s.let("alloc", builtin_alloc([n, 4], "float16"))
    after = LowerAllocTensor()(module(main=function([x], [s.block()], a)))["main"]

    x2 = param("x", [n, 4])
    e = Seq()
    storage = e.let("storage", mem_storage(n * 8, "uint8"))
    a2 = e.let("alloc", mem_tensor(storage, [n, 4], "float16"))
    assert_same(after, function([x2], [e.block()], a2))


def test_lower_alloc_tensor_inside_if_branches() -> None:
    x = param("x", [4])
    flag = rx.Var("flag", rx.PrimStructInfo("bool"))
    inner = Seq()
    a = inner.let("alloc", builtin_alloc([4]))
    branch = rx.If(flag, rx.SeqExpr([inner.block()], a), rx.SeqExpr([], x), tensor([4]))
    s = Seq()
    r = s.let("r", branch, tensor([4]))
    after = LowerAllocTensor()(module(main=function([x, flag], [s.block()], r)))["main"]
    true_branch = after.body.blocks[0].bindings[0].value.true_branch
    names = [b.value.op.name for b in true_branch.blocks[0].bindings]
    assert names == ["relax.memory.alloc_storage", "relax.memory.alloc_tensor"]


def test_lower_alloc_tensor_rejects_unknown_extents() -> None:
    shape = rx.Var("s", rx.ShapeStructInfo(ndim=2))
    x = param("x", [4])
    s = Seq()
    a = s.let("buf", op.builtin.alloc_tensor(shape, "float32", 0))
    mod = module(main=function([x, shape], [s.block()], a))
    with pytest.raises(CompileError, match=r"LowerAllocTensor: function 'main', binding 'buf'"):
        LowerAllocTensor()(mod)


# ---- KillAfterLastUse -------------------------------------------------------------------------
def _kill(name: str, var: rx.Var) -> rx.Call:
    return rx.Call(rx.Op.get("relax." + name), [var], None, (), VOID)


def _killed(bindings: tuple[rx.Binding, ...] | list[rx.Binding]) -> list[str]:
    """The names of the variables killed by ``bindings``, in order."""
    names = []
    for binding in bindings:
        value = binding.value
        if isinstance(value, rx.Call) and isinstance(value.op, rx.Op) and "kill" in value.op.name:
            names.append(value.args[0].name_hint)
    return names


def test_kills_follow_the_last_use_with_the_right_op() -> None:
    mod = module(k=kernel())
    k = gv(mod, "k")

    def build(with_kills: bool) -> rx.Function:
        x = param("x", [4])
        s = Seq()
        storage = s.let("storage", mem_storage(16))
        a0 = s.let("a0", mem_tensor(storage, [4]))
        if with_kills:
            s.void(_kill("memory.kill_storage", storage))
        s.void(call(k, x, a0))
        lv = s.let("lv", op.add(a0, x))
        if with_kills:
            s.void(_kill("memory.kill_tensor", a0))
        out = s.let("out", op.multiply(lv, lv))
        if with_kills:
            s.void(_kill("vm.kill_object", lv))
        return function([x], [s.block()], out)

    mod["main"] = build(False)
    after = KillAfterLastUse()(mod)["main"]
    assert_same(after, build(True))


def test_trivial_rebinding_extends_the_lifetime_and_protects_returns() -> None:
    def build(with_kills: bool, return_alias: bool) -> rx.Function:
        x = param("x", [4])
        s = Seq()
        a = s.let("a", op.add(x, x))
        b = s.let("b", a)  # b is a trivial rebinding of a
        c = s.let("c", op.multiply(x, x))
        d = s.let("d", op.add(b, c))
        if with_kills and not return_alias:
            s.void(_kill("vm.kill_object", a))
            s.void(_kill("vm.kill_object", b))
        if with_kills:
            s.void(_kill("vm.kill_object", c))
            if return_alias:
                s.void(_kill("vm.kill_object", d))  # unused, not returned
        return function([x], [s.block()], b if return_alias else d)

    mod = module(main=build(False, False))
    assert_same(KillAfterLastUse()(mod)["main"], build(True, False))
    mod = module(main=build(False, True))
    # b is returned, so neither b nor a (its original) is killed; d is never used: killed.
    after = KillAfterLastUse()(mod)["main"]
    assert_same(after, build(True, True))
    assert _killed(after.body.blocks[0].bindings) == ["c", "d"]


def test_parameters_returned_tuples_and_shapes_are_never_killed() -> None:
    x = param("x", [4])
    s = Seq()
    a = s.let("a", op.add(x, x))
    shp = s.let("shape", op.shape_of(a))
    t = s.let("t", rx.Tuple([a, x]))
    mod = module(main=function([x], [s.block()], rx.Tuple([t, shp])))
    after = KillAfterLastUse()(mod)["main"]
    # a's last use builds t (which holds a reference); t itself is returned.
    killed = _killed(after.body.blocks[0].bindings)
    assert killed == ["a"]
    assert "x" not in killed and "t" not in killed and "shape" not in killed


def test_existing_kills_are_replaced_and_the_pass_is_idempotent() -> None:
    mod = module(k=kernel())
    k = gv(mod, "k")
    x = param("x", [4])
    s = Seq()
    storage = s.let("storage", mem_storage(16))
    a0 = s.let("a0", mem_tensor(storage, [4]))
    s.void(_kill("memory.kill_tensor", a0))  # too early, from an earlier pass
    s.void(call(k, x, a0))
    out = s.let("out", op.add(a0, x))
    mod["main"] = function([x], [s.block()], out)
    once = KillAfterLastUse()(mod)
    twice = KillAfterLastUse()(once)
    assert_same(twice["main"], once["main"])
    names = [
        b.value.args[0].name_hint if "kill" in b.value.op.name else None
        for b in once["main"].body.blocks[0].bindings
        if isinstance(b.value, rx.Call) and isinstance(b.value.op, rx.Op)
    ]
    # kill_storage after a0's allocation; a0 killed after its last use in `out`.
    assert names == [None, None, "storage", None, "a0"]


def test_kills_inside_branches_and_after_dataflow_blocks() -> None:
    x = param("x", [4])
    flag = rx.Var("flag", rx.PrimStructInfo("bool"))
    inner = Seq()
    t = inner.let("t", op.add(x, x))
    u = inner.let("u", op.multiply(t, t))
    branch = rx.If(flag, rx.SeqExpr([inner.block()], u), rx.SeqExpr([], x), tensor([4]))
    outer_lv = rx.DataflowVar("lv", tensor([4]))
    outer_gv = rx.Var("gv", tensor([4]))
    dataflow = rx.DataflowBlock(
        [rx.VarBinding(outer_lv, op.add(x, x)), rx.VarBinding(outer_gv, op.add(outer_lv, x))]
    )
    s = Seq()
    r = s.let("r", branch, tensor([4]))
    res = s.let("res", op.add(r, outer_gv))
    mod = module(main=function([x, flag], [dataflow, s.block()], res))
    after = KillAfterLastUse()(mod)["main"]
    blocks = after.body.blocks
    assert blocks[0].is_dataflow and len(blocks[0].bindings) == 2
    # The kill of lv goes in a plain block right after the dataflow block.
    assert not blocks[1].is_dataflow
    assert blocks[1].bindings[0].value.args[0] is outer_lv
    true_branch = blocks[2].bindings[0].value.true_branch
    assert _killed(true_branch.blocks[0].bindings) == ["t"]  # u is the branch's result
    assert _killed(blocks[2].bindings) == ["gv", "r"]


def test_aliases_of_parameters_are_never_killed() -> None:
    # The code generator gives `y = x` the register of x: killing y would clear the parameter.
    x = param("x", [4])
    s = Seq()
    y = s.let("y", x)
    cast = rx.Var("c", tensor([4]))
    s.bindings.append(rx.MatchCast(cast, x, tensor([4])))
    z = s.let("z", op.add(y, cast))
    w = s.let("w", op.add(x, z))
    after = KillAfterLastUse()(module(main=function([x], [s.block()], w)))["main"]
    assert _killed(after.body.blocks[0].bindings) == ["z"]
