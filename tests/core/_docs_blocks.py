"""Find the code blocks of the Markdown pages, for the docs collector.

A page is a notebook: its fenced ```python blocks run in order in one namespace. This module only
reads pages; ``test_docs_examples.py`` runs them.

Conventions the pages follow (see ``docs/testing.md``):

- ```python blocks run; ```pycon blocks (``>>>`` prompts) run as doctests; shell commands go in
  ```console or ```bash blocks and output in ```text blocks, which never run.
- ``<!-- docs: skip (why) -->`` on the line before a fence (blank lines between are allowed)
  skips that block; the reason is required and is shown as the pytest skip reason.
- An info string that looks like Python but is not exactly ``python`` or ``pycon`` (```py,
  ```py3, ```pyhton, ```Python) is an error, so that no example silently escapes the run.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "RUN_LANGUAGES",
    "Block",
    "Fence",
    "SkipMarker",
    "attribute_chains",
    "fences",
    "page_blocks",
    "shadow_source",
    "skip_markers",
    "suspicious_languages",
]

#: The info strings whose blocks run.
RUN_LANGUAGES = ("python", "pycon")

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs\s*:\s*skip\b(?P<rest>.*?)-->\s*$")
_REASON = re.compile(r"^\s*\((?P<reason>[^()]*(?:\([^()]*\)[^()]*)*)\)\s*$")
# Names people type for Python fences; anything close to these is a likely typo of ``python``.
_PYTHON_LIKE = ("python", "python3", "py", "py3", "ipython", "pycon", "python-repl", "pyhton")
# Python-looking info strings that are output, not code: Pygments' traceback lexers.
_NOT_CODE = ("pytb", "py3tb")


@dataclass(frozen=True)
class Fence:
    """One fenced block of a page.

    Attributes
    ----------
    language : str
        The first word of the info string (``""`` when there is none).
    fence_line : int
        One-based line of the opening fence.
    start_line : int
        One-based line of the first line of code (``fence_line + 1``).
    code : str
        The block's text, with the fence's indentation removed.
    """

    language: str
    fence_line: int
    start_line: int
    code: str


@dataclass(frozen=True)
class SkipMarker:
    """A ``<!-- docs: skip (why) -->`` line: its line number, its reason (``None`` when the
    marker has none) and the fence it applies to (``None`` when no fence follows)."""

    line: int
    text: str
    reason: str | None
    fence: Fence | None


@dataclass(frozen=True)
class Block:
    """A block that runs (or is skipped): page-relative ``index`` counts the page's runnable
    blocks from 0, which is the number in the test id ``docs/ir.md[3]``."""

    page: str
    index: int
    fence: Fence
    skip_reason: str | None

    @property
    def test_id(self) -> str:
        return f"{self.page}[{self.index}]"

    @property
    def where(self) -> str:
        """Where the block is, for failure messages."""
        first = self.fence.code.lstrip("\n").splitlines()[0] if self.fence.code.strip() else ""
        return (
            f"{self.page}, block [{self.index}] ({self.fence.language}) starting at line "
            f"{self.fence.start_line}: {first.strip()!r}"
        )


def fences(text: str) -> list[Fence]:
    """Every fenced block of a Markdown text (CommonMark fences: ``` or ~~~, up to three
    spaces of indentation, closed by a fence of the same kind at least as long)."""
    lines = text.splitlines()
    found: list[Fence] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None or (match["fence"][0] == "`" and "`" in match["info"]):
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        language = match["info"].split()[0] if match["info"].split() else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = lines[j].strip()
            if (
                len(lines[j]) - len(lines[j].lstrip(" ")) <= 3
                and closing.startswith(fence)
                and set(closing) == {fence[0]}
            ):
                break
            line = lines[j]
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            body.append(line[strip:])
            j += 1
        code = "\n".join(body) + ("\n" if body else "")
        found.append(Fence(language, i + 1, i + 2, code))
        i = j + 1
    return found


def skip_markers(text: str) -> list[SkipMarker]:
    """Every skip marker of a page, with the fence it applies to."""
    lines = text.splitlines()
    found = fences(text)
    by_line = {fence.fence_line: fence for fence in found}
    # A marker shown inside a code block (as in the page that documents markers) is text.
    inside = {
        line
        for fence in found
        for line in range(fence.fence_line, fence.start_line + fence.code.count("\n") + 1)
    }
    markers: list[SkipMarker] = []
    for number, line in enumerate(lines, start=1):
        match = _MARKER.match(line)
        if match is None or number in inside:
            continue
        reason_match = _REASON.match(match["rest"])
        reason = reason_match["reason"].strip() if reason_match else None
        nxt = number + 1
        while nxt <= len(lines) and not lines[nxt - 1].strip():
            nxt += 1
        markers.append(SkipMarker(number, line.strip(), reason or None, by_line.get(nxt)))
    return markers


def suspicious_languages(text: str) -> list[Fence]:
    """Fences whose info string looks like Python but is not one that runs."""
    bad = []
    for fence in fences(text):
        word = fence.language
        if word in RUN_LANGUAGES or word in _NOT_CODE or not word:
            continue
        lowered = word.lower()
        if (
            lowered in _PYTHON_LIKE
            or lowered.startswith(("py", "python"))
            or difflib.get_close_matches(lowered, ["python", "pycon"], n=1, cutoff=0.7)
        ):
            bad.append(fence)
    return bad


def page_blocks(root: Path, page: str) -> list[Block]:
    """The runnable blocks of ``page`` (a path relative to ``root``), in order."""
    text = (root / page).read_text(encoding="utf-8")
    reasons = {
        marker.fence.fence_line: marker.reason or "no reason given"
        for marker in skip_markers(text)
        if marker.fence is not None
    }
    runnable = [fence for fence in fences(text) if fence.language in RUN_LANGUAGES]
    return [
        Block(page, index, fence, reasons.get(fence.fence_line))
        for index, fence in enumerate(runnable)
    ]


def shadow_source(text: str, blocks: list[Block]) -> str:
    """The page as a Python file: the ```python blocks where they stand, every other line
    blank.

    Each block runs from this file, so tracebacks and script errors give the Markdown page's own
    line numbers, and ``inspect`` (which the script parser uses to read a decorated class or
    function) finds the source of anything a block defines.
    """
    out = [""] * len(text.splitlines())
    for block in blocks:
        if block.fence.language != "python" or block.skip_reason is not None:
            continue
        for offset, line in enumerate(block.fence.code.splitlines()):
            out[block.fence.start_line - 1 + offset] = line
    return "\n".join(out) + "\n"


def attribute_chains(code: str, root: str = "relaxvm") -> list[tuple[int, str]]:
    """The dotted names ``root.a.b`` a block reads as attributes (not in imports or strings),
    with their one-based line in the block: ``relaxvm.tir.Var("n")`` gives ``"tir.Var"``.

    Used to check that each works after a bare ``import relaxvm`` in a fresh process, which
    the in-process run cannot see (there, earlier tests have imported every submodule).
    """
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    try:
        tokens = [
            tok
            for tok in tokenize.generate_tokens(io.StringIO(code).readline)
            if tok.type not in skip
        ]
    except (tokenize.TokenError, SyntaxError):
        return []
    chains: list[tuple[int, str]] = []
    in_import = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if i == 0 or tokens[i - 1].type == tokenize.NEWLINE or tokens[i - 1].string == ";":
            in_import = tok.string in ("import", "from")
        if tok.type == tokenize.NAME and tok.string == root and not in_import:
            parts: list[str] = []
            j = i + 1
            while (
                j + 1 < len(tokens)
                and tokens[j].string == "."
                and tokens[j + 1].type == tokenize.NAME
            ):
                parts.append(tokens[j + 1].string)
                j += 2
            if parts and (i == 0 or tokens[i - 1].string != "."):
                chains.append((tok.start[0], ".".join(parts)))
            i = max(j, i + 1)
            continue
        i += 1
    return chains
