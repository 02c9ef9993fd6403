"""Timing results (TVM's ``BenchmarkResult``)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

__all__ = ["BenchmarkResult"]


class BenchmarkResult:
    """Timing of repeated runs: ``results`` holds seconds per call for each repeat."""

    def __init__(self, results: Sequence[float]) -> None:
        self.results = tuple(results)
        self.mean = statistics.fmean(self.results)
        self.median = statistics.median(self.results)
        self.std = statistics.pstdev(self.results) if len(self.results) > 1 else 0.0
        self.min = min(self.results)
        self.max = max(self.results)

    def __repr__(self) -> str:
        return (
            f"BenchmarkResult(min={self.min * 1e6:.3f}us, mean={self.mean * 1e6:.3f}us, "
            f"median={self.median * 1e6:.3f}us, max={self.max * 1e6:.3f}us, "
            f"std={self.std * 1e6:.3f}us, repeats={len(self.results)})"
        )
