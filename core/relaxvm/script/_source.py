"""Script source text and script errors.

A :class:`Source` holds the text of a script (a decorated class or function taken from its
file, or a string given to :func:`relaxvm.script.from_source`), parsed with :mod:`ast`, and maps
AST positions back to positions in the original file. Every problem the parser finds becomes
a :class:`ScriptError` that shows ``file:line:col``, the source line and a caret.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from types import FrameType
from typing import Any

from ..errors import RelaxVMError

__all__ = ["ScriptError", "Source"]


class ScriptError(RelaxVMError, ValueError):
    """A script could not be parsed: bad syntax, an unknown name or op, a wrong argument,
    a shape or type mismatch found by inference, or an unsupported Python construct.

    It derives from ``ValueError`` like the op and builder errors it often wraps, so
    ``except ValueError`` catches both. The message reads::

        model.py:12:13: error: relax.add: ... (what was expected)
            y = R.add(x, w)
                ^^^^^^^^^^^

    Attributes
    ----------
    message : str
        The explanation without the location.
    source_name : str
        The file name, or ``"<string>"`` for source text.
    line, column : int
        One-based position in the original file (or string).
    source_line : str
        The text of that line.
    """

    def __init__(
        self,
        message: str,
        source_name: str = "<unknown>",
        line: int = 0,
        column: int = 0,
        source_line: str = "",
        end_column: int | None = None,
    ) -> None:
        self.message = message
        self.source_name = source_name
        self.line = line
        self.column = column
        self.source_line = source_line
        if line > 0:
            text = f"{source_name}:{line}:{column}: error: {message}"
        else:
            text = f"error: {message}"
        if source_line:
            width = 1
            if end_column is not None and end_column > column:
                width = end_column - column
            caret = " " * (column - 1) + "^" * width
            text += f"\n    {source_line.rstrip()}\n    {caret}"
        super().__init__(text)


def _find_in_frame(obj: Any, frame: FrameType | None) -> Source | None:
    """The definition of ``obj`` (by name) that spans the line ``frame`` is executing."""
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    # linecache also knows notebook cells (IPython registers them there).
    full = "".join(linecache.getlines(filename, frame.f_globals))
    try:
        tree = ast.parse(full)
    except (SyntaxError, ValueError):
        return None
    line = frame.f_lineno
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == obj.__name__:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start <= line <= (node.end_lineno or node.lineno):
                lines = full.splitlines()
                text = "\n".join(lines[start - 1 : node.end_lineno]) + "\n"
                return Source(text, filename, start, lines)
    return None


def _byte_to_char(line: str, byte_offset: int) -> int:
    """AST column offsets count UTF-8 bytes; the caret needs characters."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


class Source:
    """The text of a script and where it sits in its file.

    Parameters
    ----------
    text : str
        The source of the script (indented source is dedented before parsing).
    source_name : str
        The file name used in error messages.
    start_line : int
        The one-based line of the file where ``text`` starts.
    full_lines : list of str, optional
        The lines of the whole file, for the quoted source line (defaults to ``text``'s).
    """

    def __init__(
        self,
        text: str,
        source_name: str = "<string>",
        start_line: int = 1,
        full_lines: list[str] | None = None,
    ) -> None:
        self.source_name = source_name
        self.start_line = start_line
        lines = text.splitlines()
        # What textwrap.dedent removes: the indentation common to all non-blank lines.
        widths = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
        self.indent = min(widths, default=0)
        self.text = textwrap.dedent(text) if self.indent else text
        self._dedented_lines = self.text.splitlines()
        self._original_lines = lines
        self.full_lines = full_lines

    @classmethod
    def from_object(cls, obj: Any, frame: FrameType | None = None) -> Source:
        """The source of a class or function, with its file name and first line.

        ``frame`` is where the definition is being executed; when ``inspect`` cannot find a
        class's source (its module is not in ``sys.modules``), the class is looked up in that
        frame's file at that frame's line.

        Raises
        ------
        ScriptError
            If Python cannot find the source (a REPL or ``exec``); use ``from_source`` there.
        """
        name = getattr(obj, "__qualname__", repr(obj))
        try:
            lines, start = inspect.getsourcelines(obj)
            source_name = inspect.getsourcefile(obj) or inspect.getfile(obj)
        except (OSError, TypeError) as err:
            found = _find_in_frame(obj, frame)
            if found is not None:
                return found
            raise ScriptError(
                f"cannot read the source of {name!r} ({err}); Python keeps no source for code "
                "typed into a REPL or run with exec. Pass the script text to "
                "relaxvm.script.from_source(text) instead"
            ) from None
        full = [line.rstrip("\n") for line in linecache.getlines(source_name)] or None
        return cls("".join(lines), source_name, max(start, 1), full)

    def parse(self) -> ast.Module:
        """The AST of the (dedented) text; a ScriptError for Python syntax errors."""
        try:
            return ast.parse(self.text, filename=self.source_name)
        except SyntaxError as err:
            line = err.lineno or 1
            column = (err.offset or 1) - 1
            raise self.error_at(line, column, f"invalid Python syntax: {err.msg}") from None

    def error_at(
        self, line: int, col_offset: int, message: str, end_col_offset: int | None = None
    ) -> ScriptError:
        """A ScriptError at a (line, byte column) of the dedented text."""
        dedented = self._dedented_lines[line - 1] if 0 < line <= len(self._dedented_lines) else ""
        column = _byte_to_char(dedented, col_offset) + self.indent + 1
        end_column = None
        if end_col_offset is not None:
            end_column = _byte_to_char(dedented, end_col_offset) + self.indent + 1
        file_line = line + self.start_line - 1
        if self.full_lines is not None and 0 < file_line <= len(self.full_lines):
            source_line = self.full_lines[file_line - 1]
        elif 0 < line <= len(self._original_lines):
            source_line = self._original_lines[line - 1]
        else:
            source_line = ""
        return ScriptError(message, self.source_name, file_line, column, source_line, end_column)

    def error(self, node: ast.AST | None, message: str) -> ScriptError:
        """A ScriptError pointing at ``node`` (its first line; the caret spans the node when
        it fits on that line)."""
        if node is None or not hasattr(node, "lineno"):
            return ScriptError(message, self.source_name, self.start_line, 1)
        line = node.lineno
        end = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", line) != line:
            end = None
        return self.error_at(line, getattr(node, "col_offset", 0), message, end)
