"""The ``llvm`` target kind: build, serialize and load CPU kernel modules.

Target attributes (``Target("llvm -mcpu=... -mattr=... -fastmath=...")``):

``mcpu``
    LLVM CPU name; defaults to the host's (``llvm.get_host_cpu_name()``). ``native`` means
    the host.
``mattr``
    LLVM feature string; defaults to the host's features. When ``mcpu`` names another CPU
    and ``mattr`` is left at the host default, the CPU's own features are used instead.
``fastmath``
    Fast-math flags on float arithmetic: a comma list of ``reassoc``, ``contract``, ``nsz``,
    ``arcp``, ``afn``, or ``strict`` (none) or ``fast`` (all of those; never ``nnan`` or
    ``ninf``, which would break NaN/inf handling). Default ``contract,reassoc,nsz``: FMA
    contraction and vectorized reductions, with results equal up to rounding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.tir import PrimFunc
from relaxvm.runtime.module import Module

from . import jit
from .cache import cache_key, default_cache
from .codegen import CompiledObject, compile_prim_funcs
from .errors import LLVMBuildError
from .kernel import Kernel
from .progress import Progress
from .serialize import dumps, loads

__all__ = ["LLVMModule", "build", "default_attrs", "load", "serialize", "target_info"]

DEFAULT_FASTMATH = ("contract", "reassoc", "nsz")
_ALLOWED_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")


class LLVMModule(Module):
    """A runtime module of compiled CPU kernels (the result of :func:`build`).

    Its functions are :class:`~relaxvm_llvm.kernel.Kernel` objects, by kernel name.

    Attributes
    ----------
    compiled : CompiledObject
        The object code, signatures and target description (what :func:`serialize` writes).
    """

    type_key = "llvm"

    def __init__(self, compiled: CompiledObject) -> None:
        engine = None
        kernels = {}
        if compiled.signatures:
            engine = jit.load_object(compiled.object_code, compiled.info)
            for signature in compiled.signatures:
                address = engine.address(signature.symbol)
                kernels[signature.name] = Kernel(signature, address, engine)
        super().__init__(kernels, name="llvm")
        self.compiled = compiled
        self._engine = engine

    def get_source(self, fmt: str = "ll") -> str:
        """The optimized LLVM IR (``"ll"``) or assembly (``"asm"``) of the kernels.

        Raises
        ------
        LLVMBuildError
            The module was loaded from bytes (only object code is stored), or an unknown fmt.
        """
        if fmt not in ("ll", "asm"):
            raise LLVMBuildError(f"LLVMModule.get_source: fmt must be 'll' or 'asm', got {fmt!r}")
        text = self.compiled.llvm_ir
        if not text:
            raise LLVMBuildError(
                "LLVMModule.get_source: no IR kept (the module was loaded from serialized bytes)"
            )
        if fmt == "ll":
            return text
        import llvmlite.binding as llvm

        with jit.LLVM_LOCK:
            return jit.emit_assembly(llvm.parse_assembly(text), self.compiled.info)

    @property
    def kernels(self) -> dict[str, Kernel]:
        """The kernels by name."""
        return dict(self._functions)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        info = self.compiled.info
        return (
            f"<LLVMModule {len(self._functions)} kernels for {info.cpu}: "
            f"{', '.join(self.list_functions())}>"
        )


def default_attrs() -> dict[str, Any]:
    """The host CPU and its features (what ``Target("llvm")`` compiles for)."""
    return {"mcpu": jit.host_cpu_name(), "mattr": jit.host_cpu_features()}


def _fastmath(value: Any) -> tuple[str, ...]:
    if value is None:
        return DEFAULT_FASTMATH
    if value is True or value == "fast":
        return _ALLOWED_FLAGS
    if value is False or value in ("strict", "none", ""):
        return ()
    flags = tuple(f.strip() for f in str(value).split(",") if f.strip())
    bad = [f for f in flags if f not in _ALLOWED_FLAGS]
    if bad:
        raise LLVMBuildError(
            f"llvm target: fastmath flags {bad} are not allowed; use {list(_ALLOWED_FLAGS)}, "
            "'fast' or 'strict'"
        )
    return flags


def target_info(target: Any = None) -> jit.TargetInfo:
    """The code generation settings for a ``Target`` (or attribute mapping, or None: host)."""
    attrs: Mapping[str, Any] = {}
    if target is not None:
        attrs = getattr(target, "attrs", target)
        if not isinstance(attrs, Mapping):
            raise LLVMBuildError(f"llvm target: expected a Target, got {type(target).__name__}")
    host_cpu, host_features = jit.host_cpu_name(), jit.host_cpu_features()
    cpu = attrs.get("mcpu") or host_cpu
    if cpu == "native":
        cpu = host_cpu
    features = attrs.get("mattr")
    if features is None or (features == host_features and cpu != host_cpu):
        features = host_features if cpu == host_cpu else ""
    if not isinstance(cpu, str) or not isinstance(features, str):
        raise LLVMBuildError(
            f"llvm target: mcpu and mattr must be strings, got {cpu!r}, {features!r}"
        )
    return jit.TargetInfo(cpu, features, _fastmath(attrs.get("fastmath")))


def _prim_funcs(mod: Any) -> list[tuple[str, PrimFunc]]:
    if isinstance(mod, PrimFunc):
        return [(mod.name, mod)]
    items = mod.items() if hasattr(mod, "items") else list(mod)
    funcs = []
    for key, func in items:
        if not isinstance(func, PrimFunc):
            continue  # Relax functions are the VM's business
        name = func.attrs.get("global_symbol") or getattr(key, "name_hint", key)
        funcs.append((str(name), func))
    return funcs


def build(mod: Any, target: Any = None) -> LLVMModule:
    """Compile every ``tir.PrimFunc`` of ``mod`` into native kernels.

    Results are cached on disk by kernel text and target (:mod:`relaxvm_llvm.cache`;
    ``RELAXVM_CACHE=0`` disables); long builds report progress on stderr
    (:mod:`relaxvm_llvm.progress`).

    Parameters
    ----------
    mod : IRModule, mapping of name to PrimFunc, or PrimFunc
        Kernels are named by their ``global_symbol`` attribute, else their name in ``mod``.
    target : Target, optional
        An ``llvm`` target (host CPU by default).

    Returns
    -------
    LLVMModule
        Callable kernels by name: ``module["add"](a, b, out)``.

    Raises
    ------
    LLVMBuildError
        A kernel uses an unsupported construct or LLVM rejects it (naming the kernel).
    """
    info = target_info(target)
    funcs = _prim_funcs(mod)
    store = default_cache() if funcs else None
    key = ""
    if store is not None:
        key = cache_key(funcs, info)
        hit = store.get(key)
        if hit is not None:
            try:
                return LLVMModule(hit)
            except LLVMBuildError:
                store.discard(key)  # unloadable entry: rebuild and overwrite it
    report = Progress(len(funcs), f"llvm ({info.cpu})")
    try:
        compiled = compile_prim_funcs(funcs, info, report)
    except BaseException:
        report.close(failed=True)
        raise
    report.close()
    if store is not None:
        store.put(key, compiled)
    return LLVMModule(compiled)


def serialize(module: Module) -> bytes:
    """The bytes :func:`load` turns back into the same kernels (object code, no TIR)."""
    if not isinstance(module, LLVMModule):
        raise LLVMBuildError(
            f"llvm target: can only serialize modules built by the llvm target, got "
            f"{type(module).__name__}"
        )
    return dumps(module.compiled)


def load(data: bytes, target: Any = None) -> LLVMModule:
    """Reload serialized kernels without recompiling (no C compiler needed).

    Raises
    ------
    ExecutableFormatError
        Truncated, tampered or foreign data, another format version, or code built for a CPU
        whose features this host lacks.
    """
    compiled = loads(data)
    try:
        return LLVMModule(compiled)
    except LLVMBuildError as err:
        raise ExecutableFormatError(f"llvm module: cannot load the object code: {err}") from None
