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
    ``arcp``, ``afn``, ``nnan``, ``ninf``, or ``strict`` (none) or ``fast`` (the first five;
    ``nnan`` and ``ninf`` only when named, as they make NaN and infinite inputs give undefined
    results). Default ``contract,reassoc,nsz``: FMA contraction and vectorized reductions,
    with results equal up to rounding.
``fast-math``, ``fast-math-nnan``, ``fast-math-ninf``, ``fast-math-nsz``, ``fast-math-arcp``, ``fast-math-contract``, ``fast-math-reassoc``
    TVM's spellings (booleans): when any is given (and ``fastmath`` is not), the flags are
    exactly those set, ``fast-math`` meaning all seven, as in TVM.
``num-threads``, ``vector-bits``, ``tile``, ``l2-bytes``, ``l1-bytes``, ``pack``
    What the schedules size kernels for, instead of the host's values
    (:func:`relaxvm_llvm.schedule.cpu_config`, ``docs/llvm_target.md`` "Host-aware code
    generation"); ``-vector-bits`` wider than the CPU's vectors is refused.

Any other attribute, or a malformed value, raises :class:`relaxvm.target.TargetError` naming
it. The schedule choice is recorded in the module (:meth:`LLVMModule.describe`) and in its
exports, for ``relaxvm inspect``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from relaxvm.backend.cache_store import for_cache_entry
from relaxvm.errors import ExecutableFormatError
from relaxvm.ir.tir import PrimFunc, lower_blocks
from relaxvm.runtime.module import Module
from relaxvm.security import TRUST_ENV, object_code_trusted
from relaxvm.target import TargetError

from . import jit
from .cache import cache_key, default_cache
from .codegen import CompiledObject, compile_prim_funcs
from .errors import LLVMBuildError
from .kernel import Kernel
from .progress import Progress
from .schedule.config import check_target_attrs, cpu_config
from .serialize import check_cpu, dumps, read
from .tir_data import UnencodableTIR, decode, encode
from .tir_guard import harden

__all__ = [
    "TRUST_ENV",
    "LLVMModule",
    "build",
    "default_attrs",
    "load",
    "named_prim_funcs",
    "serialize",
    "target_info",
]

DEFAULT_FASTMATH = ("contract", "reassoc", "nsz")
#: What ``-fastmath=fast`` means: every flag that changes rounding at most.
_FAST_FLAGS = ("reassoc", "contract", "nsz", "arcp", "afn")
#: ``nnan`` and ``ninf`` make NaN or infinite values undefined: only when asked for by name.
_ALLOWED_FLAGS = (*_FAST_FLAGS, "nnan", "ninf")
#: TVM's boolean fast-math attributes and the flags each sets.
TVM_FASTMATH_ATTRS: dict[str, tuple[str, ...]] = {
    "fast-math": _ALLOWED_FLAGS,
    "fast-math-nnan": ("nnan",),
    "fast-math-ninf": ("ninf",),
    "fast-math-nsz": ("nsz",),
    "fast-math-arcp": ("arcp",),
    "fast-math-contract": ("contract",),
    "fast-math-reassoc": ("reassoc",),
}


class LLVMModule(Module):
    """A runtime module of compiled CPU kernels (the result of :func:`build`).

    Its functions are :class:`~relaxvm_llvm.kernel.Kernel` objects, by kernel name.

    Attributes
    ----------
    compiled : CompiledObject
        The object code, signatures and target description (what :func:`serialize` writes).
    rebuilt : bool
        Loaded from a file whose object code was not trusted: the kernels were rebuilt from
        the file's TIR (``docs/security.md``).
    """

    type_key = "llvm"

    def __init__(
        self,
        compiled: CompiledObject,
        prim_funcs: Sequence[tuple[str, PrimFunc]] | None = None,
        tir: bytes | None = None,
    ) -> None:
        engine = None
        kernels = {}
        if compiled.signatures:
            engine = jit.load_object(compiled.objects, compiled.info)
            for signature in compiled.signatures:
                address = engine.address(signature.symbol)
                kernels[signature.name] = Kernel(signature, address, engine)
        super().__init__(kernels, name="llvm")
        self.compiled = compiled
        self._engine = engine
        # The kernels' TIR, exported beside the object code: encoded lazily from the
        # PrimFuncs of a build, or kept verbatim from a loaded file.
        self._prim_funcs = list(prim_funcs) if prim_funcs is not None else None
        self._tir = tir
        self.rebuilt = False
        #: The schedule choice the kernels were built with (``CpuConfig.describe()``), or "".
        self.schedule = ""

    def describe(self) -> str:
        """One line on how the kernels were scheduled (vector width, register tile, cache
        sizes, packing, threads), as recorded when they were built; empty if unknown. Shown
        by ``relaxvm inspect`` for the kernels of an exported executable."""
        return self.schedule

    def tir_bytes(self) -> bytes:
        """The kernels' TIR as :mod:`relaxvm_llvm.tir_data` bytes (empty when unknown)."""
        if self._tir is None:
            try:
                self._tir = encode(self._prim_funcs) if self._prim_funcs is not None else b""
            except UnencodableTIR:
                self._tir = b""  # exported without TIR: loads only where the tag verifies
        return self._tir

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
        return _FAST_FLAGS
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
    check_target_attrs(dict(attrs))  # unknown attributes and bad values: TargetError
    fastmath = _fastmath(attrs.get("fastmath"))
    if attrs.get("fastmath") is None:
        fastmath = _tvm_fastmath(attrs, fastmath)
    return jit.TargetInfo(cpu, features, fastmath)


def _tvm_fastmath(attrs: Mapping[str, Any], default: tuple[str, ...]) -> tuple[str, ...]:
    """The flags TVM's ``-fast-math*`` booleans ask for, or ``default`` when none is given."""
    given = {
        name: attrs.get(name, attrs.get(name.replace("-", "_"))) for name in TVM_FASTMATH_ATTRS
    }
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return default
    flags: list[str] = []
    for name, value in given.items():
        if _truth(name, value):
            flags.extend(f for f in TVM_FASTMATH_ATTRS[name] if f not in flags)
    return tuple(f for f in _ALLOWED_FLAGS if f in flags)


def _truth(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise TargetError(f"llvm target: -{name}={value!r} is not valid: expected a boolean")


def named_prim_funcs(mod: Any) -> list[tuple[str, PrimFunc]]:
    """The kernels of ``mod`` by symbol, TIR blocks lowered to loops (the code generator and
    the schedules work on loop nests)."""
    if isinstance(mod, PrimFunc):
        return [(mod.name, lower_blocks(mod))]
    items = mod.items() if hasattr(mod, "items") else list(mod)
    funcs = []
    for key, func in items:
        if not isinstance(func, PrimFunc):
            continue  # Relax functions are the VM's business
        name = func.attrs.get("global_symbol") or getattr(key, "name_hint", key)
        funcs.append((str(name), lower_blocks(func)))
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
    relaxvm.target.TargetError
        An unknown target attribute or a malformed value (naming it).
    """
    info = target_info(target)
    module = _build(named_prim_funcs(mod), info)
    module.schedule = cpu_config(target).describe()
    return module


def _build(funcs: list[tuple[str, PrimFunc]], info: jit.TargetInfo) -> LLVMModule:
    store = default_cache() if funcs else None
    key = ""
    if store is not None:
        key = cache_key(funcs, info)
        hit = store.get(key, funcs)  # checked against the request
        if hit is not None:
            try:
                return LLVMModule(hit, funcs)
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
    return LLVMModule(compiled, funcs)


def serialize(module: Module) -> bytes:
    """The bytes :func:`load` turns back into the same kernels: object code, TIR and a tag
    made with the user's key (:mod:`relaxvm_llvm.serialize`)."""
    if not isinstance(module, LLVMModule):
        raise LLVMBuildError(
            f"llvm target: can only serialize modules built by the llvm target, got "
            f"{type(module).__name__}"
        )
    tir = module.tir_bytes()
    if tir and module.compiled.signatures and not for_cache_entry.get():
        # Remember this build under its TIR's digest: a later load of the export that does
        # not trust its object code (another user, another key) is then one cache hit.
        store = default_cache()
        if store is not None:
            key = _tir_key(tir, module.compiled.info)
            if not store.path(key).exists():
                store.put(key, module.compiled)
    return dumps(module.compiled, tir, module.schedule)


def _tir_key(tir: bytes, info: jit.TargetInfo) -> str:
    """The compile cache key of the kernels a library's TIR bytes build for ``info``: the
    versions and target part of :func:`cache_key`, then the bytes themselves."""
    digest = hashlib.sha256(b"relaxvm-llvm-tir-key-v1\x00")
    digest.update(cache_key([], info).encode())
    digest.update(tir)
    return digest.hexdigest()


def _own_build(
    funcs: list[tuple[str, PrimFunc]], info: jit.TargetInfo, store: Any
) -> LLVMModule | None:
    """This user's own compile of exactly these kernels, from the compile cache (whose
    entries the user's key authenticates), or None: such code needs no extra checks."""
    if store is None:
        return None
    hit = store.get(cache_key(funcs, info), funcs)
    if hit is None:
        return None
    try:
        return LLVMModule(hit, funcs)
    except LLVMBuildError:
        return None


def load(data: bytes, target: Any = None, *, trust: bool = False) -> LLVMModule:
    """Reload serialized kernels, running their object code only if the user trusts it.

    The object code is linked as is when the file's tag verifies under the user's key
    (:mod:`relaxvm.security`: the file was exported by this user), or when ``trust``,
    ``relaxvm.load_module(path, trust=True)`` or ``RELAXVM_TRUST_OBJECT_CODE=1`` says so. Otherwise the kernels are rebuilt from the
    file's TIR through the normal build (the compile cache applies), and the rebuilt
    kernels must match the file's signatures.

    Raises
    ------
    ExecutableFormatError
        Truncated, corrupted or foreign data, another format version, code built for a CPU
        whose features this host lacks, untrusted object code with no TIR to rebuild from,
        or TIR that does not compile to the kernels the file declares.
    """
    loaded = read(data)
    module = _load(loaded, trust)
    module.schedule = loaded.schedule
    return module


def _load(loaded: Any, trust: bool) -> LLVMModule:
    if loaded.authentic or trust or object_code_trusted():
        check_cpu(loaded.compiled.info.cpu, loaded.compiled.info.features)
        try:
            module = LLVMModule(loaded.compiled, tir=loaded.tir)
        except LLVMBuildError as err:
            raise ExecutableFormatError(
                f"llvm module: cannot load the object code: {err}"
            ) from None
        return module
    if for_cache_entry.get():
        # A whole-module cache entry whose kernels are not signed with the user's key (written
        # under another key): the cache drops it and compiles again, no hardened rebuild.
        raise ExecutableFormatError("llvm module: the cache entry's kernels are not signed")
    return _rebuild(loaded.compiled, loaded.tir)


def _rebuild(declared: CompiledObject, tir: bytes) -> LLVMModule:
    how = (
        "export the model again on this machine (exports are signed with your key, "
        "relaxvm.security), or, only if you trust whoever wrote the file as you trust a .so, "
        f"load it with relaxvm.load_module(path, trust=True) (or set {TRUST_ENV}=1)"
    )
    if not tir:
        raise ExecutableFormatError(
            "llvm module: the object code is not signed with your key and the file carries no "
            f"TIR to rebuild the kernels from; refusing to run it; {how}"
        )
    # The header's CPU and features are untrusted too: they would choose the code generated
    # (and "-sse2,-x87" changes the float ABI of libm calls). Rebuild for this host, keeping
    # only the validated fast-math flags that change rounding at most: nnan and ninf make
    # NaN and infinite values poison, which a bounds check on a float-derived index could
    # be folded away on, so untrusted code never gets them.
    fastmath = tuple(f for f in declared.info.fastmath if f in _FAST_FLAGS)
    info = jit.TargetInfo(jit.host_cpu_name(), jit.host_cpu_features(), fastmath)
    store = default_cache()
    key = _tir_key(tir, info)
    # A build of exactly these TIR bytes, made and signed by this user (the cache
    # authenticates its entries): no need to decode and print the TIR again.
    hit = store.get(key) if store is not None else None
    if hit is not None and hit.signatures == declared.signatures:
        try:
            module = LLVMModule(hit, tir=tir)
        except LLVMBuildError:
            pass
        else:
            module.rebuilt = True
            return module
    funcs = decode(tir)
    names = [name for name, _ in funcs]
    wanted = [s.name for s in declared.signatures]
    if names != wanted:
        raise ExecutableFormatError(
            f"llvm module: the file's TIR defines kernels {names[:8]} but its header declares "
            f"{wanted[:8]} (tampered); {how}"
        )
    try:
        # This user's own build of these kernels, else compiled as untrusted code: every
        # buffer access checked, loops serial.
        own = _own_build(funcs, info, store)
        module = own if own is not None else _build(harden(funcs), info)
    except ExecutableFormatError:
        raise
    except Exception as err:  # whatever the TIR provokes, loading raises ExecutableFormatError
        raise ExecutableFormatError(
            f"llvm module: the object code is not signed with your key and rebuilding the "
            f"kernels from the file's TIR failed ({type(err).__name__}: {err}); {how}"
        ) from None
    if module.compiled.signatures != declared.signatures:
        rebuilt = module.compiled.signatures
        bad = [s.name for i, s in enumerate(declared.signatures) if rebuilt[i : i + 1] != (s,)]
        raise ExecutableFormatError(
            f"llvm module: the kernel header does not match the kernels rebuilt from the "
            f"file's TIR (kernels {bad[:8]}: tampered symbols or signatures); {how}"
        )
    module._tir = tir
    module.rebuilt = True
    if store is not None:
        store.put(key, module.compiled)
    return module
