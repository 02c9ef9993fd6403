"""What :meth:`VirtualMachine.profile <relaxvm.VirtualMachine.profile>` returns.

:class:`ProfileReport` aggregates the profiler's events (one per executed ``Call``) per call
site and per callee name, and renders them as an aligned table, CSV, JSON or a Chrome /
Perfetto trace. docs/profiling.md describes every column.
"""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["CSV_FIELDS", "ProfileReport", "ProfileRow", "SiteInfo"]

#: The columns of :meth:`ProfileReport.csv` (and the keys of every JSON row).
CSV_FIELDS = (
    "name",
    "kind",
    "function",
    "instruction",
    "count",
    "total_us",
    "mean_us",
    "percent",
    "inclusive_us",
    "bytes",
    "sites",
)


@dataclass(frozen=True)
class SiteInfo:
    """One call site: the VM function holding it, its absolute instruction index (as in the
    VM's error notes), the callee's name and kind (``"builtin"``, ``"kernel"``,
    ``"vm function"`` or ``"packed func"``)."""

    function: str
    instruction: int
    callee: str
    kind: str


@dataclass(frozen=True)
class ProfileRow:
    """One line of a :class:`ProfileReport`: a call site, or every call site of one callee.

    Attributes
    ----------
    name : str
        The callee (``vm.builtin.alloc_storage``, a kernel such as ``fused_matmul_add``, or
        a VM function).
    kind : str
        ``"builtin"`` (``vm.builtin.*``), ``"kernel"`` (from the executable's imports),
        ``"vm function"`` or ``"packed func"`` (another registered function).
    function : str or None
        Call-site rows: the VM function making the call; ``None`` on per-op rows.
    instruction : int or None
        Call-site rows: the absolute instruction index (as the VM's error notes count).
    count : int
        Calls executed.
    total_us : float
        Self time in microseconds: the time inside the calls minus the time of the profiled
        calls nested in them (a VM function's own dispatch, not its callees).
    inclusive_us : float
        Time inside the calls, nested calls included.
    share : float
        ``total_us`` over the report's :attr:`ProfileReport.total_us` (rows sum to 1).
    bytes : int
        Bytes of storage the calls returned that was new (see docs/profiling.md).
    sites : int
        Call sites aggregated into the row (1 on call-site rows).
    """

    name: str
    kind: str
    function: str | None
    instruction: int | None
    count: int
    total_us: float
    inclusive_us: float
    share: float
    bytes: int
    sites: int = 1

    @property
    def mean_us(self) -> float:
        """``total_us / count``."""
        return self.total_us / self.count if self.count else 0.0

    @property
    def percent(self) -> float:
        """``share`` in percent."""
        return self.share * 100.0

    def as_dict(self) -> dict[str, Any]:
        """The row as plain JSON values (``mean_us`` and ``percent`` included)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "function": self.function,
            "instruction": self.instruction,
            "count": self.count,
            "total_us": self.total_us,
            "mean_us": self.mean_us,
            "percent": self.percent,
            "inclusive_us": self.inclusive_us,
            "bytes": self.bytes,
            "sites": self.sites,
        }


class ProfileReport:
    """The per-op profile of one VM call (from ``vm.profile(func_name, *args)``).

    Attributes
    ----------
    function : str
        The profiled function.
    exec_mode : str
        ``"bytecode"`` or ``"compiled"``.
    devices : list of str
        The VM's devices.
    wall_us : float
        The whole profiled call: the calls, the VM's own dispatch and the profiler's cost.
    total_us : float
        The sum of every row's self time (time inside Call instructions).
    calls : list of ProfileRow
        One row per executed call site, by self time, largest first.
    ops : list of ProfileRow
        One row per callee name (all its call sites), by self time, largest first.
    """

    def __init__(
        self,
        function: str,
        exec_mode: str,
        devices: list[str],
        start_ns: int,
        end_ns: int,
        events: list[tuple[int, int, int, int, int]],
        sites: dict[int, SiteInfo],
    ) -> None:
        self.function = function
        self.exec_mode = exec_mode
        self.devices = devices
        self.wall_us = (end_ns - start_ns) / 1000.0
        self._start_ns = start_ns
        self._events = events
        self._sites = sites
        per_site: dict[int, list[int]] = {}  # pc -> [count, self ns, inclusive ns, bytes]
        for pc, _, elapsed, own, nbytes in events:
            acc = per_site.get(pc)
            if acc is None:
                acc = per_site[pc] = [0, 0, 0, 0]
            acc[0] += 1
            acc[1] += own
            acc[2] += elapsed
            acc[3] += nbytes
        total_ns = sum(acc[1] for acc in per_site.values())
        self.total_us = total_ns / 1000.0

        def share(ns: int) -> float:
            return ns / total_ns if total_ns > 0 else 0.0

        calls = []
        per_op: dict[str, list[Any]] = {}  # name -> [kind, count, self, inclusive, bytes, sites]
        for pc, (count, own, elapsed, nbytes) in sorted(per_site.items()):
            site = sites[pc]
            calls.append(
                ProfileRow(
                    site.callee,
                    site.kind,
                    site.function,
                    pc,
                    count,
                    own / 1000.0,
                    elapsed / 1000.0,
                    share(own),
                    nbytes,
                )
            )
            op = per_op.get(site.callee)
            if op is None:
                op = per_op[site.callee] = [site.kind, 0, 0, 0, 0, 0]
            op[1] += count
            op[2] += own
            op[3] += elapsed
            op[4] += nbytes
            op[5] += 1
        # Program order (call sites by instruction, ops by their first call site) is the
        # order for sort=False; the sorts below are stable, so it also breaks ties.
        self._calls_in_order = calls
        self._ops_in_order = [
            ProfileRow(
                name,
                kind,
                None,
                None,
                count,
                own / 1000.0,
                incl / 1000.0,
                share(own),
                nbytes,
                nsites,
            )
            for name, (kind, count, own, incl, nbytes, nsites) in per_op.items()
        ]
        self.calls = sorted(self._calls_in_order, key=lambda row: -row.total_us)
        self.ops = sorted(self._ops_in_order, key=lambda row: -row.total_us)

    # -- summaries --------------------------------------------------------------------------
    @property
    def num_calls(self) -> int:
        """Call instructions executed."""
        return len(self._events)

    @property
    def total_bytes(self) -> int:
        """Bytes of new storage over all rows."""
        return sum(row.bytes for row in self.ops)

    def rows(self, aggregate: bool = True, sort: bool = True) -> list[ProfileRow]:
        """Per-op rows (``aggregate=True``) or per call site; by self time when ``sort``,
        else in order of the call site (per op: of the first site)."""
        if aggregate:
            return list(self.ops if sort else self._ops_in_order)
        return list(self.calls if sort else self._calls_in_order)

    # -- renderings -------------------------------------------------------------------------
    def table(self, sort: bool = True, aggregate: bool = True, col_sums: bool = True) -> str:
        """An aligned text table (TVM's ``Report.table`` arguments).

        Parameters
        ----------
        sort : bool
            Rows by self time, largest first (else in program order).
        aggregate : bool
            One row per op (callee name); ``False``: one row per call site, with the
            function and instruction.
        col_sums : bool
            End with a ``Total`` row.
        """
        head = ["Name", "Kind"]
        if not aggregate:
            head += ["Function", "Instr"]
        head += ["Count", "Total (us)", "Mean (us)", "Percent", "Incl. (us)", "Bytes"]
        lines: list[list[str]] = [head]
        for row in self.rows(aggregate, sort):
            cells = [row.name, row.kind]
            if not aggregate:
                cells += [row.function or "", str(row.instruction)]
            cells += [
                str(row.count),
                f"{row.total_us:.3f}",
                f"{row.mean_us:.3f}",
                f"{row.percent:.2f}%",
                f"{row.inclusive_us:.3f}",
                str(row.bytes),
            ]
            lines.append(cells)
        if col_sums:
            total = ["Total", ""] + (["", ""] if not aggregate else [])
            total += [
                str(self.num_calls),
                f"{self.total_us:.3f}",
                "",
                "100.00%" if self.total_us > 0 else "0.00%",
                "",
                str(self.total_bytes),
            ]
            lines.append(total)
        numeric = {"Count", "Total (us)", "Mean (us)", "Percent", "Incl. (us)", "Bytes", "Instr"}
        widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
        texts = [
            "  ".join(
                cell.rjust(width) if head[i] in numeric else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(line, widths, strict=True))
            ).rstrip()
            for line in lines
        ]
        rule = "-" * max(len(text) for text in texts)
        out = [texts[0], rule, *texts[1:]]
        if col_sums:
            out.insert(len(out) - 1, rule)
        out.append(
            f"{self.function} ({self.exec_mode} mode): {self.num_calls} calls, "
            f"{self.total_us:.3f} us in calls, {self.wall_us:.3f} us wall "
            f"({self.wall_us - self.total_us:.3f} us VM dispatch and profiling)"
        )
        return "\n".join(out)

    def csv(self, aggregate: bool = True) -> str:
        """The rows as CSV (a header line, no total row); see :meth:`table` for ``aggregate``."""
        buffer = io.StringIO()
        fields = list(CSV_FIELDS)
        writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in self.rows(aggregate):
            values = row.as_dict()
            writer.writerow({k: "" if values[k] is None else values[k] for k in fields})
        return buffer.getvalue()

    def json(self) -> str:
        """Everything as a JSON document: the summary, ``ops`` and ``calls`` rows."""
        return json.dumps(
            {
                "function": self.function,
                "exec_mode": self.exec_mode,
                "devices": self.devices,
                "num_calls": self.num_calls,
                "wall_us": self.wall_us,
                "total_us": self.total_us,
                "total_bytes": self.total_bytes,
                "ops": [row.as_dict() for row in self.ops],
                "calls": [row.as_dict() for row in self.calls],
            },
            indent=1,
        )

    def chrome_trace(self, path: str | os.PathLike[str] | None = None) -> str:
        """The run as Chrome trace-event JSON (``chrome://tracing``, https://ui.perfetto.dev).

        Every executed call is one complete event (``"ph": "X"``) nested by time under one
        event for the profiled function; timestamps are microseconds from the call's start.

        Parameters
        ----------
        path : str or PathLike, optional
            Also write the JSON there.

        Returns
        -------
        str
            The JSON document.
        """
        pid, tid = os.getpid(), threading.get_ident() & 0x7FFFFFFF
        base = self._start_ns
        events: list[dict[str, Any]] = [
            {
                "ph": "M",
                "pid": pid,
                "tid": tid,
                "name": "process_name",
                "args": {"name": "relaxvm VirtualMachine"},
            },
            {
                "ph": "X",
                "pid": pid,
                "tid": tid,
                "name": self.function,
                "cat": "vm function",
                "ts": 0.0,
                "dur": self.wall_us,
                "args": {"exec_mode": self.exec_mode},
            },
        ]
        for pc, start, elapsed, own, nbytes in self._events:
            site = self._sites[pc]
            events.append(
                {
                    "ph": "X",
                    "pid": pid,
                    "tid": tid,
                    "name": site.callee,
                    "cat": site.kind,
                    "ts": (start - base) / 1000.0,
                    "dur": elapsed / 1000.0,
                    "args": {
                        "function": site.function,
                        "instruction": pc,
                        "self_us": own / 1000.0,
                        "bytes": nbytes,
                    },
                }
            )
        text = json.dumps({"traceEvents": events, "displayTimeUnit": "ns"})
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        return text

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (
            f"<ProfileReport {self.function!r} ({self.exec_mode}): {self.num_calls} calls, "
            f"{len(self.ops)} ops, {self.total_us:.1f} us>"
        )
