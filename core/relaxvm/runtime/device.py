"""Devices and the device API protocol.

A :class:`Device` is DLPack's ``(device_type, device_id)`` pair. Which kinds exist is not
hard-coded: a plugin registers ``device_api.<kind>`` (a factory returning a :class:`DeviceAPI`)
and that makes ``relaxvm.device("<kind>")`` work. The CPU API comes from the builtins plugin,
the CUDA API from the CUDA target.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import DeviceError

__all__ = ["Device", "DeviceAPI", "cpu", "cuda", "device", "get_device_api"]

# DLPack's device type codes, used only to print devices whose API is not installed
# (for example a constant's device read from a file written elsewhere).
_DLPACK_NAMES = {
    1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
    10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi",
    15: "webgpu", 16: "hexagon",
}  # fmt: skip


@runtime_checkable
class DeviceAPI(Protocol):
    """What a device kind provides. Buffers are opaque objects owned by the API.

    Attributes
    ----------
    kind : str
        The name users write (``"cpu"``, ``"cuda"``).
    device_type : int
        The DLPack device type code.
    host_accessible : bool
        Whether buffer memory can be read directly by the host (numpy views are possible).

    Notes
    -----
    Two optional methods are used when present: ``require(device_id)``, called when a VM is
    created on the device, raises a ``DeviceError`` saying what is missing (a library, a
    driver, the device); ``synchronize(device_id)`` waits for the device's queued work.
    """

    kind: str
    device_type: int
    host_accessible: bool

    def exists(self, device_id: int) -> bool:
        """Whether device ``device_id`` is present and usable."""
        ...

    def alloc(self, device_id: int, nbytes: int, alignment: int) -> Any:
        """Allocate ``nbytes`` (at least 1) aligned to ``alignment``; return a buffer handle.

        Raises ``VMError`` when memory is exhausted (never crashes)."""
        ...

    def free(self, buffer: Any) -> None:
        """Release a buffer returned by :meth:`alloc`."""
        ...

    def data_ptr(self, buffer: Any) -> int:
        """The address of the first byte of ``buffer``."""
        ...

    def copy_from_host(self, buffer: Any, byte_offset: int, src: np.ndarray) -> None:
        """Copy the C-contiguous host array ``src`` into ``buffer`` at ``byte_offset``."""
        ...

    def copy_to_host(self, buffer: Any, byte_offset: int, dst: np.ndarray) -> None:
        """Copy ``dst.nbytes`` bytes from ``buffer`` at ``byte_offset`` into ``dst``."""
        ...

    def host_view(self, buffer: Any) -> np.ndarray:
        """A uint8 numpy array over the whole buffer (host-accessible APIs only)."""
        ...


class Device:
    """A device: DLPack ``(device_type, device_id)``.

    Build one with :func:`device`, :func:`cpu` or :func:`cuda`; constructing ``Device(type, id)``
    directly does not check that the kind is installed.
    """

    __slots__ = ("_hash", "device_id", "device_type")

    device_type: int
    device_id: int

    def __init__(self, device_type: int, device_id: int = 0) -> None:
        if not isinstance(device_type, int) or not isinstance(device_id, int):
            raise DeviceError(
                f"Device: device_type and device_id must be ints, got {device_type!r}, "
                f"{device_id!r}"
            )
        if device_id < 0:
            raise DeviceError(f"Device: device_id must be >= 0, got {device_id}")
        self.device_type = device_type
        self.device_id = device_id
        self._hash = hash((device_type, device_id))

    @property
    def index(self) -> int:
        """The device number: TVM's spelling of :attr:`device_id` (``dev.index``)."""
        return self.device_id

    @property
    def kind(self) -> str:
        """The kind name (``"cpu"``), from the installed device API or DLPack's table."""
        api = _api_by_type(self.device_type)
        if api is not None:
            return api.kind
        return _DLPACK_NAMES.get(self.device_type, f"device_type{self.device_type}")

    @property
    def api(self) -> DeviceAPI:
        """The installed :class:`DeviceAPI` for this device.

        Raises
        ------
        DeviceError
            No plugin registered an API for this device type.
        """
        api = _api_by_type(self.device_type)
        if api is None:
            raise DeviceError(
                f"no device API is installed for {self!r}; installed kinds: "
                f"{', '.join(_installed_kinds()) or 'none'}"
            )
        return api

    @property
    def exist(self) -> bool:
        """Whether this device is present (False when its API is not installed)."""
        api = _api_by_type(self.device_type)
        return api is not None and api.exists(self.device_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self.device_type == other.device_type and self.device_id == other.device_id

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"{self.kind}({self.device_id})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Device, (self.device_type, self.device_id))


_apis_by_kind: dict[str, DeviceAPI] = {}
_apis_by_type: dict[int, DeviceAPI] = {}
_scanned_registry_size = -1


def _refresh() -> None:
    """Index the ``device_api.*`` entries of the registry (cheap when nothing changed)."""
    global _scanned_registry_size
    from ..registry import functions as registry

    registry._ensure_plugins()
    if len(registry._functions) == _scanned_registry_size:
        return
    _apis_by_kind.clear()
    _apis_by_type.clear()
    for name, factory in list(registry._functions.items()):
        if not name.startswith("device_api."):
            continue
        api = factory()
        if not isinstance(api, DeviceAPI):
            raise DeviceError(
                f"{name} (from {registry._sources[name]}) returned {type(api).__name__}, "
                "which does not implement relaxvm.runtime.DeviceAPI"
            )
        _apis_by_kind[api.kind] = api
        _apis_by_type[api.device_type] = api
    _scanned_registry_size = len(registry._functions)


def _forget_device_apis() -> None:
    """Drop the cached device APIs (the registry changed under us: tests, plugin reloads)."""
    global _scanned_registry_size
    _apis_by_kind.clear()
    _apis_by_type.clear()
    _scanned_registry_size = -1


def _api_by_type(device_type: int) -> DeviceAPI | None:
    api = _apis_by_type.get(device_type)
    if api is None:
        _refresh()
        api = _apis_by_type.get(device_type)
    return api


def _installed_kinds() -> list[str]:
    _refresh()
    return sorted(_apis_by_kind)


def get_device_api(kind: str) -> DeviceAPI:
    """The installed :class:`DeviceAPI` for ``kind``.

    Raises
    ------
    DeviceError
        No plugin registered ``device_api.<kind>``.
    """
    api = _apis_by_kind.get(kind)
    if api is None:
        _refresh()
        api = _apis_by_kind.get(kind)
    if api is None:
        raise DeviceError(
            f"unknown device kind {kind!r}: no plugin registered device_api.{kind} "
            f"(installed kinds: {', '.join(_installed_kinds()) or 'none'})"
        )
    return api


def device(kind: str | int, device_id: int = 0) -> Device:
    """Build a :class:`Device` from a kind name (``"cpu"``, ``"cuda:1"``) or a DLPack code.

    Raises
    ------
    DeviceError
        The kind is not installed or the id is negative.
    """
    if isinstance(kind, int):
        return Device(kind, device_id)
    if not isinstance(kind, str):
        raise DeviceError(f"device: kind must be a str or int, got {type(kind).__name__}")
    name, _, index = kind.partition(":")
    if index:
        try:
            device_id = int(index)
        except ValueError:
            raise DeviceError(f"device: cannot parse device id in {kind!r}") from None
    _refresh()
    api = _apis_by_kind.get(name)
    if api is not None:
        return Device(api.device_type, device_id)
    # A DLPack kind whose plugin is not installed still names a device (``cuda(0).exist`` is
    # then False, as in TVM); using it for memory raises a DeviceError naming the kind.
    for device_type, dlpack_name in _DLPACK_NAMES.items():
        if dlpack_name == name:
            return Device(device_type, device_id)
    raise DeviceError(
        f"unknown device kind {name!r}: no plugin registered device_api.{name} "
        f"(installed kinds: {', '.join(_installed_kinds()) or 'none'})"
    )


def cpu(device_id: int = 0) -> Device:
    """The CPU device ``device_id``."""
    return device("cpu", device_id)


def cuda(device_id: int = 0) -> Device:
    """The CUDA device ``device_id``; running on it needs a plugin providing ``device_api.cuda``."""
    return device("cuda", device_id)
