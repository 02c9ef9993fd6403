"""The devices and allocators a :class:`~relaxvm.VirtualMachine` is created with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import VMTypeError, VMValueError
from ..runtime import Allocator, Device, cpu
from ..runtime.memory import AllocatorType, get_allocator

__all__ = ["setup_allocators", "setup_devices"]

_CPU_DEVICE_TYPE = 1


def setup_devices(device: Device | Sequence[Device]) -> list[Device]:
    """The VM's devices: ``device`` as a list, a CPU appended when the last is not one."""
    if isinstance(device, Device):
        devices = [device]
    elif isinstance(device, list | tuple) and device and all(isinstance(d, Device) for d in device):
        devices = list(device)
    else:
        raise VMTypeError(
            f"VirtualMachine: device must be a Device or a non-empty list of Devices, got {device!r}"
        )
    for dev in devices:
        api = dev.api  # raises DeviceError when no API is installed for it
        require = getattr(api, "require", None)
        if require is not None:
            require(dev.device_id)  # says what is missing: library, driver or device
    if devices[-1].device_type != _CPU_DEVICE_TYPE:
        devices.append(cpu())
    return devices


def _allocator_type(value: Any, where: str) -> AllocatorType:
    if isinstance(value, str):
        names = {"naive": AllocatorType.NAIVE, "pooled": AllocatorType.POOLED}
        if value not in names:
            raise VMValueError(f"{where}: unknown allocator {value!r}; use 'naive' or 'pooled'")
        return names[value]
    if isinstance(value, int) and value in (1, 2):
        return AllocatorType(value)
    raise VMTypeError(f"{where}: expected 'naive', 'pooled', 1 or 2, got {value!r}")


def setup_allocators(
    devices: list[Device], memory_cfg: str | dict[Device, int | str] | None
) -> list[Allocator]:
    """One allocator per device, from ``memory_cfg`` (see :class:`VirtualMachine`)."""
    default = AllocatorType.POOLED
    per_device: dict[Device, AllocatorType] = {}
    if isinstance(memory_cfg, str):
        default = _allocator_type(memory_cfg, "VirtualMachine(memory_cfg=...)")
    elif isinstance(memory_cfg, dict):
        for dev, kind in memory_cfg.items():
            if not isinstance(dev, Device):
                raise VMTypeError(f"memory_cfg keys must be Devices, got {dev!r}")
            per_device[dev] = _allocator_type(kind, f"memory_cfg[{dev!r}]")
    elif memory_cfg is not None:
        raise VMTypeError(
            f"memory_cfg must be None, a str or a dict, got {type(memory_cfg).__name__}"
        )
    return [get_allocator(dev, per_device.get(dev, default)) for dev in devices]
