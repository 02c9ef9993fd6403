"""Printer test calls (op name -> builder) of the sorting, searching and einsum ops, for test_print_ops.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CALLS: dict[str, Callable[[], Any]] = {}
