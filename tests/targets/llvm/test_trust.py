"""The trust model of llvm exports: object code runs only when the user's key vouches for it.

See docs/security.md. Each test tampers with an export the way an attacker who can edit the
file would: every checksum recomputed, only the tag (which needs the user's key) left wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relaxvm
from relaxvm import security
from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.relax import IRModule
from relaxvm.ir.tir import lower_blocks, te
from relaxvm.registry.extensions import get_target_kind
from relaxvm.target import Target
from relaxvm_llvm import codegen, jit, serialize, target, tir_data

_KEY_A = "a1" * 32
_KEY_B = "b2" * 32


def _funcs(factor: float = 2.0) -> dict[str, Any]:
    a = te.placeholder((16,), "float32", name="A")
    b = te.compute((16,), lambda i: a[i] * factor, name="B")
    x = te.placeholder((8,), "float32", name="X")
    y = te.compute((8,), lambda i: x[7 - i], name="Y")
    return {
        "double": te.create_prim_func([a, b], name="double"),
        "reverse": te.create_prim_func([x, y], name="reverse"),
    }


def _build(factor: float = 2.0) -> Any:
    return get_target_kind("llvm").build(IRModule(_funcs(factor)), Target("llvm"))


def _check(module: Any) -> None:
    a = np.arange(16, dtype="float32")
    out = np.zeros(16, "float32")
    module["double"](a, out)
    np.testing.assert_array_equal(out, a * 2)
    x = np.arange(8, dtype="float32")
    y = np.zeros(8, "float32")
    module["reverse"](x, y)
    np.testing.assert_array_equal(y, x[::-1])


def _split(data: bytes) -> tuple[dict[str, Any], bytes, bytes]:
    """Header, TIR and object code of serialized kernels."""
    _, _, size = struct.unpack_from("<8sII", data)
    header = json.loads(data[16 : 16 + size])
    rest = data[16 + size : -32]
    return header, rest[: header["tir_size"]], rest[header["tir_size"] :]


def _forge(header: dict[str, Any], tir: bytes, obj: bytes) -> bytes:
    """Serialized kernels with every checksum and size made consistent, and a forged tag."""
    header = {
        **header,
        "object_size": len(obj),
        "object_sha256": hashlib.sha256(obj).hexdigest(),
        "tir_size": len(tir),
    }
    raw = json.dumps(header).encode()
    prefix = struct.pack("<8sII", serialize.MAGIC, header["format_version"], len(raw))
    return prefix + raw + tir + obj + b"\x00" * 32


def test_trusted_export_loads_without_rebuilding(monkeypatch: pytest.MonkeyPatch) -> None:
    data = target.serialize(_build())

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the trusted export was rebuilt")

    # No decoding of TIR, no build, no code generation: the object code is used as is.
    for name in ("_rebuild", "_build", "decode"):
        monkeypatch.setattr(target, name, refuse)
    monkeypatch.setattr(codegen, "compile_prim_funcs", refuse)
    loaded = target.load(data)
    assert not loaded.rebuilt
    _check(loaded)


def test_tir_round_trips_exactly() -> None:
    # The serialized TIR is the lowered kernel (loops), as the target writes it.
    funcs = [(name, lower_blocks(func)) for name, func in _funcs().items()]
    back = tir_data.decode(tir_data.encode(funcs))
    assert [(n, f.script()) for n, f in back] == [(n, f.script()) for n, f in funcs]


@pytest.mark.parametrize("cache", ["1", "0"], ids=["cache", "no cache"])
def test_foreign_object_code_is_not_run(cache: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # With the cache: one hit under the TIR's digest; without: decoded and compiled.
    monkeypatch.setenv("RELAXVM_CACHE", cache)
    header, tir, _ = _split(target.serialize(_build()))
    # Another kernel under the same names: "double" multiplies by 3 in this object code.
    _, _, evil_obj = _split(target.serialize(_build(3.0)))
    loaded = target.load(_forge(header, tir, evil_obj))
    assert loaded.rebuilt
    _check(loaded)  # the kernels rebuilt from the TIR, not the foreign code


def test_garbage_object_code_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAXVM_CACHE", "0")
    header, tir, obj = _split(target.serialize(_build()))
    # Bytes that would crash (ud2; int3) if they were ever linked and called.
    loaded = target.load(_forge(header, tir, b"\x0f\x0b\xcc" * (len(obj) // 3)))
    assert loaded.rebuilt
    _check(loaded)


def test_symbol_swap_is_refused() -> None:
    header, tir, obj = _split(target.serialize(_build()))
    kernels = header["kernels"]
    kernels[0]["symbol"], kernels[1]["symbol"] = kernels[1]["symbol"], kernels[0]["symbol"]
    with pytest.raises(ExecutableFormatError, match="does not match the kernels rebuilt"):
        target.load(_forge(header, tir, obj))


def test_tir_swap_between_names_is_refused() -> None:
    header, tir, obj = _split(target.serialize(_build()))
    decoded = json.loads(zlib.decompress(tir))
    decoded["funcs"][0]["name"], decoded["funcs"][1]["name"] = "reverse", "double"
    forged = _forge(header, zlib.compress(json.dumps(decoded).encode()), obj)
    with pytest.raises(ExecutableFormatError, match="tampered"):
        target.load(forged)


def test_untrusted_object_code_without_tir_is_refused() -> None:
    header, _, obj = _split(target.serialize(_build()))
    with pytest.raises(ExecutableFormatError, match="no TIR to rebuild"):
        target.load(_forge(header, b"", obj))


def test_explicit_trust_uses_the_object_code(monkeypatch: pytest.MonkeyPatch) -> None:
    header, tir, obj = _split(target.serialize(_build()))
    forged = _forge(header, tir, obj)
    assert not target.load(forged, trust=True).rebuilt
    monkeypatch.setenv(target.TRUST_ENV, "1")
    assert not target.load(forged).rebuilt


def test_untrusted_load_with_a_warm_cache_decodes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    header, tir, obj = _split(target.serialize(_build()))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("decoded or compiled although the cache holds this TIR's build")

    monkeypatch.setattr(target, "decode", refuse)
    monkeypatch.setattr(codegen, "compile_prim_funcs", refuse)
    loaded = target.load(_forge(header, tir, obj))
    assert loaded.rebuilt
    _check(loaded)


def test_file_signed_with_another_key_is_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAXVM_KEY", _KEY_A)
    data = target.serialize(_build())
    assert not target.load(data).rebuilt
    monkeypatch.setenv("RELAXVM_KEY", _KEY_B)
    loaded = target.load(data)
    assert loaded.rebuilt
    _check(loaded)
    # Exporting it again signs it with this user's key: from then on it is trusted.
    assert not target.load(target.serialize(loaded)).rebuilt


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("features", "avx2,sse4.2", "malformed CPU feature"),
        ("features", "+avx2,+x;y", "malformed CPU feature"),
        ("cpu", "znver4 -O0", "malformed CPU name"),
        ("triple", "x86_64\x00evil", "malformed target triple"),
        ("fastmath", ["fast"], "malformed header"),  # flags only, each by name
    ],
)
def test_strings_reaching_llvm_are_validated(
    field: str, value: Any, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    header, tir, obj = _split(target.serialize(_build()))
    monkeypatch.setenv(target.TRUST_ENV, "1")  # validation comes first, trust or not
    with pytest.raises(ExecutableFormatError, match=message):
        target.load(_forge({**header, field: value}, tir, obj))


def test_bad_features_do_not_abort_the_process(tmp_path: Path) -> None:
    header, tir, obj = _split(target.serialize(_build()))
    path = tmp_path / "bad.bin"
    path.write_bytes(_forge({**header, "features": "avx2"}, tir, obj))
    script = textwrap.dedent(
        f"""
        from relaxvm.errors import ExecutableFormatError
        from relaxvm_llvm import target
        try:
            target.load(open({str(path)!r}, "rb").read(), trust=True)
        except ExecutableFormatError as err:
            print("refused:", err)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    assert "refused: llvm module: malformed CPU feature 'avx2'" in done.stdout


@pytest.mark.parametrize(
    "tir",
    [
        b"not json",
        b'{"v": 1, "vars": [], "buffers": [], "funcs": [{"name": "f", "params": [], '
        b'"buffer_map": [], "body": ["__import__", "os"], "attrs": {}}]}',
        b'{"v": 1, "vars": [], "buffers": [], "funcs": [{"name": "f", "params": [], '
        b'"buffer_map": [], "body": ["eval", ["v", 7]], "attrs": {}}]}',
        b'{"v": 1, "vars": [], "buffers": [], "funcs": [{"name": "f", "params": [], '
        b'"buffer_map": [], "body": '
        + b'["eval", ["Not", ' * 600
        + b'["i", "bool", 1]'
        + b"]]" * 600
        + b', "attrs": {}}]}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["not json", "unknown kind", "bad reference", "deep", "very deep json"],
)
def test_malformed_tir_is_refused(tir: bytes) -> None:
    with pytest.raises(ExecutableFormatError, match="TIR"):
        tir_data.decode(zlib.compress(tir))


def test_tir_zlib_bomb_and_garbage_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tir_data, "MAX_TIR_BYTES", 1 << 20)
    with pytest.raises(ExecutableFormatError, match="zlib stream"):
        tir_data.decode(zlib.compress(b" " * (4 << 20)))
    with pytest.raises(ExecutableFormatError, match="TIR"):
        tir_data.decode(b"not zlib at all")


def test_export_library_with_another_key_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaxvm.script import ir as I
    from relaxvm.script import relax as R

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4, 8), "float32")) -> R.Tensor((4, 8), "float32"):
            return R.nn.relu(R.add(x, x))

    monkeypatch.setenv("RELAXVM_KEY", _KEY_A)
    path = tmp_path / "model.rvm"
    relaxvm.compile(Mod, target="llvm").export_library(str(path))
    monkeypatch.setenv("RELAXVM_KEY", _KEY_B)
    ex = relaxvm.load_module(str(path))
    assert all(module.rebuilt for _, _, module in ex.kernel_libs)
    x = np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)
    out = relaxvm.VirtualMachine(ex, relaxvm.cpu())["main"](relaxvm.tensor(x))
    np.testing.assert_allclose(out.numpy(), np.maximum(x + x, 0))
    # Trusting the file (like dlopen of a .so) links its object code as it is; the trust
    # ends with the call.
    trusted = relaxvm.load_module(path, trust=True)
    assert not any(module.rebuilt for _, _, module in trusted.kernel_libs)
    out = relaxvm.VirtualMachine(trusted, relaxvm.cpu())["main"](relaxvm.tensor(x))
    np.testing.assert_allclose(out.numpy(), np.maximum(x + x, 0))
    assert not security.object_code_trusted()
    assert all(module.rebuilt for _, _, module in relaxvm.load_module(path).kernel_libs)


def test_trusting_object_code_is_scoped(monkeypatch: pytest.MonkeyPatch) -> None:
    from relaxvm.security import TRUST_ENV, object_code_trusted, trusting_object_code

    monkeypatch.delenv(TRUST_ENV, raising=False)
    assert not object_code_trusted()
    with pytest.raises(RuntimeError), trusting_object_code():
        assert object_code_trusted()
        raise RuntimeError("leaves the block")
    assert not object_code_trusted()
    monkeypatch.setenv(TRUST_ENV, "yes")
    assert object_code_trusted()


@pytest.mark.parametrize(
    "changes",
    [{"features": "-sse2,-x87"}, {"cpu": "x86-64"}, {"cpu": "generic", "features": ""}],
    ids=["float ABI", "other cpu", "generic"],
)
def test_untrusted_target_description_is_ignored(
    changes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The header's CPU and features would pick the generated code: an untrusted file is
    # rebuilt for this host instead.
    monkeypatch.setenv("RELAXVM_CACHE", "0")
    header, tir, obj = _split(target.serialize(_build()))
    loaded = target.load(_forge({**header, **changes}, tir, obj))
    assert loaded.rebuilt
    assert loaded.compiled.info.features == jit.host_cpu_features()
    _check(loaded)


def _tampered_index_tir(tir: bytes) -> bytes:
    """The TIR with the constant 7 of ``Y[i] = X[7 - i]`` made 2**40: an index far out."""
    text = zlib.decompress(tir).decode()
    assert text.count('["i","int64",7]') >= 1
    return zlib.compress(text.replace('["i","int64",7]', '["i","int64",1099511627776]').encode())


def test_untrusted_tir_never_reads_outside_a_buffer(tmp_path: Path) -> None:
    header, tir, obj = _split(target.serialize(_build()))
    path = tmp_path / "index.bin"
    path.write_bytes(_forge(header, _tampered_index_tir(tir), obj))
    script = textwrap.dedent(
        f"""
        import numpy as np
        from relaxvm.errors import VMIndexError
        from relaxvm_llvm import target
        module = target.load(open({str(path)!r}, "rb").read())
        assert module.rebuilt
        try:
            module["reverse"](np.zeros(8, "float32"), np.zeros(8, "float32"))
        except VMIndexError as err:
            print("refused:", err)
        """
    )
    env = {**os.environ, "RELAXVM_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "refused: untrusted kernel: index 1099511627776 is out of range" in done.stdout


def test_hardened_kernels_compute_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    # No cache: not this user's own build, so compiled with every access checked.
    monkeypatch.setenv("RELAXVM_CACHE", "0")
    header, tir, obj = _split(target.serialize(_build()))
    loaded = target.load(_forge(header, tir, obj))
    assert loaded.rebuilt
    _check(loaded)
