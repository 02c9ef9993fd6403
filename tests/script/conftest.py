"""Helpers for the script parser tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from relaxvm.script import ScriptError, from_source


def _check(
    text: str, line: int, column: int, *fragments: str, name: str = "<string>"
) -> ScriptError:
    """Parse ``text``, expect a ScriptError at (line, column), whose message contains every
    fragment, and whose caret sits under ``column``."""
    with pytest.raises(ScriptError) as info:
        from_source(text, source_name=name)
    err = info.value
    message = str(err)
    assert (err.line, err.column) == (line, column), message
    assert message.startswith(f"{name}:{line}:{column}: error: "), message
    for fragment in fragments:
        assert fragment in message, message
    lines = message.splitlines()
    source_line, caret = lines[-2], lines[-1]
    assert source_line == "    " + text.splitlines()[line - 1].rstrip(), message
    assert caret.index("^") == 4 + column - 1, message
    return err


@pytest.fixture
def script_error() -> Callable[..., ScriptError]:
    """``script_error(text, line, column, *fragments)`` checks a parse error's position,
    message and caret."""
    return _check
