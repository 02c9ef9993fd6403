"""VM test helpers as TVM's ``tvm.relax.testing.vm``: ``test.vm.*`` packed functions.

Importing this module registers the functions below in the global registry (through
:func:`relaxvm.register_func`, so an executable calls them by name like any packed function).
Nothing else registers them: ``import relaxvm`` stays side-effect free.

==========================  =================================================================
name                        what it does
==========================  =================================================================
``test.vm.move``            returns its argument
``test.vm.add``             ``a + b`` of two tensors, a new tensor
``test.vm.mul``             ``a * b`` of two tensors, a new tensor
``test.vm.equal_zero``      a 0-d bool tensor: are all elements of ``a`` zero
``test.vm.subtract_one``    ``a - 1``, a new tensor
``test.vm.identity``        destination-passing copy: writes ``a`` into ``out``
``test.vm.tile``            destination-passing: writes ``a`` tiled twice along axis 1 into ``out``
``test.vm.add_scalar``      ``a + b`` of two scalars
``test.vm.get_device_id``   the index of a device
``test.vm.check_if_defined``  whether its argument is not None
==========================  =================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...registry import register_func
from ...runtime import Device, Tensor, tensor

__all__ = ["check_saved_func"]


def _move(src: Any) -> Any:
    return src


def _add(a: Tensor, b: Tensor) -> Tensor:
    return tensor(a.numpy() + b.numpy())


def _mul(a: Tensor, b: Tensor) -> Tensor:
    return tensor(a.numpy() * b.numpy())


def _equal_zero(a: Tensor) -> Tensor:
    return tensor(np.array(np.all(a.numpy() == 0)))


def _subtract_one(a: Tensor) -> Tensor:
    return tensor(np.subtract(a.numpy(), 1))


def _identity(a: Tensor, out: Tensor) -> None:
    out[:] = a.numpy()


def _tile(a: Tensor, out: Tensor) -> None:
    out[:] = np.tile(a.numpy(), (1, 2))


def _add_scalar(a: Any, b: Any) -> Any:
    return a + b


def _get_device_id(device: Device) -> int:
    return device.index


def _check_if_defined(obj: Any) -> bool:
    return obj is not None


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "test.vm.move": _move,
    "test.vm.add": _add,
    "test.vm.mul": _mul,
    "test.vm.equal_zero": _equal_zero,
    "test.vm.subtract_one": _subtract_one,
    "test.vm.identity": _identity,
    "test.vm.tile": _tile,
    "test.vm.add_scalar": _add_scalar,
    "test.vm.get_device_id": _get_device_id,
    "test.vm.check_if_defined": _check_if_defined,
}

for _name, _func in _FUNCTIONS.items():
    # override: registering again (a reload, a registry restored by a test) is not a conflict.
    register_func(_name, _func, override=True)


def check_saved_func(vm: Any, func_name: str, *inputs: Any) -> Any:
    """Run ``vm[func_name](*inputs)`` directly and as a saved function of no arguments
    (:meth:`VirtualMachine.save_function`), check that both give the same tensor, and return
    the direct result.

    Parameters
    ----------
    vm : VirtualMachine
        The machine holding ``func_name``.
    func_name : str
        A Relax function of ``vm`` that returns a tensor and gives the same result when rerun.
    *inputs
        Its arguments.

    Returns
    -------
    Tensor
        The direct call's result.

    Raises
    ------
    AssertionError
        The two results differ.
    """
    saved_name = f"{func_name}_saved"
    vm.save_function(func_name, saved_name, *inputs)
    direct = vm[func_name](*inputs)
    saved = vm[saved_name]()
    np.testing.assert_allclose(direct.numpy(), saved.numpy(), rtol=1e-7, atol=1e-7)
    return direct
