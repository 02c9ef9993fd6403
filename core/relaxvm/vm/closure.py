"""VMClosure: the VM's value for a function (TVM's ``VMClosure``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["VMClosure"]


class VMClosure:
    """A callable VM value: a function name plus an implementation that takes the VM context
    first, then the call's arguments.

    Parameters
    ----------
    func_name : str
        The Relax function this closure runs (kept when arguments are bound).
    impl : callable
        ``impl(ctx, *args)``.

    Notes
    -----
    Call it through ``VirtualMachine.invoke_closure`` or ``vm.builtin.invoke_closure``, which
    supply the context.
    """

    __slots__ = ("func_name", "impl")

    def __init__(self, func_name: str, impl: Callable[..., Any]) -> None:
        self.func_name = func_name
        self.impl = impl

    def bind_last_args(self, captured: Sequence[Any]) -> VMClosure:
        """A closure that appends ``captured`` after the call-time arguments
        (TVM's ``VMClosure::BindLastArgs``)."""
        if not captured:
            return self
        impl = self.impl
        bound = tuple(captured)

        def bound_impl(ctx: Any, *args: Any) -> Any:
            return impl(ctx, *args, *bound)

        return VMClosure(self.func_name, bound_impl)

    def __repr__(self) -> str:
        return f"<VMClosure {self.func_name}>"
