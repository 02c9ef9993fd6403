"""Rendering script text for :meth:`IRModule.show`: line numbers, black, pygments colours.

Kept apart from the IRModule so that pygments and black are imported only when ``show()``
is called, and only if installed.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, TextIO

from ...errors import VMValueError

__all__ = ["SHOW_STYLES", "render"]

#: ``style`` values of :meth:`IRModule.show`; ``None`` picks ``"ansi"`` or ``"plain"``.
SHOW_STYLES = ("plain", "ansi", "light", "dark")

#: The pygments theme behind each 256-colour style.
_THEMES = {"light": "default", "dark": "monokai"}


def render(
    text: str,
    style: str | None,
    black_format: bool | None,
    print_line_numbers: bool,
    out: TextIO,
) -> str:
    """``text`` as :meth:`IRModule.show` prints it to ``out`` (see there for the options)."""
    if style is not None and style not in SHOW_STYLES:
        raise VMValueError(
            f"IRModule.show: unknown style {style!r}; expected None or one of {SHOW_STYLES}"
        )
    if black_format:
        text = _black(text)
    if print_line_numbers:
        width = len(str(text.count("\n") + 1))
        text = "\n".join(f"{i:>{width}} {line}" for i, line in enumerate(text.split("\n"), 1))
    explicit = style is not None  # only a style asked for warns when pygments is missing
    if style is None:
        isatty = getattr(out, "isatty", None)
        style = "ansi" if callable(isatty) and isatty() else "plain"
    if style == "plain":
        return text
    return _highlight(text, style, explicit=explicit)


def _black(text: str) -> str:
    try:
        black: Any = importlib.import_module("black")
    except ImportError:
        warnings.warn(
            "IRModule.show: black_format=True but black is not installed "
            "(pip install black); printing the text as it is",
            stacklevel=3,
        )
        return text
    formatted: str = black.format_str(text, mode=black.Mode())
    return formatted.rstrip("\n")


def _highlight(text: str, style: str, *, explicit: bool) -> str:
    try:
        pygments: Any = importlib.import_module("pygments")
        formatters: Any = importlib.import_module("pygments.formatters")
        lexers: Any = importlib.import_module("pygments.lexers")
    except ImportError:
        if explicit:
            warnings.warn(
                f"IRModule.show: style={style!r} needs pygments (pip install pygments); "
                "printing the text without colours",
                stacklevel=3,
            )
        return text
    if style == "ansi":
        formatter = formatters.TerminalFormatter()
    else:
        formatter = formatters.Terminal256Formatter(style=_THEMES[style])
    highlighted: str = pygments.highlight(text, lexers.PythonLexer(), formatter)
    return highlighted.rstrip("\n")
