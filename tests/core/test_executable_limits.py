"""Bounded resources and one exception contract for untrusted executables (issue 12, 5 and 6).

A file's header and tables are claims; what a load or a VM allocates must follow from the code
and bytes actually present. Damaged files raise :class:`ExecutableFormatError` and nothing
else, compiled mode accepts what bytecode mode accepts, and ``as_python`` keeps ``exec_mode``.
"""

from __future__ import annotations

import json
import random
import struct
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

import relaxvm
from relaxvm import ExecBuilder, VirtualMachine, hookimpl
from relaxvm.errors import ExecutableFormatError, PluginError, RelaxVMError, VMTypeError
from relaxvm.registry import loader as plugins
from relaxvm.registry.extensions import TargetKind
from relaxvm.runtime import Module
from relaxvm.testing import FakeEntryPoint, installed_entry_points, isolated_plugins
from relaxvm.vm.compiled import MAX_NESTING, generate_source
from relaxvm.vm.executable.format import HEADER_SIZE, load_from_bytes, save_to_bytes

SEED = 1212
#: Peak Python allocation allowed while refusing a hostile file: far below what the claims ask.
MEMORY_BOUND = 4 << 20


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
def small_executable() -> relaxvm.Executable:
    """A bytecode-only program whose first table entry is ``main``."""
    ib = ExecBuilder()
    ib.add_constant(relaxvm.Shape([2, 3]))
    ib.add_constant("hello")
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("vm.builtin.copy", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_call("vm.builtin.copy", args=[ib.c(0)], dst=ib.r(2))
        ib.emit_ret(ib.r(1))
    return ib.get()


def rechecksummed(data: bytes | bytearray) -> bytes:
    """``data`` with the header's body length and CRC-32 recomputed (docs/file_format.md)."""
    body = bytes(data[HEADER_SIZE:])
    return bytes(data[:12]) + struct.pack("<IQ", zlib.crc32(body), len(body)) + body


def register_file_size_offset(data: bytes) -> int:
    """Byte offset of table entry 0's ``register_file_size`` (the layout of the docs)."""
    pos = HEADER_SIZE + 8  # function count
    pos += 4  # kind
    (name_length,) = struct.unpack_from("<Q", data, pos)
    pos += 8 + name_length
    return pos + 3 * 8  # start_instr, end_instr, num_args


def constant_count_offset(data: bytes) -> int:
    """Byte offset of the constant count (after the function table and memory scopes)."""
    pos = HEADER_SIZE
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    for _ in range(count):
        pos += 4
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 8 + length + 4 * 8
        (params,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        for _ in range(params):
            (length,) = struct.unpack_from("<Q", data, pos)
            pos += 8 + length
    (scopes,) = struct.unpack_from("<Q", data, pos)
    assert scopes == 0
    return pos + 8


def bounded(action: Callable[[], Any]) -> tuple[BaseException | None, int]:
    """Run ``action``; return what it raised and its peak traced allocation in bytes."""
    tracemalloc.start()
    try:
        action()
    except BaseException as err:  # handed back to the test to check
        return err, tracemalloc.get_traced_memory()[1]
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return None, peak


# ---------------------------------------------------------------------------------------------
# 5. Bounded resources
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("claim", [1 << 29, (1 << 54) - 1, (1 << 63) - 1])
def test_huge_register_file_is_refused_without_allocating(claim: int) -> None:
    data = bytearray(small_executable().save_to_bytes())
    offset = register_file_size_offset(bytes(data))
    assert struct.unpack_from("<q", data, offset)[0] == 3  # the field really is there
    struct.pack_into("<q", data, offset, claim)
    tampered = rechecksummed(data)
    assert len(tampered) < 400

    def load_and_run() -> None:
        VirtualMachine(load_from_bytes(tampered), relaxvm.cpu())

    err, peak = bounded(load_and_run)
    assert isinstance(err, ExecutableFormatError), err
    message = str(err)
    assert "register_file_size of function 'main'" in message
    assert f"at offset {offset}" in message
    assert peak < MEMORY_BOUND


def test_register_file_at_the_bound_still_loads() -> None:
    # 1 parameter + 3 instructions + the slack: a sparse numbering within it is accepted.
    from relaxvm.vm.executable.executable import REGISTER_SLACK

    data = bytearray(small_executable().save_to_bytes())
    offset = register_file_size_offset(bytes(data))
    for size, ok in ((1 + 3 + REGISTER_SLACK, True), (1 + 3 + REGISTER_SLACK + 1, False)):
        struct.pack_into("<q", data, offset, size)
        if ok:
            ex = load_from_bytes(rechecksummed(data))
            assert VirtualMachine(ex, relaxvm.cpu())["main"](7) == 7
        else:
            with pytest.raises(ExecutableFormatError, match="more than the 260"):
                load_from_bytes(rechecksummed(data))


@pytest.mark.parametrize("count", [1 << 20, 1 << 40, (1 << 64) - 1])
def test_huge_constant_pool_count_is_refused_without_allocating(count: int) -> None:
    data = bytearray(small_executable().save_to_bytes())
    offset = constant_count_offset(bytes(data))
    assert struct.unpack_from("<Q", data, offset)[0] == 2
    struct.pack_into("<Q", data, offset, count)
    tampered = rechecksummed(data)
    err, peak = bounded(lambda: load_from_bytes(tampered))
    assert isinstance(err, ExecutableFormatError), err
    assert f"the constant count at offset {offset} is {count}" in str(err)
    assert peak < MEMORY_BOUND


def test_huge_function_and_instruction_counts_are_refused() -> None:
    data = bytearray(small_executable().save_to_bytes())
    struct.pack_into("<Q", data, HEADER_SIZE, 1 << 50)  # the function count
    err, peak = bounded(lambda: load_from_bytes(rechecksummed(data)))
    assert isinstance(err, ExecutableFormatError)
    assert f"the function count at offset {HEADER_SIZE}" in str(err)
    assert peak < MEMORY_BOUND


class _JsonKernels(Module):
    pass


def _json_kind_plugin() -> object:
    """A target kind whose ``load`` parses its bytes as JSON, as signature headers are."""

    def load(data: bytes, target: Any) -> Module:
        json.loads(data.decode("utf-8"))  # RecursionError on deep nesting
        return _JsonKernels(name="jsonkernels")

    class Plugin:
        @hookimpl
        def relaxvm_register_targets(self, register: Any) -> None:
            register.register(TargetKind("jsonkind", "cpu", lambda mod, target: None, load=load))

    return Plugin()


@pytest.mark.parametrize(
    "payload, cause",
    [
        (b"[" * 200_000 + b"]" * 200_000, RecursionError),  # a deeply nested signature
        (b'{"signatures": [' * 5000, RecursionError),
        (b"\xff\xfe not json", UnicodeDecodeError),
        (b"{1: 2}", json.JSONDecodeError),
    ],
    ids=["nested-lists", "nested-objects", "not-utf8", "not-json"],
)
def test_kernel_library_errors_become_format_errors(payload: bytes, cause: type) -> None:
    builtins = [ep for ep in installed_entry_points() if ep.name == "builtins"]
    with isolated_plugins([*builtins, FakeEntryPoint("jsonkind", _json_kind_plugin())]):
        ex = small_executable()
        data = save_to_bytes(ex, [("jsonkind", "jsonkind", payload)])
        with pytest.raises(ExecutableFormatError, match="'jsonkind' kernel library at offset"):
            load_from_bytes(data)
        try:
            load_from_bytes(data)
        except ExecutableFormatError as err:
            assert isinstance(err.__cause__, cause)
        # A well-formed library loads: the wrapper changes nothing else.
        loaded = load_from_bytes(save_to_bytes(ex, [("jsonkind", "jsonkind", b"[[1]]")]))
        assert loaded.kernel_libs[0][0] == "jsonkind"


# ---------------------------------------------------------------------------------------------
# 6. Only ExecutableFormatError escapes a load, whatever the bytes
# ---------------------------------------------------------------------------------------------
def _check_load(data: bytes) -> None:
    try:
        ex = load_from_bytes(data)
    except ExecutableFormatError:
        return
    # A mutation that still decodes is a valid program: building a VM for it raises, if
    # anything, relaxvm's own errors (a callee nobody registered, say).
    try:
        VirtualMachine(ex, relaxvm.cpu())
    except RelaxVMError:
        pass


def test_random_bytes_raise_only_format_errors() -> None:
    rng = random.Random(SEED)
    header = b"RLXVMEX\x00" + struct.pack("<I", 1)
    for case in range(150):
        size = rng.choice([0, 1, 7, 8, 23, 24, 40, 100, 300])
        noise = rng.randbytes(size)
        if case % 2:  # most damage should get past the magic and the checksum
            noise = rechecksummed(header + b"\0" * 12 + noise)
        _check_load(noise)


def test_mutated_real_files_raise_only_format_errors() -> None:
    rng = random.Random(SEED + 1)
    original = small_executable().save_to_bytes()
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            where = HEADER_SIZE + rng.randrange(len(data) - HEADER_SIZE)
            choice = rng.random()
            if choice < 0.5:
                data[where] = rng.randrange(256)
            elif choice < 0.8 and where + 8 <= len(data):  # a whole word: counts, sizes
                value = rng.choice([0, 1, 2, 255, 1 << 31, 1 << 54, (1 << 63) - 1, 1 << 63])
                struct.pack_into("<Q", data, where, value % (1 << 64))
            else:
                del data[where : where + rng.randint(1, 16)]
        _check_load(rechecksummed(data))


# ---------------------------------------------------------------------------------------------
# 6. Compiled mode accepts what bytecode mode accepts
# ---------------------------------------------------------------------------------------------
def nested_ifs(depth: int) -> relaxvm.Executable:
    """``main(x)``: ``depth`` nested Ifs; level ``i`` goes on when ``x > i``, else returns ``i``."""
    relaxvm.register_func("test.limits.gt", lambda x, i: x > i, override=True)
    ib = ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        head = 2 * depth  # a Call and an If per level
        for level in range(depth):
            false_start = head + 2 + 2 * (depth - 1 - level)
            ib.emit_call("test.limits.gt", args=[ib.r(0), ib.imm(level)], dst=ib.r(2))
            ib.emit_if(ib.r(2), false_start - (2 * level + 1))
        ib.emit_call("vm.builtin.copy", args=[ib.imm(depth)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
        for level in reversed(range(depth)):  # the false branches, innermost first
            ib.emit_call("vm.builtin.copy", args=[ib.imm(level)], dst=ib.r(1))
            ib.emit_ret(ib.r(1))
    return ib.get()


@pytest.mark.parametrize("depth", [MAX_NESTING - 1, 200, 2000])
def test_deeply_nested_ifs_run_in_both_exec_modes(depth: int) -> None:
    results = {}
    for mode in ("bytecode", "compiled"):
        ex = nested_ifs(depth)
        ex.exec_mode = mode
        vm = VirtualMachine(ex, relaxvm.cpu())
        results[mode] = [vm["main"](x) for x in (0, 1, 7, depth // 2, depth - 1, depth, depth + 9)]
        # Survives a save and load too: the file format does not care about nesting.
        again = VirtualMachine(load_from_bytes(ex.save_to_bytes()), relaxvm.cpu())
        assert again["main"](depth // 2) == depth // 2
    assert results["compiled"] == results["bytecode"]
    assert results["bytecode"] == [0, 1, 7, depth // 2, depth - 1, depth, depth]


def test_nesting_within_the_limit_is_generated_beyond_it_falls_back() -> None:
    for depth, generated in ((MAX_NESTING - 1, [0]), (200, [])):
        ex = nested_ifs(depth)
        ex.exec_mode = "compiled"
        _, _, _, made = generate_source(VirtualMachine(ex, relaxvm.cpu()))
        assert made == generated


# ---------------------------------------------------------------------------------------------
# 6. as_python keeps exec_mode
# ---------------------------------------------------------------------------------------------
def _run_python(source: str) -> relaxvm.Executable:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the source is what as_python made from our own executable
    ex = namespace["ex"]
    assert isinstance(ex, relaxvm.Executable)
    return ex


@pytest.mark.parametrize("builder_path", [True, False], ids=["exec-builder", "tables"])
def test_as_python_round_trips_compiled_mode(builder_path: bool) -> None:
    ex = small_executable() if builder_path else nested_ifs(3)
    if not builder_path:
        # Memory scopes are not expressible with ExecBuilder: as_python takes the table path.
        ex = relaxvm.Executable(
            ex.func_table, [*ex.constants, "s"], ex.instr_offset, ex.instr_data, {0: "global"}
        )
    ex.exec_mode = "compiled"
    source = ex.as_python()
    assert source.startswith("# Rebuilds" if builder_path else "# ExecBuilder cannot")
    rebuilt = _run_python(source)
    assert rebuilt.exec_mode == "compiled"
    assert rebuilt.save_to_bytes() == ex.save_to_bytes()
    ex.exec_mode = "bytecode"
    assert _run_python(ex.as_python()).exec_mode == "bytecode"
    assert "exec_mode" not in ex.as_python()  # bytecode output unchanged from before


# ---------------------------------------------------------------------------------------------
# 6. A plugin raising SystemExit (or any BaseException) becomes a PluginError
# ---------------------------------------------------------------------------------------------
def _builtins_only() -> list[Any]:
    return [ep for ep in installed_entry_points() if ep.name == "builtins"]


@pytest.mark.parametrize("error", [SystemExit(3), GeneratorExit("odd")], ids=["exit", "base"])
def test_base_exception_at_plugin_import_is_a_plugin_error(error: BaseException) -> None:
    broken = FakeEntryPoint("quitter", error=error, value="quitter.mod")
    with isolated_plugins(load=False):
        with pytest.raises(PluginError) as caught:
            plugins.ensure_loaded([*_builtins_only(), broken])
        report = {info.name: info for info in plugins.plugin_report()}
    message = str(caught.value)
    assert message.startswith(
        f"relaxvm plugin 'quitter' (quitter.mod from ?) failed to import: "
        f"{type(error).__name__}: {error}"
    )
    assert message.endswith("to skip 'quitter', set RELAXVM_DISABLE_PLUGINS=quitter")
    assert caught.value.__cause__ is error
    assert report["quitter"].status == "failed"


def test_system_exit_in_a_hook_is_a_plugin_error() -> None:
    class Quitter:
        @hookimpl
        def relaxvm_register_builtins(self, registry: Any) -> None:
            raise SystemExit(3)

    with isolated_plugins(load=False), pytest.raises(PluginError) as caught:
        plugins.ensure_loaded([*_builtins_only(), FakeEntryPoint("quitter", Quitter())])
    message = str(caught.value)
    assert "relaxvm plugin 'quitter' failed in relaxvm_register_builtins: SystemExit: 3" in message
    assert message.endswith("RELAXVM_DISABLE_PLUGINS=quitter")
    assert isinstance(caught.value.__cause__, SystemExit)


def test_keyboard_interrupt_in_a_plugin_still_interrupts() -> None:
    broken = FakeEntryPoint("stopper", error=KeyboardInterrupt(), value="stopper.mod")
    with isolated_plugins(load=False), pytest.raises(KeyboardInterrupt):
        plugins.ensure_loaded([*_builtins_only(), broken])


# ---------------------------------------------------------------------------------------------
# 6. Running a loaded program raises relaxvm errors for what the file caused
# ---------------------------------------------------------------------------------------------
def _calling(callee: str, mode: str) -> VirtualMachine:
    """A loaded program calling ``callee(c[0], x, 3)``: c[0] is a string, not a tensor."""
    ib = ExecBuilder()
    ib.add_constant("not a tensor")
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call(callee, args=[ib.c(0), ib.r(0), ib.imm(3)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    ex = ib.get()
    ex.exec_mode = mode
    return VirtualMachine(load_from_bytes(ex.save_to_bytes()), relaxvm.cpu())


@pytest.mark.parametrize("mode", ["bytecode", "compiled"])
def test_builtin_misuse_by_a_program_is_a_relaxvm_error(mode: str) -> None:
    vm = _calling("vm.builtin.shape_of", mode)
    with pytest.raises(VMTypeError) as caught:
        vm["main"]("s")
    assert str(caught.value).startswith(
        "vm.builtin.shape_of (registered by plugin 'builtins') cannot handle what the program"
    )
    assert type(caught.value.__cause__) is TypeError
    assert getattr(caught.value, "__notes__", None) == [
        "  in VM function 'main', instruction 0: call vm.builtin.shape_of"
    ]


@pytest.mark.parametrize("mode", ["bytecode", "compiled"])
def test_user_function_errors_keep_their_type(mode: str) -> None:
    def picky(*args: Any) -> None:
        raise TypeError("picky wants tensors")

    relaxvm.register_func("test.limits.picky", picky, override=True)
    vm = _calling("test.limits.picky", mode)
    with pytest.raises(TypeError, match="picky wants tensors") as caught:
        vm["main"]("s")
    assert type(caught.value) is TypeError
