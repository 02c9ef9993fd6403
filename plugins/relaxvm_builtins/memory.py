"""Storage and tensor allocation builtins, device copies and the memory manager.

The compiler's memory planner turns every intermediate tensor into an ``alloc_storage`` (a
block from one of the VM's allocators) plus ``alloc_tensor`` views into it, and writes
``null_value`` into a register to drop its reference after the last use.

These run for every planned tensor, so each offers the VM a fast path for its call sites
(call-site specialisation, :mod:`relaxvm.registry.specialization`): the arguments fixed when
the VM loads (offsets, shapes, dtypes, the device) are checked once there, and what is left
per call is the one test the builtin itself would make first. Anything else goes to the
builtin, which converts or raises the exact error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from relaxvm.errors import DeviceError, VMError, VMTypeError, VMValueError
from relaxvm.registry.specialization import CallSite, Specialization, specializer
from relaxvm.runtime import (
    AllocatorType,
    DataType,
    Device,
    Shape,
    Storage,
    Tensor,
    clear_pools,
    get_allocator,
)
from relaxvm.runtime.memory import DEFAULT_ALIGNMENT
from relaxvm.vm.native_plan import replay_safe

from ._table import builtin
from ._util import type_name

__all__ = [
    "alloc_storage",
    "alloc_tensor",
    "copy_tensor_to",
    "ensure_zero_offset",
    "memory_manager_clear",
    "null_value",
    "static_tensor_end",
    "to_device",
]


@builtin("vm.builtin.alloc_storage")
@replay_safe
def alloc_storage(
    ctx: Any,
    size: Shape | int,
    device_index: int,
    dtype_hint: DataType | str | None = None,
    mem_scope: str | None = "global",
) -> Storage:
    """Allocate a block of memory from one of the VM's allocators.

    Parameters
    ----------
    ctx : VirtualMachine
        The VM (``%vm``); ``ctx.allocators[i]`` serves ``ctx.devices[i]``.
    size : Shape or int
        The byte count, as a one-element Shape (what the compiler passes) or an int.
    device_index : int
        Index into the VM's devices; ``-1`` is the host (the last device).
    dtype_hint : DataType, optional
        The element type the block will mostly hold (passed on to the allocator). Unlike
        TVM, the byte count is not multiplied by its size: the compiler passes bytes.
    mem_scope : str, optional
        Memory scope; only ``"global"`` exists on relaxvm's devices.

    Returns
    -------
    Storage

    Raises
    ------
    VMError
        ``device_index`` is out of the VM's devices list, or the device is out of memory.
    VMTypeError
        ``size`` is neither a Shape nor an int.
    VMValueError
        Negative size, or an unsupported memory scope.
    """
    if type(size) is Shape:
        dims: Any = size  # mypy does not narrow on ``type(x) is``
        nbytes = dims[0] if len(dims) == 1 else math.prod(dims)
    elif type(size) is int:
        nbytes = size
    else:
        raise VMTypeError(
            f"vm.builtin.alloc_storage: size must be a Shape holding the byte count, got "
            f"{type_name(size)}"
        )
    allocators = ctx.allocators
    if type(device_index) is not int or not -1 <= device_index < len(allocators):
        raise VMError(
            f"vm.builtin.alloc_storage: The device index {device_index!r} is out of VM physical "
            f"devices list (the VM has {len(allocators)} devices: "
            f"{', '.join(map(repr, ctx.devices))}; -1 means the host)"
        )
    return allocators[device_index].alloc(
        nbytes, dtype_hint=dtype_hint, scope="global" if mem_scope is None else mem_scope
    )


@specializer(alloc_storage)
def _alloc_storage_site(site: CallSite) -> Specialization | None:
    """Every argument fixed (what the planner emits): the allocator and byte count are
    found once; each call is then the allocator's ``alloc`` itself."""
    if not 3 <= len(site) <= 5 or not site.all_fixed():
        return None
    ctx, size, device_index = site.args[:3]
    dtype_hint = site.args[3] if len(site) > 3 else None
    mem_scope = site.args[4] if len(site) > 4 else "global"
    if type(size) is Shape:
        nbytes = size[0] if len(size) == 1 else math.prod(size)
    elif type(size) is int:
        nbytes = size
    else:
        return None
    allocators = getattr(ctx, "allocators", None)
    if type(allocators) is not list or type(device_index) is not int:
        return None
    if not -1 <= device_index < len(allocators):
        return None
    alloc = allocators[device_index].alloc
    scope = "global" if mem_scope is None else mem_scope

    def alloc_storage_site() -> Storage:
        return alloc(nbytes, dtype_hint=dtype_hint, scope=scope)

    return Specialization.call(
        alloc_storage_site,
        inline="{alloc}({nbytes}, dtype_hint={hint}, scope={scope})",
        alloc=alloc,
        nbytes=nbytes,
        hint=dtype_hint,
        scope=scope,
    )


@builtin("vm.builtin.alloc_tensor")
@replay_safe
def alloc_tensor(
    storage: Storage,
    offset: int,
    shape: Shape,
    dtype: DataType,
    scope: str | None = None,
) -> Tensor:
    """A tensor of ``shape`` and ``dtype`` viewing ``storage`` from byte ``offset``.

    Raises
    ------
    VMValueError
        The tensor does not fit (``"storage allocation failure, attempted to allocate N at
        offset O in region that is S bytes"``), or an unsupported memory scope.
    VMTypeError
        An argument of the wrong kind.
    """
    if (
        type(storage) is Storage
        and type(shape) is Shape
        and type(dtype) is DataType
        and type(offset) is int
        and (scope is None or scope == "global")
    ):
        # Storage.alloc_tensor inlined: the same bounds check and the same Tensor, without
        # two extra calls and a per-call import (this runs for every planned tensor).
        nbytes = math.prod(shape) * ((dtype.bits * dtype.lanes + 7) >> 3)
        if offset >= 0 and offset + nbytes <= storage.nbytes:
            return Tensor(storage, offset, shape, dtype)
    return _alloc_tensor_checked(storage, offset, shape, dtype, scope)


def _alloc_tensor_checked(storage: Any, offset: Any, shape: Any, dtype: Any, scope: Any) -> Tensor:
    """``alloc_tensor`` for arguments that missed the fast path: convert or explain."""
    if not isinstance(storage, Storage):
        raise VMTypeError(f"vm.builtin.alloc_tensor: expect a Storage but get {type_name(storage)}")
    if type(offset) is not int:
        raise VMTypeError(
            f"vm.builtin.alloc_tensor: offset must be an int, got {type_name(offset)}"
        )
    if scope is not None and scope != "global":
        raise VMValueError(
            f"vm.builtin.alloc_tensor: memory scope {scope!r} is not supported (only 'global')"
        )
    if not isinstance(shape, (tuple, list)):
        raise VMTypeError(f"vm.builtin.alloc_tensor: shape must be a Shape, got {type_name(shape)}")
    return storage.alloc_tensor(offset, Shape(shape), DataType(dtype))


def static_tensor_end(offset: Any, shape: Any, dtype: Any) -> int | None:
    """The byte end of an ``alloc_tensor`` whose offset, shape and dtype are fixed values
    (None when they are not the plain kinds the fast path takes).

    With that end, ``alloc_tensor`` succeeds exactly when the storage is a :class:`Storage`
    of at least ``end`` bytes.
    """
    if type(offset) is not int or offset < 0 or type(shape) is not Shape:
        return None
    if type(dtype) is not DataType:
        return None
    return offset + math.prod(shape) * ((dtype.bits * dtype.lanes + 7) >> 3)


@specializer(alloc_tensor)
def _alloc_tensor_site(site: CallSite) -> Specialization | None:
    """``alloc_tensor(storage register, offset, shape, dtype)`` with the shape fixed (a
    planned tensor) or from a register (a shape made at run time by ``make_shape``)."""
    func = site.func
    if len(site) != 4 or not site.is_register(0) or not site.all_fixed(3):
        return None
    offset, dtype = site.args[1], site.args[3]
    if site.is_register(1):
        return None
    if not site.is_register(2):
        shape = site.args[2]
        end = static_tensor_end(offset, shape, dtype)
        if end is None:
            return None

        def alloc_fixed(storage: Any) -> Any:
            if storage.__class__ is Storage and storage.nbytes >= end:
                return Tensor(storage, offset, shape, dtype)
            return func(storage, offset, shape, dtype)

        return Specialization.call(
            alloc_fixed,
            inline="{Tensor}({0}, {offset}, {shape}, {dtype}) if {0}.__class__ is {Storage} "
            "and {0}.nbytes >= {end} else {call}",
            Tensor=Tensor,
            Storage=Storage,
            offset=offset,
            shape=shape,
            dtype=dtype,
            end=end,
        )
    if static_tensor_end(offset, Shape(()), dtype) is None:
        return None
    itemsize = (dtype.bits * dtype.lanes + 7) >> 3
    prod = math.prod

    def alloc_shaped(storage: Any, shape: Any) -> Any:
        if (
            storage.__class__ is Storage
            and shape.__class__ is Shape
            and storage.nbytes >= offset + prod(shape) * itemsize
        ):
            return Tensor(storage, offset, shape, dtype)
        return func(storage, offset, shape, dtype)

    return Specialization.call(
        alloc_shaped,
        inline="{Tensor}({0}, {offset}, {1}, {dtype}) if {0}.__class__ is {Storage} and "
        "{1}.__class__ is {Shape} and {0}.nbytes >= {offset} + {prod}({1}) * {itemsize} "
        "else {call}",
        Tensor=Tensor,
        Storage=Storage,
        Shape=Shape,
        prod=prod,
        offset=offset,
        dtype=dtype,
        itemsize=itemsize,
    )


@builtin("vm.builtin.null_value")
@replay_safe
def null_value() -> None:
    """None: written into a register to drop the reference it held (``kill_object``)."""
    return None


@specializer(null_value)
def _null_value_site(site: CallSite) -> Specialization | None:
    """A kill: the destination receives None, no call."""
    return Specialization.constant(None) if len(site) == 0 else None


class _OffsetStorage(Storage):
    """A storage that starts inside another one; keeps that one (and its memory) alive.

    The parent reference matters beyond keeping bytes alive: a pooled allocator would
    otherwise take the parent's block back and hand it out while this view still used it.
    """

    __slots__ = ("parent",)

    def __init__(self, parent: Storage, start: int) -> None:
        super().__init__(
            parent.buffer[start:], parent.nbytes - start, parent.device, parent.api, None
        )
        self.parent = parent


@builtin("vm.builtin.ensure_zero_offset")
def ensure_zero_offset(data: Tensor) -> Tensor:
    """``data`` itself if its ``byte_offset`` is 0, else an equal tensor whose offset is 0.

    The result views the same memory when the device is host-accessible and the first
    element is aligned to 64 bytes (what kernels may assume); otherwise it is a copy.

    Raises
    ------
    VMTypeError
        ``data`` is not a Tensor.
    """
    if type(data) is not Tensor and not isinstance(data, Tensor):
        raise VMTypeError(
            f"vm.builtin.ensure_zero_offset: expect a Tensor but get {type_name(data)}"
        )
    offset = data.byte_offset
    if offset == 0:
        return data
    storage = data.storage
    if (
        storage.api.host_accessible
        and isinstance(storage.buffer, np.ndarray)
        and (storage.data_ptr + offset) % DEFAULT_ALIGNMENT == 0
    ):
        return Tensor(_OffsetStorage(storage, offset), 0, data.shape, data.dtype)
    return copy_tensor_to(data, data.device)


def copy_tensor_to(source: Tensor, device: Device) -> Tensor:
    """A copy of ``source`` in new memory on ``device`` (from its pooled allocator).

    Host-accessible sources are read in place; others are staged through one host array.
    """
    result = get_allocator(device, AllocatorType.POOLED).empty(source.shape, source.dtype)
    host = source.host_array() if source.storage.api.host_accessible else source.numpy()
    target = result.storage
    target.api.copy_from_host(target.buffer, result.byte_offset, host)
    return result


@builtin("vm.builtin.to_device")
def to_device(data: Tensor, dev_type: int, dev_id: int, scope: str | None = None) -> Tensor:
    """Copy ``data`` to the device ``(dev_type, dev_id)`` (always a copy, as in TVM).

    Parameters
    ----------
    data : Tensor
    dev_type : int
        DLPack device type (1 = CPU, 2 = CUDA).
    dev_id : int
    scope : str, optional
        Memory scope; only ``"global"``.

    Raises
    ------
    DeviceError
        No device API is installed for ``dev_type``, or the device does not exist.
    VMTypeError
        ``data`` is not a Tensor.
    VMValueError
        An unsupported memory scope.
    """
    if type(data) is not Tensor and not isinstance(data, Tensor):
        raise VMTypeError(f"vm.builtin.to_device: expect a Tensor but get {type_name(data)}")
    if scope is not None and scope != "global":
        raise VMValueError(
            f"vm.builtin.to_device: memory scope {scope!r} is not supported (only 'global')"
        )
    device = Device(dev_type, dev_id)
    api = device.api  # DeviceError naming the installed kinds when there is no API
    if not api.exists(dev_id):
        raise DeviceError(f"vm.builtin.to_device: device {device!r} does not exist")
    return copy_tensor_to(data, device)


@builtin("vm.builtin.memory_manager.clear")
def memory_manager_clear() -> None:
    """Give the memory cached by every pooled allocator back to its device.

    Memory that live tensors use is untouched; it returns to the (now empty) pool when freed.
    """
    clear_pools()
