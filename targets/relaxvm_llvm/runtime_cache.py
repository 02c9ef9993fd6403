"""Object code of relaxvm's own runtime pieces (the native thread pool), kept between processes.

The native pool is LLVM IR that every process used to compile again before its first parallel
loop (a tenth of a second: most of a warm model load). Its object code is now cached under
the cache root (``RELAXVM_CACHE_DIR``, subdirectory ``llvm-runtime``) keyed by what determines
the IR (the generator's source and inputs), the target triple and LLVM's version, and tagged with the user's key like every other cached
native code (:mod:`relaxvm.security`): an entry that does not verify is compiled again and
replaced, never run. ``RELAXVM_CACHE=0`` turns it off with the other caches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import llvmlite.binding as llvm

from relaxvm import security
from relaxvm.backend.cache_store import default_store

__all__ = ["cached_object"]

_PURPOSE = b"relaxvm-llvm-runtime-object-v1"
_STORE = "llvm-runtime"


def cached_object(
    name: str, source: str, triple: str, compile_object: Callable[[], bytes]
) -> bytes:
    """The object code ``compile_object()`` makes for ``triple``: from the cache when a
    verified entry exists, else compiled and stored for the next process.

    Parameters
    ----------
    name : str
        What the code is (part of the key: ``"native-pool"``).
    source, triple : str
        Everything the IR depends on (its text, or its generator's source and inputs) and the
        triple it is compiled for: with LLVM's version, the key.
    compile_object : callable
        Compiles the module; called only on a miss.
    """
    store = default_store(_STORE)
    digest = hashlib.sha256(_PURPOSE)
    for part in (name, triple, ".".join(map(str, llvm.llvm_version_info)), source):
        digest.update(part.encode("utf-8") + b"\x00")
    key = f"{name}-{digest.hexdigest()[:40]}"
    if store is not None:
        entry = store.read(key)
        if entry is not None and len(entry) > security.TAG_SIZE:
            body, tag = entry[: -security.TAG_SIZE], entry[-security.TAG_SIZE :]
            try:
                if security.verify(body, tag, purpose=_PURPOSE):
                    return body
            except security.KeyFileError:
                pass
    obj = compile_object()
    if store is not None:
        try:
            store.write(key, obj, security.sign(obj, purpose=_PURPOSE))
        except security.KeyFileError:
            pass  # no key to sign with: compiled each time, never cached unsigned
    return obj
