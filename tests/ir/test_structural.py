"""structural_equal / structural_hash, with and without mapping free variables."""

from __future__ import annotations

from relaxvm.ir import IntImm, SizeVar, Var, structural_equal, structural_hash


def test_same_tree_is_equal_and_hashes_equal() -> None:
    n = Var("n")
    a, b = n * 4 + 1, n * 4 + 1
    assert a is not b
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b) == hash(a)


def test_different_structure_is_not_equal() -> None:
    n = Var("n")
    assert not structural_equal(n * 4, 4 * n)  # equal values, different trees
    assert not structural_equal(n + 1, n + 2)
    assert not structural_equal(IntImm("int32", 1), IntImm("int64", 1))
    assert structural_equal(3, IntImm(3))  # numbers are wrapped first


def test_free_vars_compare_by_identity_unless_mapped() -> None:
    n1, n2 = Var("n"), Var("n")
    assert not structural_equal(n1 + 1, n2 + 1)
    assert structural_equal(n1 + 1, n2 + 1, map_free_vars=True)
    assert structural_hash(n1 + 1, map_free_vars=True) == structural_hash(
        n2 + 1, map_free_vars=True
    )


def test_mapping_must_be_consistent_and_one_to_one() -> None:
    a, b, x, y = Var("a"), Var("b"), Var("x"), Var("y")
    assert structural_equal(a * b + a, x * y + x, map_free_vars=True)
    assert not structural_equal(a * b + a, x * y + y, map_free_vars=True)  # a -> x, then a -> y
    assert not structural_equal(a + b, x + x, map_free_vars=True)  # a, b both -> x
    assert not structural_equal(a + a, x + y, map_free_vars=True)
    assert structural_equal(a + b, b + a, map_free_vars=True)  # a <-> b is a renaming


def test_mapping_respects_kind_and_type() -> None:
    assert not structural_equal(Var("n") + 1, SizeVar("n") + 1, map_free_vars=True)
    assert not structural_equal(Var("n", "int32"), Var("n", "int64"), map_free_vars=True)


def test_mapped_hash_depends_on_order_of_appearance_not_identity() -> None:
    a, b, x, y = Var("a"), Var("b"), Var("x"), Var("y")
    assert structural_hash(a - b, map_free_vars=True) == structural_hash(x - y, map_free_vars=True)
    assert structural_hash(a - a, map_free_vars=True) != structural_hash(x - y, map_free_vars=True)
    assert structural_hash(a - b) != structural_hash(x - y)
