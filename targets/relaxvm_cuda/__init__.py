"""relaxvm's CUDA target: TIR to PTX through llvmlite's NVPTX backend, run through the
CUDA driver (``libcuda.so.1``, via ctypes).

Compiling needs no GPU; running needs an NVIDIA driver and device. Importing this package
loads neither llvmlite nor the driver: every name below is imported on first access. See
``docs/cuda.md``.

>>> import relaxvm_cuda
>>> relaxvm_cuda.is_available() in (True, False)
True
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "CUDABuildError",
    "CUDADeviceAPI",
    "CUDADriver",
    "CUDADriverError",
    "CUDAKernel",
    "CUDAModule",
    "CUDAModuleLoadError",
    "CUDAOutOfMemoryError",
    "CUDAUnavailableError",
    "PTXKernel",
    "PTXProgram",
    "build",
    "compile_ptx",
    "cuda_device_api",
    "default_arch",
    "driver_unavailable_reason",
    "get_driver",
    "is_available",
    "load",
    "serialize",
    "set_driver",
    "target_info",
]

# name -> submodule that defines it
_LAZY = {
    "CUDABuildError": "errors",
    "CUDADeviceAPI": "device",
    "cuda_device_api": "device",
    "CUDADriver": "driver",
    "get_driver": "driver",
    "set_driver": "driver",
    "driver_unavailable_reason": "driver",
    "CUDADriverError": "runtime_errors",
    "CUDAModuleLoadError": "runtime_errors",
    "CUDAOutOfMemoryError": "runtime_errors",
    "CUDAUnavailableError": "runtime_errors",
    "CUDAKernel": "module",
    "CUDAModule": "module",
    "PTXKernel": "program",
    "PTXProgram": "program",
    "build": "target",
    "default_arch": "target",
    "load": "target",
    "serialize": "target",
    "target_info": "target",
    "compile_ptx": "codegen",
}


def is_available(device_id: int = 0) -> bool:
    """Whether CUDA device ``device_id`` can run kernels here (driver loaded, device present).
    Never raises."""
    from .device import cuda_device_api

    return cuda_device_api().exists(device_id)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'relaxvm_cuda' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
