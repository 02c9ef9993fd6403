"""What the CUDA code generator hands to the runtime: PTX text plus, per kernel, its
signature and launch shape, as plain data that survives export.

The contract between :mod:`relaxvm_cuda.codegen` (TIR -> NVPTX -> PTX, no GPU needed) and the
driver-side module (loads the PTX, launches kernels):

* every kernel is a ``.visible .entry`` named :attr:`PTXKernel.symbol` with the calling
  convention of :class:`relaxvm_llvm.signature.KernelSignature`: one global-memory pointer per
  buffer parameter (in parameter order), then one ``i64`` per symbolic variable
  (:attr:`KernelSignature.var_names` order);
* :attr:`PTXKernel.launch` gives the grid and block extents as six expression trees in the
  signature's JSON encoding (an ``int``, ``["v", k]`` for the k-th variable, or
  ``[op, a, b]``), so a kernel over a symbolic length computes its grid at call time;
* :attr:`PTXKernel.dynamic_shared_bytes` is the dynamic shared memory a launch must request
  (static ``__shared__`` arrays are inside the PTX and need nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relaxvm_llvm.signature import KernelSignature

__all__ = ["LAUNCH_AXES", "PTXKernel", "PTXProgram"]

#: The order of :attr:`PTXKernel.launch`.
LAUNCH_AXES = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
)


@dataclass(frozen=True)
class PTXKernel:
    """One launchable kernel of a :class:`PTXProgram`."""

    name: str
    symbol: str
    signature: KernelSignature
    #: grid x, y, z then block x, y, z, as expression trees over the signature's variables.
    launch: tuple[Any, ...]
    dynamic_shared_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "symbol": self.symbol,
            "signature": self.signature.to_json(),
            "launch": list(self.launch),
            "dynamic_shared_bytes": self.dynamic_shared_bytes,
        }

    @classmethod
    def from_json(cls, data: Any) -> PTXKernel:
        if not isinstance(data, dict):
            raise ValueError("a PTX kernel entry must be an object")
        launch = data.get("launch")
        if not isinstance(launch, list) or len(launch) != len(LAUNCH_AXES):
            raise ValueError(f"a PTX kernel's launch must list {len(LAUNCH_AXES)} extents")
        shared = data.get("dynamic_shared_bytes", 0)
        if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
            raise ValueError("dynamic_shared_bytes must be a non-negative int")
        name, symbol = data.get("name"), data.get("symbol")
        if not isinstance(name, str) or not isinstance(symbol, str):
            raise ValueError("a PTX kernel's name and symbol must be strings")
        return cls(
            name, symbol, KernelSignature.from_json(data.get("signature")), tuple(launch), shared
        )


@dataclass(frozen=True)
class PTXProgram:
    """PTX text for one device architecture and the kernels it defines."""

    ptx: str
    #: The ``sm_XY`` the PTX was generated for.
    arch: str
    kernels: tuple[PTXKernel, ...]
