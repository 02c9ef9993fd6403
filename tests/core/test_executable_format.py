"""Executable serialization: round trips, the documented layout, and every error path.

The tests build bodies with their own little encoder (``_Body``) written from
``docs/file_format.md``, so they check the implementation against the documentation rather
than against itself.
"""

from __future__ import annotations

import math
import os
import struct
import zlib
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import BytecodeError, ExecutableFormatError
from relaxvm.vm.executable.executable import VMFuncInfo, VMFuncKind
from relaxvm.vm.executable.format import (
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    TENSOR_MAGIC,
    load_file,
    load_from_bytes,
    save_file,
    save_to_bytes,
)

VOID = relaxvm.SpecialReg.VOID_ARG


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
def rich_executable() -> relaxvm.Executable:
    """Several functions, if/goto, every constant type and every argument kind."""
    ib = relaxvm.ExecBuilder()
    ib.add_constant(relaxvm.tensor(np.float32(2.5)))  # c[0]: 0-d tensor
    ib.add_constant(np.arange(6, dtype="float16").reshape(2, 3))  # c[1]
    ib.add_constant(np.array([[True, False], [False, True]]))  # c[2]: bool
    ib.add_constant(np.array([-128, 0, 127], dtype="int8"))  # c[3]
    ib.add_constant(relaxvm.Shape([1, 2, 3]))  # c[4]
    ib.add_constant(relaxvm.Shape([]))  # c[5]
    ib.add_constant('naïve ☃ \U0001f600 "quoted"\n')  # c[6]
    ib.add_constant(-7)  # c[7]
    ib.add_constant(1 << 60)  # c[8]: beyond the immediate range
    ib.add_constant(-(1 << 63))  # c[9]
    ib.add_constant(-0.0)  # c[10]
    ib.add_constant(float("nan"))  # c[11]
    ib.add_constant(float("-inf"))  # c[12]
    ib.add_constant(relaxvm.DataType("float32x4"))  # c[13]
    ib.add_constant(relaxvm.DataType("bool"))  # c[14]
    ib.add_constant("")  # c[15]
    with ib.function("main", num_inputs=2, param_names=["x", "cond"]):
        ib.emit_call("vm.builtin.read_if_cond", args=[ib.r(1)], dst=ib.r(10))
        ib.emit_if(ib.r(10), 3)
        ib.emit_call(
            "helper",
            args=[ib.r(0), ib.imm(-5), ib.c(8), ib.f("vm.builtin.copy"), ib.vm_state()],
            dst=ib.r(11),
        )
        ib.emit_goto(2)
        ib.emit_call("vm.builtin.copy", args=[ib.void_arg(), ib.c(1)], dst=ib.r(11))
        ib.emit_ret(ib.r(11))
    with ib.function("helper", num_inputs=5, param_names=["a", "b", "c", "d", "e"]):
        ib.emit_call("vm.builtin.null_value", args=[])
        ib.emit_ret(ib.r(0))
    return ib.get()


def constants_equal(left: list[Any], right: list[Any]) -> bool:
    """Exact equality: tensors by dtype, shape and bytes; floats by bit pattern."""
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        if type(a) is not type(b):
            return False
        if isinstance(a, relaxvm.Tensor):
            if (a.dtype, tuple(a.shape)) != (b.dtype, tuple(b.shape)):
                return False
            if a.numpy().tobytes() != b.numpy().tobytes():
                return False
        elif isinstance(a, float):
            if struct.pack("<d", a) != struct.pack("<d", b):
                return False
        elif a != b:
            return False
    return True


def wrap(body: bytes, *, version: int = FORMAT_VERSION, checksum: int | None = None) -> bytes:
    """Put the documented 24-byte header in front of ``body``."""
    crc = zlib.crc32(body) if checksum is None else checksum
    return MAGIC + struct.pack("<IIQ", version, crc, len(body)) + body


class _Body:
    """A hand encoder for bodies, written from docs/file_format.md."""

    def __init__(self) -> None:
        self.data = bytearray()

    def put(self, fmt: str, *values: Any) -> _Body:
        self.data += struct.pack("<" + fmt, *values)
        return self

    def string(self, text: str | bytes) -> _Body:
        raw = text.encode() if isinstance(text, str) else text
        return self.put("Q", len(raw)).raw(raw)

    def raw(self, raw: bytes) -> _Body:
        self.data += raw
        return self

    def func(
        self,
        kind: int,
        name: str | bytes,
        start: int,
        end: int,
        nargs: int,
        regs: int,
        params: list[str],
    ) -> _Body:
        self.put("i", kind).string(name).put("qqqq", start, end, nargs, regs)
        self.put("Q", len(params))
        for param in params:
            self.string(param)
        return self

    def code(self, offsets: list[int], words: list[int]) -> _Body:
        self.put("Q", len(offsets)).put(f"{len(offsets)}q", *offsets)
        return self.put("Q", len(words)).put(f"{len(words)}q", *words)

    def tensor(
        self,
        dims: list[int],
        dtype: tuple[int, int, int],
        payload: bytes,
        byte_size: int | None = None,
        magic: int = TENSOR_MAGIC,
        device: tuple[int, int] = (1, 0),
    ) -> _Body:
        self.put("i", 70).put("QQ", magic, 0).put("ii", *device).put("i", len(dims))
        self.put("BBH", *dtype).put(f"{len(dims)}q", *dims)
        size = len(payload) if byte_size is None else byte_size
        return self.put("q", size).raw(payload)


def one_function_body(constants: bytes = b"\0" * 8, words: list[int] | None = None) -> bytes:
    """A body with ``main(x)`` returning its input, and the given raw constant section."""
    words = [2, 0] if words is None else words
    body = _Body().put("Q", 1).func(1, "main", 0, 1, 1, 1, ["x"]).put("Q", 0).raw(constants)
    return bytes(body.code([0], words).data)


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------
def test_round_trip_rich_executable() -> None:
    ex = rich_executable()
    data = save_to_bytes(ex)
    loaded = load_from_bytes(data)
    assert loaded.save_to_bytes() == data
    assert loaded.as_text() == ex.as_text()
    assert constants_equal(loaded.constants, ex.constants)
    assert loaded.func_table == ex.func_table
    assert loaded.instr_offset == ex.instr_offset
    assert loaded.instr_data == ex.instr_data
    assert loaded.func_map == ex.func_map
    # The class methods on Executable reach the same code.
    assert relaxvm.Executable.load_from_bytes(ex.save_to_bytes()).save_to_bytes() == data


def test_float_constants_keep_their_bits() -> None:
    ex = rich_executable()
    loaded = load_from_bytes(save_to_bytes(ex))
    assert math.copysign(1.0, loaded.constants[10]) == -1.0
    assert math.isnan(loaded.constants[11])
    assert loaded.constants[12] == float("-inf")


@pytest.mark.parametrize(
    "array",
    [
        np.array(True),
        np.array([1.5, -0.0, np.inf], dtype="float16"),
        np.array([[1, -2], [3, -4]], dtype="int8"),
        np.arange(24, dtype="uint16").reshape(2, 3, 4),
        np.array([1e300, -1e-300], dtype="float64"),
        np.array([1 + 2j], dtype="complex64"),
        np.zeros((0, 3), dtype="int32"),
        np.arange(12, dtype="int64").reshape(3, 4).T,  # not C-contiguous
    ],
    ids=["bool0d", "f16", "i8", "u16_3d", "f64", "c64", "empty", "transposed"],
)
def test_tensor_constants_round_trip(array: np.ndarray) -> None:
    ib = relaxvm.ExecBuilder()
    ib.add_constant(array)
    with ib.function("main", num_inputs=1):
        ib.emit_ret(ib.r(0))
    ex = ib.get()
    loaded = load_from_bytes(save_to_bytes(ex))
    value = loaded.constants[0]
    assert isinstance(value, relaxvm.Tensor)
    assert tuple(value.shape) == array.shape
    np.testing.assert_array_equal(value.numpy(), array)
    assert value.numpy().dtype == array.dtype.newbyteorder("=")
    assert loaded.save_to_bytes() == save_to_bytes(ex)


def test_uint1_tensor_keeps_its_dtype() -> None:
    # numpy spells uint1 as bool; the loader must not turn it into a bool tensor.
    bits = relaxvm.tensor(np.array([True, False, True])).view((3,), "uint1")
    ex = relaxvm.Executable([VMFuncInfo(VMFuncKind.PACKED_FUNC, "f")], [bits], [], [])
    loaded = load_from_bytes(save_to_bytes(ex))
    assert loaded.constants[0].dtype == relaxvm.DataType("uint1")
    assert loaded.save_to_bytes() == save_to_bytes(ex)


def test_memory_scopes_and_vm_tir_round_trip() -> None:
    table = [
        VMFuncInfo(
            VMFuncKind.VM_TIR_FUNC, "main", num_args=1, register_file_size=2, param_names=["x"]
        ),
        VMFuncInfo(VMFuncKind.PACKED_FUNC, "kernel"),
    ]
    constants = [relaxvm.tensor(np.ones(4, "float32")), "s", relaxvm.tensor(np.zeros(2, "int32"))]
    ex = relaxvm.Executable(table, constants, [], [], {2: "global.texture", 0: "global"})
    data = save_to_bytes(ex)
    loaded = load_from_bytes(data)
    assert loaded.memory_scopes == {2: "global.texture", 0: "global"}
    assert list(loaded.memory_scopes) == [2, 0]  # file order is kept
    assert loaded.func_table == ex.func_table
    assert loaded.save_to_bytes() == data
    assert loaded.as_text() == "@main num_inputs=1 vm_tir_func;\n\n@kernel packed_func;\n\n"


def test_empty_executable_round_trips() -> None:
    ex = relaxvm.Executable([], [], [], [])
    data = save_to_bytes(ex)
    assert len(data) == HEADER_SIZE + 5 * 8  # five empty counts
    assert load_from_bytes(data).func_table == []


def test_hand_encoded_body_matches_save() -> None:
    """The documented layout, written independently, gives the same bytes as save_to_bytes."""
    ib = relaxvm.ExecBuilder()
    ib.add_constant(np.array([1, 2], dtype="int32"))
    ib.add_constant(relaxvm.Shape([4, 5]))
    ib.add_constant("hi")
    ib.add_constant(9)
    ib.add_constant(0.5)
    ib.add_constant(relaxvm.DataType("float16"))
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("f", args=[ib.r(0), ib.imm(-1), ib.c(1)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    ex = ib.get()
    body = _Body().put("Q", 2)
    body.func(1, "main", 0, 2, 1, 2, ["x"]).func(0, "f", 0, 0, -2, 0, [])
    body.put("Q", 0)  # memory scopes
    body.put("Q", 6)
    body.tensor([2], (0, 32, 1), struct.pack("<2i", 1, 2))
    body.put("i", 69).put("Q", 2).put("2q", 4, 5)
    body.put("i", 65).string("hi")
    body.put("i", 1).put("q", 9)
    body.put("i", 3).put("d", 0.5)
    body.put("i", 5).put("BBH", 2, 16, 1)
    imm_minus_one = (1 << 56) | ((1 << 56) - 1)
    const_one = (2 << 56) | 1
    body.code([0, 7], [1, 1, 1, 3, 0, imm_minus_one, const_one, 2, 1])
    assert save_to_bytes(ex) == wrap(bytes(body.data))


def test_worked_example_in_the_docs() -> None:
    """The byte table in docs/file_format.md ("Worked example") is what save_to_bytes writes."""
    ib = relaxvm.ExecBuilder()
    ib.add_constant(relaxvm.Shape([2, 3]))
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("f", args=[ib.r(0), ib.imm(-1), ib.c(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    data = ib.get().save_to_bytes()
    assert len(data) == 298
    assert data[:24].hex() == "524c58564d45580001000000cf4c28cf1201000000000000"
    assert data[258:282].hex() == "0000000000000000ffffffffffffff010000000000000002"


def test_header_layout() -> None:
    data = save_to_bytes(rich_executable())
    assert data[:8] == b"RLXVMEX\x00"
    version, crc, length = struct.unpack_from("<IIQ", data, 8)
    assert version == FORMAT_VERSION == 1
    assert length == len(data) - HEADER_SIZE
    assert crc == zlib.crc32(data[HEADER_SIZE:])


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------
def test_file_round_trip(tmp_path: Any) -> None:
    ex = rich_executable()
    path = tmp_path / "model.rvm"
    save_file(ex, path)
    assert path.read_bytes() == save_to_bytes(ex)
    assert load_file(path).save_to_bytes() == save_to_bytes(ex)
    assert relaxvm.Executable.load(str(path)).as_text() == ex.as_text()
    # Overwriting goes through a temporary file that does not stay behind.
    ex.save(path)
    assert os.listdir(tmp_path) == ["model.rvm"]


def test_failed_save_keeps_the_old_file(tmp_path: Any) -> None:
    path = tmp_path / "model.rvm"
    save_file(rich_executable(), path)
    before = path.read_bytes()
    bad = relaxvm.Executable([], [1 << 70], [], [])
    with pytest.raises(ExecutableFormatError, match="outside the signed 64-bit range"):
        save_file(bad, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.rvm"]


def test_load_file_errors_name_the_path(tmp_path: Any) -> None:
    path = tmp_path / "broken.rvm"
    path.write_bytes(b"garbage!" * 4)
    with pytest.raises(ExecutableFormatError, match=r"broken\.rvm.*not a relaxvm executable"):
        load_file(path)
    with pytest.raises(FileNotFoundError, match="missing.rvm"):
        load_file(tmp_path / "missing.rvm")


# ---------------------------------------------------------------------------------------------
# Header errors
# ---------------------------------------------------------------------------------------------
def test_bad_magic() -> None:
    with pytest.raises(ExecutableFormatError, match="not a relaxvm executable"):
        load_from_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(40))


def test_tvm_executable_is_recognized() -> None:
    tvm = struct.pack("<Q", 0xD225DE2F4214151E) + struct.pack("<Q", 4) + b"0.14"
    with pytest.raises(ExecutableFormatError, match="Apache TVM Relax VM executable"):
        load_from_bytes(tvm)


def test_wrong_version_names_both_versions() -> None:
    data = wrap(one_function_body(), version=7)
    with pytest.raises(ExecutableFormatError, match=r"version 7 .*reads version 1"):
        load_from_bytes(data)


def test_every_truncation_is_a_format_error() -> None:
    data = save_to_bytes(rich_executable())
    for cut in range(len(data)):
        with pytest.raises(ExecutableFormatError):
            load_from_bytes(data[:cut])


def test_truncated_body_with_matching_header() -> None:
    """Cuts that also fix the header's length and checksum reach the section parser."""
    body = save_to_bytes(rich_executable())[HEADER_SIZE:]
    messages = set()
    for cut in range(len(body)):
        with pytest.raises(ExecutableFormatError) as info:
            load_from_bytes(wrap(body[:cut]))
        messages.add(str(info.value).split(":")[0])
    assert messages <= {
        "truncated executable",
        "corrupt executable",
        "truncated or corrupt executable",
    }
    short = bytes(_Body().put("QQ", 0, 0).raw(b"\0\0\0").data)
    expected = "truncated executable: need 8 bytes for the constant count at offset 40, 3 remain"
    with pytest.raises(ExecutableFormatError, match=expected):
        load_from_bytes(wrap(short))


def test_checksum_mismatch() -> None:
    data = bytearray(save_to_bytes(rich_executable()))
    data[HEADER_SIZE + 40] ^= 0x10
    with pytest.raises(ExecutableFormatError, match="checksum mismatch"):
        load_from_bytes(bytes(data))


def test_trailing_bytes_after_body() -> None:
    data = save_to_bytes(rich_executable()) + b"\0"
    with pytest.raises(ExecutableFormatError, match="1 trailing bytes after the body"):
        load_from_bytes(data)


def test_trailing_bytes_inside_body() -> None:
    with pytest.raises(ExecutableFormatError, match="2 trailing bytes after the code section"):
        load_from_bytes(wrap(one_function_body() + b"\0\0"))


def test_load_rejects_non_bytes() -> None:
    with pytest.raises(TypeError, match="expected bytes"):
        load_from_bytes("RLXVMEX")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Section errors (checksums valid, so the parser sees the damage)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body, message",
    [
        (
            _Body().put("Q", 1 << 60).data,
            r"the function count at offset 24 is 1152921504606846976, but only 0",
        ),
        (
            _Body().put("QQ", 0, 0).put("Q", (1 << 64) - 1).data,
            "the constant count at offset 40 is 18446744073709551615",
        ),
        (
            _Body().put("QQQ", 0, 0, 0).put("Q", 1 << 61).data,
            "the instr_offset count at offset 48 is",
        ),
        (
            _Body().put("QQQQ", 0, 0, 0, 0).put("Q", 1 << 62).data,
            "the instr_data count at offset 56 is",
        ),
    ],
    ids=["functions", "constants", "offsets", "words"],
)
def test_huge_counts_are_rejected_before_allocating(body: bytes, message: str) -> None:
    with pytest.raises(ExecutableFormatError, match=message):
        load_from_bytes(wrap(bytes(body)))


def test_huge_string_length() -> None:
    body = _Body().put("Q", 1).put("i", 0).put("Q", 1 << 62).data + bytes(60)
    with pytest.raises(ExecutableFormatError, match="length of the name of function table entry 0"):
        load_from_bytes(wrap(bytes(body)))


def test_invalid_utf8_name() -> None:
    body = _Body().put("Q", 1).func(0, b"bad\xff", 0, 0, -2, 0, []).put("QQQQ", 0, 0, 0, 0)
    with pytest.raises(ExecutableFormatError, match=r"not valid UTF-8.*at offset 44"):
        load_from_bytes(wrap(bytes(body.data)))


def test_unknown_function_kind() -> None:
    body = _Body().put("Q", 1).func(9, "f", 0, 0, -2, 0, []).put("QQQQ", 0, 0, 0, 0)
    with pytest.raises(ExecutableFormatError, match=r"unknown kind 9.*at offset 32"):
        load_from_bytes(wrap(bytes(body.data)))


def test_unknown_constant_tag() -> None:
    constants = _Body().put("Q", 1).put("i", 42).put("q", 0).data
    with pytest.raises(ExecutableFormatError, match=r"unknown type tag 42 for constant c\[0\]"):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


def test_bad_tensor_byte_size() -> None:
    constants = _Body().put("Q", 1).tensor([2, 3], (2, 32, 1), bytes(20), byte_size=20).data
    with pytest.raises(
        ExecutableFormatError, match=r"data_byte_size 20, but shape \[2, 3\] of float32 needs 24"
    ):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


def test_negative_tensor_byte_size() -> None:
    constants = _Body().put("Q", 1).tensor([0], (2, 32, 1), b"", byte_size=-8).data
    with pytest.raises(ExecutableFormatError, match="data_byte_size -8"):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


def test_negative_tensor_dimension() -> None:
    constants = _Body().put("Q", 1).tensor([-1], (2, 32, 1), b"").data
    with pytest.raises(ExecutableFormatError, match="dimension 0 of constant c.0. is negative"):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


def test_absurd_tensor_shape() -> None:
    constants = _Body().put("Q", 1).tensor([0, 1 << 62], (2, 32, 1), b"").data
    with pytest.raises(ExecutableFormatError, match="too large for an array"):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


@pytest.mark.parametrize(
    "dtype, message",
    [
        ((9, 32, 1), "unknown type code 9"),
        ((2, 12, 1), "12 bits is not valid"),
        ((0, 32, 0), "lanes must be in 1..65535"),
    ],
)
def test_bad_dtype_constant(dtype: tuple[int, int, int], message: str) -> None:
    constants = _Body().put("Q", 1).put("i", 5).put("BBH", *dtype).data
    with pytest.raises(ExecutableFormatError, match=message):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


@pytest.mark.parametrize(
    "dtype, message",
    [
        ((2, 32, 4), "float32x4 tensor"),
        ((4, 16, 1), "bfloat16 tensor"),
        ((7, 8, 1), "unknown type code 7"),
    ],
)
def test_tensor_dtype_must_be_storable(dtype: tuple[int, int, int], message: str) -> None:
    constants = _Body().put("Q", 1).tensor([1], dtype, bytes(16)).data
    with pytest.raises(ExecutableFormatError, match=message):
        load_from_bytes(wrap(one_function_body(bytes(constants))))


def test_tensor_header_fields() -> None:
    bad_magic = _Body().put("Q", 1).tensor([1], (2, 32, 1), bytes(4), magic=1).data
    with pytest.raises(ExecutableFormatError, match="tensor magic 0x1"):
        load_from_bytes(wrap(one_function_body(bytes(bad_magic))))
    gpu = _Body().put("Q", 1).tensor([1], (2, 32, 1), bytes(4), device=(2, 0)).data
    with pytest.raises(ExecutableFormatError, match=r"device \(2, 0\)"):
        load_from_bytes(wrap(one_function_body(bytes(gpu))))
    too_many_dims = _Body().put("Q", 1).tensor([1] * 33, (2, 32, 1), bytes(4)).data
    with pytest.raises(ExecutableFormatError, match="ndim 33"):
        load_from_bytes(wrap(one_function_body(bytes(too_many_dims))))


def test_memory_scope_errors() -> None:
    def body(entries: list[tuple[int, str]]) -> bytes:
        out = _Body().put("Q", 0).put("Q", len(entries))
        for const_idx, scope in entries:
            out.put("q", const_idx).string(scope)
        out.put("Q", 1).put("i", 65).string("s")
        return bytes(out.put("QQ", 0, 0).data)

    assert load_from_bytes(wrap(body([(0, "global")]))).memory_scopes == {0: "global"}
    with pytest.raises(ExecutableFormatError, match=r"c\[3\], but the pool has 1 constants"):
        load_from_bytes(wrap(body([(3, "global")])))
    with pytest.raises(ExecutableFormatError, match=r"c\[0\] has two memory scopes"):
        load_from_bytes(wrap(body([(0, "a"), (0, "b")])))


def test_decodable_but_invalid_program() -> None:
    # ``ret %5`` in a function with one register: the validator's BytecodeError is chained.
    with pytest.raises(ExecutableFormatError, match="program is invalid.*register 5") as info:
        load_from_bytes(wrap(one_function_body(words=[2, 5])))
    assert isinstance(info.value.__cause__, BytecodeError)
    with pytest.raises(ExecutableFormatError, match="unknown opcode 9"):
        load_from_bytes(wrap(one_function_body(words=[9, 0])))


# ---------------------------------------------------------------------------------------------
# Save errors
# ---------------------------------------------------------------------------------------------
def test_save_rejects_unencodable_constants() -> None:
    with pytest.raises(ExecutableFormatError, match=r"c\[0\] is the int 2361183241434822606848"):
        save_to_bytes(relaxvm.Executable([], [1 << 71], [], []))
    bf16 = relaxvm.empty((2,), "bfloat16")
    with pytest.raises(ExecutableFormatError, match=r"c\[0\] is a bfloat16 tensor"):
        save_to_bytes(relaxvm.Executable([], [bf16], [], []))
    deep = relaxvm.tensor(np.zeros((1,) * 33, "float32"))
    with pytest.raises(ExecutableFormatError, match=r"c\[0\] has 33 dimensions"):
        save_to_bytes(relaxvm.Executable([], [deep], [], []))
    with pytest.raises(ExecutableFormatError, match="not a valid Unicode string"):
        save_to_bytes(relaxvm.Executable([], ["\ud800"], [], []))
