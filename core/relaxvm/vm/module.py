"""``vm.module``: the VirtualMachine seen as a runtime module (TVM's ``vm.module``).

In TVM, ``VirtualMachine.module`` is the ``runtime.Module`` that loading the executable
creates (``rt_mod["vm_load_executable"]()``); ``vm[name]`` is ``vm.module[name]``, and the
module also answers the VM's own API functions by name (``set_input``, ``invoke_closure``,
...). :class:`VMModule` is that view of a relaxvm :class:`~relaxvm.VirtualMachine`, for code
written against TVM's module interface (``get_function``, ``__getitem__``,
``implements_function``, ``time_evaluator``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..runtime import Device, Module
from ..runtime.benchmark import BenchmarkResult

if TYPE_CHECKING:
    from .interpreter import VirtualMachine

__all__ = ["VM_MODULE_FUNCTIONS", "VMModule"]

#: The VM API functions the module answers by name (TVM's names), besides the VM functions.
VM_MODULE_FUNCTIONS = (
    "invoke_closure",
    "set_input",
    "invoke_stateful",
    "get_outputs",
    "get_function_arity",
    "get_function_param_name",
    "save_function",
    "set_instrument",
    "profile",
)


class VMModule(Module):
    """The runtime-module view of a :class:`~relaxvm.VirtualMachine` (``vm.module``).

    ``module[name]`` and ``module.get_function(name)`` return what ``vm[name]`` returns for
    a Relax function or a saved function; the VM's API functions are also found by their
    TVM names (:data:`VM_MODULE_FUNCTIONS`), a VM function of the same name taking
    precedence. The module has no imports: kernels are the executable's business
    (``vm.executable.imports``).

    Parameters
    ----------
    vm : VirtualMachine
    """

    type_key = "relax.VirtualMachine"

    def __init__(self, vm: VirtualMachine) -> None:
        super().__init__(name=self.type_key)
        self.vm = vm

    def _own_function(self, name: str) -> Callable[..., Any] | None:
        vm = self.vm
        if isinstance(name, str) and name in vm:
            return vm[name]
        if name in VM_MODULE_FUNCTIONS:
            method: Callable[..., Any] = getattr(vm, name)
            return method
        return None

    def list_functions(self) -> list[str]:
        """Names of the VM's Relax functions and saved functions."""
        return sorted({*self.vm._functions, *self.vm._saved})

    def __getitem__(self, name: str) -> Callable[..., Any]:
        """``vm[name]`` (raising its :class:`~relaxvm.errors.FunctionNotFoundError`), or one
        of the VM's API functions by its TVM name."""
        func = self._own_function(name)
        return func if func is not None else self.vm[name]

    def time_evaluator(
        self, func_name: str, dev: Device | None = None, *args: Any, **kwargs: Any
    ) -> Callable[..., BenchmarkResult]:
        """``vm.time_evaluator(func_name, dev, ...)`` (TVM's ``Module.time_evaluator``)."""
        return self.vm.time_evaluator(func_name, dev, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<VMModule {self.type_key}: {', '.join(self.list_functions()) or 'no functions'}>"
