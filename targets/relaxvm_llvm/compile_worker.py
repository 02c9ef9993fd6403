"""LLVM's share of a kernel build, for one module's IR text, in this process or in a worker.

llvmlite serializes every call into LLVM behind one process-wide lock, so a process optimizes
one module at a time whatever its thread count. A large build (a ResNet has dozens of
kernels, and LLVM's O3 pipeline and code emission take most of its compile time) therefore
spreads its kernels over helper processes started from this module
(``python -m relaxvm_llvm.compile_worker``; :mod:`relaxvm_llvm.compile_pool` runs them).

This module imports nothing but llvmlite, so a worker starts in about a tenth of a second.
The same :func:`compile_ir` runs in the parent for the kernels it keeps, so a kernel's machine
code does not depend on where it was compiled.

The protocol on the worker's stdin/stdout (integers little-endian):

* on start, the worker writes :data:`READY`;
* request: ``u32 header length, u32 text length``, the header (UTF-8 JSON: ``triple``, ``cpu``,
  ``features``), the module's IR text (UTF-8);
* reply: ``u8 status, u32 a, u32 b``, then ``a`` bytes of object code and ``b`` bytes of
  optimized IR text (status 0), or ``a`` bytes of error message (status 1, ``b`` = 0).

The worker exits at the end of its input, or after :data:`IDLE_SECONDS` without a request.
"""

from __future__ import annotations

import json
import os
import select
import struct
import sys
from typing import IO, Any

__all__ = ["IDLE_SECONDS", "READY", "compile_ir", "run_o3_pipeline"]

READY = b"RVMW"
#: An idle worker exits after this long; the next large build starts a new one.
IDLE_SECONDS = 60.0
REQUEST = struct.Struct("<II")
REPLY = struct.Struct("<BII")
#: Largest IR text or object a message may carry.
MAX_MESSAGE = 1 << 31


def run_o3_pipeline(mod: Any, tm: Any) -> None:
    """Run LLVM's O3 pipeline (loop and SLP vectorization, unrolling) over ``mod`` in place."""
    import llvmlite.binding as llvm

    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def compile_ir(text: str, tm: Any) -> tuple[bytes, str]:
    """Parse, verify, optimize and emit one module's IR text with target machine ``tm``.

    The module lives in a context of its own, so this may run beside other LLVM work of the
    process (llvmlite still serializes the calls themselves).

    Returns
    -------
    (bytes, str)
        The ELF object and the optimized IR text.

    Raises
    ------
    RuntimeError
        LLVM rejects the IR (the message is LLVM's).
    """
    import llvmlite.binding as llvm

    context = llvm.create_context()
    mod = llvm.parse_assembly(text, context=context)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    run_o3_pipeline(mod, tm)
    return bytes(tm.emit_object(mod)), str(mod)


_machines: dict[tuple[str, str, str], Any] = {}


def _target_machine(triple: str, cpu: str, features: str) -> Any:
    import llvmlite.binding as llvm

    key = (triple, cpu, features)
    tm = _machines.get(key)
    if tm is None:
        target = llvm.Target.from_triple(triple)
        tm = target.create_target_machine(
            cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default"
        )
        _machines[key] = tm
    return tm


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    stdout.write(READY)
    stdout.flush()
    while True:
        ready, _, _ = select.select([stdin], [], [], IDLE_SECONDS)
        if not ready:
            return  # idle: the parent starts a fresh worker when it needs one
        prefix = _read_exact(stdin, REQUEST.size)
        if prefix is None:
            return
        header_size, text_size = REQUEST.unpack(prefix)
        raw = _read_exact(stdin, header_size + text_size)
        if raw is None:
            return
        try:
            header = json.loads(raw[:header_size].decode("utf-8"))
            tm = _target_machine(header["triple"], header["cpu"], header["features"])
            obj, optimized = compile_ir(raw[header_size:].decode("utf-8"), tm)
            ir = optimized.encode("utf-8")
            stdout.write(REPLY.pack(0, len(obj), len(ir)) + obj + ir)
        except Exception as err:  # reported to the parent, which names the kernel
            message = f"{type(err).__name__}: {err}".encode("utf-8", "replace")
            stdout.write(REPLY.pack(1, len(message), 0) + message)
        stdout.flush()


def main() -> int:
    """Serve compile requests on stdin/stdout until the input ends or stays idle."""
    # The parent talks through the pipes; nothing else may be written to stdout.
    stdin = os.fdopen(sys.stdin.fileno(), "rb", buffering=0)
    stdout = os.fdopen(sys.stdout.fileno(), "wb")
    sys.stdout = sys.stderr
    try:
        _serve(stdin, stdout)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
