"""``relaxvm plugins``: the installed plugins, their status, and what each registered.

The output is a table (one row per plugin), then per plugin its functions (PackedFunc names),
legalizations (op names, ``[target]`` for a target-specific one) and targets; ``-v`` lists
every registration with its fate (override, replaced by ...), ``--functions`` every
registered function with its source, and ``--json`` all of the per-plugin facts as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, TextIO

from ..errors import PluginError
from ..registry import functions as registry
from ..registry import loader as plugins
from ..registry import resolution
from .common import CLIError

__all__ = ["cmd_plugins", "plugin_facts", "print_table"]

_ENVIRONMENT = ("RELAXVM_PLUGINS", "RELAXVM_DISABLE_PLUGINS")
_KIND_ORDER = {"function": 0, "legalization": 1, "target": 2}


def cmd_plugins(options: argparse.Namespace) -> int:
    """Run ``relaxvm plugins``; a broken plugin raises its :class:`PluginError` after the
    report is printed (so the command exits with status 1)."""
    if options.json and (options.verbose or options.functions):
        raise CLIError("--json prints everything it knows; it takes neither -v nor --functions")
    try:
        plugins.ensure_loaded()
        failure: PluginError | None = None
    except PluginError as err:
        # A broken plugin still gets its row and its reason; a bad environment variable or a
        # missing essential plugin leaves no report, only the error.
        if not plugins.plugin_report():
            raise
        failure = err
    report = plugins.plugin_report()
    out = sys.stdout
    if options.json:
        document = {
            "environment": {v: os.environ[v] for v in _ENVIRONMENT if os.environ.get(v)},
            "plugins": [plugin_facts(info) for info in report],
        }
        print(json.dumps(document, indent=2), file=out)
    else:
        _print_text(report, options, failure is None, out)
    if failure is not None:
        raise failure  # one line on stderr, exit status 1
    return 0


def plugin_facts(info: plugins.PluginInfo) -> dict[str, Any]:
    """One plugin as a JSON-ready dict: name, status, module, distribution, error, and the
    sorted names of its functions, legalizations (``{"op", "target"}``) and targets."""
    latest = {registration.key: registration for registration in info.registrations}
    ordered = sorted(latest.values(), key=lambda r: (r.name, r.target or ""))
    return {
        "name": info.name,
        "status": info.status,
        "module": info.value,
        "distribution": info.distribution,
        "error": info.error,
        "functions": [r.name for r in ordered if r.kind == "function"],
        "legalizations": [
            {"op": r.name, "target": r.target} for r in ordered if r.kind == "legalization"
        ],
        "targets": [r.name for r in ordered if r.kind == "target"],
    }


def _print_text(
    report: Sequence[plugins.PluginInfo], options: argparse.Namespace, loaded: bool, out: TextIO
) -> None:
    for variable in _ENVIRONMENT:
        if os.environ.get(variable):
            print(f"{variable}={os.environ[variable]}", file=out)
    rows = [("NAME", "STATUS", "REGISTERED", "MODULE", "DISTRIBUTION")]
    for info in report:
        count = str(len(info.registered)) if info.status in ("loaded", "ok") else "-"
        rows.append((info.name, info.status, count, info.value, info.distribution))
    print_table(rows, out)
    reasons = dict.fromkeys(" ".join(i.error.split()) for i in report if i.error is not None)
    if reasons:
        print("\nfailed plugins (nothing loads until they are fixed or skipped):", file=out)
        for reason in reasons:
            print(f"  {reason}", file=out)
    if options.verbose:
        _print_registrations(report, out)
    else:
        _print_lists(report, out)
    if options.functions and loaded:
        print(file=out)
        names = registry.list_global_func_names()
        print_table(
            [("FUNCTION", "SOURCE"), *((n, registry._sources.get(n, "?")) for n in names)], out
        )


def _print_lists(report: Sequence[plugins.PluginInfo], out: TextIO) -> None:
    """Per plugin, its functions, legalizations and targets, each a wrapped list of names."""
    for info in report:
        if info.status != "loaded" or not info.registrations:
            continue  # after a failed load the reasons matter, not what was not loaded
        facts = plugin_facts(info)
        print(f"\n{info.name} ({info.status}):", file=out)
        legalizations = [
            item["op"] + (f" [{item['target']}]" if item["target"] else "")
            for item in facts["legalizations"]
        ]
        for title, names in (
            ("functions", facts["functions"]),
            ("legalizations", legalizations),
            ("targets", facts["targets"]),
        ):
            if names:
                text = f"  {title} ({len(names)}): {', '.join(names)}"
                print(textwrap.fill(text, width=100, subsequent_indent="    "), file=out)


def _print_registrations(report: Sequence[plugins.PluginInfo], out: TextIO) -> None:
    """Each plugin's registrations, by kind and name, with what became of each."""
    sections = [(info, _registration_rows(info)) for info in report if info.registrations]
    rows = [row for _, section in sections for row in section]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(2)]
    for info, section in sections:
        print(f"\n{info.name} ({info.status}): {len(info.registered)} registered", file=out)
        for kind, name, notes in section:
            print(f"  {kind.ljust(widths[0])}  {name.ljust(widths[1])}  {notes}".rstrip(), file=out)


def _registration_rows(info: plugins.PluginInfo) -> list[tuple[str, str, str]]:
    latest = {registration.key: registration for registration in info.registrations}
    rows: list[tuple[str, str, str]] = []
    for registration in sorted(latest.values(), key=lambda r: (_KIND_ORDER[r.kind], r.label)):
        name = registration.name + (f" [{registration.target}]" if registration.target else "")
        notes = ["override"] if registration.override else []
        if info.status == "loaded":  # after a failed load nothing is registered to compare
            holder = resolution.current_source(registration)
            if holder is None:
                notes.append("removed")
            elif holder != registration.source:
                notes.append(f"replaced by {holder}")
        rows.append((registration.kind, name, ", ".join(notes)))
    return rows


def print_table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    """Rows as left-aligned columns two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        print("  ".join(cells).rstrip(), file=out)
