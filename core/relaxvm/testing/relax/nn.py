"""TVM's ``relax.testing.nn``: a small PyTorch-like module library that builds Relax functions.

Layers emit into the function being built by the active :class:`~relaxvm.relax.BlockBuilder`
(``BlockBuilder.current()``, the builder whose ``function()`` scope is open):

>>> bb = relax.BlockBuilder()
>>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.LogSoftmax())
>>> with bb.function("main"):
...     data = nn.Placeholder((1, 4), name="data")
...     out = model(data)
...     bb.emit_func_output(out, params=[data, *model.parameters()])
>>> params = nn.init_params(bb.get())   # zero tensors for every non-"data" parameter

Each layer is one ``emit_te`` of a :mod:`relaxvm.topi` operator, so the model compiles to one
kernel per layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import topi
from ...errors import VMTypeError
from ...ir.expr_base import IntImm
from ...ir.relax import BlockBuilder, RelaxExpr, ShapeExpr, TensorStructInfo, Var
from ...ir.relax.block_builder import BlockBuilderError
from ...runtime import Tensor, tensor

__all__ = [
    "Linear",
    "LogSoftmax",
    "Module",
    "Parameter",
    "Placeholder",
    "ReLU",
    "Sequential",
    "emit",
    "emit_te",
    "init_params",
]


def _current_builder(what: str) -> BlockBuilder:
    builder = BlockBuilder.current()
    if builder is None:
        raise BlockBuilderError(
            f"relax.testing.nn.{what}: no BlockBuilder function scope is open; call it inside "
            "`with bb.function(...):`"
        )
    return builder  # type: ignore[no-any-return]


def emit(expr: RelaxExpr, name_hint: str = "") -> Var:
    """Bind ``expr`` in the function being built (``BlockBuilder.current().emit``).

    Raises
    ------
    BlockBuilderError
        No builder has a function scope open.
    """
    return _current_builder("emit").emit(expr, name_hint=name_hint)


def emit_te(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Var:
    """``BlockBuilder.current().emit_te(func, *args, **kwargs)``: a TE function as a kernel call.

    Raises
    ------
    BlockBuilderError
        No builder has a function scope open.
    """
    return _current_builder("emit_te").emit_te(func, *args, **kwargs)  # type: ignore[no-any-return]


def _unique_name(name: str) -> str:
    # Inside a builder's scope the name is made unique among the builder's names, for readable
    # output; outside one, duplicates are allowed (Vars are distinct objects anyway).
    builder = BlockBuilder.current()
    return name if builder is None else builder.get_unique_name(name)  # type: ignore[no-any-return]


def _tensor_sinfo(kind: str, shape: Sequence[Any], dtype: str) -> TensorStructInfo:
    if not isinstance(shape, (list, tuple)):
        raise VMTypeError(
            f"the shape of {kind} must be a list or a tuple, got {type(shape).__name__}"
        )
    return TensorStructInfo(list(shape), dtype)


_MISSING = object()


class _VarFactory(type):
    """Metaclass of :class:`Placeholder` and :class:`Parameter`.

    In TVM these are Python subclasses of ``relax.Var``; relaxvm's passes, printer and
    structural equality dispatch on the exact node class, so here calling them returns a plain
    :class:`~relaxvm.ir.relax.Var` (what TVM's own objects become once they cross its FFI), and
    ``isinstance(v, Parameter)`` still answers whether ``v`` was made by ``Parameter(...)``.
    The Vars made are remembered for the life of the process (Var takes no weak references).
    """

    _made: dict[int, Var]

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> None:
        super().__init__(name, bases, namespace)
        cls._made = {}

    def _make(cls, shape: Sequence[Any], dtype: str, name: str) -> Var:
        var = Var(_unique_name(name), _tensor_sinfo(cls.__name__, shape, dtype))
        cls._made[id(var)] = var  # keeps ``var`` alive, so the id stays its own
        return var

    def __instancecheck__(cls, instance: Any) -> bool:
        # Compare with the stored object itself: a miss returns the sentinel, never None.
        return cls._made.get(id(instance), _MISSING) is instance


class Placeholder(metaclass=_VarFactory):
    """A model input: ``Placeholder(shape, dtype="float32", name="data")`` is a Relax Var with a
    tensor StructInfo.

    Parameters
    ----------
    shape : list or tuple
        Dimensions (ints or ``tir.Var``\\ s).
    dtype : str
        Element type.
    name : str
        Name hint (made unique inside an open builder scope).

    Returns
    -------
    Var
        A plain Relax Var (see :class:`_VarFactory`); ``isinstance(v, Placeholder)`` is True.
    """

    def __new__(  # type: ignore[misc]  # returns a Var, by design (see _VarFactory)
        cls, shape: Sequence[Any], dtype: str = "float32", name: str = "data"
    ) -> Var:
        return type(cls)._make(cls, shape, dtype, name)


class Parameter(metaclass=_VarFactory):
    """A model weight: ``Parameter(shape, dtype="float32", name="param")`` is a Relax Var that
    :meth:`Module.parameters` collects.

    Parameters
    ----------
    shape : list or tuple
        Dimensions.
    dtype : str
        Element type.
    name : str
        Name hint (made unique inside an open builder scope).

    Returns
    -------
    Var
        A plain Relax Var; ``isinstance(v, Parameter)`` is True.
    """

    def __new__(  # type: ignore[misc]  # returns a Var, by design (see _VarFactory)
        cls, shape: Sequence[Any], dtype: str = "float32", name: str = "param"
    ) -> Var:
        return type(cls)._make(cls, shape, dtype, name)


class Module:
    """Base class of layers and models: subclasses define :meth:`forward`.

    Parameters found in the instance's attributes (directly, in submodules, lists, tuples or
    dicts) are returned by :meth:`parameters`, in attribute order.
    """

    def parameters(self) -> list[Var]:
        """Every :class:`Parameter` of this module and its submodules."""
        return _collect_parameters(self.__dict__)

    def forward(self, input: RelaxExpr) -> Any:  # TVM's parameter name
        """The computation; emits into the builder's current function."""
        raise NotImplementedError(f"{type(self).__name__}.forward is not defined")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)


def _collect_parameters(value: object) -> list[Var]:
    if isinstance(value, Parameter):
        return [value]  # type: ignore[list-item]
    if isinstance(value, Module):
        return value.parameters()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        found: list[Var] = []
        for item in value:
            found.extend(_collect_parameters(item))
        return found
    return []


def init_params(mod: Any) -> list[Tensor]:
    """Zero-filled float32 tensors for the parameters of ``mod["main"]`` not named ``data*``.

    Parameters
    ----------
    mod : IRModule
        A module whose ``main`` takes the model inputs (named ``data...``) and then weights.

    Returns
    -------
    list of Tensor
        In parameter order.

    Raises
    ------
    TypeError
        A weight's shape is not fully known (symbolic or missing).
    """
    params: list[Tensor] = []
    for var in mod["main"].params:
        if var.name_hint.startswith("data"):
            continue
        shape = getattr(var.struct_info, "shape", None)
        if not isinstance(shape, ShapeExpr) or not all(
            isinstance(dim, IntImm) for dim in shape.values
        ):
            raise VMTypeError(
                f"init_params: cannot initialize parameter {var.name_hint!r} of unknown shape "
                f"({var.struct_info})"
            )
        dims = [int(dim.value) for dim in shape.values if isinstance(dim, IntImm)]
        # TVM's helper makes float32 zeros whatever the declared dtype; so does this one.
        params.append(tensor(np.zeros(dims, dtype="float32")))
    return params


class Sequential(Module):
    """Apply modules one after another.

    Parameters
    ----------
    *modules : Module
        The layers, in order.
    """

    def __init__(self, *modules: Module) -> None:
        self.modules = modules

    def forward(self, input: RelaxExpr) -> Any:  # TVM's parameter name
        for module in self.modules:
            input = module(input)
        return input


class ReLU(Module):
    """``max(x, 0)`` elementwise."""

    def forward(self, input: RelaxExpr) -> Var:  # TVM's parameter name
        return emit_te(topi.nn.relu, input)


class LogSoftmax(Module):
    """``log(softmax(x))`` over the last axis."""

    def forward(self, input: RelaxExpr) -> Var:  # TVM's parameter name
        return emit_te(topi.nn.log_softmax, input)


class Linear(Module):
    """``y = x @ weight + bias`` with ``weight`` of shape ``(in_features, out_features)``.

    Parameters
    ----------
    in_features, out_features : int
        The sizes of the last input and output dimension.
    bias : bool
        Whether to add a ``(out_features,)`` bias.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter((in_features, out_features), name="linear_weight")
        self.bias = Parameter((out_features,), name="linear_bias") if bias else None

    def forward(self, input: RelaxExpr) -> Var:  # TVM's parameter name
        out = emit_te(topi.nn.matmul, input, self.weight)
        if self.bias is not None:
            out = emit_te(topi.add, out, self.bias)
        return out
