"""Constant weights packed once, at compile time.

The matmul-like schedules read the reused operand ``B`` of a product from tile-major panels,
``packed[tile, k..., lane] = B[k..., tile * V + lane]`` (:class:`~.packing.Packing`), which
they otherwise copy at the start of every call. When ``B`` is a constant of the model (a
``relax.Constant`` passed straight to ``R.call_tir``, as every initializer of an imported
ONNX model is), :func:`prepack_module` makes that copy once with numpy and gives the kernel
the packed constant instead:

1. every ``call_tir`` site of a PrimFunc whose input ``i`` is a :class:`Constant` offers
   parameter ``i``;
2. the PrimFunc is scheduled with those parameters offered (:func:`~.packing.prepacking`):
   the register tiles, the small-row path and the dense ``x @ W.T`` tiles read the packed
   copy, whose last tile is padded with zeros, and nothing copies it. The result is a
   *variant* of the kernel (``<name>_prepacked``) whose parameter ``i`` is the packed buffer
   ``(tiles, K..., V)``; it is kept only when no statement still reads the original buffer;
3. those sites call the variant, with the constant replaced by its packed copy (same
   dtype; one copy per constant and layout, shared by the sites that use it).

Sites with a non-constant argument keep calling the original kernel, which is removed only
when nothing calls it any more. Everything is a function of the module and the target, so
the result is deterministic, and the packed constant is a plain constant of the executable
(saved and loaded like any other).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relaxvm.ir import Var
from relaxvm.ir.relax import Call, Constant, Function, GlobalVar, Op, Tuple
from relaxvm.ir.relax.expr_functor import ExprMutator, ExprVisitor
from relaxvm.ir.tir import Buffer, BufferStore, PrimFunc, Stmt, StmtVisitor
from relaxvm.ir.tir.stages import loads_of
from relaxvm.runtime.creation import tensor

from .config import CpuConfig
from .dispatch import _schedule
from .packing import PackLayout, prepacking

__all__ = ["PREPACKED_SUFFIX", "pack_array", "prepack_module", "prepack_prim_func"]

#: The name a kernel variant reading packed constants gets: ``<kernel>_prepacked``.
PREPACKED_SUFFIX = "_prepacked"

#: ``op_pattern`` of opaque kernels, which the schedules leave alone.
_OPAQUE_PATTERN = 8
_SCHEDULED_ATTR = "relaxvm.scheduled"


@dataclass(frozen=True)
class _Variant:
    """A kernel variant: its scheduled function and the layout of each packed input."""

    func: PrimFunc
    layouts: dict[int, PackLayout]


def pack_array(data: np.ndarray, layout: PackLayout) -> np.ndarray:
    """The packed copy of ``data`` (the operand ``B``) for ``layout``:
    ``packed[t, k0, ..., lane] = B[...]`` (see :class:`~.packing.PackLayout`), shape
    ``layout.shape``, the columns of the last tile past ``layout.columns`` zero."""
    if data.ndim != len(layout.axes):
        raise ValueError(f"pack_array: {data.ndim}-d data for a {len(layout.axes)}-d layout")
    index: list[Any] = []
    kept: list[tuple[str, int]] = []
    for kind, value in layout.axes:
        if kind == "c":
            index.append(value)
        else:
            index.append(slice(0, layout.columns if kind == "n" else layout.red_extents[value]))
            kept.append((kind, value))
    view = data[tuple(index)]
    # Order the axes as (k0, ..., n); a reduction axis B does not use is broadcast.
    order = [kept.index(("k", i)) for i in range(len(layout.red_extents)) if ("k", i) in kept]
    view = np.transpose(view, [*order, kept.index(("n", 0))])
    shape = [
        layout.red_extents[i] if ("k", i) in kept else 1 for i in range(len(layout.red_extents))
    ]
    view = np.broadcast_to(
        view.reshape(*shape, layout.columns), (*layout.red_extents, layout.columns)
    )
    padded = np.zeros((*layout.red_extents, layout.tiles * layout.cols), dtype=data.dtype)
    padded[..., : layout.columns] = view
    tiled = padded.reshape(*layout.red_extents, layout.tiles, layout.cols)
    return np.ascontiguousarray(np.moveaxis(tiled, -2, 0))


class _Referenced(StmtVisitor):
    """Every buffer a statement loads or stores."""

    def __init__(self) -> None:
        self.buffers: set[Buffer] = set()

    def visit_expr(self, expr: Any) -> None:
        self.buffers.update(load.buffer for load in loads_of(expr))

    def visit_buffer_store_(self, stmt: BufferStore) -> None:
        self.buffers.add(stmt.buffer)
        super().visit_buffer_store_(stmt)


def _referenced(stmt: Stmt) -> set[Buffer]:
    visitor = _Referenced()
    visitor.visit_stmt(stmt)
    return visitor.buffers


def prepack_prim_func(
    func: PrimFunc, positions: Sequence[int], config: CpuConfig
) -> tuple[PrimFunc, dict[int, PackLayout]] | None:
    """Schedule ``func`` reading its inputs at ``positions`` from copies packed at compile
    time, where the schedules can.

    Returns
    -------
    (PrimFunc, dict) or None
        The scheduled variant, whose parameter at each packed position is the packed buffer,
        and the layout of each packed position (:func:`pack_array` builds the argument); None
        when no input could be read packed.
    """
    offered = {func.buffer_map[func.params[i]]: i for i in positions}
    while True:
        with prepacking(offered) as state:
            scheduled, _ = _schedule(func, config, "prepack")
        made = {b: m for b, m in state.made.items() if b in offered and b not in state.conflicts}
        if not made:
            return None
        still = _referenced(scheduled.body)
        dirty = {b for b in made if b in still}
        if not dirty:
            break
        # An operand some statement still reads unpacked cannot be replaced: schedule again
        # offering only the others.
        offered = {b: p for b, p in offered.items() if b not in dirty}
        if not offered:
            return None
    params = list(func.params)
    buffer_map = dict(func.buffer_map)
    layouts: dict[int, PackLayout] = {}
    for buffer, (layout, packed) in made.items():
        position = offered[buffer]
        handle = Var(f"{packed.name}_handle", "handle")
        del buffer_map[params[position]]
        params[position] = handle
        buffer_map[handle] = packed
        layouts[position] = layout
    variant = PrimFunc(params, scheduled.body, buffer_map, scheduled.attrs)
    return variant, layouts


def _is_call_tir(expr: Any) -> bool:
    return (
        isinstance(expr, Call)
        and isinstance(expr.op, Op)
        and expr.op.name == "relax.call_tir"
        and len(expr.args) >= 2
        and isinstance(expr.args[0], GlobalVar)
        and isinstance(expr.args[1], Tuple)
    )


def _kernel(mod: Any, call: Call) -> PrimFunc | None:
    """The PrimFunc a ``call_tir`` calls, when the schedules may still rewrite it."""
    name = call.args[0].name_hint  # type: ignore[attr-defined]
    if name not in mod:
        return None
    func = mod[name]
    if not isinstance(func, PrimFunc) or func.attrs.get(_SCHEDULED_ATTR):
        return None
    return None if func.attrs.get("op_pattern") == _OPAQUE_PATTERN else func


def _constant_positions(func: PrimFunc, call: Call) -> frozenset[int]:
    """The inputs of a ``call_tir`` that are constants matching their parameter exactly."""
    fields = call.args[1].fields  # type: ignore[attr-defined]
    return frozenset(
        i for i, f in enumerate(fields) if isinstance(f, Constant) and _matches(func, i, f)
    )


def _matches(func: PrimFunc, position: int, constant: Constant) -> bool:
    """Whether ``constant`` fits input ``position`` exactly (static shape, same dtype)."""
    if position >= len(func.params):
        return False
    buffer = func.buffer_map.get(func.params[position])
    if buffer is None:
        return False
    shape = [getattr(d, "value", None) for d in buffer.shape]
    data = constant.data
    return shape == list(data.shape) and str(buffer.dtype) == str(data.dtype)


class _Sites(ExprVisitor):
    """Each eligible kernel's call sites: the positions of their constant arguments."""

    def __init__(self, mod: Any) -> None:
        self.mod = mod
        self.sites: dict[str, list[frozenset[int]]] = {}

    def visit_call_(self, expr: Call) -> None:
        super().visit_call_(expr)
        if not _is_call_tir(expr):
            return
        func = _kernel(self.mod, expr)
        if func is not None:
            name = expr.args[0].name_hint  # type: ignore[attr-defined]
            self.sites.setdefault(name, []).append(_constant_positions(func, expr))


class _Rewriter(ExprMutator):
    """Points call sites at their variant and packs their constants."""

    def __init__(
        self,
        mod: Any,
        variants: dict[tuple[str, frozenset[int]], tuple[GlobalVar, dict[int, PackLayout]]],
        packable: dict[str, frozenset[int]],
    ) -> None:
        super().__init__(mod)
        self.mod = mod
        self.variants = variants
        self.packable = packable
        self.packed: dict[tuple[int, PackLayout], tuple[Constant, Constant]] = {}

    def _pack(self, constant: Constant, layout: PackLayout) -> Constant:
        key = (id(constant), layout)
        found = self.packed.get(key)
        if found is None:
            data = constant.data
            array = pack_array(data.numpy(), layout)
            # Keep the original alive with its copy, so that its id is not reused.
            found = self.packed[key] = (constant, Constant(tensor(array, dtype=data.dtype)))
        return found[1]

    def visit_call_(self, expr: Call) -> Any:
        call = super().visit_call_(expr)
        if not _is_call_tir(call):
            return call
        assert isinstance(call, Call)
        func = _kernel(self.mod, call)
        if func is None:
            return call
        name = call.args[0].name_hint  # type: ignore[attr-defined]
        positions = _constant_positions(func, call) & self.packable.get(name, frozenset())
        found = self.variants.get((name, positions))
        if found is None:
            return call
        gvar, layouts = found
        fields = list(call.args[1].fields)  # type: ignore[attr-defined]
        for position in sorted(positions):
            fields[position] = self._pack(fields[position], layouts[position])
        args = [gvar, Tuple(fields), *call.args[2:]]
        return Call(call.op, args, call.attrs, call.sinfo_args, None, call.span)


def _fresh_name(mod: Any, base: str) -> str:
    name, count = base, 1
    while name in mod:
        name, count = f"{base}{count}", count + 1
    return name


def prepack_module(mod: Any, config: CpuConfig) -> Any:
    """Call kernel variants reading packed copies of constant weights (see the module
    docstring); returns a new module (``mod`` is unchanged), or ``mod`` itself when no
    call site qualifies. Variants are scheduled; other kernels are left to the caller."""
    finder = _Sites(mod)
    for _, func in mod.items():
        if isinstance(func, Function):
            finder.visit_expr(func)
    result = mod.copy()
    variants: dict[tuple[str, frozenset[int]], tuple[GlobalVar, dict[int, PackLayout]]] = {}
    packables: dict[str, frozenset[int]] = {}
    replaced: set[str] = set()
    for name, sites in finder.sites.items():
        offered = sorted(set().union(*sites))
        if not offered:
            continue
        func = mod[name]
        # Which inputs can be packed at all, when every constant one is offered.
        trial = prepack_prim_func(func, offered, config)
        if trial is None:
            continue
        packable = packables[name] = frozenset(trial[1])
        wanted = sorted({site & packable for site in sites if site & packable}, key=sorted)
        for positions in wanted:
            made = (
                trial
                if positions == packable
                else prepack_prim_func(func, sorted(positions), config)
            )
            if made is None or frozenset(made[1]) != positions:
                continue
            suffix = (
                PREPACKED_SUFFIX
                if len(wanted) == 1
                else PREPACKED_SUFFIX + "_" + "_".join(str(p) for p in sorted(positions))
            )
            new_name = _fresh_name(result, name + suffix)
            variant = made[0]
            if "global_symbol" in variant.attrs:  # its own symbol beside the original's
                variant = variant.with_attr("global_symbol", new_name)
            variants[(name, positions)] = (result.add(new_name, variant), made[1])
            replaced.add(name)
    if not variants:
        return mod
    rewriter = _Rewriter(mod, variants, packables)
    for gvar, func in mod.items():
        if isinstance(func, Function):
            new = rewriter.visit_expr(func)
            if new is not func:
                result.update_func(gvar.name_hint, new)
    # Originals that Relax code no longer calls go (kernels are reached only through it).
    still = _Uses()
    for _, func in result.items():
        if isinstance(func, Function):
            still.visit_expr(func)
    for name in sorted(replaced):
        if name not in still.names:
            result.remove(name)
    return result


class _Uses(ExprVisitor):
    """Names of the GlobalVars Relax code mentions."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_leaf_(self, expr: Any) -> None:
        if isinstance(expr, GlobalVar):
            self.names.add(expr.name_hint)
