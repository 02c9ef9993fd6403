"""The whole-module compile cache: ``relaxvm.compile`` of a module compiled before is a load.

The key (:func:`module_key`) digests the IRModule (the fields structural equality reads, the
names of variables and buffers, the constants' bytes), ``params``, the target with its
host-derived attributes, ``exec_mode``, the pipeline's name, the enclosing PassContext, and
relaxvm's version, the plugins with their versions and a fingerprint of their sources. What
it cannot encode stably (a ``Pass`` object as pipeline, pass instruments, run-time
registrations, unknown values) is not cached. An entry is the executable in
``export_library``'s format; its native code is trusted as ``load_module`` trusts it (the
kernel libraries' tags under the user's key), and it lives under ``RELAXVM_CACHE_DIR``'s
``modules`` directory with the kernel cache's rules (:mod:`relaxvm.backend.cache_store`).
Off with ``RELAXVM_MODULE_CACHE=0``, ``RELAXVM_CACHE=0`` or
``PassContext(config={"relax.backend.module_cache": False})``. ``docs/compiler.md``
("Whole-module cache") says more.
"""

from __future__ import annotations

import enum
import hashlib
import os
import struct
import sys
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ExecutableFormatError, RelaxVMError
from ..runtime.dtype import DataType
from ..vm.executable.executable import Executable
from .cache_store import CacheStore, CacheTrustWarning, default_store, for_cache_entry

__all__ = [
    "CONFIG_KEY",
    "ENV",
    "CacheStore",
    "CacheTrustWarning",
    "enabled",
    "lookup",
    "module_key",
    "reset_stats",
    "stats",
    "store",
]

ENV = "RELAXVM_MODULE_CACHE"
#: PassContext config option: False disables the module cache for compiles in the context.
CONFIG_KEY = "relax.backend.module_cache"
#: Bump when the entry layout or the meaning of a key changes.
FORMAT = 1
_MAGIC = b"RVMMODC\x00"
_HEADER = struct.Struct("<8sII")  # magic, format, key length
_OFF = ("0", "off", "false", "no")
#: Arrays of at least this many bytes are hashed on worker threads.
_LARGE = 1 << 16

_stats_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "stores": 0, "errors": 0, "uncacheable": 0}


class _Uncacheable(Exception):
    """The compile has something the key cannot encode stably: compile without the cache."""


def stats() -> dict[str, int]:
    """Counters of this process: ``hits``, ``misses``, ``stores``, ``errors`` (entries that
    were corrupt, stale or unloadable, dropped and rebuilt; failed writes) and
    ``uncacheable`` (compiles that bypassed the cache, see the module docstring)."""
    with _stats_lock:
        return dict(_stats)


def reset_stats() -> None:
    """Zero the counters of :func:`stats`."""
    with _stats_lock:
        for name in _stats:
            _stats[name] = 0


def _count(name: str) -> None:
    with _stats_lock:
        _stats[name] += 1


def enabled() -> bool:
    """Whether compiles in this context may use the module cache (environment and the
    current PassContext's ``relax.backend.module_cache``)."""
    if os.environ.get(ENV, "1").strip().lower() in _OFF:
        return False
    if os.environ.get("RELAXVM_CACHE", "1").strip().lower() in _OFF:
        return False
    from ..transform.pass_infra import PassContext

    return PassContext.current().config.get(CONFIG_KEY, True) is not False


# ---- the key ------------------------------------------------------------------------------
class _Digest:
    """A BLAKE2b digest of length-prefixed, type-tagged items (no two streams collide).

    Items are gathered as text and hashed once (one ``update`` per item costs more than the
    hashing). Large arrays (weights) are hashed apart, on a few threads (hashlib releases
    the GIL), and their digests fed after the text, in order: BLAKE2b is the fastest
    cryptographic hash in hashlib, and ResNet-18's 47 MB of weights are most of the cost.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending: list[memoryview] = []

    def text(self, tag: str, value: str) -> None:
        self.parts.append(f"{tag}{len(value)}:{value}")

    def array(self, value: np.ndarray) -> None:
        value = np.ascontiguousarray(value)
        self.text("A", f"{value.dtype.str}{value.shape}")
        data = value.data.cast("B") if value.size else memoryview(b"")
        if len(data) < _LARGE:
            self.text("a", data.hex())
        else:
            self.text("p", str(len(self.pending)))
            self.pending.append(data)

    def leaf(self, value: Any) -> None:
        kind = type(value)
        if value is None:
            self.parts.append("N")
        elif kind is bool:
            self.parts.append("B1" if value else "B0")
        elif kind is int:
            self.text("I", str(value))
        elif kind is float:
            self.text("F", repr(value))  # repr round-trips; -0.0 and nan stay distinct
        elif kind is str:
            self.text("S", value)
        elif kind is bytes:
            self.text("Y", value.hex())
        elif kind is tuple or kind is list:
            self.text("U", str(len(value)))
            for item in value:
                self.leaf(item)
        elif isinstance(value, DataType):
            self.text("D", str(value))
        elif isinstance(value, enum.Enum):
            self.text("E", f"{kind.__module__}.{kind.__qualname__}.{value.name}")
        elif isinstance(value, (np.ndarray, np.generic)):
            self.array(np.asarray(value))
        elif hasattr(value, "host_array") and hasattr(value, "dtype"):  # a relaxvm Tensor
            self.array(_tensor_array(value))
        else:
            raise _Uncacheable(f"no stable encoding for a {kind.__module__}.{kind.__qualname__}")

    def hexdigest(self) -> str:
        digest = hashlib.blake2b(b"relaxvm-module-key\x00", digest_size=32)
        digest.update("".join(self.parts).encode("utf-8", "surrogatepass"))
        if self.pending:
            workers = min(len(self.pending), os.cpu_count() or 1, 4)
            with ThreadPoolExecutor(workers) as pool:
                digest.update(b"".join(pool.map(_blake2b, self.pending)))
        return digest.hexdigest()


def _blake2b(data: memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


def _tensor_array(tensor: Any) -> np.ndarray:
    try:
        return np.asarray(tensor.host_array())  # a view: no copy of the weights
    except RelaxVMError:
        return np.asarray(tensor.numpy())


_how: dict[type, Any] = {}


def _reflector(kind: type) -> Any:
    found = _how.get(kind)
    if found is None:
        from ..ir._structural_fields import REFLECTORS

        entry = next((REFLECTORS[base] for base in kind.__mro__ if base in REFLECTORS), None)
        if entry is not None:
            found = entry[0]
        elif kind is list or kind is tuple:
            found = "seq"
        elif issubclass(kind, Mapping):
            found = "map"
        else:
            found = "leaf"
        _how[kind] = found
    return found


def _hash_ir(digest: _Digest, root: Any) -> None:
    """Feed ``root`` to ``digest``: structure as :mod:`relaxvm.ir.structural` walks it,
    variables numbered by first appearance, plus their names and the constants' bytes."""
    from ..ir.relax.expr import Constant

    numbers: dict[int, int] = {}
    keep: list[Any] = []  # keeps walked nodes alive, so that no id() is reused meanwhile
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        how = _reflector(type(node))
        if how == "seq":
            digest.text("L", str(len(node)))
            stack.extend(reversed(node))
        elif how == "map":
            items = sorted(node.items(), key=lambda item: repr(item[0]))
            digest.text("M", str(len(items)))
            for key, _ in items:
                digest.leaf(key)
            stack.extend(value for _, value in reversed(items))
        elif how == "leaf":
            digest.leaf(node)
        elif isinstance(node, Constant):
            digest.text("C", "")
            digest.array(_tensor_array(node.data))
        else:
            is_var, values, children = how(node)
            kind = type(node)
            digest.text("T", f"{kind.__module__}.{kind.__qualname__}")
            if is_var:
                number = numbers.get(id(node))
                if number is not None:  # a use: which definition (or first sight) it is
                    digest.text("R", str(number))
                    continue
                numbers[id(node)] = len(numbers)
                keep.append(node)
                name = getattr(node, "name_hint", None) or getattr(node, "name", None)
                digest.leaf(name if isinstance(name, str) else None)
            for value in values:
                digest.leaf(value)
            digest.text("K", str(len(children)))
            stack.extend(child for _, child, _ in reversed(children))


def ir_digest(mod: Any) -> str:
    """The digest of ``mod`` alone (its structure, names and constants' bytes).

    Raises
    ------
    _Uncacheable
        ``mod`` holds a value without a stable encoding.
    """
    digest = _Digest()
    _hash_ir(digest, mod)
    return digest.hexdigest()


_executor: ThreadPoolExecutor | None = None


def start_ir_digest(mod: Any) -> Future[str]:
    """:func:`ir_digest` of ``mod`` on a worker thread, so that hashing the weights (which
    releases the GIL) overlaps what the caller does meanwhile (resolving the target
    initializes LLVM); pass the future to :func:`module_key`."""
    global _executor
    with _stats_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(1, thread_name_prefix="relaxvm-module-key")
    return _executor.submit(ir_digest, mod)


def module_key(
    mod: Any,
    target: Any,
    params: Mapping[str, Any] | None,
    relax_pipeline: Any,
    exec_mode: str,
    ir: Future[str] | None = None,
) -> str | None:
    """The cache key of compiling ``mod`` this way, or None when it must not be cached (see
    the module docstring); counts ``uncacheable`` then. ``ir``: :func:`start_ir_digest` of
    ``mod``, when the caller started it."""
    try:
        return _module_key(mod, target, params, relax_pipeline, exec_mode, ir)
    except _Uncacheable:
        _count("uncacheable")
        return None


def _module_key(
    mod: Any,
    target: Any,
    params: Mapping[str, Any] | None,
    relax_pipeline: Any,
    exec_mode: str,
    ir: Future[str] | None,
) -> str:
    from ..transform.pass_infra import PassContext

    digest = _Digest()
    digest.text("V", _environment())
    digest.text("X", exec_mode)
    digest.text("P", _pipeline_id(relax_pipeline))
    digest.text("G", "none" if target is None else str(target))
    digest.text("H", "none" if getattr(target, "host", None) is None else str(target.host))
    context = PassContext.current()
    if context.instruments:
        raise _Uncacheable("pass instruments observe the passes")
    digest.text("O", str(context.opt_level))
    digest.text("Q", "|".join(map(str, context.required_pass)))
    digest.text("W", "|".join(map(str, context.disabled_pass)))
    _hash_ir(digest, dict(context.config))
    _check_registrations()
    if params:
        if not all(isinstance(name, str) for name in params):
            raise _Uncacheable("params keyed by Relax variables")
        _hash_ir(digest, {name: _param_array(value) for name, value in params.items()})
    digest.text("Z", ir.result() if ir is not None else ir_digest(mod))
    return digest.hexdigest()


def _param_array(value: Any) -> Any:
    if hasattr(value, "host_array"):
        return _tensor_array(value)
    if isinstance(value, (np.ndarray, np.generic, int, float, bool)):
        return np.asarray(value)
    raise _Uncacheable(f"a param of type {type(value).__name__}")


def _pipeline_id(relax_pipeline: Any) -> str:
    if relax_pipeline is None:
        return "none"
    if not isinstance(relax_pipeline, str):
        raise _Uncacheable("a pipeline given as a Pass object has no stable identity")
    # Not loading the built-in pipelines here (that imports every pass): a name missing from
    # the table is a built-in one, or unknown and the compile fails (nothing is stored).
    pipeline = sys.modules.get("relaxvm.transform.pipeline")
    factory = getattr(pipeline, "_pipelines", {}).get(relax_pipeline)
    module = getattr(factory, "__module__", None) or "relaxvm"
    if not _covered(module):
        # A factory outside relaxvm and its plugins is code the source fingerprint misses.
        raise _Uncacheable(f"pipeline {relax_pipeline!r} comes from {module}")
    return relax_pipeline


def _check_registrations() -> None:
    """Legalizations and target kinds registered at run time are code the key cannot see."""
    from ..registry import extensions

    for table in (extensions._legalizations, extensions._target_kinds):
        for _, source in table.values():
            if source.startswith("user:"):
                raise _Uncacheable(f"a run-time registration ({source})")


def _covered(module: str) -> bool:
    return module.split(".")[0] in _plugin_packages() or module.startswith("relaxvm.")


def _plugins() -> tuple[tuple[str, str, str, str], ...]:
    """``(name, module, distribution, status)`` of every plugin of the current load."""
    from ..registry import loader

    loader.ensure_loaded()
    return tuple((i.name, i.value, i.distribution, i.status) for i in loader.plugin_report())


def _plugin_packages() -> frozenset[str]:
    return _packages(_plugins())


@cache
def _packages(plugins: tuple[tuple[str, str, str, str], ...]) -> frozenset[str]:
    names = {"relaxvm"}
    for _, value, _, status in plugins:
        if status == "loaded":
            names.add(value.split(":")[0].split(".")[0])
    return frozenset(names)


def _environment() -> str:
    """relaxvm's version, the loaded plugins and their versions, and a fingerprint of the
    sources of relaxvm and of the plugins' packages."""
    return _environment_of(_plugins())


@cache
def _environment_of(plugins: tuple[tuple[str, str, str, str], ...]) -> str:
    # Once per plugin set and process: a running process does not reload edited modules.
    from importlib import metadata

    from .. import __version__

    parts = [f"format={FORMAT}", f"relaxvm={__version__}", f"python={sys.version_info[:2]}"]
    for name, value, distribution, status in plugins:
        try:
            version = metadata.version(distribution)
        except (metadata.PackageNotFoundError, ValueError):
            version = "?"
        parts.append(f"{name}:{value}:{distribution}={version}:{status}")
    parts.append(f"numpy={np.__version__}")
    sources = hashlib.sha256()
    for package in sorted(_packages(plugins)):
        found = sys.modules.get(package)
        for root in getattr(found, "__path__", []) or []:
            for path, size, mtime in _source_files(Path(root)):
                sources.update(f"{path}\x00{size}\x00{mtime}\n".encode())
    parts.append(f"sources={sources.hexdigest()}")
    return "\n".join(parts)


def _source_files(root: Path) -> Iterator[tuple[str, int, int]]:
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                found.append((path, info.st_size, info.st_mtime_ns))
    return iter(sorted(found))


# ---- entries ------------------------------------------------------------------------------
def _store_for(target: Any) -> CacheStore | None:
    del target  # one store for every target kind: keys include the target
    return default_store("modules")


def lookup(key: str, target: Any) -> Executable | None:
    """The executable stored under ``key``, or None (missing, refused, corrupt, stale or with
    native code that does not verify under the user's key: such entries are dropped)."""
    store = _store_for(target)
    data = store.read(key) if store is not None else None
    if data is None:
        _count("misses")
        return None
    try:
        executable = _decode(data, key)
    except (ExecutableFormatError, RelaxVMError, ValueError, struct.error):
        executable = None
    if executable is None:
        _count("errors")
        _count("misses")
        if store is not None:
            store.discard(key)
        return None
    _count("hits")
    return executable


def _decode(data: bytes, key: str) -> Executable | None:
    magic, version, key_size = _HEADER.unpack_from(data)
    start = _HEADER.size
    if magic != _MAGIC or version != FORMAT or data[start : start + key_size] != key.encode():
        return None
    from ..vm.executable.format import load_from_bytes

    token = for_cache_entry.set(True)  # kernels that do not verify: refused, not rebuilt
    try:
        executable = load_from_bytes(memoryview(data)[start + key_size :])
    finally:
        for_cache_entry.reset(token)
    for _, _, module in executable.kernel_libs:
        # Native code rebuilt from TIR on load means its tag did not verify (another key):
        # such an entry is not this user's compile. Compile afresh instead.
        if getattr(module, "rebuilt", False):
            return None
    return executable


def store(key: str, executable: Executable, target: Any) -> bool:
    """Store ``executable`` under ``key`` (False when it cannot be serialized or written)."""
    store_ = _store_for(target)
    if store_ is None:
        return False
    from ..vm.executable.format import save_to_bytes

    token = for_cache_entry.set(True)
    try:
        libs = _serialized_libs(executable)
        payload = save_to_bytes(executable, libs)
    except (ExecutableFormatError, RelaxVMError, OSError):
        # Not serializable (a constant without encoding, a kernel library no target can
        # write) or no key to sign with: the compile stands, it is only not cached.
        _count("uncacheable")
        return False
    finally:
        for_cache_entry.reset(token)
    raw_key = key.encode()
    if not store_.write(key, _HEADER.pack(_MAGIC, FORMAT, len(raw_key)) + raw_key, payload):
        _count("errors")
        return False
    _count("stores")
    return True


def _serialized_libs(executable: Executable) -> list[tuple[str, str, bytes]]:
    from ..registry.extensions import get_target_kind

    known = {id(module): (kind, target) for kind, target, module in executable.kernel_libs}
    libs = []
    for module in executable.imports:
        entry = known.get(id(module))
        if entry is None:
            raise ExecutableFormatError("imports a module no target built")
        kind = get_target_kind(entry[0])
        if kind.serialize is None:
            raise ExecutableFormatError(f"target kind {entry[0]!r} cannot serialize")
        libs.append((entry[0], entry[1], kind.serialize(module)))
    return libs
