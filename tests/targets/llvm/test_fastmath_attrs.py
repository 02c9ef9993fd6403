"""TVM's ``-fast-math*`` target attributes on the llvm target, and what untrusted code keeps."""

from __future__ import annotations

import numpy as np
import pytest

from relaxvm.ir.relax import IRModule
from relaxvm.ir.tir import te
from relaxvm.registry.extensions import get_target_kind
from relaxvm.target import Target, TargetError
from relaxvm_llvm import target


@pytest.mark.parametrize(
    ("spec", "flags"),
    [
        ("llvm", ("contract", "reassoc", "nsz")),  # relaxvm's default
        ("llvm -fast-math", ("reassoc", "contract", "nsz", "arcp", "afn", "nnan", "ninf")),
        ("llvm -fast-math-nsz", ("nsz",)),
        ("llvm -fast-math-nnan=1 -fast-math-reassoc", ("reassoc", "nnan")),
        ("llvm -fast-math=0", ()),
        ("llvm -fastmath=fast", ("reassoc", "contract", "nsz", "arcp", "afn")),
        ("llvm -fastmath=contract -fast-math", ("contract",)),  # relaxvm's own attr wins
    ],
)
def test_tvm_fast_math_attributes(spec: str, flags: tuple[str, ...]) -> None:
    assert target.target_info(Target(spec)).fastmath == flags


def test_a_fast_math_attribute_must_be_a_boolean() -> None:
    with pytest.raises(TargetError, match=r"-fast-math='maybe' is not valid: expected a boolean"):
        target.target_info(Target("llvm -fast-math=maybe"))


def _scale() -> IRModule:
    a = te.placeholder((64,), "float32", name="A")
    b = te.compute((64,), lambda i: a[i] * 3.0 + 1.0, name="B")
    return IRModule({"scale": te.create_prim_func([a, b], name="scale")})


def test_fast_math_kernels_carry_the_flags_and_compute() -> None:
    module = get_target_kind("llvm").build(_scale(), Target("llvm -fast-math"))
    assert "nnan" in module.compiled.llvm_ir or " fast " in module.compiled.llvm_ir
    a = np.linspace(-2, 2, 64, dtype="float32")
    out = np.zeros(64, "float32")
    module["scale"](a, out)
    np.testing.assert_allclose(out, a * 3 + 1, rtol=1e-6)


def test_untrusted_code_is_rebuilt_without_nnan_and_ninf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAXVM_CACHE", "0")
    kind = get_target_kind("llvm")
    data = bytearray(kind.serialize(kind.build(_scale(), Target("llvm -fast-math"))))
    data[-1] ^= 0xFF  # the tag no longer verifies: the kernels are rebuilt from their TIR
    loaded = target.load(bytes(data))
    assert loaded.rebuilt
    assert loaded.compiled.info.fastmath == ("reassoc", "contract", "nsz", "arcp", "afn")
