"""The keyword options of ``.script()`` (TVM's ``tvm.runtime.Object.script`` options).

relaxvm's printer has one layout, so of TVM's options it honours those that change the text
without a second printer: ``indent_spaces``, ``print_line_numbers``, ``verbose_expr`` (the
definitions of an expression's free variables printed first) and ``show_meta`` (accepted:
constants are printed inline, so there is no metadata section to show). The others are
accepted at TVM's default value, and a different value is a clear error rather than being
silently ignored.
"""

from __future__ import annotations

from typing import Any

from ...errors import VMValueError

__all__ = ["ScriptOptions", "apply_layout", "script_options"]

#: TVM's options that relaxvm accepts only at these (TVM's default) values.
_FIXED: dict[str, Any] = {
    "name": None,
    "ir_prefix": "I",
    "tir_prefix": "T",
    "relax_prefix": "R",
    "module_alias": "cls",
    "buffer_dtype": "float32",
    "int_dtype": "int32",
    "float_dtype": "void",
    "num_context_lines": -1,
    "syntax_sugar": True,
    "show_object_address": False,
    "show_all_struct_info": True,
    "path_to_underline": None,
    "path_to_annotate": None,
    "obj_to_underline": None,
    "obj_to_annotate": None,
}


class ScriptOptions:
    """The validated options of one ``.script()`` call."""

    __slots__ = ("indent_spaces", "print_line_numbers", "show_meta", "verbose_expr")

    def __init__(
        self, show_meta: bool, verbose_expr: bool, indent_spaces: int, print_line_numbers: bool
    ) -> None:
        self.show_meta = show_meta
        self.verbose_expr = verbose_expr
        self.indent_spaces = indent_spaces
        self.print_line_numbers = print_line_numbers


def script_options(
    where: str,
    *,
    show_meta: bool = False,
    verbose_expr: bool = False,
    indent_spaces: int = 4,
    print_line_numbers: bool = False,
    **others: Any,
) -> ScriptOptions:
    """Check the keyword options of ``<where>.script(...)``.

    Raises
    ------
    TypeError
        An option that TVM's ``script()`` does not have.
    VMValueError
        ``indent_spaces`` is not a non-negative int, or an option relaxvm does not honour
        (see the module docstring) has a value other than TVM's default.
    """
    for key, value in others.items():
        if key not in _FIXED:
            raise TypeError(f"{where}.script() got an unexpected keyword argument '{key}'")
        if value != _FIXED[key]:
            raise VMValueError(
                f"{where}.script(): option {key}={value!r} is not supported by relaxvm's "
                f"printer; only the default {key}={_FIXED[key]!r}"
            )
    if isinstance(indent_spaces, bool) or not isinstance(indent_spaces, int) or indent_spaces < 0:
        raise VMValueError(
            f"{where}.script(): indent_spaces must be a non-negative int, got {indent_spaces!r}"
        )
    return ScriptOptions(
        bool(show_meta), bool(verbose_expr), indent_spaces, bool(print_line_numbers)
    )


def apply_layout(text: str, options: ScriptOptions) -> str:
    """Re-indent ``text`` (printed with 4 spaces a level) and number its lines, as asked."""
    lines = text.split("\n")
    if options.indent_spaces != 4:
        out = []
        for line in lines:
            stripped = line.lstrip(" ")
            levels, extra = divmod(len(line) - len(stripped), 4)
            out.append(" " * (levels * options.indent_spaces + extra) + stripped)
        lines = out
    if options.print_line_numbers:
        width = len(str(len(lines)))
        lines = [f"{i:>{width}} {line}" for i, line in enumerate(lines, 1)]
    return "\n".join(lines)
