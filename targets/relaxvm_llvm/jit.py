"""llvmlite plumbing: target machines, the O3 pipeline, object emission and loading.

Every build takes the same path, which is also the path of a reloaded export: LLVM IR text is
parsed and verified, optimized (O3 with loop and SLP vectorization), emitted as a
position-independent object file, and that object is added to a fresh MCJIT engine. Loading
an exported module therefore runs exactly the code that was tested, without recompiling.

External symbols the generated code needs (the parallel launcher, the thread count) are
process-wide and registered once with ``llvm.add_symbol`` (see :mod:`.parallel`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache
from typing import Any

import llvmlite.binding as llvm

from .errors import LLVMBuildError

__all__ = [
    "Engine",
    "TargetInfo",
    "emit_object",
    "host_cpu_features",
    "host_cpu_name",
    "load_object",
    "optimize_module",
]

_init_lock = threading.Lock()
#: Serializes everything that touches LLVM's global context (parsing, optimizing, linking).
LLVM_LOCK = threading.RLock()
_initialized = False


def _ensure_initialized() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            # llvm.initialize() raises in llvmlite >= 0.45; the native target is enough.
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


@cache
def host_cpu_name() -> str:
    """LLVM's name for the host CPU (``"znver3"``)."""
    _ensure_initialized()
    return str(llvm.get_host_cpu_name())


@cache
def host_cpu_features() -> str:
    """The host CPU's features as LLVM's ``+a,-b,...`` string."""
    _ensure_initialized()
    return str(llvm.get_host_cpu_features().flatten())


@cache
def host_enabled_features() -> frozenset[str]:
    """The names of the features the host CPU has."""
    return frozenset(enabled_features(host_cpu_features()))


def enabled_features(features: str) -> list[str]:
    """The ``+name`` entries of a feature string, without the ``+``."""
    return [f[1:] for f in features.split(",") if f.startswith("+")]


def process_triple() -> str:
    """The triple of this process (``x86_64-unknown-linux-gnu``)."""
    _ensure_initialized()
    return str(llvm.get_process_triple())


class TargetInfo:
    """What code is generated for: triple, CPU, features, fast-math flags.

    Parameters
    ----------
    cpu, features : str
        LLVM CPU name and feature string.
    fastmath : tuple of str
        The fast-math flags put on floating point arithmetic.
    """

    __slots__ = ("cpu", "fastmath", "features", "triple")

    def __init__(self, cpu: str, features: str, fastmath: tuple[str, ...]) -> None:
        self.triple = process_triple()
        self.cpu = cpu
        self.features = features
        self.fastmath = fastmath

    def __repr__(self) -> str:
        return f"TargetInfo({self.triple}, cpu={self.cpu}, fastmath={','.join(self.fastmath)})"


_tm_cache: dict[tuple[str, str, str], Any] = {}
_tm_lock = threading.Lock()


def target_machine(triple: str, cpu: str, features: str) -> Any:
    """A cached PIC target machine at O3 (the same machine compiles and exports)."""
    _ensure_initialized()
    key = (triple, cpu, features)
    with _tm_lock:
        tm = _tm_cache.get(key)
        if tm is None:
            try:
                target = llvm.Target.from_triple(triple)
            except RuntimeError as err:
                raise LLVMBuildError(f"llvm target: unknown triple {triple!r}: {err}") from None
            tm = target.create_target_machine(
                cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default"
            )
            _tm_cache[key] = tm
        return tm


def optimize_module(mod: Any, info: TargetInfo) -> Any:
    """Run the O3 pipeline (loop and SLP vectorization on) over a verified ModuleRef."""
    tm = target_machine(info.triple, info.cpu, info.features)
    mod.triple = info.triple
    mod.data_layout = str(tm.target_data)
    from .compile_worker import run_o3_pipeline  # the pipeline worker processes run too

    run_o3_pipeline(mod, tm)
    return mod


def emit_object(mod: Any, info: TargetInfo) -> bytes:
    """Machine code for an optimized module, as ELF object bytes."""
    tm = target_machine(info.triple, info.cpu, info.features)
    return bytes(tm.emit_object(mod))


def emit_assembly(mod: Any, info: TargetInfo) -> str:
    """Assembly text for an optimized module (for inspection and tests)."""
    tm = target_machine(info.triple, info.cpu, info.features)
    return str(tm.emit_assembly(mod))


class Engine:
    """An MCJIT engine holding one object file; keeps the machine code alive.

    The kernels' ctypes wrappers hold a reference to their engine, so the code is freed only
    once nothing can call it any more.
    """

    __slots__ = ("__weakref__", "_ee", "_keep")

    def __init__(self, ee: Any, keep: Any) -> None:
        self._ee = ee
        self._keep = keep

    def address(self, symbol: str) -> int:
        """The address of ``symbol``; raises LLVMBuildError when it is missing."""
        address = int(self._ee.get_function_address(symbol))
        if not address:
            raise LLVMBuildError(f"llvm target: the object code has no function {symbol!r}")
        return address


def load_object(objects: Sequence[bytes], info: TargetInfo) -> Engine:
    """Link object files into a fresh MCJIT engine (no C compiler or linker involved)."""
    from . import parallel  # registers the runtime symbols the code refers to

    parallel.ensure_symbols()
    # The engine takes ownership of (and later deletes) its target machine: never pass it
    # a cached one.
    _ensure_initialized()
    with LLVM_LOCK:
        return _load_object(objects, info)


def _load_object(objects: Sequence[bytes], info: TargetInfo) -> Engine:
    try:
        tm = llvm.Target.from_triple(info.triple).create_target_machine(
            cpu=info.cpu, features=info.features, opt=3, reloc="pic", codemodel="default"
        )
        backing = llvm.parse_assembly("")
        backing.triple = info.triple
        ee = llvm.create_mcjit_compiler(backing, tm)
        refs = []
        for obj in objects:
            ref = llvm.ObjectFileRef.from_data(obj)
            ee.add_object_file(ref)
            refs.append(ref)
        ee.finalize_object()
    except RuntimeError as err:
        raise LLVMBuildError(f"llvm target: cannot load the object code: {err}") from None
    return Engine(ee, refs)
