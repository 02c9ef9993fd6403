"""The plugin's target kind, ``example_strict``: LLVM's CPU kernels with strict IEEE math.

A target kind is a :class:`relaxvm.registry.TargetKind`: a name, the device its kernels run on,
and the functions that build, save and reload them. This one brings no code generator of its
own. It changes one thing about the ``llvm`` kind (which relaxvm's own LLVM plugin registers):
its default ``fastmath`` attribute is ``"strict"``, so no floating-point operation is
contracted or reassociated and results do not depend on how a loop was vectorized. Everything
else is delegated to ``llvm``, looked up *by name* when it is needed, the way relaxvm itself
knows targets.

``Target("example_strict")`` is then ``Target("llvm -fastmath=strict")`` under a name of its own,
and the relaxvm conformance suite runs on it like on any target (see ``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaxvm.registry import TargetKind, get_target_kind

__all__ = ["KIND_NAME", "strict_target_kind"]

#: The name users write: ``relaxvm.compile(mod, "example_strict")``.
KIND_NAME = "example_strict"


def _llvm() -> TargetKind:
    return get_target_kind("llvm")


def _default_attrs() -> Mapping[str, Any]:
    llvm = _llvm()
    attrs = dict(llvm.default_attrs() if llvm.default_attrs else {})
    attrs["fastmath"] = "strict"
    return attrs


def _build(mod: Any, target: Any) -> Any:
    # ``target`` carries our attributes (fastmath=strict unless the user overrode it); the
    # llvm build reads only the attributes, not the kind's name.
    return _llvm().build(mod, target)


def _relax_passes(target: Any) -> list[Any]:
    llvm = _llvm()
    return llvm.relax_passes(target) if llvm.relax_passes else []


def _serialize(module: Any) -> bytes:
    serialize = _llvm().serialize
    assert serialize is not None, "the llvm kind exports executables"
    return serialize(module)


def _load(data: bytes, target: Any) -> Any:
    load = _llvm().load
    assert load is not None, "the llvm kind exports executables"
    return load(data, target)


def strict_target_kind() -> TargetKind:
    """The ``example_strict`` target kind (registered by :mod:`.plugin`)."""
    return TargetKind(
        name=KIND_NAME,
        device="cpu",
        build=_build,
        default_attrs=_default_attrs,
        relax_passes=_relax_passes,
        serialize=_serialize,
        load=_load,
        doc="example: the llvm CPU target with strict IEEE floating point (fastmath=strict)",
        options={
            "mcpu": "as for llvm",
            "mattr": "as for llvm",
            "fastmath": "as for llvm; default strict",
        },
    )
