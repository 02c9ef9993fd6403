"""export_library("x.so"): a real ELF shared library that load_module reads back."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.relax import IRModule
from relaxvm.script import relax as R
from relaxvm.vm.executable.elf_payload import SECTION, read_payload
from relaxvm.vm.executable.format import MAGIC as EXEC_MAGIC
from relaxvm.vm.executable.format import save_to_bytes
from relaxvm_llvm import serialize, shared_lib

needs_linker = pytest.mark.skipif(
    shared_lib.find_linker() is None, reason="no system linker (cc/gcc/clang/ld) installed"
)


def _module() -> IRModule:
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((8, 4), "float32")):  # type: ignore
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y

    return IRModule({"main": main})


@pytest.fixture(scope="module")
def executable() -> relaxvm.Executable:
    return relaxvm.compile(_module(), target="llvm")


def _check(ex: relaxvm.Executable) -> None:
    vm = relaxvm.VirtualMachine(ex, relaxvm.cpu())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8)).astype("float32")
    w = rng.standard_normal((8, 4)).astype("float32")
    out = vm["main"](relaxvm.tensor(x), relaxvm.tensor(w)).numpy()
    np.testing.assert_allclose(out, np.maximum(x @ w, 0), rtol=1e-5, atol=1e-5)


def _elf_info(data: bytes) -> tuple[int, list[str]]:
    """ELF type and section names (independent of the loader's own parser)."""
    e_type = struct.unpack_from("<H", data, 16)[0]
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
    strtab = headers[shstrndx]
    names = data[strtab[4] : strtab[4] + strtab[5]]
    return e_type, [names[h[0] : names.index(b"\0", h[0])].decode() for h in headers]


@needs_linker
def test_so_round_trip(executable: relaxvm.Executable, tmp_path: Path) -> None:
    path = tmp_path / "model.so"
    executable.export_library(str(path))
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF"
    e_type, sections = _elf_info(data)
    assert e_type == 3  # ET_DYN: a shared object
    assert SECTION in sections and ".text" in sections
    payload = read_payload(data)
    assert payload[: len(EXEC_MAGIC)] == EXEC_MAGIC
    # The kernels are linked in as code: their object bytes' symbols are in the library.
    symbols = [s.symbol for s in executable.kernel_libs[0][2].compiled.signatures]
    assert symbols and all(s.encode() in data for s in symbols)
    _check(relaxvm.load_module(str(path)))
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("linker", ["ld", "gcc"])
def test_so_with_each_linker_kind(
    executable: relaxvm.Executable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    linker: str,
) -> None:
    # A bare ld gets an LLVM-emitted payload object, a compiler driver an `.incbin` one.
    if shutil.which(linker) is None:
        pytest.skip(f"{linker} is not installed")
    monkeypatch.setenv("RELAXVM_LINKER", linker)
    path = tmp_path / f"model_{linker}.so"
    executable.export_library(str(path))
    data = path.read_bytes()
    assert _elf_info(data)[0] == 3
    rvm_path = tmp_path / "model.rvm"
    executable.export_library(str(rvm_path))
    assert read_payload(data) == rvm_path.read_bytes()
    _check(relaxvm.load_module(str(path)))


@needs_linker
def test_so_and_rvm_hold_the_same_executable(
    executable: relaxvm.Executable, tmp_path: Path
) -> None:
    executable.export_library(str(tmp_path / "model.so"))
    executable.export_library(str(tmp_path / "model.rvm"))
    rvm = (tmp_path / "model.rvm").read_bytes()
    assert rvm[:4] != b"\x7fELF"  # .rvm stays the plain single-file format
    assert read_payload((tmp_path / "model.so").read_bytes()) == rvm


def test_no_linker_gives_a_clear_error(
    executable: relaxvm.Executable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("RELAXVM_LINKER", raising=False)
    with pytest.raises(shared_lib.LinkerError, match=r"needs a system linker.*'\.rvm'"):
        executable.export_library(str(tmp_path / "model.so"))
    assert not (tmp_path / "model.so").exists()


def test_failing_linker_is_reported(
    executable: relaxvm.Executable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\necho 'fake linker says no' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("RELAXVM_LINKER", str(fake))
    with pytest.raises(shared_lib.LinkerError, match="status 3.*fake linker says no"):
        executable.export_library(str(tmp_path / "model.so"))
    assert not (tmp_path / "model.so").exists()
    assert not list(tmp_path.glob("*.tmp"))


@needs_linker
def test_damaged_so_is_refused(executable: relaxvm.Executable, tmp_path: Path) -> None:
    path = tmp_path / "model.so"
    executable.export_library(str(path))
    data = path.read_bytes()
    start = data.index(b"RVMSOEX\x00")
    # Truncate the embedded executable's declared length region.
    bad = tmp_path / "bad.so"
    bad.write_bytes(
        data[:start]
        + data[start : start + 8]
        + (1 << 40).to_bytes(8, "little")
        + data[start + 16 :]
    )
    with pytest.raises(ExecutableFormatError, match="truncated"):
        relaxvm.load_module(str(bad))
    # Flip a byte inside the embedded kernel object code: the checksum refuses it.
    kernel_at = data.index(serialize.MAGIC, start)
    at = kernel_at + 400
    flipped = bytearray(data)
    flipped[at] ^= 0xFF
    bad.write_bytes(bytes(flipped))
    with pytest.raises(ExecutableFormatError):
        relaxvm.load_module(str(bad))


def test_elf_without_section_is_refused(tmp_path: Path) -> None:
    libm = next(
        (
            p
            for p in (Path("/lib/x86_64-linux-gnu/libm.so.6"), Path("/usr/lib/libm.so.6"))
            if p.exists()
        ),
        None,
    )
    if libm is None:
        pytest.skip("no system libm.so.6 to use as a foreign ELF file")
    foreign = tmp_path / "foreign.so"
    foreign.write_bytes(libm.read_bytes())
    with pytest.raises(ExecutableFormatError, match=f"without a {SECTION} section"):
        relaxvm.load_module(str(foreign))
    (tmp_path / "short.so").write_bytes(b"\x7fELF\x01\x01" + bytes(10))
    with pytest.raises(ExecutableFormatError, match="64-bit little-endian"):
        relaxvm.load_module(str(tmp_path / "short.so"))


def _patched_so(ex: relaxvm.Executable, path: Path, patch: Any) -> Path:
    """A .so whose embedded kernel bytes went through ``patch`` (framing and CRC valid)."""
    kind, target, module = ex.kernel_libs[0]
    libs = [(kind, target, patch(serialize.dumps(module.compiled, module.tir_bytes())))]
    shared_lib.export_shared(path, save_to_bytes(ex, libs), [module])
    return path


def _with_header(data: bytes, **changes: Any) -> bytes:
    """Kernel bytes with header fields replaced (a valid, re-framed header)."""
    _, version, size = struct.unpack_from("<8sII", data)
    header = json.loads(data[16 : 16 + size])
    header.update(changes)
    raw = json.dumps(header, sort_keys=True).encode()
    return struct.pack("<8sII", serialize.MAGIC, version, len(raw)) + raw + data[16 + size :]


@needs_linker
def test_so_for_another_cpu_or_version_is_refused(
    executable: relaxvm.Executable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def other_version(data: bytes) -> bytes:
        return data[:8] + struct.pack("<I", 99) + data[12:]

    path = _patched_so(executable, tmp_path / "v99.so", other_version)
    with pytest.raises(ExecutableFormatError, match="format version 99.*rebuild"):
        relaxvm.load_module(str(path))

    def other_cpu(data: bytes) -> bytes:
        return _with_header(data, cpu="some-future-cpu")

    path = _patched_so(executable, tmp_path / "cpu.so", other_cpu)
    # An edited header voids the tag: the kernels are rebuilt from the TIR for this host.
    _check(relaxvm.load_module(str(path)))
    # Object code used as is (explicit trust) must still suit this host.
    monkeypatch.setenv("RELAXVM_TRUST_OBJECT_CODE", "1")
    with pytest.raises(ExecutableFormatError, match="compiled for CPU 'some-future-cpu'"):
        relaxvm.load_module(str(path))

    def missing_feature(data: bytes) -> bytes:
        header_cpu = json.loads(data[16 : 16 + struct.unpack_from("<I", data, 12)[0]])["cpu"]
        return _with_header(data, cpu=header_cpu, features="+avx9000")

    path = _patched_so(executable, tmp_path / "feature.so", missing_feature)
    with pytest.raises(ExecutableFormatError, match="lacks: avx9000"):
        relaxvm.load_module(str(path))
    # The untouched bytes load: the refusals come from the patches.
    _check(relaxvm.load_module(str(_patched_so(executable, tmp_path / "ok.so", bytes))))
