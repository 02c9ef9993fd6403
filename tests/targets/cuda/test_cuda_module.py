"""CUDA kernel modules over a hand-built PTXProgram, on the fake driver: lazy loading,
argument checks, launch extents, and the serialized format (round trip, corrupt input)."""

from __future__ import annotations

import ctypes
import struct
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import security
from relaxvm.errors import ExecutableFormatError, VMTypeError, VMValueError
from relaxvm_cuda.module import CUDAModule, arch_number, check_launch_expr
from relaxvm_cuda.program import PTXKernel, PTXProgram
from relaxvm_cuda.target import FORMAT_VERSION, MAGIC, load, parse, serialize
from relaxvm_llvm.signature import BufferParam, KernelSignature, ScalarParam

PTX = """\
.version 7.0
.target sm_80
.address_size 64

.visible .entry __rvm_add(
\t.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n
)
{
\tret;
}

.visible .entry __rvm_scale(.param .u64 x, .param .u64 k)
{
\tret;
}
"""


def _kernel(
    name: str, params: tuple[Any, ...], variables: dict[str, str], launch: Any, **extra: Any
) -> PTXKernel:
    """The PTXKernel ``name`` (symbol ``__rvm_<name>``) with ``variables`` (name: dtype)."""
    symbol = f"__rvm_{name}"
    var_names, var_dtypes = tuple(variables), tuple(variables.values())
    signature = KernelSignature(name, symbol, params, var_names, var_dtypes)
    return PTXKernel(name=name, symbol=symbol, signature=signature, launch=launch, **extra)


_SHAPE_N = (["v", 0],)  # the shape (n,)
ADD = _kernel(
    "add",
    tuple(BufferParam(x, "float32", _SHAPE_N, None, 0, written=x == "c") for x in "abc"),
    {"n": "int64"},
    # grid.x = ceil(n / 256), block.x = 256
    launch=(["floordiv", ["add", ["v", 0], 255], 256], 1, 1, 256, 1, 1),
)
SCALE = _kernel(
    "scale",
    (BufferParam("x", "int32", (4, ["v", 0]), None, 0, written=True), ScalarParam("k", "int32", 1)),
    {"m": "int64", "k": "int32"},
    launch=(["v", 0], 1, 1, 4, 1, 1),
    dynamic_shared_bytes=64 * 1024,
)
PROGRAM = PTXProgram(PTX, "sm_80", (ADD, SCALE))


def _floats(pointer: int, count: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_float * count).from_address(pointer))


def _add_impl(grid: Any, block: Any, values: list[int]) -> None:
    a, b, c, n = values
    _floats(c, n)[:] = _floats(a, n) + _floats(b, n)


@pytest.fixture
def add_driver(fake_driver: Any) -> Any:
    fake_driver.kernels["__rvm_add"] = _add_impl
    return fake_driver


def _gpu(array: Any) -> relaxvm.Tensor:
    return relaxvm.tensor(np.asarray(array), relaxvm.cuda())


def test_module_runs_a_kernel_loading_the_ptx_lazily(add_driver: Any) -> None:
    module = CUDAModule(PROGRAM)
    assert module.list_functions() == ["add", "scale"] and module.loaded_devices() == []
    assert "module_load" not in add_driver.calls  # building needed no driver
    n = 300
    a, b = np.arange(n, dtype="float32"), np.full(n, 0.5, "float32")
    ta, tb, tc = _gpu(a), _gpu(b), relaxvm.empty((n,), "float32", relaxvm.cuda())
    module["add"](ta, tb, tc)
    np.testing.assert_array_equal(tc.numpy(), a + b)
    symbol, grid, block, shared, values = add_driver.launches[-1]
    assert (symbol, grid, block, shared) == ("__rvm_add", (2, 1, 1), (256, 1, 1), 0)
    assert values == [ta.data_ptr, tb.data_ptr, tc.data_ptr, n]
    module["add"](ta, tb, tc)
    assert add_driver.calls.count("module_load") == 1 and module.loaded_devices() == [0]
    assert module.get_source() == PTX
    module.unload()
    assert add_driver.modules[0].unloaded and module.loaded_devices() == []


def test_scalar_parameters_and_large_dynamic_shared_memory(fake_driver: Any) -> None:
    module = CUDAModule(PROGRAM)
    x = relaxvm.empty((4, 3), "int32", relaxvm.cuda())
    module["scale"](x, np.int32(-7))
    _symbol, grid, block, shared, values = fake_driver.launches[-1]
    assert (grid, block, shared) == ((3, 1, 1), (4, 1, 1), 64 * 1024)
    assert values == [x.data_ptr, 3, -7]
    assert f"set_function_attribute 8={64 * 1024}" in fake_driver.calls
    with pytest.raises(
        VMValueError, match=r"scalar parameter 'k' = 4294967296 does not fit in int32"
    ):
        module["scale"](x, 1 << 32)
    with pytest.raises(VMTypeError, match=r"scalar parameter 'k' needs an int, got float"):
        module["scale"](x, 1.0)


def test_empty_launch_does_nothing(add_driver: Any) -> None:
    module = CUDAModule(PROGRAM)
    empty = relaxvm.empty((0,), "float32", relaxvm.cuda())
    module["add"](empty, empty, relaxvm.empty((0,), "float32", relaxvm.cuda()))
    assert add_driver.launches == []


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (
            lambda a, c: (a, a),
            VMTypeError,
            r"kernel 'add': expected 3 arguments \(a, b, c\), got 2",
        ),
        (
            lambda a, c: (np.ones(4, "float32"), a, c),
            VMTypeError,
            r"parameter 'a' needs a relaxvm.Tensor on a CUDA device, got ndarray; copy it to the GPU",
        ),
        (
            lambda a, c: (relaxvm.tensor(np.ones(4, "float32")), a, c),
            VMValueError,
            r"parameter 'a' is on cpu\(0\); cuda kernels need tensors on a CUDA device",
        ),
        (
            lambda a, c: (a, _gpu(np.ones(4, "float64")), c),
            VMTypeError,
            r"parameter 'b' holds float32 but the argument is float64",
        ),
        (
            lambda a, c: (a, _gpu(np.ones((2, 2), "float32")), c),
            VMValueError,
            r"parameter 'b' is 1-d but the argument has shape \(2, 2\) \(2-d\)",
        ),
        (
            lambda a, c: (a, _gpu(np.ones(5, "float32")), c),
            VMValueError,
            r"parameter 'b' dim 0 must be `n` = 4 \(bound by parameter 'a' dim 0\), but the argument has 5",
        ),
        (
            lambda a, c: (a, a, a),
            VMValueError,
            r"output parameter 'c' overlaps parameter 'a' in device memory",
        ),
    ],
    ids=["arity", "numpy", "cpu", "dtype", "ndim", "shape", "overlap"],
)
def test_arguments_are_checked_before_launch(
    add_driver: Any, args: Any, error: type, match: str
) -> None:
    module = CUDAModule(PROGRAM)
    a, c = _gpu(np.ones(4, "float32")), relaxvm.empty((4,), "float32", relaxvm.cuda())
    with pytest.raises(error, match=match):
        module["add"](*args(a, c))
    assert add_driver.launches == []


def test_launch_limits_are_checked(fake_driver: Any) -> None:
    fake_driver.function_attributes[0] = 128  # the kernel's register use allows 128 threads
    module = CUDAModule(PROGRAM)
    t = _gpu(np.ones(4, "float32"))
    with pytest.raises(VMValueError, match=r"a block of 256 threads exceeds the 128 this kernel"):
        module["add"](t, t, relaxvm.empty((4,), "float32", relaxvm.cuda()))
    fake_driver.attributes[5] = 1  # grid x limit (device limits are read once per module)
    with pytest.raises(VMValueError, match=r"launch extent blockIdx.x = 3 exceeds 1"):
        CUDAModule(PROGRAM)["scale"](relaxvm.empty((4, 3), "int32", relaxvm.cuda()), 1)


def test_architecture_newer_than_the_device_is_refused(add_driver: Any) -> None:
    module = CUDAModule(PTXProgram(PTX, "sm_90", (ADD,)))
    t = _gpu(np.ones(2, "float32"))
    with pytest.raises(
        VMValueError, match=r"compiled for sm_90, which cuda\(0\) \(compute capability 8.0\)"
    ):
        module["add"](t, t, relaxvm.empty((2,), "float32", relaxvm.cuda()))
    add_driver.capability = (9, 0)
    module["add"](t, t, relaxvm.empty((2,), "float32", relaxvm.cuda()))
    assert add_driver.launches


def test_missing_entry_is_a_driver_error(fake_driver: Any) -> None:
    from relaxvm_cuda.runtime_errors import CUDADriverError

    module = CUDAModule(PTXProgram(".version 7.0\n", "sm_80", (ADD,)))
    t = _gpu(np.ones(2, "float32"))
    with pytest.raises(CUDADriverError, match="CUDA_ERROR_NOT_FOUND"):
        module["add"](t, t, relaxvm.empty((2,), "float32", relaxvm.cuda()))


def test_arch_names_and_launch_expressions() -> None:
    assert arch_number("sm_86") == (86, "") and arch_number("sm_90a") == (90, "a")
    with pytest.raises(VMValueError, match="expected a CUDA architecture"):
        arch_number("compute_80")
    assert check_launch_expr(["max", ["v", 1], 3], 2) == ["max", ["v", 1], 3]
    for bad, match in [(["v", 2], "out of range"), (["pow", 1, 2], "malformed"), (True, "bool")]:
        with pytest.raises((ValueError, TypeError), match=match):
            check_launch_expr(bad, 2)
    deep: Any = 1
    for _ in range(100):
        deep = ["add", deep, 1]
    with pytest.raises(ValueError, match="nested too deeply"):
        check_launch_expr(deep, 0)
    with pytest.raises(ValueError, match="malformed launch expression"):
        CUDAModule(
            PTXProgram(PTX, "sm_80", (PTXKernel("k", "__rvm_add", ADD.signature, ("x",) * 6),))
        )


# ---- serialized format --------------------------------------------------------------------------
def test_serialize_round_trip(add_driver: Any) -> None:
    data = serialize(CUDAModule(PROGRAM))
    assert data[:8] == MAGIC and struct.unpack_from("<I", data, 8)[0] == FORMAT_VERSION
    module = load(data)
    assert module.program == PROGRAM
    t = _gpu(np.arange(3, dtype="float32"))
    out = relaxvm.empty((3,), "float32", relaxvm.cuda())
    module["add"](t, t, out)
    np.testing.assert_array_equal(out.numpy(), [0, 2, 4])


def _resign(body: bytes) -> bytes:
    from relaxvm_cuda.target import TAG_PURPOSE

    return body + security.sign(body, purpose=TAG_PURPOSE)


def _header_edit(data: bytes, edit: Any) -> bytes:
    import json

    size = struct.unpack_from("<I", data, 12)[0]
    header = json.loads(data[16 : 16 + size])
    edit(header)
    raw = json.dumps(header).encode()
    body = data[:12] + struct.pack("<I", len(raw)) + raw + data[16 + size : -32]
    return _resign(body)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda h: h.pop("arch"), r"header field\(s\) \['arch'\] missing"),
        (lambda h: h.update(arch="gfx90a"), r"header field 'arch' is not a CUDA architecture"),
        (lambda h: h.update(ptx_size=-1), r"'ptx_size' must be a non-negative int"),
        (
            lambda h: h["kernels"][1].update(launch=[1, 2]),
            r"field 'kernels\[1\]' is malformed: .*6 extents",
        ),
        (
            lambda h: h["kernels"][0]["launch"].__setitem__(0, ["v", 9]),
            r"'kernels\[0\]' is malformed: launch variable",
        ),
        (
            lambda h: h["kernels"][0]["signature"].pop("params"),
            r"'kernels\[0\]' is malformed: KeyError",
        ),
        (lambda h: h["kernels"][1].update(name="add"), r"kernel name 'add' repeats"),
        (lambda h: h["kernels"][0].update(symbol="__rvm_other"), r"differs from its signature's"),
        (
            lambda h: (
                h["kernels"][0].update(symbol="__rvm_x"),
                h["kernels"][0]["signature"].update(symbol="__rvm_x"),
            ),
            r"kernel 'add' \(symbol '__rvm_x'\) is not an .entry of the PTX",
        ),
    ],
    ids=[
        "no-arch",
        "bad-arch",
        "ptx-size",
        "launch-length",
        "launch-var",
        "signature",
        "dup",
        "symbol",
        "entry",
    ],
)
def test_malformed_header_fields_are_named(edit: Any, match: str) -> None:
    data = _header_edit(serialize(CUDAModule(PROGRAM)), edit)
    with pytest.raises(ExecutableFormatError, match=match):
        load(data)


@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        (lambda d: b"NOTCUDA\x00" + d[8:], r"bad magic b'NOTCUDA\\x00' at offset 0"),
        (
            lambda d: d[:8] + struct.pack("<I", 9) + d[12:],
            r"format version 9 at offset 8 is not supported",
        ),
        (
            lambda d: d[:12] + struct.pack("<I", 1 << 30) + d[16:],
            r"header length 1073741824 at offset 12 exceeds",
        ),
        (lambda d: d[:10], r"truncated: the prefix needs 16 bytes at offset 0, but only 10 remain"),
        (
            lambda d: d[:40],
            r"truncated: the header needs \d+ bytes at offset 16, but only 24 remain",
        ),
        (lambda d: d[:-40], r"truncated: the PTX needs \d+ bytes at offset \d+"),
        (lambda d: d[:-5], r"truncated: the tag needs 32 bytes at offset \d+, but only 27 remain"),
        (lambda d: d + b"x", r"1 unexpected bytes after the tag at offset \d+"),
        (
            lambda d: d[:-60] + b"#" + d[-59:],
            r"the PTX at offset \d+ does not match header field 'ptx_sha256'",
        ),
        (lambda d: d[:20] + b"\xff" + d[21:], r"the header at offset 16 is not valid JSON"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), r"the PTX is not signed with your key"),
        (lambda d: 42, r"expected bytes, got int"),
    ],
    ids=[
        "magic",
        "version",
        "header-size",
        "prefix",
        "header",
        "ptx",
        "tag",
        "trailing",
        "sha",
        "json",
        "tag-bits",
        "type",
    ],
)
def test_corrupt_bytes_name_the_offset(mangle: Any, match: str) -> None:
    data = serialize(CUDAModule(PROGRAM))
    with pytest.raises(ExecutableFormatError, match=match):
        load(mangle(data))


def test_every_truncation_and_byte_flip_is_refused() -> None:
    data = serialize(CUDAModule(PROGRAM))
    for size in range(0, len(data), 7):
        with pytest.raises(ExecutableFormatError):
            load(data[:size])
    for position in range(0, len(data), 5):
        flipped = data[:position] + bytes([data[position] ^ 0x41]) + data[position + 1 :]
        with pytest.raises(ExecutableFormatError):
            load(flipped)


def test_ptx_signed_by_another_key_needs_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    data = serialize(CUDAModule(PROGRAM))
    program, authentic = parse(data)
    assert authentic and program == PROGRAM
    monkeypatch.setenv("RELAXVM_KEY", "ab" * 32)  # someone else's key
    monkeypatch.setattr(security, "_cached", None)
    assert parse(data)[1] is False
    with pytest.raises(ExecutableFormatError, match=r"not signed with your key.*trust=True"):
        load(data)
    assert load(data, trust=True).program == PROGRAM
    with security.trusting_object_code():
        assert load(data).program == PROGRAM


# ---- index errors reported by kernels ------------------------------------------------------------
CHECKED_PTX = """\
.version 7.0
.target sm_80
.address_size 64
.visible .global .align 8 .b8 __rvm_index_error[32];

.visible .entry __rvm_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n)
{
\tst.global.u64 [__rvm_index_error], 1;
\tret;
}

.visible .entry __rvm_scale(.param .u64 x, .param .u64 k)
{
\tret;
}
"""


def test_kernels_that_check_indices_are_found() -> None:
    from relaxvm_cuda.module import kernels_checking_indices

    assert kernels_checking_indices(PTX) == set()
    assert kernels_checking_indices(CHECKED_PTX) == {"__rvm_add"}
    with_func = CHECKED_PTX + "\n.func helper()\n{\n\tld.global.u64 %rd1, [__rvm_index_error];\n}\n"
    assert kernels_checking_indices(with_func) is None


def test_index_error_recorded_by_a_kernel_is_raised_and_cleared(fake_driver: Any) -> None:
    from relaxvm.errors import VMIndexError

    failures = iter([(3 + 1, 0, 7, 5), (1 | (1 << 16), 1, -1, 4), (0, 0, 0, 0)])

    def add(grid: Any, block: Any, values: list[int]) -> None:
        slot = fake_driver.modules[-1].slot
        slot[0], slot[1], slot[2], slot[3] = next(failures)

    fake_driver.kernels["__rvm_add"] = add
    module = CUDAModule(PTXProgram(CHECKED_PTX, "sm_80", (ADD, SCALE)))
    t = _gpu(np.ones(2, "float32"))
    out = relaxvm.empty((2,), "float32", relaxvm.cuda())
    with pytest.raises(VMIndexError, match=r"index 7 is out of range for axis 0 with size 5"):
        module["add"](t, t, out)
    assert list(fake_driver.modules[-1].slot) == [0, 0, 0, 0]  # cleared for the next launch
    with pytest.raises(VMIndexError, match=rf"index {(1 << 64) - 1} is out of range for axis 1"):
        module["add"](t, t, out)  # an unsigned index prints as unsigned
    module["add"](t, t, out)  # no failure recorded: nothing raised
    module["scale"](relaxvm.empty((4, 1), "int32", relaxvm.cuda()), 2)  # does not check
    assert fake_driver.calls.count("module_global __rvm_index_error") == 1


def test_launch_blocking_waits_after_each_launch(
    add_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _gpu(np.ones(2, "float32"))
    out = relaxvm.empty((2,), "float32", relaxvm.cuda())
    CUDAModule(PROGRAM)["add"](t, t, out)
    assert "synchronize" not in add_driver.calls  # asynchronous by default
    monkeypatch.setenv("RELAXVM_CUDA_LAUNCH_BLOCKING", "1")
    CUDAModule(PROGRAM)["add"](t, t, out)
    assert add_driver.calls[-1] == "synchronize"


def test_repeated_calls_reuse_their_checks_but_not_across_shapes(add_driver: Any) -> None:
    module = CUDAModule(PROGRAM)
    a = _gpu(np.arange(4, dtype="float32"))
    out = relaxvm.empty((4,), "float32", relaxvm.cuda())
    for _ in range(3):
        module["add"](a, a, out)
    np.testing.assert_array_equal(out.numpy(), [0, 2, 4, 6])
    short = a.view((3,))  # same address, another shape: checked again
    with pytest.raises(VMValueError, match=r"parameter 'b' dim 0 must be `n` = 4"):
        module["add"](a, short, out)
    assert len(add_driver.launches) == 3


def test_a_failed_device_malloc_is_an_out_of_memory_error() -> None:
    from relaxvm_cuda import codegen_func
    from relaxvm_cuda.kernel import HEAP_FLAG, index_error
    from relaxvm_cuda.runtime_errors import CUDAOutOfMemoryError

    assert HEAP_FLAG == codegen_func.HEAP_FLAG
    error = index_error([HEAP_FLAG, 0, 1 << 20, 0])
    assert isinstance(error, CUDAOutOfMemoryError) and isinstance(error, MemoryError)
    assert error.requested == 1 << 20
    assert "scratch of 1048576 bytes does not fit the device heap" in str(error)
