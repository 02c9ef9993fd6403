"""TVM's ``relax.analysis`` spellings over relaxvm's checkers.

``relax.analysis.well_formed(mod)`` in TVM returns a bool (and logs why it is False);
relaxvm's own :func:`relaxvm.ir.relax.well_formed` raises a :class:`WellFormedError` naming the
rule, function and binding. This module gives the boolean form under TVM's name, for code
written against TVM; use :func:`well_formed_error` to get the reason.
"""

from __future__ import annotations

from .block import Function
from .module import IRModule
from .well_formed import WellFormedError
from .well_formed import well_formed as _check

__all__ = ["well_formed", "well_formed_error"]


def well_formed(obj: IRModule | Function, check_struct_info: bool = True) -> bool:
    """Whether ``obj`` is well formed, as TVM's ``relax.analysis.well_formed``: relaxvm's
    rules plus TVM's rule that each function of a module has its own symbolic variables.

    Parameters
    ----------
    obj : IRModule or Function
        What to check (a lone function skips the module-level GlobalVar checks).
    check_struct_info : bool
        Also require struct info on every binding variable.

    Returns
    -------
    bool
        True when no rule is broken.

    Raises
    ------
    VMTypeError
        ``obj`` is neither an IRModule nor a relax Function.
    """
    return well_formed_error(obj, check_struct_info) is None


def well_formed_error(
    obj: IRModule | Function, check_struct_info: bool = True
) -> WellFormedError | None:
    """The first violation :func:`well_formed` finds in ``obj`` (None when there is none)."""
    try:
        _check(obj, check_struct_info, symbolic_per_function=True)
    except WellFormedError as err:
        return err
    return None
