"""Call-site specialisation: how a registered function offers its own fast path.

The VM knows no builtin's semantics. When it loads an executable it resolves every callee by
name, and for each ``Call`` instruction it asks the callee (through :func:`get_specializer`)
whether it has something faster to offer for *this* call site: the argument values fixed at
load time (immediates, constants, function values, the VM for ``%vm``, None for ``%void``)
are known then, only register arguments vary from call to call. The specialiser answers with
a :class:`Specialization`, or None to decline (the generic call is then used).

Both exec modes consume the answer (:mod:`relaxvm.vm.callplan`): the dispatch loop runs
:meth:`Specialization.constant` and :meth:`Specialization.forward` as register writes and
calls :meth:`Specialization.call`'s function with the register arguments only; compiled mode
writes the same, or the specialisation's ``inline`` expression, into the generated Python.
A function registered with ``override=True`` replaces its specialiser with it (or with none),
so an override is always called.

Example
-------
>>> from relaxvm.registry.specialization import Specialization, specializer
>>> def scale(x, factor):
...     return x * factor
>>> @specializer(scale)
... def _scale_site(site):
...     if not site.is_register(0) or site.is_register(1):
...         return None  # decline: only ``scale(register, fixed)`` is special
...     factor = site.fixed(1)
...     if factor == 1:
...         return Specialization.forward(0)  # the destination receives x itself
...     return Specialization.call(lambda x: x * factor)
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import PluginError

__all__ = [
    "REGISTER",
    "CallSite",
    "Specialization",
    "Specializer",
    "get_specializer",
    "set_specializer",
    "specializer",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The attribute a callable's specialiser is stored under.
_ATTRIBUTE = "__relaxvm_specializer__"


class _RegisterMarker:
    """The type of :data:`REGISTER` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "REGISTER"

    def __reduce__(self) -> str:
        return "REGISTER"


#: Marks a :class:`CallSite` argument that comes from a register at run time.
REGISTER: Any = _RegisterMarker()


class CallSite:
    """One ``Call`` instruction as a specialiser sees it.

    Parameters
    ----------
    name : str
        The callee's name in the executable's function table (``"vm.builtin.match_shape"``).
    func : callable
        The function being specialised, as resolved by the VM: what a specialised function
        falls back to (see :meth:`generic`), so that a specialiser shared by two functions
        never calls the wrong one.
    args : tuple
        One entry per argument: its value when fixed for the VM's lifetime (an immediate int,
        a constant-pool value, a function value, the VM for ``%vm``, None for ``%void``), or
        :data:`REGISTER` when it is read from a register at run time.
    """

    __slots__ = ("args", "func", "name", "register_positions")

    def __init__(self, name: str, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.name = name
        self.func = func
        self.args = args
        #: Positions of the register arguments, in order: what a ``call`` function receives.
        self.register_positions: tuple[int, ...] = tuple(
            i for i, value in enumerate(args) if value is REGISTER
        )

    def __len__(self) -> int:
        return len(self.args)

    def __repr__(self) -> str:
        return f"CallSite({self.name!r}, {self.args!r})"

    def is_register(self, position: int) -> bool:
        """Whether argument ``position`` is read from a register at run time."""
        return self.args[position] is REGISTER

    def fixed(self, position: int) -> Any:
        """The value of fixed argument ``position``.

        Raises
        ------
        PluginError
            The argument comes from a register (a specialiser bug: test :meth:`is_register`).
        """
        value = self.args[position]
        if value is REGISTER:
            raise PluginError(
                f"specialiser of {self.name}: argument {position} comes from a register, it "
                "has no fixed value (test CallSite.is_register first)"
            )
        return value

    def all_fixed(self, start: int = 0) -> bool:
        """Whether every argument from ``start`` on is fixed."""
        return all(value is not REGISTER for value in self.args[start:])

    def generic(self) -> Callable[..., Any]:
        """The unspecialised call as a function of the register arguments only: what a
        specialised function falls back to (``self.partial(self.func)``)."""
        return self.partial(self.func)

    def partial(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """``func`` as a function of the register arguments only, the fixed ones bound.

        This is the shape a ``call`` specialisation needs (``f(*register_args)``).
        """
        args = self.args
        positions = self.register_positions
        if not positions:
            return lambda: func(*args)
        if len(positions) == len(args):
            return func
        if positions == (0,):
            rest = args[1:]
            return lambda a: func(a, *rest)
        if positions == (0, 1):
            rest = args[2:]
            return lambda a, b: func(a, b, *rest)
        template = list(args)

        def call(*values: Any) -> Any:
            full = template.copy()
            for position, value in zip(positions, values, strict=True):
                full[position] = value
            return func(*full)

        return call


class Specialization:
    """What a specialiser offers for one call site (build one with the class methods).

    Attributes
    ----------
    kind : str
        ``"call"``, ``"constant"`` or ``"forward"``.
    func : callable or None
        For ``"call"``: called with the register arguments only, in order.
    value : Any
        For ``"constant"``: what the destination receives.
    position : int
        For ``"forward"``: the argument whose value the destination receives.
    inline : str or None
        For ``"call"``: an optional Python expression that compiled mode writes instead of
        calling ``func`` (see :meth:`call`).
    bound : dict
        Values the ``inline`` expression names.
    """

    __slots__ = ("bound", "func", "inline", "kind", "position", "value")

    def __init__(
        self,
        kind: str,
        func: Callable[..., Any] | None = None,
        value: Any = None,
        position: int = -1,
        inline: str | None = None,
        bound: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self.func = func
        self.value = value
        self.position = position
        self.inline = inline
        self.bound = bound or {}

    def __repr__(self) -> str:
        if self.kind == "constant":
            return f"Specialization.constant({self.value!r})"
        if self.kind == "forward":
            return f"Specialization.forward({self.position})"
        return f"Specialization.call({self.func!r}{', inline=...' if self.inline else ''})"

    @classmethod
    def call(
        cls, func: Callable[..., Any], *, inline: str | None = None, **bound: Any
    ) -> Specialization:
        """Call ``func`` with the site's register arguments only, in order.

        Parameters
        ----------
        func : callable
            Must behave exactly as the generic call would (same result, same errors): it
            usually tests for the common case and hands anything else to the builtin.
        inline : str, optional
            A Python *expression* compiled mode may write instead of a call of ``func``, so
            that the fast path costs no Python call. Fields: ``{0}``, ``{1}`` ... are the
            register arguments (in order), ``{call}`` the generic call of the callee with
            every argument, and a named field ``{name}`` the value of keyword ``name``, bound
            as a variable of the generated code (never spliced as text). The template comes
            from installed code (trusted), never from an executable file.
        **bound
            The values the ``inline`` template names.

        Examples
        --------
        >>> Specialization.call(
        ...     lambda x: None if x > 0 else check(x),
        ...     inline="None if {0} > {zero} else {call}",
        ...     zero=0,
        ... )  # doctest: +SKIP
        """
        if not callable(func):
            raise PluginError(f"Specialization.call: expected a callable, got {func!r}")
        if inline is not None:
            _check_template(inline, bound)
        return cls("call", func=func, inline=inline, bound=bound)

    @classmethod
    def constant(cls, value: Any) -> Specialization:
        """The destination receives ``value`` and nothing is called (``null_value``)."""
        return cls("constant", value=value)

    @classmethod
    def forward(cls, position: int) -> Specialization:
        """The destination receives argument ``position`` itself (``copy``)."""
        if type(position) is not int or position < 0:
            raise PluginError(f"Specialization.forward: expected a position >= 0, got {position!r}")
        return cls("forward", position=position)


def template_fields(inline: str) -> list[str]:
    """The field names of an ``inline`` template, in order of appearance.

    Raises
    ------
    PluginError
        A field carries a conversion or format spec, or the template does not parse.
    """
    try:
        parsed = list(string.Formatter().parse(inline))
    except ValueError as err:
        raise PluginError(
            f"Specialization.call: malformed inline template {inline!r}: {err}"
        ) from None
    fields = []
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if spec or conversion or not field:
            raise PluginError(
                f"Specialization.call: inline template {inline!r} field {{{field}}} must be a "
                "bare name or register index (no conversion, format spec or empty field)"
            )
        fields.append(field)
    return fields


def _check_template(inline: str, bound: dict[str, Any]) -> None:
    for field in template_fields(inline):
        if field.isdigit() or field == "call" or field in bound:
            continue
        raise PluginError(
            f"Specialization.call: inline template field {{{field}}} is neither a register "
            "index, {call}, nor a keyword value given to Specialization.call"
        )


#: A specialiser: a call site in, a specialisation (or None to decline) out.
Specializer = Callable[[CallSite], "Specialization | None"]


def set_specializer(func: Callable[..., Any], spec: Specializer | None) -> None:
    """Give ``func`` the specialiser ``spec`` (None removes it).

    Raises
    ------
    PluginError
        ``func`` takes no attributes (a C function: wrap it in a Python function first), or
        ``spec`` is not callable.
    """
    if spec is not None and not callable(spec):
        raise PluginError(f"set_specializer: expected a callable specialiser, got {spec!r}")
    try:
        setattr(func, _ATTRIBUTE, spec)
    except (AttributeError, TypeError) as err:
        raise PluginError(
            f"set_specializer: cannot attach a specialiser to {func!r} ({err}); register a "
            "Python function wrapping it instead"
        ) from None


def specializer(func: Callable[..., Any]) -> Callable[[F], F]:
    """Decorator form of :func:`set_specializer`: ``@specializer(builtin)`` over the spec."""

    def decorate(spec: F) -> F:
        set_specializer(func, spec)
        return spec

    return decorate


def get_specializer(func: Any) -> Specializer | None:
    """The specialiser ``func`` offers, or None."""
    return getattr(func, _ATTRIBUTE, None)
