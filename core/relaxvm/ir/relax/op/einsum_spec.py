"""The subscripts of ``relax.einsum``: parsing and the extent of every label.

Shared by StructInfo inference (:mod:`.sort`) and the legalization (``relaxvm_ops.einsum``), so
that both read a subscripts string the same way. The grammar is numpy's:

* ``"ij,jk->ik"``: explicit output; every output label must occur in an input, once;
* ``"ij,jk"``: implicit output, the labels that occur exactly once, in ASCII order (``"B"``
  before ``"a"``), as numpy orders them;
* ``"..."`` (at most once per term) stands for broadcast dimensions; those of the operands are
  right-aligned and broadcast with numpy rules. An implicit output puts them first.

A label repeated inside one operand takes its diagonal (``"ii->i"``, ``"ii"`` is the trace).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...expr import PrimExpr
from .registry import OpError

__all__ = ["EinsumSpec", "parse_einsum"]

_NAME = "relax.einsum"


@dataclass(frozen=True)
class EinsumSpec:
    """Subscripts with the ellipses expanded.

    Attributes
    ----------
    inputs : tuple of tuple of str
        Per operand, the label of each of its dimensions. Broadcast (ellipsis) dimensions get
        the labels ``"0"``, ``"1"`` ... counted so that they are right-aligned across operands.
    output : tuple of str
        The label of each output dimension.
    """

    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]

    @property
    def reduced(self) -> tuple[str, ...]:
        """Labels summed over: those of the inputs missing from the output, in first-use order."""
        seen: dict[str, None] = {}
        for term in self.inputs:
            seen.update(dict.fromkeys(label for label in term if label not in self.output))
        return tuple(seen)


def _split_term(term: str, where: str) -> tuple[str, str, bool]:
    """``(labels before ..., labels after ..., has ellipsis)`` of one term."""
    parts = term.split("...")
    if len(parts) > 2:
        raise OpError(f"{_NAME}: {where} {term!r} has more than one '...'")
    for part in parts:
        for char in part:
            if not (char.isascii() and char.isalpha()):
                raise OpError(
                    f"{_NAME}: {where} {term!r} has the character {char!r}; subscripts are "
                    "letters a-z, A-Z, ',' between operands, '->' before the output and '...'"
                )
    if len(parts) == 2:
        return parts[0], parts[1], True
    return parts[0], "", False


def parse_einsum(subscripts: str, ranks: Sequence[int]) -> EinsumSpec:
    """The expanded form of ``subscripts`` for operands of the given ranks.

    Parameters
    ----------
    subscripts : str
        The einsum subscripts (``"ij,jk->ik"``); spaces are ignored.
    ranks : sequence of int
        The rank of each operand.

    Raises
    ------
    OpError
        If the subscripts are malformed or do not fit the operands.
    """
    if not isinstance(subscripts, str):
        raise OpError(f"{_NAME}: subscripts must be a str, got {subscripts!r}")
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise OpError(f"{_NAME}: subscripts {subscripts!r} have more than one '->'")
    explicit = "->" in text
    lhs, rhs = text.split("->") if explicit else (text, "")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise OpError(
            f"{_NAME}: subscripts {subscripts!r} name {len(terms)} operand(s), but "
            f"{len(ranks)} operand(s) are given"
        )
    split = [_split_term(t, f"operand {i} subscripts") for i, t in enumerate(terms)]
    ellipsis_dims: list[int] = []
    for index, ((head, tail, has_dots), rank) in enumerate(zip(split, ranks, strict=True)):
        count = len(head) + len(tail)
        if (has_dots and count > rank) or (not has_dots and count != rank):
            expect = f"at most {rank}" if has_dots else str(rank)
            raise OpError(
                f"{_NAME}: operand {index} subscripts {terms[index]!r} name {count} "
                f"dimension(s), but the operand has rank {rank} (expected {expect})"
            )
        ellipsis_dims.append(rank - count if has_dots else 0)
    widest = max(ellipsis_dims, default=0)
    inputs: list[tuple[str, ...]] = []
    for (head, tail, _), extra in zip(split, ellipsis_dims, strict=True):
        dots = tuple(str(widest - extra + i) for i in range(extra))
        inputs.append((*head, *dots, *tail))
    broadcast = tuple(str(i) for i in range(widest))
    if explicit:
        output = _explicit_output(subscripts, rhs, inputs, broadcast)
    else:
        counts: dict[str, int] = {}
        for term in inputs:
            for label in term:
                if label.isalpha():
                    counts[label] = counts.get(label, 0) + 1
        once = sorted(label for label, count in counts.items() if count == 1)
        output = (*broadcast, *once)
    return EinsumSpec(tuple(inputs), output)


def _explicit_output(
    subscripts: str, rhs: str, inputs: list[tuple[str, ...]], broadcast: tuple[str, ...]
) -> tuple[str, ...]:
    head, tail, has_dots = _split_term(rhs, "output subscripts")
    if broadcast and not has_dots:
        raise OpError(
            f"{_NAME}: subscripts {subscripts!r}: the operands have {len(broadcast)} broadcast "
            "('...') dimension(s), so the output subscripts must contain '...'"
        )
    used = {label for term in inputs for label in term}
    for label in head + tail:
        if label not in used:
            raise OpError(
                f"{_NAME}: subscripts {subscripts!r}: output label {label!r} does not occur "
                "in any operand"
            )
    labels = head + tail
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise OpError(
            f"{_NAME}: subscripts {subscripts!r}: output label(s) {', '.join(repeated)} "
            "repeat; each output label may occur once"
        )
    return (*head, *(broadcast if has_dots else ()), *tail)


def label_dims(spec: EinsumSpec, shapes: Sequence[Sequence[PrimExpr]]) -> dict[str, list[PrimExpr]]:
    """``label -> the extents that the operands give it``, in operand order."""
    dims: dict[str, list[PrimExpr]] = {}
    for term, shape in zip(spec.inputs, shapes, strict=True):
        for label, extent in zip(term, shape, strict=True):
            dims.setdefault(label, []).append(extent)
    return dims
