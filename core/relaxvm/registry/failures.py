"""Why a plugin load failed, as one error that says how to get past it.

The loader tries every selected plugin even after one failed, records each failure here, and
raises one :class:`~relaxvm.errors.PluginError` for all of them: the first in full, the names
of the others, and the ``RELAXVM_DISABLE_PLUGINS`` value that skips them (or, when skipping
cannot help, what can).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..errors import PluginConflictError, PluginError

__all__ = ["LoadFailure", "load_error", "skip_hint"]


@dataclass
class LoadFailure:
    """One reason a load fails.

    Attributes
    ----------
    plugins : tuple of str
        The plugins at fault; skipping any one of them removes this failure.
    message : str
        The error message, naming them.
    cause : BaseException or None
        The original exception (an ImportError, what a hook raised...).
    conflict : bool
        Two plugins claimed one name (raised as :class:`PluginConflictError`).
    fix : str or None
        What to do instead, when skipping the plugin cannot help.
    """

    plugins: tuple[str, ...]
    message: str
    cause: BaseException | None = None
    conflict: bool = False
    fix: str | None = None


def load_error(
    failures: Sequence[LoadFailure], essential: Collection[str], disabled: Sequence[str]
) -> PluginError:
    """One error for every failure of a load (at least one), in the order given.

    Parameters
    ----------
    failures : sequence of LoadFailure
        Every failure, the one to show in full first.
    essential : collection of str
        Plugins that cannot be skipped.
    disabled : sequence of str
        What ``RELAXVM_DISABLE_PLUGINS`` already names (kept in the suggested value).
    """
    first = failures[0]
    message = first.message.rstrip(". ")
    also = list(dict.fromkeys(n for f in failures[1:] for n in f.plugins if n not in first.plugins))
    if also:
        names = ", ".join(repr(name) for name in also)
        message += f"; {'plugin' if len(also) == 1 else 'plugins'} {names} failed too"
        message += " (relaxvm plugins shows why)"
    message += "; " + skip_hint(failures, essential, disabled)
    error_type = PluginConflictError if first.conflict else PluginError
    error = error_type(message)
    error.__cause__ = first.cause
    return error


def skip_hint(
    failures: Sequence[LoadFailure], essential: Collection[str], disabled: Sequence[str]
) -> str:
    """How to run without the broken plugins: the ``RELAXVM_DISABLE_PLUGINS`` value to set."""
    # A failure that skipping cannot cure comes first: skipping the others would not help.
    for failure in failures:
        if failure.fix:
            return failure.fix
        stuck = [name for name in failure.plugins if name in essential]
        if stuck:
            return (
                f"the essential plugin {stuck[0]!r} cannot be skipped: reinstall relaxvm "
                "(pip install -e .)"
            )
    must = list(dict.fromkeys(f.plugins[0] for f in failures if len(f.plugins) == 1))
    # Of two plugins in conflict either may go; offer both values (for the first such pair).
    choice = next((f.plugins for f in failures if len(f.plugins) > 1), ())
    if not choice:
        names = " and ".join(repr(name) for name in must)
        return f"to skip {names}, set RELAXVM_DISABLE_PLUGINS={','.join([*disabled, *must])}"
    options = [
        "RELAXVM_DISABLE_PLUGINS=" + ",".join(dict.fromkeys([*disabled, *must, name]))
        for name in choice
    ]
    which = "the broken plugins" if must else "one of them"
    return f"to skip {which}, set " + " or ".join(options)
