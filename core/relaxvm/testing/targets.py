"""A test-only target kind whose "compiled" kernels run on the TIR reference interpreter.

``interpreter_target()`` makes a :class:`~relaxvm.registry.extensions.TargetKind` (default name
``"interp"``) whose ``build`` wraps every PrimFunc in a function that calls
:func:`relaxvm.ir.tir.run_prim_func` on the tensors' host arrays, in destination-passing
style, as a compiled kernel would. It lets the compiler be tested end to end before (and
beside) a real code generator. Its ``serialize`` / ``load`` keep the kernels in this process
(bytes name them in a table), so ``export_library`` round trips can be tested too; a file
made in another process does not load.

>>> from relaxvm.testing import interpreter_target, registered_target
>>> with registered_target(interpreter_target()):  # doctest: +SKIP
...     ex = relaxvm.compile(mod, "interp")
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import ExecutableFormatError, RelaxVMError
from ..registry import extensions
from ..registry.extensions import TargetKind
from ..runtime import Module, Tensor

__all__ = [
    "TEST_DOUBLES",
    "interpreter_target",
    "missing_device_reason",
    "real_target_kinds",
    "registered_target",
]

# Kernels handed out by serialize(), by key, for load() in the same process.
_KERNEL_TABLE: dict[str, Any] = {}


def _wrap(func: Any) -> Callable[..., None]:
    from ..ir.tir import run_prim_func

    def kernel(*args: Any) -> None:
        arrays = [a.host_array() if isinstance(a, Tensor) else a for a in args]
        run_prim_func(func, *arrays)

    kernel.__name__ = str(func.attrs.get("global_symbol", "kernel"))
    return kernel


class _InterpModule(Module):
    """The kernels of one build: symbol -> wrapped PrimFunc."""

    type_key = "interp"

    def __init__(self, prim_funcs: dict[str, Any]) -> None:
        super().__init__({name: _wrap(f) for name, f in prim_funcs.items()}, name="interp")
        self.prim_funcs = prim_funcs


def _build(mod: Any, target: Any) -> Module:
    from ..ir.tir import PrimFunc

    funcs = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, PrimFunc):
            funcs[str(func.attrs.get("global_symbol", gvar.name_hint))] = func
    return _InterpModule(funcs)


def _serialize(module: Module) -> bytes:
    if not isinstance(module, _InterpModule):
        raise ExecutableFormatError(f"interp target: cannot serialize {module!r}")
    keys = {}
    for name, func in module.prim_funcs.items():
        key = f"{name}@{id(func):x}"
        _KERNEL_TABLE[key] = func
        keys[name] = key
    return json.dumps(keys, sort_keys=True).encode()


def _load(data: bytes, target: Any) -> Module:
    try:
        keys = json.loads(bytes(data).decode())
        funcs = {name: _KERNEL_TABLE[key] for name, key in keys.items()}
    except (ValueError, KeyError, AttributeError) as err:
        raise ExecutableFormatError(
            f"interp target: these kernels were not serialized by this process ({err})"
        ) from None
    return _InterpModule(funcs)


def interpreter_target(name: str = "interp", serializable: bool = True) -> TargetKind:
    """A CPU target kind whose kernels run on the TIR reference interpreter (for tests)."""
    return TargetKind(
        name=name,
        device="cpu",
        build=_build,
        serialize=_serialize if serializable else None,
        load=_load if serializable else None,
        doc="test-only: kernels run on relaxvm.ir.tir.run_prim_func",
    )


@contextlib.contextmanager
def registered_target(kind: TargetKind) -> Iterator[TargetKind]:
    """Register ``kind`` for the block (replacing one of the same name), then restore."""
    saved = extensions._snapshot()
    try:
        extensions.register_target_kind(kind, override=True, source="relaxvm.testing")
        yield kind
    finally:
        extensions._restore(saved)


#: Test-only target kinds known by name: the conformance plugin registers one for the duration
#: of its tests when it is selected and no plugin registered that name.
TEST_DOUBLES: dict[str, Callable[[], TargetKind]] = {"interp": interpreter_target}


def _is_test_only(name: str, source: str) -> bool:
    kind = extensions.get_target_kind(name)
    return source.startswith("relaxvm.testing") or kind.doc.startswith("test-only")


def real_target_kinds() -> list[str]:
    """Every registered target kind that is not a test double, sorted by name.

    Kinds whose device is absent on this machine are included: the conformance matrix skips
    them with a reason (see :func:`missing_device_reason`) rather than leaving them out.
    """
    return [
        name
        for name, source in extensions.list_target_kinds().items()
        if not _is_test_only(name, source)
    ]


def missing_device_reason(name: str) -> str | None:
    """Why target kind ``name`` cannot run on this machine (its device is absent), or ``None``.

    Raises
    ------
    RegistryError
        No plugin registered ``name``.
    """
    from ..runtime.device import device as make_device

    kind = extensions.get_target_kind(name)
    try:
        present = make_device(kind.device).exist
    except RelaxVMError:  # a device kind no installed plugin provides: absent too
        present = False
    if present:
        return None
    return f"target {name!r} needs a {kind.device!r} device, and there is none on this machine"
