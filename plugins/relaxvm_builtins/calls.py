"""Builtins that call functions: closures, ``invoke_closure`` and ``call_tir_dyn``."""

from __future__ import annotations

from typing import Any

from relaxvm.errors import VMTypeError
from relaxvm.runtime import Shape
from relaxvm.vm.closure import VMClosure

from ._table import builtin
from ._util import type_name

__all__ = ["call_tir_dyn", "invoke_closure", "make_closure"]


@builtin("vm.builtin.make_closure")
def make_closure(func: VMClosure, *captured: Any) -> VMClosure:
    """A closure of ``func`` whose ``captured`` values follow the call-time arguments.

    Parameters
    ----------
    func : VMClosure
        The lifted Relax function (a VM function value).
    *captured
        The free variables the closure captured, appended after the arguments of each call.

    Raises
    ------
    VMTypeError
        ``func`` is not a VMClosure.
    """
    if type(func) is not VMClosure and not isinstance(func, VMClosure):
        raise VMTypeError(f"vm.builtin.make_closure: expect a VMClosure but get {type_name(func)}")
    return func.bind_last_args(captured)


@builtin("vm.builtin.invoke_closure")
def invoke_closure(ctx: Any, func: Any, *args: Any) -> Any:
    """Call a closure or a function value with ``args``.

    A :class:`VMClosure` runs as ``func.impl(ctx, *args)`` (it needs the VM); any other
    callable (a packed function, or a Python function passed as an ``R.Callable`` argument)
    runs as ``func(*args)``.

    Raises
    ------
    VMTypeError
        ``func`` is not callable.
    """
    if type(func) is VMClosure or isinstance(func, VMClosure):
        return func.impl(ctx, *args)
    if not callable(func):
        raise VMTypeError(
            f"vm.builtin.invoke_closure: expect a VMClosure or a Function but get {type_name(func)}"
        )
    return func(*args)


@builtin("vm.builtin.call_tir_dyn")
def call_tir_dyn(func: Any, *args: Any) -> Any:
    """Call a kernel with its tensor arguments followed by extra ints.

    Called as ``call_tir_dyn(func, *tensors, extra)`` where ``extra`` is a Shape of the
    symbolic values the kernel takes as trailing int parameters; runs
    ``func(*tensors, *extra)``.

    Raises
    ------
    VMTypeError
        No arguments, or the last one is not a Shape, or ``func`` is not callable.
    """
    if not args or not isinstance(args[-1], Shape):
        last = type_name(args[-1]) if args else "nothing"
        raise VMTypeError(
            "vm.builtin.call_tir_dyn: the last argument must be a Shape of extra int "
            f"arguments, got {last}"
        )
    if not callable(func):
        raise VMTypeError(f"vm.builtin.call_tir_dyn: expect a Function but get {type_name(func)}")
    return func(*args[:-1], *args[-1])
