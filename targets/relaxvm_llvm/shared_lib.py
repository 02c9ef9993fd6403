"""``export_library("model.so")``: a real ELF shared library holding the executable.

Layout of the library a system linker makes (``cc -shared``, else ``gcc``/``clang``/``ld``;
``RELAXVM_LINKER`` names another):

* ``.text`` and friends: the kernels' object code, exactly as built, so the kernels are
  exported dynamic symbols (``__rvm_<name>``, see ``docs/llvm_target.md``) that native code
  can call. Their runtime helpers (``relaxvm_llvm_parallel_launch`` ...) are left undefined,
  to be supplied by the process that loads them.
* section ``relaxvm_exec`` (symbol ``__relaxvm_executable``): ``b"RVMSOEX\\0"``, a u64
  little-endian length, then the complete ``.rvm`` bytes of the executable (program and
  serialized kernels).

With a compiler driver the payload is assembled from a file with ``.incbin`` (fast at any
size); with a bare ``ld`` it is an LLVM-emitted data object (about 0.13 s per MB).

``relaxvm.load_module("model.so")`` never ``dlopen``\\ s the file: it reads the
``relaxvm_exec`` section as data and loads the embedded executable exactly as a ``.rvm``
file, with the same checks (format version, CPU features, checksums) and the same trust
model: the embedded kernel library's object code is linked only when its tag verifies under
the user's key, else the kernels are rebuilt from its TIR (``docs/security.md``). The
``.text`` linked into the library is never used by relaxvm; whoever ``dlopen``\\ s the
library runs it, so only a trusted library may be opened that way.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from relaxvm.errors import RelaxVMError
from relaxvm.vm.executable.elf_payload import PAYLOAD_MAGIC, SECTION

from . import jit

__all__ = [
    "PAYLOAD_MAGIC",
    "SECTION",
    "LinkerError",
    "export_shared",
    "find_linker",
]

_LINKERS = ("cc", "gcc", "clang", "ld")
_ESCAPES = [chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in range(256)]


class LinkerError(RelaxVMError, RuntimeError):
    """No system linker was found, or linking the shared library failed."""


def find_linker() -> str | None:
    """The linker to use: ``$RELAXVM_LINKER``, else the first of cc, gcc, clang, ld on PATH."""
    explicit = os.environ.get("RELAXVM_LINKER")
    if explicit:
        return shutil.which(explicit)
    for name in _LINKERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _payload_ir(payload: bytes, info: jit.TargetInfo) -> str:
    blob = PAYLOAD_MAGIC + len(payload).to_bytes(8, "little") + payload
    text = "".join(_ESCAPES[b] for b in blob)
    return (
        f'target triple = "{info.triple}"\n'
        f"@__relaxvm_executable = constant [{len(blob)} x i8] "
        f'c"{text}", section "{SECTION}", align 16\n'
        f"@__relaxvm_executable_size = constant i64 {len(payload)}\n"
    )


def _data_object(payload: bytes, info: jit.TargetInfo) -> bytes:
    import llvmlite.binding as llvm

    with jit.LLVM_LOCK:
        tm = jit.target_machine(info.triple, info.cpu, info.features)
        mod = llvm.parse_assembly(_payload_ir(payload, info))
        mod.data_layout = str(tm.target_data)
        return bytes(tm.emit_object(mod))


def _payload_asm(blob_path: str, size: int) -> str:
    """GNU assembler source embedding the framed payload file (fast for large payloads)."""
    quoted = blob_path.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f'.section {SECTION},"a"\n.globl __relaxvm_executable\n.balign 16\n'
        f'__relaxvm_executable:\n.incbin "{quoted}"\n'
        ".section .rodata\n.globl __relaxvm_executable_size\n.balign 8\n"
        f"__relaxvm_executable_size:\n.quad {size}\n"
        '.section .note.GNU-stack,"",@progbits\n'
    )


def export_shared(path: str | os.PathLike[str], payload: bytes, modules: Sequence[Any]) -> None:
    """Link the kernels of ``modules`` and ``payload`` into the shared library ``path``.

    Parameters
    ----------
    path : path-like
        The ``.so`` file, replaced atomically.
    payload : bytes
        The executable's ``.rvm`` bytes (what ``relaxvm.load_module`` reads back).
    modules : sequence of LLVMModule
        Kernel modules whose object code is linked in.

    Raises
    ------
    LinkerError
        No linker is installed (export to a ``.rvm`` path instead), or it failed.
    """
    from .target import LLVMModule, target_info

    linker = find_linker()
    if linker is None:
        raise LinkerError(
            f"export_library({os.fspath(path)!r}): writing a .so needs a system linker (cc, "
            "gcc, clang or ld; or set RELAXVM_LINKER) and none was found; export to a '.rvm' "
            "path instead, which needs no linker and loads the same way"
        )
    objects: list[bytes] = []
    for module in modules:
        if not isinstance(module, LLVMModule):
            raise LinkerError(
                f"export_library: cannot link a {type(module).__name__} into a shared library"
            )
        objects.extend(obj for obj in module.compiled.objects if obj)
    info = modules[0].compiled.info if modules else target_info(None)
    is_ld = os.path.basename(linker) == "ld" or os.path.basename(linker).startswith("ld.")
    if is_ld:
        # A bare linker cannot assemble: the payload becomes an LLVM-emitted data object.
        objects.append(_data_object(payload, info))
    target = Path(os.fspath(path)).absolute()
    temp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    with tempfile.TemporaryDirectory(prefix="relaxvm-link-") as work:
        names = []
        for index, obj in enumerate(objects):
            name = os.path.join(work, f"part{index}.o")
            Path(name).write_bytes(obj)
            names.append(name)
        if not is_ld:
            # A compiler driver assembles `.incbin` of the payload: no size-proportional
            # IR text to generate and parse.
            blob = os.path.join(work, "payload.bin")
            with open(blob, "wb") as stream:
                stream.write(PAYLOAD_MAGIC + len(payload).to_bytes(8, "little"))
                stream.write(payload)
            source = os.path.join(work, "payload.s")
            Path(source).write_text(_payload_asm(blob, len(payload)))
            names.append(source)
        # Kernels may call libm (tanh, erf...): record the dependency (cc drivers only; a
        # bare ld leaves the symbols undefined, to be resolved by the loading process).
        command = [linker, "-shared", "-o", str(temp), *names] + ([] if is_ld else ["-lm"])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as err:
            raise LinkerError(f"export_library: running {linker} failed: {err}") from None
        if done.returncode != 0:
            temp.unlink(missing_ok=True)
            raise LinkerError(
                f"export_library: {' '.join(command[:3])} ... failed with status "
                f"{done.returncode}: {done.stderr.strip()[-2000:]}"
            )
    try:
        os.replace(temp, target)
    except OSError:
        temp.unlink(missing_ok=True)
        raise
