"""``vm.profile``: report content, both exec modes, formats, switching off, nesting, errors;
and ``vm.module``."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from typing import ClassVar

import numpy as np
import pytest

import relaxvm
from relaxvm import ExecBuilder, VirtualMachine
from relaxvm.errors import FunctionNotFoundError, VMError, VMValueError
from relaxvm.script import ir as I
from relaxvm.script import relax as R
from relaxvm.vm.module import VMModule
from relaxvm.vm.profile_report import ProfileReport
from relaxvm.vm.profiler import Profiler

MODES = ("bytecode", "compiled")


@I.ir_module
class Layer:
    @R.function
    def main(
        x: R.Tensor(("n", 16), "float32"),
        w: R.Tensor((16, 32), "float32"),
        b: R.Tensor((32,), "float32"),
    ) -> R.Tensor(("n", 32), "float32"):
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, w), b))
            R.output(h)
        return h


def layer_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype("float32") for s in [(3, 16), (16, 32), (32,)]]


@pytest.fixture(scope="module")
def layer_vms() -> dict[str, VirtualMachine]:
    """The compiled layer in each exec mode, on the naive allocator (exact byte counts)."""
    return {
        mode: VirtualMachine(
            relaxvm.compile(Layer, target="llvm", exec_mode=mode), relaxvm.cpu(), "naive"
        )
        for mode in MODES
    }


@pytest.fixture(scope="module", autouse=True)
def test_functions():
    functions = {
        "test.prof.add": lambda a, b: a + b,
        "test.prof.neg": lambda a: -a,
        "test.prof.fail": _fail,
        "test.prof.new_tensor": lambda n: relaxvm.tensor(np.zeros(int(n), "float32")),
    }
    for name, func in functions.items():
        relaxvm.register_func(name, func, override=True)
    yield
    for name in functions:
        relaxvm.remove_global_func(name)


def _fail(x):
    raise ValueError(f"kernel failed on {x}")


def static_calls(vm: VirtualMachine, func: str) -> Counter[str]:
    """Callee name -> number of Call instructions in ``func`` (straight-line code)."""
    ex = vm.executable
    info = next(i for i in ex.func_table if i.name == func)
    return Counter(
        ex.func_table[ins.func_idx].name
        for ins in ex.instructions[info.start_instr : info.end_instr]
        if ins.opcode is relaxvm.Opcode.CALL
    )


@pytest.mark.parametrize("mode", MODES)
def test_layer_report_content(layer_vms, mode):
    vm = layer_vms[mode]
    report = vm.profile("main", *layer_inputs())
    assert isinstance(report, ProfileReport)
    assert report.function == "main" and report.exec_mode == mode
    expected = static_calls(vm, "main")
    assert {row.name: row.count for row in report.ops} == dict(expected)
    assert report.num_calls == sum(expected.values())
    assert sum(row.share for row in report.ops) == pytest.approx(1.0)
    assert sum(row.share for row in report.calls) == pytest.approx(1.0)
    assert report.total_us == pytest.approx(sum(row.total_us for row in report.ops))
    assert 0 < report.total_us <= report.wall_us
    # Sorted by self time, largest first; mean is total / count.
    totals = [row.total_us for row in report.ops]
    assert totals == sorted(totals, reverse=True)
    for row in report.ops:
        assert row.mean_us == pytest.approx(row.total_us / row.count)
        assert row.inclusive_us == pytest.approx(row.total_us)  # no nested VM calls here
        assert row.function is None and row.instruction is None
    ops = {row.name: row for row in report.ops}
    assert ops["fused_matmul_add_relu"].kind == "kernel"
    assert ops["vm.builtin.alloc_storage"].kind == "builtin"
    # The one planned storage holds the (3, 32) float32 output; the naive allocator
    # reserves exactly that. alloc_tensor carves it: no new bytes.
    assert ops["vm.builtin.alloc_storage"].bytes == 3 * 32 * 4
    assert ops["vm.builtin.alloc_tensor"].bytes == 0
    assert ops["fused_matmul_add_relu"].bytes == 0
    # Per call site: one row per Call instruction, in main, summing to the op rows.
    assert len(report.calls) == report.num_calls
    assert {row.function for row in report.calls} == {"main"}
    for name, op in ops.items():
        sites = [row for row in report.calls if row.name == name]
        assert op.sites == len(sites)
        assert op.total_us == pytest.approx(sum(row.total_us for row in sites))


def test_exec_modes_agree(layer_vms):
    reports = {mode: layer_vms[mode].profile("main", *layer_inputs(), warmup=1) for mode in MODES}

    def sites(report):
        return sorted((r.function, r.instruction, r.name, r.count) for r in report.calls)

    assert sites(reports["bytecode"]) == sites(reports["compiled"])
    for mode in MODES:
        assert {r.name: r.bytes for r in reports[mode].ops} == {
            r.name: r.bytes for r in reports["bytecode"].ops
        }


def test_profile_gives_the_same_result_and_restores_the_code(layer_vms):
    for mode in MODES:
        vm = layer_vms[mode]
        before = {n: (f.code, f.compiled, f.template) for n, f in vm._functions.items()}
        expected = vm["main"](*layer_inputs()).numpy()
        vm.profile("main", *layer_inputs())
        after = {n: (f.code, f.compiled, f.template) for n, f in vm._functions.items()}
        assert all(a is b for n in before for a, b in zip(before[n], after[n], strict=True)), (
            f"{mode}: the unprofiled code was not restored"
        )
        assert vm._profiler is None
        np.testing.assert_allclose(vm["main"](*layer_inputs()).numpy(), expected)


def test_formats_parse(layer_vms):
    report = layer_vms["bytecode"].profile("main", *layer_inputs())
    table = report.table()
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["Name", "Kind", "Count"]
    assert set(lines[1]) == {"-"}
    total = next(line for line in lines if line.startswith("Total"))
    assert total.split()[1] == str(report.num_calls) and "100.00%" in total
    # Rows in the table's order are the sorted op rows; columns are aligned.
    names = [line.split()[0] for line in lines[2 : 2 + len(report.ops)]]
    assert names == [row.name for row in report.ops]
    end = lines[0].index("Count") + len("Count")  # numbers are right-aligned under it
    for line, row in zip(lines[2:], report.ops, strict=False):
        assert line[:end].split()[-1] == str(row.count) and line[end] == " "
    per_site = report.table(aggregate=False, col_sums=False)
    assert "Function" in per_site.splitlines()[0]
    assert not any(line.startswith("Total") for line in per_site.splitlines())
    assert len(per_site.splitlines()) == 2 + len(report.calls) + 1

    in_order = report.rows(aggregate=False, sort=False)
    assert [r.instruction for r in in_order] == sorted(r.instruction for r in report.calls)
    unsorted = report.table(sort=False, aggregate=False).splitlines()
    assert [int(line.split()[3]) for line in unsorted[2 : 2 + len(in_order)]] == [
        r.instruction for r in in_order
    ]
    rows = list(csv.DictReader(io.StringIO(report.csv())))
    assert [r["name"] for r in rows] == [row.name for row in report.ops]
    assert sum(int(r["count"]) for r in rows) == report.num_calls
    assert sum(float(r["percent"]) for r in rows) == pytest.approx(100.0)
    site_rows = list(csv.DictReader(io.StringIO(report.csv(aggregate=False))))
    assert {int(r["instruction"]) for r in site_rows} == {r.instruction for r in report.calls}

    data = json.loads(report.json())
    assert data["function"] == "main" and data["num_calls"] == report.num_calls
    assert [op["name"] for op in data["ops"]] == [row.name for row in report.ops]
    assert data["total_bytes"] == report.total_bytes == 3 * 32 * 4 + _heap_bytes(report)

    trace = json.loads(report.chrome_trace())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert spans[0]["name"] == "main" and len(spans) == report.num_calls + 1
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in spans)
    assert str(report) == table and "ProfileReport 'main'" in repr(report)


def _heap_bytes(report: ProfileReport) -> int:
    return next((r.bytes for r in report.ops if r.name == "vm.builtin.alloc_shape_heap"), 0)


def test_chrome_trace_writes_a_file(layer_vms, tmp_path):
    report = layer_vms["compiled"].profile("main", *layer_inputs())
    path = tmp_path / "trace.json"
    text = report.chrome_trace(path)
    assert json.loads(path.read_text()) == json.loads(text)


# -- nested VM functions and closures --------------------------------------------------------
def nested_executable(mode: str) -> relaxvm.Executable:
    """main(x) = add(inner(x), apply(closure of adder over x, x)), inner called twice."""
    ib = ExecBuilder()
    with ib.function("inner", num_inputs=1, param_names=["x"]):
        ib.emit_call("test.prof.neg", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("test.prof.add", args=[ib.r(1), ib.r(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("adder", num_inputs=2, param_names=["a", "b"]):
        ib.emit_call("test.prof.add", args=[ib.r(0), ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("inner", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("inner", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_call("vm.builtin.make_closure", args=[ib.f("adder"), ib.r(0)], dst=ib.r(3))
        ib.emit_call(
            "vm.builtin.invoke_closure", args=[ib.vm_state(), ib.r(3), ib.r(2)], dst=ib.r(4)
        )
        ib.emit_call("test.prof.new_tensor", args=[ib.imm(8)], dst=ib.r(5))
        ib.emit_ret(ib.r(4))
    ex = ib.get()
    ex.exec_mode = mode
    return ex


@pytest.mark.parametrize("mode", MODES)
def test_nested_calls_and_closures(mode):
    vm = VirtualMachine(nested_executable(mode), relaxvm.cpu(), "naive")
    assert vm["main"](5) == 5
    report = vm.profile("main", 5)
    ops = {row.name: row for row in report.ops}
    # inner runs twice (neg + add each), the closure once (add): every executed Call counts.
    assert {name: row.count for name, row in ops.items()} == {
        "inner": 2,
        "test.prof.neg": 2,
        "test.prof.add": 3,
        "vm.builtin.make_closure": 1,
        "vm.builtin.invoke_closure": 1,
        "test.prof.new_tensor": 1,
    }
    assert ops["inner"].kind == "vm function"
    assert ops["test.prof.add"].kind == "packed func"
    # Time columns are self time: a VM function's row excludes its callees, the inclusive
    # column keeps them.
    calls = {(row.function, row.name): row for row in report.calls}
    inner_body = [r for r in report.calls if r.function == "inner"]
    assert {r.name for r in inner_body} == {"test.prof.neg", "test.prof.add"}
    assert all(r.count == 2 for r in inner_body)
    assert (
        ops["inner"].inclusive_us
        >= ops["inner"].total_us + sum(r.total_us for r in inner_body) * 0.999
    )
    assert calls[("adder", "test.prof.add")].count == 1
    assert (
        ops["vm.builtin.invoke_closure"].inclusive_us >= calls[("adder", "test.prof.add")].total_us
    )
    assert sum(row.share for row in report.ops) == pytest.approx(1.0)
    # Bytes: the kernel's new 8-float tensor; nothing else allocates.
    assert ops["test.prof.new_tensor"].bytes >= 8 * 4
    assert all(row.bytes == 0 for name, row in ops.items() if name != "test.prof.new_tensor")
    # The chrome trace nests inner's calls inside inner's span.
    trace = json.loads(report.chrome_trace())["traceEvents"]
    first_inner = next(e for e in trace if e.get("name") == "inner")
    inside = [
        e
        for e in trace
        if e.get("args", {}).get("function") == "inner"
        and first_inner["ts"] <= e["ts"] <= first_inner["ts"] + first_inner["dur"]
    ]
    assert len(inside) == 2


def test_nested_sites_agree_between_modes():
    sites = {}
    for mode in MODES:
        vm = VirtualMachine(nested_executable(mode), relaxvm.cpu())
        report = vm.profile("main", 5)
        sites[mode] = sorted((r.function, r.instruction, r.name, r.count) for r in report.calls)
    assert sites["bytecode"] == sites["compiled"]


def loop_executable(mode: str) -> relaxvm.Executable:
    """sum(0..n-1) with a backward Goto (compiled mode keeps it on the dispatch loop)."""
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["n"]):
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(1))  # i
        ib.emit_call("vm.builtin.copy", args=[ib.imm(0)], dst=ib.r(2))  # acc
        ib.emit_call("test.prof.lt", args=[ib.r(1), ib.r(0)], dst=ib.r(3))
        ib.emit_if(ib.r(3), 4)
        ib.emit_call("test.prof.add", args=[ib.r(2), ib.r(1)], dst=ib.r(2))
        ib.emit_call("test.prof.add", args=[ib.r(1), ib.imm(1)], dst=ib.r(1))
        ib.emit_goto(-4)
        ib.emit_ret(ib.r(2))
    ex = ib.get()
    ex.exec_mode = mode
    return ex


@pytest.mark.parametrize("mode", MODES)
def test_counts_follow_control_flow(mode):
    relaxvm.register_func("test.prof.lt", lambda a, b: a < b, override=True)
    try:
        vm = VirtualMachine(loop_executable(mode), relaxvm.cpu())
        report = vm.profile("main", 5)
        counts = {(row.instruction, row.name): row.count for row in report.calls}
        assert counts == {
            (0, "vm.builtin.copy"): 1,
            (1, "vm.builtin.copy"): 1,
            (2, "test.prof.lt"): 6,
            (4, "test.prof.add"): 5,
            (5, "test.prof.add"): 5,
        }
        assert {row.name: row.sites for row in report.ops}["test.prof.add"] == 2
        assert vm["main"](5) == 10
    finally:
        relaxvm.remove_global_func("test.prof.lt")


# -- switching off, errors --------------------------------------------------------------------
def failing_executable(mode: str) -> relaxvm.Executable:
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("test.prof.neg", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("test.prof.fail", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_ret(ib.r(2))
    with ib.function("ok", num_inputs=1, param_names=["x"]):
        ib.emit_call("test.prof.neg", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    ex = ib.get()
    ex.exec_mode = mode
    return ex


class RecordingProfiler(Profiler):
    """A Profiler that remembers its instances (to look at their events afterwards)."""

    made: ClassVar[list[Profiler]] = []

    def __init__(self, vm):
        super().__init__(vm)
        RecordingProfiler.made.append(self)


def code_of(vm: VirtualMachine) -> dict[str, tuple]:
    return {n: (f.code, f.compiled, f.template) for n, f in vm._functions.items()}


@pytest.mark.parametrize("mode", MODES)
def test_profiling_is_off_after_an_exception(mode, monkeypatch):
    monkeypatch.setattr("relaxvm.vm.profiler.Profiler", RecordingProfiler)
    RecordingProfiler.made.clear()
    vm = VirtualMachine(failing_executable(mode), relaxvm.cpu())
    before = code_of(vm)
    with pytest.raises(ValueError, match="kernel failed on -3") as plain:
        vm["main"](3)
    with pytest.raises(ValueError, match="kernel failed on -3") as profiled:
        vm.profile("main", 3)
    assert type(profiled.value) is type(plain.value)
    assert getattr(profiled.value, "__notes__", None) == getattr(plain.value, "__notes__", None)
    assert vm._profiler is None
    after = code_of(vm)
    assert all(x is y for n in before for x, y in zip(before[n], after[n], strict=True))
    # The profiler saw the call that raised; nothing after profile() reaches it.
    (profiler,) = RecordingProfiler.made
    recorded = len(profiler.events)
    assert recorded == 1  # neg ran; the failing call left no event
    assert vm["ok"](4) == -4
    with pytest.raises(ValueError, match="kernel failed"):
        vm["main"](3)
    assert len(profiler.events) == recorded


@pytest.mark.parametrize("mode", MODES)
def test_profiling_is_off_after_profile_returns(mode, monkeypatch):
    monkeypatch.setattr("relaxvm.vm.profiler.Profiler", RecordingProfiler)
    RecordingProfiler.made.clear()
    vm = VirtualMachine(nested_executable(mode), relaxvm.cpu())
    before = code_of(vm)
    report = vm.profile("main", 2)
    (profiler,) = RecordingProfiler.made
    assert len(profiler.events) == report.num_calls == 10
    assert vm["main"](2) == 2
    assert len(profiler.events) == report.num_calls
    after = code_of(vm)
    assert all(x is y for n in before for x, y in zip(before[n], after[n], strict=True))


@pytest.mark.parametrize("mode", MODES)
def test_instrument_is_kept(mode):
    vm = VirtualMachine(failing_executable(mode), relaxvm.cpu())
    seen: list[tuple[str, bool]] = []

    def instrument(func, symbol, before, ret, *args):
        seen.append((symbol, before))

    vm.set_instrument(instrument)
    report = vm.profile("ok", 2)
    assert seen == [("test.prof.neg", True), ("test.prof.neg", False)]
    assert [row.name for row in report.ops] == ["test.prof.neg"]
    assert vm["ok"](2) == -2 and len(seen) == 4
    vm.set_instrument(None)
    assert vm["ok"](2) == -2 and len(seen) == 4


@pytest.mark.parametrize("mode", MODES)
def test_errors_are_those_of_an_ordinary_call(mode):
    vm = VirtualMachine(failing_executable(mode), relaxvm.cpu())
    with pytest.raises(FunctionNotFoundError, match="VirtualMachine has no function 'mian'"):
        vm.profile("mian", 1)
    with pytest.raises(VMError) as plain:
        vm["ok"](1, 2)
    with pytest.raises(VMError) as profiled:
        vm.profile("ok", 1, 2)
    assert type(profiled.value) is type(plain.value)
    assert str(profiled.value) == str(plain.value)
    assert "ok" in str(plain.value)
    with pytest.raises(VMValueError, match="warmup must be an int >= 0, got -1"):
        vm.profile("ok", 1, warmup=-1)
    assert vm._profiler is None and vm["ok"](1) == -1


def test_profile_inside_a_profiled_run_is_refused():
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("test.prof.reenter", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    # The VM resolves the callee once: it profiles whichever VM ``target`` names then.
    target: dict[str, VirtualMachine] = {}
    relaxvm.register_func(
        "test.prof.reenter", lambda x: target["vm"].profile("main", x), override=True
    )
    try:
        vm = VirtualMachine(ib.get(), relaxvm.cpu())
        target["vm"] = VirtualMachine(nested_executable("bytecode"), relaxvm.cpu())
        # Profiling another VM from inside a profiled run is fine.
        report = vm.profile("main", 1)
        assert [row.name for row in report.ops] == ["test.prof.reenter"]
        assert isinstance(vm["main"](1), ProfileReport)
        target["vm"] = vm  # ... but not the VM being profiled
        with pytest.raises(VMError, match="already being profiled"):
            vm.profile("main", 1)
        assert vm._profiler is None
    finally:
        relaxvm.remove_global_func("test.prof.reenter")


def test_set_input_inputs_and_saved_functions(layer_vms):
    vm = layer_vms["bytecode"]
    vm.set_input("main", *layer_inputs())
    report = vm.profile("main")
    assert report.num_calls == sum(static_calls(vm, "main").values())
    vm.save_function("main", "main_saved", *layer_inputs())
    saved = vm.profile("main_saved")
    assert {r.name: r.count for r in saved.ops} == {r.name: r.count for r in report.ops}


# -- vm.module -------------------------------------------------------------------------------
def test_vm_module(layer_vms):
    vm = layer_vms["compiled"]
    module = vm.module
    assert isinstance(module, VMModule) and isinstance(module, relaxvm.runtime.Module)
    assert module is vm.module and module.type_key == "relax.VirtualMachine"
    np.testing.assert_allclose(
        module["main"](*layer_inputs()).numpy(), vm["main"](*layer_inputs()).numpy()
    )
    assert module.get_function("main") is vm["main"]
    assert module.get_function("nope") is None
    assert "main" in module and "nope" not in module
    assert module.list_functions() == ["main"]
    assert module["get_function_arity"]("main") == 3
    with pytest.raises(FunctionNotFoundError, match="VirtualMachine has no function 'nope'"):
        module["nope"]
    result = module.time_evaluator("main", relaxvm.cpu(), number=2)(*layer_inputs())
    assert len(result.results) == 1 and result.mean > 0
