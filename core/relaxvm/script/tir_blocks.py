"""The block constructs of the ``T`` namespace: ``T.block``, ``T.axis.*``, ``T.reads``,
``T.writes``, ``T.where``, ``T.init``, ``T.block_attr``.

They evaluate to small specs that the ``@T.prim_func`` parser
(:mod:`relaxvm.script.tir_block_parser`) turns into
:class:`~relaxvm.ir.tir.Block` / :class:`~relaxvm.ir.tir.BlockRealize` nodes; outside a
``with T.block(...):`` they are errors.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..ir.tir.block import IterVarType

__all__ = [
    "AxisSpec",
    "BlockSpec",
    "InitSpec",
    "axis",
    "block",
    "block_attr",
    "init",
    "reads",
    "where",
    "writes",
]


class BlockSpec(NamedTuple):
    """``T.block(name)``: what ``with T.block("C"):`` opens."""

    name: str
    no_realize: bool = False


def block(name: str = "", no_realize: bool = False) -> BlockSpec:
    """``with T.block("C"):``: a block; its body declares its axes, regions and code."""
    if not isinstance(name, str):
        raise TypeError(f"T.block: name must be a str, got {name!r}")
    return BlockSpec(name, no_realize)


class InitSpec(NamedTuple):
    """``T.init()``: what ``with T.init():`` opens."""


def init() -> InitSpec:
    """``with T.init():``: the statement a reduction block starts from."""
    return InitSpec()


class AxisSpec(NamedTuple):
    """One block iteration variable: its kind, domain ``(min, extent)`` (None: the extent of
    the loop it is bound to, for ``T.axis.remap``) and bound value."""

    kind: IterVarType
    dom: tuple[Any, Any] | None
    value: Any
    dtype: str | None = None


def _dom(dom: Any, where: str) -> tuple[Any, Any]:
    # An extent, or TVM's (begin, end) pair / Range.
    if isinstance(dom, (tuple, list)):
        if len(dom) != 2:
            raise TypeError(f"{where}: a domain pair must be (begin, end), got {dom!r}")
        begin, end = dom
        return begin, end - begin
    if hasattr(dom, "min") and hasattr(dom, "extent"):
        return dom.min, dom.extent
    return 0, dom


class _Axis:
    """``T.axis``: ``spatial``, ``reduce``, ``scan``, ``opaque`` and ``remap``."""

    def spatial(self, dom: Any, binding: Any, dtype: str | None = None) -> AxisSpec:
        """``vi = T.axis.spatial(128, i)``: a data-parallel iteration variable."""
        return AxisSpec(IterVarType.DATA_PAR, _dom(dom, "T.axis.spatial"), binding, dtype)

    def reduce(self, dom: Any, binding: Any, dtype: str | None = None) -> AxisSpec:
        """``vk = T.axis.reduce(128, k)``: a reduction iteration variable."""
        return AxisSpec(IterVarType.COMM_REDUCE, _dom(dom, "T.axis.reduce"), binding, dtype)

    def scan(self, dom: Any, binding: Any, dtype: str | None = None) -> AxisSpec:
        """``vt = T.axis.scan(n, t)``: an ordered iteration variable."""
        return AxisSpec(IterVarType.ORDERED, _dom(dom, "T.axis.scan"), binding, dtype)

    def opaque(self, dom: Any, binding: Any, dtype: str | None = None) -> AxisSpec:
        """``vo = T.axis.opaque(n, o)``: an opaque iteration variable."""
        return AxisSpec(IterVarType.OPAQUE, _dom(dom, "T.axis.opaque"), binding, dtype)

    def remap(self, kinds: str, bindings: Any, dtype: str | None = None) -> list[AxisSpec]:
        """``vi, vj, vk = T.axis.remap("SSR", [i, j, k])``: one variable per loop variable,
        spatial (``S``) or reduction (``R``), over that loop's domain."""
        items = list(bindings)
        if not isinstance(kinds, str) or len(kinds) != len(items):
            raise TypeError(
                f"T.axis.remap: {kinds!r} must be a string with one kind (S or R) per binding; "
                f"got {len(items)} bindings"
            )
        table = {"S": IterVarType.DATA_PAR, "R": IterVarType.COMM_REDUCE}
        specs = []
        for kind, value in zip(kinds, items, strict=True):
            if kind not in table:
                raise ValueError(f"T.axis.remap: unknown iteration kind {kind!r}; expected S or R")
            specs.append(AxisSpec(table[kind], None, value, dtype))
        return specs

    # TVM's short spellings: T.axis.S(128, i), T.axis.R(128, k).
    S = spatial
    R = reduce

    def __repr__(self) -> str:
        return "T.axis"


axis = _Axis()


def _only_in_block(name: str) -> RuntimeError:
    return RuntimeError(f"{name} may only appear as a statement directly inside a T.block")


def reads(*regions: Any) -> None:
    """``T.reads(A[vi, 0:128], B[vi])``: the regions a block reads."""
    raise _only_in_block("T.reads")


def writes(*regions: Any) -> None:
    """``T.writes(C[vi, vj])``: the regions a block writes."""
    raise _only_in_block("T.writes")


def where(predicate: Any) -> None:
    """``T.where(i * 4 + j < 10)``: the block runs only where ``predicate`` holds."""
    raise _only_in_block("T.where")


def block_attr(attrs: dict[str, Any]) -> None:
    """``T.block_attr({...})``: block annotations."""
    raise _only_in_block("T.block_attr")
