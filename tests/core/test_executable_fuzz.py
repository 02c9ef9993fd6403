"""Fuzzing the executable loader with mutated valid files.

Every mutated input must either load into a valid executable, whose renderings then work and
which saves back to exactly the same bytes (the format is canonical), or raise
``ExecutableFormatError``. Any other exception (IndexError, struct.error, MemoryError,
UnicodeDecodeError, a BytecodeError that escaped, ...) is a bug.

Mutations are applied two ways: to the whole file with the original header, which exercises
the header checks, and to the body with the length and checksum recomputed, so damage gets
past the checksum into the section parser and the program validator.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import ExecutableFormatError
from relaxvm.vm.executable.executable import VMFuncInfo, VMFuncKind
from relaxvm.vm.executable.format import FORMAT_VERSION, HEADER_SIZE, MAGIC, load_from_bytes

SEED = 20240611
#: Cases per sample and per mode: 3 samples x 2 modes x 667 = about 4000 loads (well under 1 s).
CASES_PER_SAMPLE = 667
#: One loaded executable in this many also gets its ``as_python`` executed and compared.
EXEC_EVERY = 5

# Values that tend to reach interesting branches when written over an 8-byte field.
INTERESTING_WORDS = [
    0,
    1,
    2,
    3,
    4,
    -1,
    -2,
    7,
    65,
    69,
    70,
    1 << 31,
    (1 << 54),
    (1 << 54) + 1,
    (1 << 56) | 1,
    (2 << 56) | 1,
    (3 << 56),
    (1 << 62),
    (1 << 63) - 1,
    -(1 << 63),
]


def _samples() -> list[relaxvm.Executable]:
    ib = relaxvm.ExecBuilder()
    ib.add_constant(np.arange(6, dtype="float32").reshape(2, 3))
    ib.add_constant(np.array(True))
    ib.add_constant(np.array([1, -1], dtype="int8"))
    ib.add_constant(relaxvm.Shape([3, 4]))
    ib.add_constant("héllo")
    ib.add_constant(1 << 60)
    ib.add_constant(-0.0)
    ib.add_constant(relaxvm.DataType("float16"))
    with ib.function("main", num_inputs=2, param_names=["x", "c"]):
        ib.emit_call("vm.builtin.read_if_cond", args=[ib.r(1)], dst=ib.r(2))
        ib.emit_if(ib.r(2), 3)
        ib.emit_call(
            "g", args=[ib.r(0), ib.imm(-4), ib.c(3), ib.f("h"), ib.vm_state()], dst=ib.r(3)
        )
        ib.emit_goto(2)
        ib.emit_call("vm.builtin.copy", args=[ib.void_arg(), ib.c(0)], dst=ib.r(3))
        ib.emit_ret(ib.r(3))
    with ib.function("g", num_inputs=5, param_names=list("abcde")):
        ib.emit_ret(ib.r(4))
    rich = ib.get()

    ib = relaxvm.ExecBuilder()
    with ib.function("main", num_inputs=1, param_names=["x"]):
        ib.emit_call("f", args=[ib.r(0)], dst=ib.r(1))
        ib.emit_ret(ib.r(1))
    tiny = ib.get()

    table = [
        VMFuncInfo(
            VMFuncKind.VM_TIR_FUNC, "main", num_args=1, register_file_size=2, param_names=["x"]
        ),
        VMFuncInfo(VMFuncKind.PACKED_FUNC, "__vmtir__main"),
    ]
    compiled = relaxvm.Executable(
        table, [relaxvm.tensor(np.ones(3, "float16")), "s"], [], [], {0: "global"}
    )
    return [rich, tiny, compiled]


def _with_header(body: bytes) -> bytes:
    return MAGIC + struct.pack("<IIQ", FORMAT_VERSION, zlib.crc32(body), len(body)) + body


#: Edit kinds, weighted towards size-preserving edits, which more often give loadable files.
_EDITS = ["flip"] * 3 + ["byte"] * 2 + ["word"] * 2 + ["insert", "delete", "truncate", "copy"]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    """Apply one to three random edits."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        edit = rng.choice(_EDITS)
        pos = rng.randrange(len(buf) + 1)
        if edit == "flip" and buf:  # flip one bit
            buf[min(pos, len(buf) - 1)] ^= 1 << rng.randrange(8)
        elif edit == "byte" and buf:  # set one byte
            buf[min(pos, len(buf) - 1)] = rng.randrange(256)
        elif edit == "word" and len(buf) >= 8:  # overwrite an 8-byte field
            struct.pack_into("<q", buf, min(pos, len(buf) - 8), rng.choice(INTERESTING_WORDS))
        elif edit == "insert":
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
        elif edit == "delete":
            del buf[pos : pos + rng.randint(1, 16)]
        elif edit == "truncate":
            del buf[pos:]
        else:  # copy a slice somewhere else
            start = rng.randrange(len(buf) + 1)
            buf[pos:pos] = buf[start : start + rng.randint(1, 24)]
    return bytes(buf)


def _check_one(data: bytes, canonical: bool, run_python: bool) -> bool:
    """Load ``data``; return whether it loaded. Raises on any unexpected behaviour."""
    try:
        ex = load_from_bytes(data)
    except ExecutableFormatError:
        return False
    assert isinstance(ex.as_text(), str)
    assert ex.stats().startswith("Relax VM executable statistics:\n")
    source = ex.as_python()
    if canonical:
        assert ex.save_to_bytes() == data, "a loaded file must save back to the same bytes"
    if run_python:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<as_python>", "exec"), namespace)
        assert namespace["ex"].save_to_bytes() == ex.save_to_bytes()
    return True


@pytest.mark.parametrize("recompute_checksum", [False, True], ids=["raw", "rechecksummed"])
def test_mutated_files_load_or_raise_format_error(recompute_checksum: bool) -> None:
    rng = random.Random(f"{SEED}-{recompute_checksum}")
    loaded = rejected = 0
    for sample_index, sample in enumerate(_samples()):
        original = sample.save_to_bytes()
        body = original[HEADER_SIZE:]
        for case in range(CASES_PER_SAMPLE):
            if recompute_checksum:
                data = _with_header(_mutate(rng, body))
            else:
                data = _mutate(rng, original)
            try:
                ok = _check_one(data, canonical=True, run_python=loaded % EXEC_EVERY == 0)
            except Exception as err:  # report enough to replay the case
                raise AssertionError(
                    f"sample {sample_index}, case {case}: {type(err).__name__}: {err}\n"
                    f"input: {data.hex()}"
                ) from err
            loaded += ok
            rejected += not ok
    assert rejected > 0
    if recompute_checksum:
        # Some damage (a changed constant value, a renamed function) leaves a valid file:
        # make sure the fuzzer really reaches the accept path too.
        assert loaded > 0


def test_original_checksum_rejects_body_damage() -> None:
    """With the header kept, any change to the body is caught by the checksum or length."""
    rng = random.Random(SEED)
    original = _samples()[0].save_to_bytes()
    for _ in range(200):
        pos = rng.randrange(HEADER_SIZE, len(original))
        data = bytearray(original)
        data[pos] ^= 1 << rng.randrange(8)
        with pytest.raises(ExecutableFormatError, match="checksum mismatch"):
            load_from_bytes(bytes(data))


_FIELD_WRITERS: list[Callable[[bytearray, int], None]] = [
    lambda buf, pos: struct.pack_into("<Q", buf, pos, (1 << 64) - 1),
    lambda buf, pos: struct.pack_into("<q", buf, pos, -1),
    lambda buf, pos: struct.pack_into("<i", buf, pos, -1),
]


def test_every_field_overwritten() -> None:
    """Systematically overwrite each body offset of a small file with extreme values."""
    body = bytearray(_samples()[1].save_to_bytes()[HEADER_SIZE:])
    for pos in range(len(body) - 3):
        for write in _FIELD_WRITERS:
            buf = bytearray(body)
            try:
                write(buf, pos)
            except struct.error:
                continue  # the field would run past the end
            _check_one(_with_header(bytes(buf)), canonical=True, run_python=False)


STRUCTURE_CASES = 1500
_SMALL_VALUES = [-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, (1 << 54), (1 << 54) + 1]


def _tweak_program(rng: random.Random, ex: relaxvm.Executable) -> relaxvm.Executable | None:
    """Change a few numbers of a valid program; return it if it is still valid."""
    words = list(ex.instr_data)
    table = [VMFuncInfo(**vars(info)) for info in ex.func_table]
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.8 and words:
            index = rng.randrange(len(words))
            kind = words[index] >> 56 if words[index] >= 0 else 0
            if 0 < kind <= 3 and rng.random() < 0.5:  # keep an argument word's kind
                words[index] = (kind << 56) | (rng.choice(_SMALL_VALUES) & ((1 << 56) - 1))
            else:
                words[index] = rng.choice([*_SMALL_VALUES, (rng.randrange(4) << 56) | 1])
        else:
            info = rng.choice(table)
            field = rng.choice(["register_file_size", "num_args", "kind"])
            setattr(info, field, rng.choice([0, 1, 2, 3, 4, 5, 8]))
            info.param_names = [f"p{i}" for i in range(max(info.num_args, 0))]
    try:
        return relaxvm.Executable(table, ex.constants, ex.instr_offset, words, ex.memory_scopes)
    except relaxvm.errors.BytecodeError:
        return None


def test_valid_program_variants_round_trip_everywhere() -> None:
    """Programs tweaked at the word level (registers, offsets, kinds) that stay valid must
    save, load and rebuild through ``as_python`` exactly, whichever form it picks."""
    rng = random.Random(SEED + 1)
    samples = _samples()[:2]
    built = 0
    for case in range(STRUCTURE_CASES):
        ex = _tweak_program(rng, samples[case % 2])
        if ex is None:
            continue
        built += 1
        data = ex.save_to_bytes()
        try:
            assert load_from_bytes(data).save_to_bytes() == data
            assert _check_one(data, canonical=True, run_python=True)
        except Exception as err:
            raise AssertionError(
                f"case {case}: {type(err).__name__}: {err}\n{ex.as_text()}"
            ) from err
    assert built > 100
