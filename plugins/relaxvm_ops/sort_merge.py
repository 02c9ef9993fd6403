"""The merge passes of the line sort (:func:`.sort_kernels.sort_line`).

A pass merges neighbouring sorted runs of width ``w`` from one half of the line's scratch
into the other. Full pairs (both runs ``w`` long) go two at a time: each loop step advances
four independent chains (the front and the back of both pairs), which the CPU overlaps. A
front chain takes the smaller head (the left one on ties), a back chain the larger tail (the
right one on ties), both branch-free (``select``), with the heads in ``local`` scalars, which
LLVM keeps in registers (in full pairs only one head per chain: the other follows from the
step count). With equal runs neither chain can run past a run, so full pairs need no guard;
what is left at the end of the line (at most a full pair and a shorter one, or a lone run,
which is copied) goes pair by pair with guarded steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaxvm.ir import IntImm, PrimExpr, Var
from relaxvm.ir import op as sop
from relaxvm.ir.tir import (
    IfThenElse,
    Stmt,
    seq,
)

from .sort_tir import I64, Expr, Line, Scalars, bind, i64, let, loop

__all__ = ["RUN", "merge_passes"]

#: Elements per run sorted in registers before the merge passes.
RUN = 16
#: Merge pass pairs of a line of symbolic length: widths up to ``RUN << 57`` (no overflow).
_SYMBOLIC_PAIRS = 29


def _minus(start: PrimExpr) -> Expr:
    """``i -> start - i``."""
    return lambda i: sop.sub(start, i)


@dataclass(frozen=True)
class _Pass:
    """One merge pass: the runs of ``width`` in the half of ``keys``/``order`` at ``src``
    merged into the half at ``dst``."""

    line: Line
    width: PrimExpr
    src: PrimExpr
    dst: PrimExpr
    heads: Scalars

    def key(self, at: PrimExpr) -> PrimExpr:
        return self.line.keys[sop.add(self.src, at)]

    def take(self, pos: PrimExpr, right: PrimExpr, left_at: PrimExpr, right_at: PrimExpr,
             a: PrimExpr, b: PrimExpr) -> list[Stmt]:  # fmt: skip
        """Store the right candidate (``b``, from ``right_at``) if ``right``, else the left."""
        order, index = self.line.order, None
        if order is not None:
            index = sop.select(
                right, order[sop.add(self.src, right_at)], order[sop.add(self.src, left_at)]
            )
        return self.line.store(sop.add(self.dst, pos), sop.select(right, b, a), index)

    def front(
        self, chain: str, pos: PrimExpr, hi: PrimExpr | None, j_of: Expr | None = None
    ) -> Stmt:
        """Output ``pos`` of a front chain: the smaller head, the left one on ties. Only a
        short right run can end under it (``hi`` given: guard and clamp)."""
        heads = self.heads

        def step(v: dict[str, Var]) -> Stmt:
            right = v["right"]
            return seq(
                *self.take(pos, right, v["i"], v["jc"], v["a"], v["b"]),
                heads.set("i" + chain, sop.add(v["i"], sop.cast(sop.logical_not(right), I64))),
                *([] if j_of else [heads.set("j" + chain, sop.add(v["j"], sop.cast(right, I64)))]),
            )

        def right(v: dict[str, Var]) -> PrimExpr:
            smaller = self.line.before(v["b"], v["a"])
            return smaller if hi is None else sop.logical_and(sop.less(v["j"], hi), smaller)

        def clamped(v: dict[str, Var]) -> PrimExpr:
            return v["j"] if hi is None else sop.min_expr(v["j"], sop.sub(hi, 1))

        return bind(
            [
                ("i", lambda v: heads["i" + chain]),
                ("j", lambda v: j_of(v["i"]) if j_of else heads["j" + chain]),
                ("jc", clamped),
                ("a", lambda v: self.key(v["i"])),
                ("b", lambda v: self.key(v["jc"])),
                ("right", right),
            ],
            step,
        )

    def back(
        self, chain: str, pos: PrimExpr, mid: PrimExpr, guarded: bool, j_of: Expr | None = None
    ) -> Stmt:
        """Output ``pos`` of a back chain: the larger tail, the right one on ties (``guarded``:
        the right run, from ``mid``, may end)."""
        heads = self.heads

        def step(v: dict[str, Var]) -> Stmt:
            left = v["left"]
            return seq(
                *self.take(pos, sop.logical_not(left), v["i"], v["jc"], v["a"], v["b"]),
                heads.set("ib" + chain, sop.sub(v["i"], sop.cast(left, I64))),
                *(
                    []
                    if j_of
                    else [
                        heads.set(
                            "jb" + chain, sop.sub(v["j"], sop.cast(sop.logical_not(left), I64))
                        )
                    ]
                ),
            )

        def left(v: dict[str, Var]) -> PrimExpr:
            larger = self.line.before(v["b"], v["a"])
            return sop.logical_or(sop.less(v["j"], mid), larger) if guarded else larger

        def clamped(v: dict[str, Var]) -> PrimExpr:
            return sop.max_expr(v["j"], mid) if guarded else v["j"]

        return bind(
            [
                ("i", lambda v: heads["ib" + chain]),
                ("j", lambda v: j_of(v["i"]) if j_of else heads["jb" + chain]),
                ("jc", clamped),
                ("a", lambda v: self.key(v["i"])),
                ("b", lambda v: self.key(v["jc"])),
                ("left", left),
            ],
            step,
        )

    def start(self, chain: str, lo: PrimExpr, mid: PrimExpr, hi: PrimExpr) -> list[Stmt]:
        heads = self.heads
        return [
            heads.set("i" + chain, lo),
            heads.set("j" + chain, mid),
            heads.set("ib" + chain, sop.sub(mid, 1)),
            heads.set("jb" + chain, sop.sub(hi, 1)),
        ]

    def two_full_pairs(self, lo: PrimExpr) -> Stmt:
        """Merge the two pairs of full runs from ``lo`` together: each step advances the front
        and back chains of both, four independent dependency chains for the CPU to overlap.
        With equal runs the front's ``w`` steps and the back's never run past a run, so no
        step needs a guard."""
        w = self.width
        bounds = []
        for c in range(2):
            first = sop.add(lo, sop.mul(w, 2 * c))
            bounds.append((first, sop.add(first, w), sop.add(first, sop.mul(w, 2))))

        def body(t: Var) -> Stmt:
            steps = []
            for c, (first, mid, hi) in enumerate(bounds):
                # Fewer live registers: after t steps a front chain has taken t elements,
                # so j = mid + t - (i - first); a back chain's jb likewise from ib.
                ahead = sop.add(sop.add(mid, first), t)
                behind = sop.sub(sop.add(hi, sop.sub(mid, 2)), t)
                front = self.front(str(c), sop.add(first, t), None, _minus(ahead))
                back = self.back(str(c), sop.sub(sop.sub(hi, 1), t), mid, False, _minus(behind))
                steps += [front, back]
            return seq(*steps)

        starts = [s for c, b in enumerate(bounds) for s in self.start(str(c), *b)]
        return seq(*starts, loop("t", w, body))

    def pair(self, lo: PrimExpr, mid: PrimExpr, hi: PrimExpr) -> Stmt:
        """Merge a left run of ``width`` with a right run of at most that (guarded steps)."""

        def run(half: Var) -> Stmt:
            both = loop(
                "t",
                half,
                lambda t: seq(
                    self.front("0", sop.add(lo, t), hi),
                    self.back("0", sop.sub(sop.sub(hi, 1), t), mid, True),
                ),
            )
            # An odd count: the middle element is the front's.
            odd = IfThenElse(
                sop.less(sop.add(half, half), sop.sub(hi, lo)),
                self.front("0", sop.add(lo, half), hi),
            )
            return seq(*self.start("0", lo, mid, hi), both, odd)

        return let("half", sop.floordiv(sop.sub(hi, lo), 2), run)

    def copy(self, lo: PrimExpr, hi: PrimExpr) -> Stmt:
        """A lone last run: copied to the other half."""
        order = self.line.order

        def body(t: Var) -> Stmt:
            at = sop.add(lo, t)
            index = None if order is None else order[sop.add(self.src, at)]
            return seq(*self.line.store(sop.add(self.dst, at), self.key(at), index))

        return loop("t", sop.sub(hi, lo), body)

    def run(self) -> Stmt:
        """The pass: full pairs two at a time, then what is left (at most a full pair and a
        short one, or a lone run) pair by pair."""
        m, w = self.line.m, self.width
        quad = sop.mul(w, 4)

        def rest(start: Var) -> Stmt:
            def pair(r: Var) -> Stmt:
                return bind(
                    [
                        ("lo", lambda v: sop.add(start, sop.mul(r, sop.mul(w, 2)))),
                        ("mid", lambda v: sop.min_expr(sop.add(v["lo"], w), m)),
                        ("hi", lambda v: sop.min_expr(sop.add(v["mid"], w), m)),
                    ],
                    lambda v: IfThenElse(
                        sop.less(v["mid"], v["hi"]),
                        self.pair(v["lo"], v["mid"], v["hi"]),
                        self.copy(v["lo"], v["hi"]),
                    ),
                )

            left = sop.sub(m, start)
            count = sop.floordiv(sop.add(left, sop.sub(sop.mul(w, 2), 1)), sop.mul(w, 2))
            return loop("pair", count, pair)

        return bind(
            [("quads", lambda v: sop.floordiv(m, quad))],
            lambda v: seq(
                loop("quad", v["quads"], lambda q: self.two_full_pairs(sop.mul(q, quad))),
                let("start", sop.mul(v["quads"], quad), rest),
            ),
        )


def merge_passes(line: Line, heads: Scalars, width: Scalars) -> Stmt:
    """Phase 3: pairs of merge passes (first half -> second -> first) until one run is left;
    past the last needed pass a pair is skipped, within it an extra pass only copies."""
    n = line.n

    def pass_pair(_q: Var) -> Stmt:
        def one(h: Var) -> Stmt:
            src = sop.mul(h, n)
            step = _Pass(line, width["w"], src, sop.sub(n, src), heads).run()
            return seq(step, width.set("w", sop.mul(width["w"], 2)))

        return IfThenElse(sop.less(width["w"], line.m), loop("half", i64(2), one))

    if isinstance(n, IntImm):
        runs = -(-int(n.value) // RUN)
        pairs = ((runs - 1).bit_length() + 1) // 2
    else:
        pairs = _SYMBOLIC_PAIRS
    return seq(width.set("w", i64(RUN)), loop("q", i64(pairs), pass_pair))
