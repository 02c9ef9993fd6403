"""Fixtures for the builtins' unit tests: a stand-in for the VM context.

The builtins may rely only on ``ctx.devices``, ``ctx.allocators`` and ``ctx.invoke_closure``,
so a three-attribute object is a faithful context and keeps these tests independent of the VM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import relaxvm
from relaxvm.runtime import Allocator, Device, PooledAllocator
from relaxvm.vm.closure import VMClosure


class FakeVM:
    """The part of ``VirtualMachine`` the builtins see (host CPU last, as in the VM)."""

    def __init__(self, devices: list[Device], allocators: list[Allocator]) -> None:
        self.devices = devices
        self.allocators = allocators

    def invoke_closure(self, func: VMClosure | Callable[..., Any], *args: Any) -> Any:
        if isinstance(func, VMClosure):
            return func.impl(self, *args)
        return func(*args)


@pytest.fixture
def make_ctx() -> Callable[[list[Device], list[Allocator]], FakeVM]:
    """Build a context with chosen devices and allocators (the last device is the host)."""
    return FakeVM


@pytest.fixture
def ctx() -> FakeVM:
    """A one-device (CPU) context with its own pooled allocator, so stats start at zero."""
    cpu = relaxvm.cpu()
    return FakeVM([cpu], [PooledAllocator(cpu)])


@pytest.fixture
def builtin() -> Callable[[str], Callable[..., Any]]:
    """Look a builtin up in the global registry, as the VM does (``"copy"`` -> vm.builtin.copy)."""

    def lookup(name: str) -> Callable[..., Any]:
        return relaxvm.get_global_func(f"vm.builtin.{name}")

    return lookup
