"""Whole-function native calls (relaxvm.vm.native_plan): the replayed path gives the results
and errors of the ordinary one, in both exec modes."""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

import relaxvm
from relaxvm import VirtualMachine
from relaxvm.errors import VMIndexError
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.vm import native_plan
from relaxvm.vm.native_plan import plans_of

MODES = ("bytecode", "compiled")


@I.ir_module
class StaticMLP:
    @R.function
    def main(
        x: R.Tensor((2, 16), "float32"),
        w1: R.Tensor((16, 32), "float32"),
        w2: R.Tensor((32, 8), "float32"),
    ) -> R.Tensor((2, 8), "float32"):
        with R.dataflow():
            h = R.nn.relu(R.matmul(x, w1))
            y = R.matmul(h, w2)
            R.output(y)
        return y


@I.ir_module
class DynMLP:
    @R.function
    def main(
        x: R.Tensor(("n", 16), "float32"),
        w: R.Tensor((16, 32), "float32"),
        b: R.Tensor((32,), "float32"),
    ) -> R.Tensor(("n", 16), "float32"):
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, w), b))
            y = R.matmul(h, R.permute_dims(w))
            R.output(y)
        return y


@I.ir_module
class Pair:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            a = R.add(x, x)
            b = R.multiply(a, x)
            R.output(a, b)
        return (a, (b, R.shape([4, 4])))


@I.ir_module
class Branch:
    @R.function
    def main(x: R.Tensor((4,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((4,), "float32"):
        if c:  # noqa: SIM108
            r = R.add(x, x)
        else:
            r = R.multiply(x, x)
        return r


@I.ir_module
class Take:
    @R.function
    def main(x: R.Tensor((8, 4), "float32"), i: R.Tensor((3,), "int64")):
        with R.dataflow():
            y = R.take(x, i, axis=0)
            z = R.add(y, y)
            R.output(z)
        return z


@I.ir_module
class Identity:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x


_CACHE: dict[tuple[str, str], relaxvm.Executable] = {}


def build(mod, mode: str) -> relaxvm.Executable:
    key = (str(id(mod)), mode)
    ex = _CACHE.get(key)
    if ex is None:
        ex = _CACHE[key] = relaxvm.compile(mod, target="llvm", exec_mode=mode)
    return ex


def pair_vms(mod, mode: str) -> tuple[VirtualMachine, VirtualMachine]:
    """The same executable with the whole-function path on and off."""
    ex = build(mod, mode)
    return (
        VirtualMachine(ex, relaxvm.cpu(), native_functions=True),
        VirtualMachine(ex, relaxvm.cpu(), native_functions=False),
    )


def rand(*shape: int, seed: int = 0, dtype: str = "float32") -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def mlp_ref(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2


@pytest.mark.parametrize("mode", MODES)
def test_static_mlp_matches_bytecode_and_numpy(mode):
    fast, slow = pair_vms(StaticMLP, mode)
    w1, w2 = rand(16, 32, seed=1), rand(32, 8, seed=2)
    for seed in range(4):
        x = rand(2, 16, seed=seed + 10)
        got = fast["main"](x, w1, w2).numpy()
        np.testing.assert_array_equal(got, slow["main"](x, w1, w2).numpy())
        np.testing.assert_allclose(got, mlp_ref(x, w1, w2), rtol=1e-5, atol=1e-5)
    plans = plans_of(fast, "main")
    assert len(plans) == 1 and plans[0].num_steps >= 2
    assert plans_of(slow, "main") == []


@pytest.mark.parametrize("mode", MODES)
def test_symbolic_batch_keeps_one_plan_per_shape(mode):
    fast, slow = pair_vms(DynMLP, mode)
    w, b = rand(16, 32, seed=1), rand(32, seed=2)
    for n in (3, 5, 3, 5, 3):
        x = rand(n, 16, seed=n)
        got = fast["main"](x, w, b)
        assert got.shape == (n, 16)
        np.testing.assert_array_equal(got.numpy(), slow["main"](x, w, b).numpy())
        ref = np.maximum(x @ w + b, 0) @ w.T
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-4)
    plans = plans_of(fast, "main")
    # Two plans; the shape functions (they only fill the shape heap for the skipped
    # builtins) are left out: matmul+add+relu, transpose, matmul.
    assert len(plans) == 2 and [p.num_steps for p in plans] == [3, 3]


def test_plans_hold_no_shape_heap():
    """The allocator recycles shape heaps by reference count; plans must not pin them, or
    every ordinary call of any function would allocate a fresh heap."""
    fast, _ = pair_vms(DynMLP, "bytecode")
    w, b = rand(16, 32), rand(32)
    for n in (1, 3, 4, 5):
        fast["main"](rand(n, 16), w, b)
    plans = plans_of(fast, "main")
    assert len(plans) == native_plan.MAX_PLANS
    kept = [t for plan in plans for t in plan._keep]
    assert kept and all(t.dtype == "float32" for t in kept)  # the heap is int64
    heaps = [h for spares in fast.allocators[-1].scratch.values() for h in spares]
    assert heaps and not any(t is h or t.storage is h.storage for t in kept for h in heaps)


@pytest.mark.parametrize("mode", MODES)
def test_tuple_return_is_rebuilt(mode):
    fast, slow = pair_vms(Pair, mode)
    for seed in range(3):
        x = rand(4, 4, seed=seed)
        a, (b, shape) = fast["main"](x)
        a2, (b2, shape2) = slow["main"](x)
        assert type(a) is type(a2) and type(shape) is type(shape2) and shape == shape2 == (4, 4)
        np.testing.assert_array_equal(a.numpy(), x + x)
        np.testing.assert_array_equal(b.numpy(), b2.numpy())
    assert len(plans_of(fast, "main")) == 1


@pytest.mark.parametrize("mode", MODES)
def test_branching_function_is_not_eligible_and_still_correct(mode):
    fast, _ = pair_vms(Branch, mode)
    x = rand(4)
    for flag in (True, False, True):
        got = fast["main"](x, np.array(flag)).numpy()
        np.testing.assert_array_equal(got, x + x if flag else x * x)
    assert "main" not in fast._native and plans_of(fast, "main") == []


def test_function_returning_its_argument_is_not_eligible():
    fast, _ = pair_vms(Identity, "bytecode")
    x = relaxvm.tensor(rand(4))
    assert fast["main"](x) is x and fast["main"](x) is x
    assert plans_of(fast, "main") == []
    assert "argument" in fast._native["main"].last_reason


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    err = info.value
    return type(err), str(err), list(getattr(err, "__notes__", []))


BAD_INPUTS = {
    "shape": lambda: (rand(3, 16), rand(16, 32), rand(32, 8)),
    "dtype": lambda: (rand(2, 16, dtype="float64"), rand(16, 32), rand(32, 8)),
    "ndim": lambda: (rand(2, 16, 1), rand(16, 32), rand(32, 8)),
    "weight": lambda: (rand(2, 16), rand(16, 31), rand(32, 8)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("what", sorted(BAD_INPUTS))
def test_shape_check_failure_raises_what_bytecode_raises(mode, what):
    fast, slow = pair_vms(StaticMLP, mode)
    good = (rand(2, 16), rand(16, 32), rand(32, 8))
    fast["main"](*good)
    assert len(plans_of(fast, "main")) == 1  # the fast path is live
    bad = BAD_INPUTS[what]()
    expected = _error(lambda: slow["main"](*bad))
    assert _error(lambda: fast["main"](*bad)) == expected
    assert _error(lambda: fast["main"](*bad)) == expected  # and again, after a recording
    np.testing.assert_array_equal(fast["main"](*good).numpy(), slow["main"](*good).numpy())


@pytest.mark.parametrize("mode", MODES)
def test_symbolic_mismatch_raises_what_bytecode_raises(mode):
    fast, slow = pair_vms(DynMLP, mode)
    w, b = rand(16, 32), rand(32)
    fast["main"](rand(3, 16), w, b)
    bad = (rand(3, 15), w, b)
    assert _error(lambda: fast["main"](*bad)) == _error(lambda: slow["main"](*bad))


@pytest.mark.parametrize("mode", MODES)
def test_outputs_are_fresh_tensors(mode):
    fast, _ = pair_vms(StaticMLP, mode)
    args = (rand(2, 16), rand(16, 32), rand(32, 8))
    first = fast["main"](*args)
    second = fast["main"](*args)
    third = fast["main"](*args)
    assert first.storage is not second.storage and second.storage is not third.storage
    expected = third.numpy().copy()
    second.host_array()[...] = 123.0  # mutating one result leaves the others alone
    np.testing.assert_array_equal(third.numpy(), expected)
    np.testing.assert_array_equal(fast["main"](*args).numpy(), expected)


@pytest.mark.parametrize("mode", MODES)
def test_kernel_error_is_the_bytecode_error(mode):
    fast, slow = pair_vms(Take, mode)
    x = np.arange(32, dtype="float32").reshape(8, 4)
    good, bad = np.array([1, 2, 3]), np.array([1, 9, 3])
    np.testing.assert_array_equal(fast["main"](x, good).numpy(), 2 * x[[1, 2, 3]])
    plan = plans_of(fast, "main")[0]
    err = _error(lambda: fast["main"](x, bad))
    assert err == _error(lambda: slow["main"](x, bad))
    assert err[0] is VMIndexError and "index 9 is out of range" in err[1]
    assert plan.failed_step == 0  # the native entry failed, the usual path raised
    np.testing.assert_array_equal(fast["main"](x, good).numpy(), 2 * x[[1, 2, 3]])


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_calls_from_four_threads(mode):
    fast, _ = pair_vms(DynMLP, mode)
    w, b = rand(16, 32, seed=1), rand(32, seed=2)
    failures: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(40):
                n = 2 + (k + i) % 3
                x = rand(n, 16, seed=100 * k + i)
                got = fast["main"](x, w, b).numpy()
                np.testing.assert_allclose(
                    got, np.maximum(x @ w + b, 0) @ w.T, rtol=1e-4, atol=1e-4
                )
        except BaseException as err:  # reported below
            failures.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert 1 <= len(plans_of(fast, "main")) <= 3


@pytest.mark.parametrize("mode", MODES)
def test_saved_and_loaded_executable(mode, tmp_path):
    path = tmp_path / "mlp.rvm"
    build(StaticMLP, mode).export_library(str(path))
    vm = VirtualMachine(relaxvm.load_module(str(path)), relaxvm.cpu())
    args = (rand(2, 16), rand(16, 32), rand(32, 8))
    for _ in range(3):
        np.testing.assert_allclose(vm["main"](*args).numpy(), mlp_ref(*args), rtol=1e-5)
    assert len(plans_of(vm, "main")) == 1


@pytest.mark.parametrize("mode", MODES)
def test_profiler_still_reports_every_instruction(mode):
    fast, _ = pair_vms(StaticMLP, mode)
    args = (rand(2, 16), rand(16, 32), rand(32, 8))
    fast["main"](*args)
    assert len(plans_of(fast, "main")) == 1
    report = fast.profile("main", *args)
    ex = fast.executable
    info = next(i for i in ex.func_table if i.name == "main")
    expected = Counter(
        ex.func_table[ins.func_idx].name
        for ins in ex.instructions[info.start_instr : info.end_instr]
        if ins.opcode is relaxvm.Opcode.CALL
    )
    assert {row.name: row.count for row in report.ops} == dict(expected)


def test_instrument_sees_every_call_while_set():
    fast, _ = pair_vms(StaticMLP, "bytecode")
    args = (rand(2, 16), rand(16, 32), rand(32, 8))
    fast["main"](*args)
    seen: list[str] = []

    def instrument(func, name, before, ret, *a):
        if before:
            seen.append(name)

    fast.set_instrument(instrument)
    fast["main"](*args)
    assert "matmul" in " ".join(seen) and len(seen) > 3
    fast.set_instrument(None)
    seen.clear()
    fast["main"](*args)
    assert seen == []


def test_switches(monkeypatch):
    ex = build(StaticMLP, "bytecode")
    args = (rand(2, 16), rand(16, 32), rand(32, 8))
    monkeypatch.setenv("RELAXVM_NATIVE_FUNCTIONS", "0")
    assert not native_plan.enabled_by_default()
    off = VirtualMachine(ex, relaxvm.cpu())
    assert off.native_functions is False
    off["main"](*args)
    assert plans_of(off, "main") == []
    monkeypatch.delenv("RELAXVM_NATIVE_FUNCTIONS")
    vm = VirtualMachine(ex, relaxvm.cpu())
    assert vm.native_functions is True
    vm.native_functions = False
    vm["main"](*args)
    assert plans_of(vm, "main") == []
    vm.native_functions = True
    vm["main"](*args)
    assert len(plans_of(vm, "main")) == 1


def test_builtins_declare_themselves():
    for name in ("vm.builtin.alloc_storage", "vm.builtin.match_shape", "vm.builtin.reshape"):
        assert native_plan.is_replay_safe(relaxvm.get_global_func(name))
    for name in ("vm.builtin.tensor_to_shape", "vm.builtin.invoke_closure", "vm.builtin.to_device"):
        assert not native_plan.is_replay_safe(relaxvm.get_global_func(name))


def test_plans_are_bounded_and_failures_spend_no_recording():
    fast, slow = pair_vms(DynMLP, "bytecode")
    w, b = rand(16, 32), rand(32)
    bad = (rand(3, 15), w, b)
    for _ in range(native_plan.MAX_TRACES + 2):
        assert _error(lambda: fast["main"](*bad)) == _error(lambda: slow["main"](*bad))
    sizes = range(1, native_plan.MAX_PLANS + 3)
    for n in sizes:
        x = rand(n, 16, seed=n)
        np.testing.assert_array_equal(fast["main"](x, w, b).numpy(), slow["main"](x, w, b).numpy())
    assert len(plans_of(fast, "main")) == native_plan.MAX_PLANS
    x = rand(len(sizes), 16)  # a signature past the bound: the ordinary path
    np.testing.assert_array_equal(fast["main"](x, w, b).numpy(), slow["main"](x, w, b).numpy())


@I.ir_module
class Square:
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), y: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            z = R.add(R.matmul(x, y), x)
            R.output(z)
        return z


def test_arguments_sharing_memory():
    fast, slow = pair_vms(Square, "bytecode")
    a = relaxvm.tensor(rand(4, 4, seed=1))
    b = relaxvm.tensor(rand(4, 4, seed=2))
    for x, y in ((a, a), (a, b), (b, a), (b, b)):
        np.testing.assert_array_equal(fast["main"](x, y).numpy(), slow["main"](x, y).numpy())
    assert len(plans_of(fast, "main")) == 1  # one signature, whatever aliases


def test_stateful_and_saved_calls_use_the_plan():
    fast, _ = pair_vms(StaticMLP, "compiled")
    args = (rand(2, 16), rand(16, 32), rand(32, 8))
    fast.set_input("main", *args)
    fast.invoke_stateful("main")
    fast.invoke_stateful("main")
    np.testing.assert_allclose(fast.get_outputs("main").numpy(), mlp_ref(*args), rtol=1e-5)
    fast.save_function("main", "saved", *args)
    np.testing.assert_allclose(fast["saved"]().numpy(), mlp_ref(*args), rtol=1e-5)
    timer = fast.time_evaluator("saved", relaxvm.cpu(), number=3)
    assert timer().mean > 0
    assert len(plans_of(fast, "main")) == 1
