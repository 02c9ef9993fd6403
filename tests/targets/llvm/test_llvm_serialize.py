"""The llvm TargetKind: registration, serialize/load round trip, refusal of bad data."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pytest

from relaxvm.errors import ExecutableFormatError
from relaxvm.ir import Var
from relaxvm.ir.relax import IRModule
from relaxvm.ir.tir import Schedule, te
from relaxvm.registry.extensions import get_target_kind
from relaxvm.target import Target
from relaxvm_llvm import jit, serialize, target


def _funcs() -> dict[str, Any]:
    n = Var("n")
    a = te.placeholder((n, 16), "float32", name="A")
    b = te.compute((n, 16), lambda i, j: a[i, j] * 2.0, name="B")
    sch = Schedule(te.create_prim_func([a, b], name="double"))
    i, j = sch.get_loops()
    sch.vectorize(j)
    sch.parallel(i)
    x = te.placeholder((8,), "int8", name="X")
    y = te.compute((8,), lambda i: x[7 - i], name="Y")
    return {"double": sch.func, "reverse": te.create_prim_func([x, y], name="reverse")}


@pytest.fixture(scope="module")
def built() -> Any:
    kind = get_target_kind("llvm")
    mod = IRModule(_funcs())
    return kind, kind.build(mod, Target("llvm"))


def _run_all(module: Any) -> None:
    a = np.arange(-24, 24, dtype="float32").reshape(3, 16)
    out = np.zeros((3, 16), "float32")
    module["double"](a, out)
    np.testing.assert_array_equal(out, a * 2)
    x = np.arange(8, dtype="int8")
    y = np.zeros(8, "int8")
    module["reverse"](x, y)
    np.testing.assert_array_equal(y, x[::-1])


def test_target_kind_is_registered() -> None:
    kind = get_target_kind("llvm")
    assert kind.device == "cpu"
    target = Target("llvm")
    assert target.get("mcpu") == jit.host_cpu_name()
    assert target.get("mattr") == jit.host_cpu_features()
    assert Target("llvm -mcpu=x86-64").get("mcpu") == "x86-64"


def test_build_through_the_target_kind(built: Any) -> None:
    _, module = built
    assert module.list_functions() == ["double", "reverse"]
    _run_all(module)


def test_round_trip_without_recompiling(built: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    kind, module = built
    data = kind.serialize(module)
    assert data.startswith(serialize.MAGIC)

    def no_codegen(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("load must not compile TIR")

    from relaxvm_llvm import codegen

    monkeypatch.setattr(codegen, "compile_prim_funcs", no_codegen)
    monkeypatch.setattr(codegen, "generate_kernel_ir", no_codegen)
    loaded = kind.load(data, Target("llvm"))
    assert loaded.list_functions() == ["double", "reverse"]
    _run_all(loaded)
    with pytest.raises(TypeError, match=r"'reverse': parameter 'X' holds int8"):
        loaded["reverse"](np.zeros(8, "int16"), np.zeros(8, "int8"))


def test_source_of_built_and_loaded_modules(built: Any) -> None:
    kind, module = built
    assert "define" in module.get_source("ll")
    assert "__rvm_double" in module.get_source("asm")
    with pytest.raises(RuntimeError, match="loaded from serialized bytes"):
        kind.load(kind.serialize(module), None).get_source()
    with pytest.raises(RuntimeError, match="fmt must be"):
        module.get_source("ptx")


def test_portable_cpu_round_trip() -> None:
    kind = get_target_kind("llvm")
    module = kind.build(IRModule(_funcs()), Target("llvm -mcpu=x86-64"))
    assert module.compiled.info.features == ""  # the host's features are not implied
    _run_all(kind.load(kind.serialize(module), None))


def _header(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and what follows it (TIR, object code and tag)."""
    _, _, size = struct.unpack_from("<8sII", data)
    return json.loads(data[16 : 16 + size]), data[16 + size :]


def _with_header(header: dict[str, Any], obj: bytes, version: int | None = None) -> bytes:
    version = header["format_version"] if version is None else version
    raw = json.dumps(header).encode()
    return struct.pack("<8sII", serialize.MAGIC, version, len(raw)) + raw + obj


def _bad_data(data: bytes) -> dict[str, bytes]:
    header, obj = _header(data)
    cases = {
        "truncated prefix": data[:10],
        "bad magic": b"NOTLLVM\x00" + data[8:],
        "truncated header": data[:40],
        "truncated object": data[:-100],
        "tampered object": data[:-50] + bytes([data[-50] ^ 0xFF]) + data[-49:],
        "other version": _with_header({**header, "format_version": 4}, obj, version=4),
        "old version": _with_header({**header, "format_version": 1}, obj, version=1),
        "not json": struct.pack("<8sII", serialize.MAGIC, serialize.FORMAT_VERSION, 5)
        + b"{{{{{"
        + obj,
        "other cpu": _with_header({**header, "cpu": "someothercpu"}, obj),
        "missing feature": _with_header({**header, "features": "+avx2,+nosuchfeature"}, obj),
        "other triple": _with_header({**header, "triple": "riscv64-unknown-linux-gnu"}, obj),
        "bad signature": _with_header(
            {**header, "kernels": [{**header["kernels"][0], "params": "oops"}]}, obj
        ),
        "bad symbol": _with_header(
            {**header, "kernels": [{**header["kernels"][0], "symbol": "x; rm -rf"}]}, obj
        ),
        "bad dtype": _with_header(
            {**header, "kernels": [{**header["kernels"][0], "var_dtypes": ["float99"]}]}, obj
        ),
    }
    return cases


EXPECTED = {
    "truncated prefix": "truncated",
    "bad magic": "bad magic",
    "truncated header": "truncated",
    "truncated object": "truncated",
    "tampered object": "checksum",
    "other version": "format version 4",
    "old version": "no TIR and no tag",
    "not json": "malformed header",
    "other cpu": "someothercpu",
    "missing feature": "lacks: nosuchfeature",
    "other triple": "riscv64",
    "bad signature": "malformed header",
    "bad symbol": "malformed header",
    "bad dtype": "malformed header",
}


#: Refused only when the object code would be used (trusted): an untrusted file's kernels
#: are rebuilt for this host from their TIR, whatever CPU its header names.
HOST_CHECKS = {"other cpu", "missing feature"}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_bad_data_is_refused(built: Any, case: str) -> None:
    kind, module = built
    bad = _bad_data(kind.serialize(module))[case]
    with pytest.raises(ExecutableFormatError, match=EXPECTED[case]):
        if case in HOST_CHECKS:
            target.load(bad, None, trust=True)
        else:
            kind.load(bad, None)


@pytest.mark.parametrize("case", sorted(HOST_CHECKS))
def test_untrusted_code_for_another_cpu_is_rebuilt_for_this_host(built: Any, case: str) -> None:
    kind, module = built
    loaded = kind.load(_bad_data(kind.serialize(module))[case], None)
    assert loaded.rebuilt
    assert loaded.compiled.info.cpu == jit.host_cpu_name()
    _run_all(loaded)


def test_serialize_refuses_foreign_modules() -> None:
    from relaxvm.runtime.module import Module

    with pytest.raises(RuntimeError, match="only serialize modules built by the llvm target"):
        get_target_kind("llvm").serialize(Module({}))
