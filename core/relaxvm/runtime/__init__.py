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
from .module import Module
from .shape import Shape
from .tensor import Tensor

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
    "tensor",
]
