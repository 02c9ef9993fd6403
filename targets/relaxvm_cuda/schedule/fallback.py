"""The schedule of last resort: the whole kernel in one GPU thread (grid 1, block 1).

Slow but correct for any kernel: its loops run serially in the thread, and its ``global``
scratch buffers become static device arrays (the code generator allows that only in kernels
launched as one thread, and needs their sizes to be constant)."""

from __future__ import annotations

from relaxvm.ir.tir import For, ForKind, PrimFunc, post_order_visit

from .common import bound_loop

__all__ = ["has_thread_binding", "single_thread"]


def has_thread_binding(func: PrimFunc) -> bool:
    """Whether any loop of ``func`` is bound to a GPU thread axis."""
    found: list[For] = []

    def visit(node: object) -> None:
        if isinstance(node, For) and node.kind == ForKind.THREAD_BINDING:
            found.append(node)

    post_order_visit(func.body, visit)
    return bool(found)


def single_thread(func: PrimFunc) -> PrimFunc:
    """``func`` run by one thread of one block; unchanged if it already binds threads."""
    if has_thread_binding(func):
        return func
    body = bound_loop(
        "blockIdx_x", 1, "blockIdx.x", lambda bx: bound_loop("threadIdx_x", 1, "threadIdx.x",
                                                             lambda tx: func.body)
    )  # fmt: skip
    return func.with_body(body)
