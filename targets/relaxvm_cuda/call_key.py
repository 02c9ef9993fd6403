"""The key under which a CUDA kernel remembers a checked call (:mod:`.kernel`).

A repeated call with the same arguments (the VM reuses its planned memory) skips the checks
and reuses the launch prepared for them; the key is what those checks depend on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relaxvm.runtime.tensor import Tensor
from relaxvm_llvm.signature import BufferParam, KernelSignature

__all__ = ["call_key_function"]


def call_key_function(signature: KernelSignature) -> Callable[[tuple[Any, ...]], Any]:
    """What a call's checks depend on, as a function of the arguments: a flat tuple of each
    buffer's address, shape, dtype and device and each scalar's value, or None when an
    argument is not a plain Tensor (buffer) or int (scalar) where the signature has one, or
    the count is wrong (such calls are checked in full, and rejected there).

    Generated once per kernel from the parameters' kinds alone (a fixed text per kind, and
    argument positions), never from names or text a file supplies.
    """
    if not signature.params:
        return lambda args: () if not args else None
    names, conditions, parts = [], [], []
    for k, param in enumerate(signature.params):
        a = f"a{k}"
        names.append(a)
        if isinstance(param, BufferParam):
            conditions.append(f"{a}.__class__ is _Tensor")
            parts.append(
                f"{a}.storage.data_ptr + {a}.byte_offset, {a}.shape, {a}.dtype, {a}.device"
            )
        else:
            conditions.append(f"{a}.__class__ is int")
            parts.append(a)
    source = (
        f"def key(args):\n"
        f"    if len(args) != {len(names)}:\n"
        f"        return None\n"
        f"    {', '.join(names)}, = args\n"
        f"    if {' and '.join(conditions)}:\n"
        f"        return ({', '.join(parts)},)\n"
        f"    return None\n"
    )
    namespace: dict[str, Any] = {"_Tensor": Tensor}
    exec(compile(source, f"<cuda kernel {signature.name} call key>", "exec"), namespace)
    return namespace["key"]  # type: ignore[no-any-return]
