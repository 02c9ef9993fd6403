"""Runtime objects: devices, data types, shapes, tensors, storage, allocators and modules."""

from __future__ import annotations

from .creation import empty, from_dlpack, tensor
from .device import Device, DeviceAPI, cpu, cuda, device, get_device_api
from .dtype import DataType, DataTypeCode
from .memory import (
    Allocator,
    AllocatorStats,
    AllocatorType,
    NaiveAllocator,
    PooledAllocator,
    Storage,
    clear_pools,
    get_allocator,
)
from .module import Module, load_module
from .shape import Shape
from .tensor import Tensor

#: TVM's name for a shape value (``tvm.runtime.ShapeTuple``), the very class :class:`Shape`.
ShapeTuple = Shape

__all__ = [
    "Allocator",
    "AllocatorStats",
    "AllocatorType",
    "DataType",
    "DataTypeCode",
    "Device",
    "DeviceAPI",
    "Module",
    "NaiveAllocator",
    "PooledAllocator",
    "Shape",
    "ShapeTuple",
    "Storage",
    "Tensor",
    "clear_pools",
    "cpu",
    "cuda",
    "device",
    "empty",
    "from_dlpack",
    "get_allocator",
    "get_device_api",
    "load_module",
    "tensor",
]
