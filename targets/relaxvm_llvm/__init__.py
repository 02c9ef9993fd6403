"""relaxvm's LLVM CPU target: TIR to native code through llvmlite.

``relaxvm_llvm.build(mod, target)`` compiles the PrimFuncs of an IRModule into callable
kernels (also reachable as the ``llvm`` target kind's ``build``); see ``docs/llvm_target.md``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "build",
    "describe_host",
    "get_num_threads",
    "load",
    "serialize",
    "set_num_threads",
    "set_parallel_cutoff",
]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package (as the plugin loader does) must not import llvmlite.
    if name in ("build", "load", "serialize"):
        from . import target

        return getattr(target, name)
    if name == "describe_host":
        from .schedule.config import describe_host

        return describe_host
    if name in ("get_num_threads", "set_num_threads", "set_parallel_cutoff", "get_parallel_cutoff"):
        from . import parallel

        return getattr(parallel, name)
    raise AttributeError(f"module 'relaxvm_llvm' has no attribute {name!r}")
