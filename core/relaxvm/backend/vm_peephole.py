"""Bytecode clean-ups run on one function's instructions before jump offsets are fixed.

Today one: :func:`reuse_make_shape`. VMShapeLower emits a ``vm.builtin.make_shape`` for every
shape it needs, so a model whose tensors share a symbolic shape (every layer of an MLP with a
symbolic batch size) builds the same Shape, from the same heap slots, once per allocation.
Each call costs a Python call at run time, so repeats in straight-line code are dropped and
their readers pointed at the first result.
"""

from __future__ import annotations

from typing import Any

from ..vm.bytecode import Arg, ArgKind

__all__ = ["reuse_make_shape"]

_MAKE_SHAPE = "vm.builtin.make_shape"


def reuse_make_shape(instrs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Drop a ``make_shape`` that repeats an earlier one with the same arguments.

    ``instrs`` is the code generator's list: ``("call", name, args, dst)``, ``("ret", reg)``,
    ``("goto", label)``, ``("if", reg, label)``, labels holding the index they jump to. The
    labels are moved to the new indices; the new list is returned.

    A repeat is dropped only when it is provably the same value:

    * both calls are in one straight-line stretch (no jump target, ``If`` or ``Goto`` between
      them), so the first always ran before the second;
    * no instruction between them writes any register they read or passes it to a callee
      (which could change the shape heap they load from);
    * both destination registers are written exactly once in the whole function, so every
      reader of the second sees the first's value (a killed or merged register is never
      shared).
    """
    writes: dict[Arg, int] = {}
    targets: set[int] = set()
    labels = []
    for ins in instrs:
        if ins[0] == "call":
            dst = ins[3]
            if dst is not None and dst.kind is ArgKind.REGISTER:
                writes[dst] = writes.get(dst, 0) + 1
        elif ins[0] == "goto":
            labels.append(ins[1])
            targets.add(ins[1].pc)
        elif ins[0] == "if":
            labels.append(ins[2])
            targets.add(ins[2].pc)

    cache: dict[tuple[Arg, ...], Arg] = {}
    rename: dict[Arg, Arg] = {}
    out: list[tuple[Any, ...]] = []
    new_index: list[int] = []
    for pc, ins in enumerate(instrs):
        new_index.append(len(out))
        if pc in targets:
            cache.clear()
        kind = ins[0]
        if kind == "call":
            _, name, args, dst = ins
            if rename:
                args = [rename.get(a, a) for a in args]
            single = dst is not None and dst.kind is ArgKind.REGISTER and writes.get(dst) == 1
            if name == _MAKE_SHAPE and single:
                key = tuple(args)
                hit = cache.get(key)
                if hit is not None:
                    rename[dst] = hit
                    continue
                cache[key] = dst
            elif cache:
                # A callee given a register may change the object in it (a shape heap);
                # a write replaces it. Either ends the reuse of shapes made from it, and a
                # write to a result register ends the reuse of that result.
                touched = {a for a in args if a.kind is ArgKind.REGISTER}
                written = dst if dst is not None and dst.kind is ArgKind.REGISTER else None
                if written is not None:
                    touched.add(written)
                if touched:
                    cache = {
                        k: v for k, v in cache.items() if v != written and touched.isdisjoint(k)
                    }
            out.append(("call", name, args, dst))
        elif kind == "ret":
            out.append(("ret", rename.get(ins[1], ins[1])))
        elif kind == "if":
            out.append(("if", rename.get(ins[1], ins[1]), ins[2]))
            cache.clear()
        else:
            out.append(ins)
            cache.clear()
    new_index.append(len(out))
    if len(out) != len(instrs):
        for label in {id(label): label for label in labels}.values():
            label.pc = new_index[label.pc]
    return out
