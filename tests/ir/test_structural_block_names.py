"""A TIR block's name is a hint: structural equality and hashing ignore it, as TVM's do
(``name_hint`` is registered SEqHashIgnore), while its regions still count."""

from __future__ import annotations

import pytest

from relaxvm.ir import StructuralEqualError, assert_structural_equal
from relaxvm.ir.tir import structural_equal, structural_hash
from relaxvm.script import from_source

KERNEL = """
@T.prim_func
def main(A: T.Buffer((4, 3), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 3):
        with T.block("{name}"):
            vi, vk = T.axis.remap("SR", [i, k])
            T.reads({reads})
            T.writes(B[vi])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
"""


def _kernel(name: str, reads: str = "A[vi, vk]"):  # type: ignore[no-untyped-def]
    return from_source(KERNEL.format(name=name, reads=reads))


def test_block_names_are_neither_compared_nor_hashed() -> None:
    first, renamed = _kernel("B"), _kernel("row_sum")
    assert structural_equal(first, renamed)
    assert structural_hash(first) == structural_hash(renamed)
    assert_structural_equal(first, renamed)
    # The unnamed block of `with T.block():` matches too.
    unnamed = from_source(KERNEL.replace('"{name}"', "").format(reads="A[vi, vk]"))
    assert structural_equal(first, unnamed)
    assert structural_hash(first) == structural_hash(unnamed)


def test_block_regions_still_count() -> None:
    first, wider = _kernel("B"), _kernel("B", "A[vi, 0:3]")
    assert not structural_equal(first, wider)
    assert structural_hash(first) != structural_hash(wider)
    with pytest.raises(StructuralEqualError) as info:
        assert_structural_equal(first, _kernel("other", "A[vi, 0:3]"))
    # The first difference is in the regions, not the name.
    assert ".block.reads[0].region[1]" in info.value.path
