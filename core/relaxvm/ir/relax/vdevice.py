"""``VDevice``: TVM's virtual device of a tensor's struct info.

TVM's ``relax.VDevice(target, vdevice_id, memory_scope)`` names where a tensor lives by
compilation target. relaxvm's :class:`~relaxvm.ir.relax.TensorStructInfo` records a runtime
:class:`~relaxvm.runtime.Device`; a ``VDevice`` *is* such a Device (its device type comes from
the target's kind: ``llvm`` -> cpu, ``cuda`` -> cuda...), so it can be passed as
``TensorStructInfo(..., vdevice=VDevice("llvm"))`` and compares equal to the plain device
where target and memory scope do not tell them apart.

A ``VDevice`` is also a :class:`~relaxvm.ir.global_info.GlobalInfo`: a module lists its
virtual devices under ``mod.global_infos["vdevice"]``, and the script's ``"cuda:1"`` names the
second of them whose target kind is ``cuda`` (:func:`lookup_vdevice`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import RelaxVMError, VMTypeError, VMValueError
from ...runtime.device import Device
from ..global_info import GlobalInfo

__all__ = [
    "VDevice",
    "describe_vdevices",
    "lookup_vdevice",
    "resolve_vdevice",
    "vdevice_reference",
]

# DLPack device types of the target kinds TVM knows (the first word of a target string).
_TARGET_DEVICE_TYPES = {
    "llvm": 1, "c": 1, "cpu": 1, "cuda": 2, "nvptx": 2, "opencl": 4, "vulkan": 7,
    "metal": 8, "rocm": 10, "hexagon": 16, "webgpu": 15,
}  # fmt: skip
# Target kinds that are also runtime device kinds: "cuda:0" outside a module is cuda(0).
_DEVICE_KINDS = frozenset({"cpu", "cuda", "opencl", "vulkan", "metal", "rocm", "hexagon", "webgpu"})


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


class VDevice(Device, GlobalInfo):
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

    __slots__ = ("_target_key", "memory_scope", "target")

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
        self._target_key: tuple[Any, ...] | None = None

    @property
    def vdevice_id(self) -> int:
        """The device number (TVM's field name)."""
        return self.device_id

    @property
    def target_kind(self) -> str | None:
        """The target's kind name (``"llvm"``, ``"cuda"``), None without a target."""
        return None if self.target is None else _target_kind(self.target)

    def target_config(self) -> dict[str, Any] | None:
        """The target as TVM's config mapping: ``{"kind": ..., attribute: value...}`` with
        the attributes that were given (for a :class:`~relaxvm.target.Target`, those that
        differ from its kind's defaults). None without a target."""
        from ...target import Target

        target = self.target
        if target is None:
            return None
        if isinstance(target, str):
            return _string_config(target)
        if isinstance(target, dict):
            return dict(target)
        if isinstance(target, Target):
            kind = target.kind
            defaults = kind.default_attrs() if kind.default_attrs else {}
            config: dict[str, Any] = {"kind": target.kind_name}
            config.update(
                (key, value)
                for key, value in target.attrs.items()
                if key not in defaults or defaults[key] != value
            )
            if target.host is not None:
                config["host"] = str(target.host)
            return config
        return {"kind": _target_kind(target)}

    def target_key(self) -> tuple[Any, ...]:
        """What equality compares of the target: kind, given attributes and host, the same
        for ``"cuda -arch=sm_80"``, ``{"kind": "cuda", "arch": "sm_80"}`` and
        ``Target("cuda -arch=sm_80")``. Attributes left to the kind's defaults are not filled
        in: ``"cuda"`` and ``"cuda -arch=sm_80"`` are two targets, as in TVM."""
        if self._target_key is None:
            self._target_key = _canonical_target(self.target_config())
        return self._target_key

    def script(self) -> str:
        """The ``I.vdevice(...)`` text of this device, in TVM's printed form."""
        from ..printer import literal

        config = self.target_config()
        target = "None" if config is None else literal(config)
        return f"I.vdevice({target}, {self.device_id}, {literal(self.memory_scope)})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, VDevice):
            return (
                super().__eq__(other) is True
                and self.memory_scope == other.memory_scope
                and self.target_key() == other.target_key()
            )
        return super().__eq__(other)

    def __hash__(self) -> int:
        # The Device's hash: a VDevice equals the plain Device it can stand for.
        return super().__hash__()

    def __repr__(self) -> str:
        return (
            f"VDevice(target={self.target!r}, vdevice_id={self.device_id}, "
            f"memory_scope={self.memory_scope!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (VDevice, (self.target, self.device_id, self.memory_scope))


def _string_config(text: str) -> dict[str, Any]:
    """``"cuda -arch=sm_80 -flag"`` as ``{"kind": "cuda", "arch": "sm_80", "flag": True}``."""
    from ...target import TargetError, _parse_string

    try:
        kind, attrs = _parse_string(text)
    except TargetError as err:
        raise VMValueError(f"VDevice: {err}") from None
    return {"kind": kind, **attrs}


def _canonical_target(config: dict[str, Any] | None) -> tuple[Any, ...]:
    if config is None:
        return ()
    attrs = dict(config)
    kind = attrs.pop("kind")
    host = attrs.pop("host", None)
    # repr: attribute values may be unhashable (lists); their text compares the same.
    items = tuple(sorted((str(key), repr(value)) for key, value in attrs.items()))
    return (kind, items, None if host is None else str(host))


def vdevice_reference(vdevice: Device, vdevices: Sequence[VDevice]) -> str | None:
    """The script's ``"kind:index"`` for ``vdevice`` within a module's ``vdevices``: the
    target kind and the position among the listed devices of that kind (TVM's printed form).
    None when ``vdevice`` is not listed."""
    if not isinstance(vdevice, VDevice) or vdevice.target is None:
        return None
    kind = vdevice.target_kind
    same_kind = [listed for listed in vdevices if listed.target_kind == kind]
    # The listed object itself first (what the parser puts in annotations), then an equal one.
    for index, listed in enumerate(same_kind):
        if listed is vdevice:
            return f"{kind}:{index}"
    for index, listed in enumerate(same_kind):
        if listed == vdevice:
            return f"{kind}:{index}"
    return None


def lookup_vdevice(
    vdevices: Sequence[VDevice], kind: str, index: int, memory_scope: str | None = None
) -> VDevice | None:
    """The ``index``-th of ``vdevices`` whose target kind is ``kind`` (TVM's
    ``lookup_vdevice``); ``kind="vdevice"`` indexes the whole list.

    Parameters
    ----------
    vdevices : sequence of VDevice
        A module's ``global_infos["vdevice"]``.
    kind : str
        A target kind (``"llvm"``, ``"cuda"``) or ``"vdevice"``.
    index : int
        The position among the devices of that kind.
    memory_scope : str, optional
        When given (the ``"cuda:0:global"`` spelling), the found device must have it.

    Returns
    -------
    VDevice or None
        None when no listed device has target kind ``kind`` (the caller decides whether the
        name is a plain device kind instead).

    Raises
    ------
    VMValueError
        Devices of that kind are listed but not ``index`` + 1 of them, or the memory scope
        differs; the message lists the module's virtual devices.
    """
    if kind == "vdevice":
        matching = list(vdevices)
    else:
        matching = [vdev for vdev in vdevices if vdev.target_kind == kind]
    if not matching:
        return None
    if not 0 <= index < len(matching):
        raise VMValueError(
            f"vdevice '{kind}:{index}' refers to {kind} device number {index}, but the module "
            f"lists {len(matching)} {kind} virtual device(s); its vdevices are: "
            f"{describe_vdevices(vdevices)}"
        )
    found = matching[index]
    if memory_scope is not None and found.memory_scope != memory_scope:
        raise VMValueError(
            f"vdevice '{kind}:{index}:{memory_scope}': the module's {kind}:{index} has memory "
            f"scope {found.memory_scope!r}; its vdevices are: {describe_vdevices(vdevices)}"
        )
    return found


def describe_vdevices(vdevices: Sequence[VDevice]) -> str:
    """``[0] I.vdevice(...), [1] ...`` for error messages."""
    if not vdevices:
        return "(none)"
    return ", ".join(f"[{i}] {vdev.script()}" for i, vdev in enumerate(vdevices))


def resolve_vdevice(text: str, vdevices: Sequence[VDevice], where: str) -> Device:
    """The device the script's ``"kind"``, ``"kind:index"`` or ``"kind:index:scope"`` names.

    Within a module that lists virtual devices (``vdevices``), a target kind listed there
    names one of them (:func:`lookup_vdevice`). Otherwise a device kind (``"cpu:0"``,
    ``"cuda:1"``) is the plain runtime device, and a target kind (``"llvm"``) a new
    :class:`VDevice` of that target.

    Raises
    ------
    VMValueError
        A malformed string, a reference past the module's devices of that kind, or a kind
        that is neither a device nor a target kind.
    """
    from ...runtime.device import device

    parts = text.split(":")
    kind = parts[0]
    scope = parts[2] if len(parts) == 3 else None
    try:
        index = int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        index = -1
    if not kind or len(parts) > 3 or index < 0 or scope == "":
        raise VMValueError(
            f"{where}: vdevice must be 'kind', 'kind:index' or 'kind:index:memory_scope' "
            f"(e.g. 'cuda:0'), got {text!r}"
        )
    found = lookup_vdevice(vdevices, kind, index, scope) if vdevices else None
    if found is not None:
        return found
    if kind in _TARGET_DEVICE_TYPES and (scope is not None or kind not in _DEVICE_KINDS):
        return VDevice(kind, index, scope or "global")
    try:
        return device(kind, index)
    except RelaxVMError:
        listed = f"; the module's vdevices are: {describe_vdevices(vdevices)}" if vdevices else ""
        raise VMValueError(
            f"{where}: vdevice {text!r} names neither a device kind nor a target kind{listed}"
        ) from None
