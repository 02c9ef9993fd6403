"""Sorting, searching and einsum ops: sort, argsort, topk, einsum."""

from __future__ import annotations

__all__: list[str] = []
