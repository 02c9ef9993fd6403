"""ONNX converters: shape operators."""

from __future__ import annotations
