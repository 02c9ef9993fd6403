"""``VDevice``: TVM's virtual device of a tensor's struct info.

TVM's ``relax.VDevice(target, vdevice_id, memory_scope)`` names where a tensor lives by
compilation target. relaxvm's :class:`~relaxvm.ir.relax.TensorStructInfo` records a runtime
:class:`~relaxvm.runtime.Device`; a ``VDevice`` *is* such a Device (its device type comes from
the target's kind: ``llvm`` -> cpu, ``cuda`` -> cuda...), so it can be passed as
``TensorStructInfo(..., vdevice=VDevice("llvm"))`` and compares equal to the plain device
where target and memory scope do not tell them apart.
"""

from __future__ import annotations

from typing import Any

from ...errors import VMTypeError, VMValueError
from ...runtime.device import Device

__all__ = ["VDevice"]

# DLPack device types of the target kinds TVM knows (the first word of a target string).
_TARGET_DEVICE_TYPES = {
    "llvm": 1, "c": 1, "cpu": 1, "cuda": 2, "nvptx": 2, "opencl": 4, "vulkan": 7,
    "metal": 8, "rocm": 10, "hexagon": 16, "webgpu": 15,
}  # fmt: skip


def _target_kind(target: Any) -> str:
    """The kind name of ``target``: a str (``"llvm -mcpu=x"``), a mapping with ``"kind"``
    or an object with ``kind_name`` (:class:`relaxvm.target.Target`)."""
    if isinstance(target, str):
        words = target.split()
        if not words:
            raise VMValueError("VDevice: target must not be an empty string")
        return words[0]
    if isinstance(target, dict):
        kind = target.get("kind")
        if not isinstance(kind, str):
            raise VMValueError(f"VDevice: a target mapping needs a str 'kind', got {target!r}")
        return kind
    kind_name = getattr(target, "kind_name", None)
    if isinstance(kind_name, str):
        return kind_name
    raise VMTypeError(
        f"VDevice: target must be a str, a mapping or a Target, got {type(target).__name__}"
    )


class VDevice(Device):
    """A virtual device, as TVM's ``relax.VDevice``.

    Parameters
    ----------
    target : str or Target or mapping, optional
        The compilation target (``"llvm"``, ``"cuda"``...). Without one the device is the
        CPU, as a tensor with no vdevice runs on the host.
    vdevice_id : int
        The device number (TVM's name; :attr:`device_id` and :attr:`index` are the same).
    memory_scope : str
        The memory scope, ``"global"`` by default.

    Raises
    ------
    VMValueError
        The target's kind has no known device, ``vdevice_id`` is negative or the memory
        scope is empty.
    VMTypeError
        The target is of an unsupported type.
    """

    __slots__ = ("memory_scope", "target")

    target: Any
    memory_scope: str

    def __init__(
        self, target: Any = None, vdevice_id: int = 0, memory_scope: str = "global"
    ) -> None:
        if target is None:
            device_type = 1
        else:
            kind = _target_kind(target)
            if kind not in _TARGET_DEVICE_TYPES:
                raise VMValueError(
                    f"VDevice: target kind {kind!r} has no known device; known kinds: "
                    f"{', '.join(sorted(_TARGET_DEVICE_TYPES))}"
                )
            device_type = _TARGET_DEVICE_TYPES[kind]
        if not isinstance(vdevice_id, int) or vdevice_id < 0:
            raise VMValueError(f"VDevice: vdevice_id must be an int >= 0, got {vdevice_id!r}")
        if not isinstance(memory_scope, str) or not memory_scope:
            raise VMValueError(
                f"VDevice: memory_scope must be a non-empty str, got {memory_scope!r}"
            )
        super().__init__(device_type, vdevice_id)
        self.target = target
        self.memory_scope = memory_scope

    @property
    def vdevice_id(self) -> int:
        """The device number (TVM's field name)."""
        return self.device_id

    def __eq__(self, other: object) -> bool:
        if isinstance(other, VDevice):
            return (
                super().__eq__(other) is True
                and str(self.target) == str(other.target)
                and self.memory_scope == other.memory_scope
            )
        return super().__eq__(other)

    def __hash__(self) -> int:
        return super().__hash__()

    def __repr__(self) -> str:
        return (
            f"VDevice(target={self.target!r}, vdevice_id={self.device_id}, "
            f"memory_scope={self.memory_scope!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (VDevice, (self.target, self.device_id, self.memory_scope))
